#include "cli/setup.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <cstring>

#include "core/log.hpp"
#include "core/domain.hpp"
#include "core/paths.hpp"

namespace wb::cli {

Status write_report(const std::string& target, const Report& r) {
  nlohmann::json j;
  j["exitCode"] = r.exit_code;
  j["sandboxed"] = r.sandboxed;
  j["decision"] = r.decision;
  j["reason"] = r.reason;
  j["violations"] = nlohmann::json::array();
  for (const auto& x : r.violations) {
    j["violations"].push_back({{"operation", x.operation}, {"target", x.target}, {"reason", x.reason}, {"line", x.line()}});
  }
  j["violationsNotListed"] = r.more;
  j["extraDomains"] = r.extra_domains;
  j["elapsedMs"] = r.elapsed_ms;
  std::string text = j.dump() + "\n";
  if (target.rfind("fd:", 0) == 0) {
    int fd = std::atoi(target.c_str() + 3);
    if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      return make_error(ErrorKind::kSystem, fmt::format("--report-json: cannot write to fd {}", fd));
    }
    return ok_status();
  }
  return sys::write_file_atomic(target, text);
}

int report_error(const Error& e) {
  switch (e.kind) {
    case ErrorKind::kNotFound:
    case ErrorKind::kNotExecutable:
      std::fprintf(stderr, "wavebox: %s\n", e.message.c_str());
      return e.kind == ErrorKind::kNotFound ? 127 : 126;
    default:
      log::error(e.message);
      return 125;
  }
}

Result<Environment> load_environment(const Options& o) {
  Environment env;
  env.home = sys::home_dir();
  std::string caller_cwd = sys::current_dir();
  if (caller_cwd.empty()) {
    return make_error(ErrorKind::kUsage, "the current directory no longer exists; pass --cwd");
  }
  std::string cwd = o.cwd.empty() ? caller_cwd : paths::resolve(o.cwd, env.home, caller_cwd);
  if (!sys::is_dir(cwd)) return make_error(ErrorKind::kUsage, fmt::format("--cwd \"{}\" is not a directory", cwd));
  env.cwd = cwd;


  std::vector<std::string> files;
  if (!o.settings_files.empty()) {
    for (const auto& f : o.settings_files) files.push_back(paths::resolve(f, env.home, caller_cwd));
  } else {
    for (const auto& f : {paths::join(env.home, ".wave/settings.json"), paths::join(cwd, ".wave/settings.json"),
                          paths::join(cwd, ".wave/settings.local.json")}) {
      if (sys::exists(f)) files.push_back(f);
    }
  }
  std::vector<SettingsSource> sources;
  for (const auto& f : files) {
    auto text = sys::read_file(f);
    if (!text.ok()) {
      return make_error(ErrorKind::kSettings, fmt::format("settings file \"{}\": {}", f, text.error().message));
    }
    std::string real = sys::real_path_or_empty(f);
    sources.push_back({f, std::move(*text)});
    env.read_files.push_back(f);
    env.guarded_files.push_back(f);
    if (!real.empty() && real != f) env.guarded_files.push_back(real);
  }
  // FS-4: every settings file wavebox would discover is protected, existing or not.
  for (const auto& f : {paths::join(env.home, ".wave/settings.json"), paths::join(cwd, ".wave/settings.json"),
                        paths::join(cwd, ".wave/settings.local.json")}) {
    env.guarded_files.push_back(f);
  }
  if (sources.empty()) {
    env.settings = default_settings();
  } else {
    env.settings = WB_TRY(load_settings(sources, env.home));
  }
  // Per-call network (seed 003): hosts for this run only, on top of the settings' allowlist.
  for (const auto& d : o.allow_domains) {
    if (!parse_pattern(d)) {
      return make_error(ErrorKind::kSettings,
                        fmt::format("--allow-domain \"{}\" is not a valid domain pattern (use \"example.com\", "
                                    "\"*.example.com\", optionally with \":PORT\")",
                                    d));
    }
    auto& list = env.settings.sandbox.network.allowed_domains;
    if (std::find(list.begin(), list.end(), d) == list.end()) list.push_back(d);
  }
  return env;
}

PolicyContext policy_context(const Environment& env, const sys::StateDir& state, const Options& o) {
  PolicyContext ctx;
  ctx.home = env.home;
  ctx.workspace = env.cwd;
  ctx.tmpdir = state.tmp;
  ctx.state_dir = state.root;
  ctx.state_base = state.base;
  ctx.state_paths = {state.stubs};
  // Each workspace's caches beside TMPDIR, writable only by its own runs: another project's
  // sandbox cannot leave packages there that this one's installs would then unpack and run.
  if (auto c = sys::ensure_cache_dir(state, env.cwd); c.ok()) ctx.cache_dir = *c;
  ctx.settings_files = env.guarded_files;
  // What later runs execute outside any sandbox: wavebox itself, its shim, the bubblewrap named
  // by sandbox.bwrapPath (a build tree in the workspace, a tool in ~/.local/bin).
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string exe(self, static_cast<size_t>(n));
    ctx.program_files.push_back(exe);
    ctx.program_files.push_back(paths::join(paths::parent(exe), "wavebox-shim"));
  }
  if (env.settings.sandbox.bwrap_path) ctx.program_files.push_back(*env.settings.sandbox.bwrap_path);
  std::string caller_cwd = sys::current_dir();
  for (const auto& w : o.allow_write) ctx.extra_writable.push_back(paths::resolve(w, env.home, caller_cwd));
  return ctx;
}

}  // namespace wb::cli
