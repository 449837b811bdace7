// `wavebox run` and `wavebox wrap`: settings, platform decision, then the platform's executor.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "bwrap/sandbox.hpp"
#include "cli/options.hpp"
#include "cli/setup.hpp"
#include "core/log.hpp"
#include "core/paths.hpp"
#include "core/sys/fs.hpp"
#include "core/sys/platform.hpp"
#include "core/violations.hpp"

extern char** environ;

namespace wb::cli {
namespace {

std::vector<std::string> command_argv(const Options& o) {
  if (o.shell_command) {
    std::string shell = sys::exists("/bin/bash") ? "/bin/bash" : "/bin/sh";
    return {shell, "-c", *o.shell_command};
  }
  return o.command;
}

// Runs the command exactly as without wavebox: same argv, environment, descriptors; our process
// is replaced, so its exit status is the command's.
int exec_unsandboxed(const Options& o, const std::vector<std::string>& argv) {
  if (!o.cwd.empty() && ::chdir(o.cwd.c_str()) != 0) {
    log::error(fmt::format("cannot change to \"{}\": {}", o.cwd, std::strerror(errno)));
    return 125;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  int err = errno;
  std::string msg = fmt::format("{}: {}", argv[0], err == ENOENT ? "command not found" : std::strerror(err));
  std::fprintf(stderr, "wavebox: %s\n", msg.c_str());
  return err == ENOENT ? 127 : 126;
}

std::vector<std::string> sandbox_env(const std::string& tmpdir, const std::string& home) {
  std::vector<std::string> env;
  bool has_npm_cache = false;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("TMPDIR=", 0) == 0) continue;
    if (kv.rfind("npm_config_cache=", 0) == 0) has_npm_cache = true;
    env.push_back(std::move(kv));
  }
  env.push_back("TMPDIR=" + tmpdir);
  // Without ~/.npm the cache cannot be created in the read-only home; npm uses a cache in the
  // sandbox's temp dir instead (wavebox does not create files in home).
  if (!has_npm_cache && !sys::is_dir(paths::join(home, ".npm"))) {
    env.push_back("npm_config_cache=" + tmpdir + "/npm-cache");
  }
  return env;
}

struct Decision {
  bool sandboxed = false;
  std::string unavailable;  // non-empty: why the sandbox cannot run here
};

Decision decide_sandbox(const Settings& s, const Options& o, const sys::PlatformInfo& plat,
                        const sys::BwrapInfo& bwrap, const std::string& state_root) {
  Decision d;
  if (!s.sandbox.enabled) return d;
  if (s.sandbox.enabled_platforms) {
    const auto& v = *s.sandbox.enabled_platforms;
    std::string name = sys::platform_name(plat.platform);
    if (std::find(v.begin(), v.end(), name) == v.end()) return d;
  }
  if (o.disable_sandbox) {
    if (s.sandbox.allow_unsandboxed_commands) return d;
    log::warn("--dangerously-disable-sandbox is ignored: sandbox.allowUnsandboxedCommands is false");
  }
  d.sandboxed = true;
  switch (plat.platform) {
    case sys::Platform::kLinux:
    case sys::Platform::kWsl2:
      break;
    case sys::Platform::kWsl1:
      d.unavailable = "WSL1 has no user namespaces; upgrade this distribution to WSL2 (wsl --set-version <distro> 2)";
      return d;
    case sys::Platform::kMacos:
      d.unavailable = "this build of wavebox has no Seatbelt executor yet";
      return d;
    case sys::Platform::kOther:
      d.unavailable = "this platform is not supported (Linux, WSL2 and macOS are)";
      return d;
  }
  if (bwrap.path.empty()) {
    d.unavailable = s.sandbox.bwrap_path
                        ? fmt::format("bubblewrap not found at \"{}\" (sandbox.bwrapPath)", *s.sandbox.bwrap_path)
                        : "bubblewrap (bwrap) is not installed; install it: apt-get install bubblewrap "
                          "(Debian/Ubuntu) or dnf install bubblewrap (Fedora)";
    return d;
  }
  std::string cache = state_root.empty() ? "" : state_root + "/userns-ok";
  if (std::string why = sys::probe_userns_cached(cache); !why.empty()) d.unavailable = why;
  return d;
}

int run_or_wrap(const Options& o, bool dry) {
  auto argv = command_argv(o);
  if (argv.empty()) {
    log::error("no command given: wavebox run [OPTIONS] -- COMMAND [ARG...] or -c 'STRING'");
    return 125;
  }
  auto env = load_environment(o);
  if (!env.ok()) return report_error(env.error());
  const Settings& s = env->settings;
  for (const auto& w : s.warnings) log::warn(w);

  auto state = sys::ensure_state_dir();
  std::string bwrap_cache = state.ok() ? state->root + "/bwrap-version" : "";
  auto plat = sys::probe_platform();
  auto bwrap = sys::probe_bwrap(s.sandbox.bwrap_path.value_or(""), bwrap_cache);
  Decision d = decide_sandbox(s, o, plat, bwrap, state.ok() ? state->root : "");
  if (d.sandboxed && !d.unavailable.empty()) {
    if (s.sandbox.fail_if_unavailable) {
      return report_error(make_error(ErrorKind::kUnavailable,
                                     "the sandbox is unavailable: " + d.unavailable +
                                         " (sandbox.failIfUnavailable is set, so the command did not run)"));
    }
    log::warn("the sandbox is unavailable, running the command UNSANDBOXED: " + d.unavailable);
    d.sandboxed = false;
  }
  if (!d.sandboxed) {
    if (dry) {
      std::string line;
      for (const auto& a : argv) line += (line.empty() ? "" : " ") + a;
      std::printf("# unsandboxed\n%s\n", line.c_str());
      return 0;
    }
    return exec_unsandboxed(o, argv);
  }
  if (!state.ok()) return report_error(state.error());

  lnx::LinuxRun run;
  run.cwd = env->cwd;
  run.home = env->home;
  run.policy = make_fs_policy(s.sandbox, policy_context(*env, *state, o), o.network_only);
  for (const auto& w : run.policy.warnings) log::warn(w);
  run.env = sandbox_env(state->tmp, env->home);
  std::string path_env;
  for (const auto& kv : run.env) {
    if (kv.rfind("PATH=", 0) == 0) path_env = kv.substr(5);
  }
  std::string exe = sys::find_in_path(argv[0], path_env);
  if (argv[0].find('/') != std::string::npos) {
    std::string full = argv[0][0] == '/' ? argv[0] : paths::join(env->cwd, argv[0]);
    if (!sys::exists(full)) exe.clear();
    else if (::access(full.c_str(), X_OK) != 0 || sys::is_dir(full)) {
      return report_error(make_error(ErrorKind::kNotExecutable, fmt::format("{}: Permission denied", argv[0])));
    }
  }
  if (exe.empty()) return report_error(make_error(ErrorKind::kNotFound, fmt::format("{}: command not found", argv[0])));
  run.command = argv;
  run.bwrap = bwrap.path;
  std::copy(std::begin(bwrap.version), std::end(bwrap.version), run.bwrap_version);
  run.state = *state;
  run.timeout_seconds = s.sandbox.resources.timeout_seconds;
  run.allow_unix_sockets = s.sandbox.network.allow_all_unix_sockets;
  if (dry) {
    auto text = lnx::describe_sandboxed(std::move(run));
    if (!text.ok()) return report_error(text.error());
    std::fwrite(text->data(), 1, text->size(), stdout);
    return 0;
  }
  std::string command_line;
  for (const auto& a : argv) command_line += (command_line.empty() ? "" : " ") + a;
  auto outcome = lnx::run_sandboxed(std::move(run));
  if (!outcome.ok()) return report_error(outcome.error());
  auto shown = filter_ignored(outcome->violations, s.sandbox.ignore_violations, command_line);
  std::string block = render_block(shown, outcome->more);
  if (!block.empty()) std::fwrite(block.data(), 1, block.size(), stderr);
  if (!o.report_json.empty()) {
    auto st = write_report(o.report_json, outcome->exit_code, true, shown, outcome->more);
    if (!st) log::warn(st.error().message);
  }
  return outcome->exit_code;
}

}  // namespace

int cmd_run(const Options& o) { return run_or_wrap(o, false); }
int cmd_wrap(const Options& o) { return run_or_wrap(o, true); }

}  // namespace wb::cli
