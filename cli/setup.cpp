#include "cli/setup.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/domain.hpp"
#include "core/log.hpp"
#include "core/paths.hpp"
#include "engine/settings_files.hpp"

extern char** environ;

namespace wb::cli {

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
  // The directory as the shell names it ($PWD, when it is the same directory): `cd src` through
  // a link an earlier run planted in the project (src -> ~/.config) still belongs to the project,
  // which stays the workspace; the link's target is only where the command starts.
  if (const char* pwd = std::getenv("PWD");
      pwd && pwd[0] == '/' && paths::normalize(pwd) == pwd && sys::real_path_or_empty(pwd) == caller_cwd) {
    caller_cwd = pwd;
  }
  std::string cwd = o.cwd.empty() ? caller_cwd : paths::resolve(o.cwd, env.home, caller_cwd);
  // Planning for a Mac from elsewhere: the workspace is a path on that machine.
  if (!sys::is_dir(cwd) && o.platform != "macos")
    return make_error(ErrorKind::kUsage, fmt::format("--cwd \"{}\" is not a directory", cwd));
  env.cwd = cwd;

  std::vector<std::string> named;
  for (const auto& f : o.settings_files) named.push_back(paths::resolve(f, env.home, caller_cwd));
  auto loaded = WB_TRY(engine::load_run_settings(env.home, cwd, named));
  env.settings = std::move(loaded.settings);
  env.read_files = std::move(loaded.read_files);
  env.guarded_files = std::move(loaded.guarded);
  env.project_root = std::move(loaded.project_root);
  env.trusted = loaded.trusted;
  // The workspace is the project, not the directory the command starts in (`git commit` from
  // src/ writes .git/index.lock): the root discovery finds, also when settings were named;
  // never the home directory or above it (a dotfiles repository in home), then the cwd.
  {
    std::string root = env.project_root.empty() ? engine::find_project_root(cwd, env.home) : env.project_root;
    const std::string real_home = sys::real_path_or_empty(env.home), real_root = sys::real_path_or_empty(root);
    bool above_home = !real_home.empty() && !real_root.empty() && paths::is_within(real_home, real_root);
    env.workspace = above_home || root.empty() ? cwd : root;
  }
  // srt always sandboxes, everywhere, or fails: no file turns it off, limits it to a platform,
  // excludes a command or lets it degrade through srt's front.
  if (o.srt) {
    auto& sb = env.settings.sandbox;
    sb.enabled = true;
    sb.enabled_platforms.reset();
    sb.filesystem.disabled = false;
    sb.excluded_commands.clear();
    sb.allow_unsandboxed_commands = false;
    sb.fail_if_unavailable = true;
  }
  // Per-call network: hosts for this run only, on top of the settings' allowlist.
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
  if (o.allow_network) {
    if (o.network == "off") {
      return make_error(ErrorKind::kUsage, "--dangerously-allow-network and --network off contradict each other");
    }
    env.settings.sandbox.network.allow_all_hosts = true;
    log::warn(
        "--dangerously-allow-network: every host is reachable through the proxy in this run (the deny list and "
        "this machine's own addresses excepted)");
  }
  std::string here = sys::current_dir();
  for (const auto& w : o.allow_write) env.extra_writable.push_back(paths::resolve(w, env.home, here));
  return env;
}

engine::RunRequest run_request(const Options& o, Environment env) {
  engine::RunRequest req;
  if (o.shell_command) {
    std::string shell = sys::exists("/bin/bash") ? "/bin/bash" : "/bin/sh";
    req.argv = {shell, "-c", *o.shell_command};
  } else {
    req.argv = o.command;
  }
  req.command_line = command_string(o);
  req.cwd = env.cwd;
  req.workspace = env.workspace;
  req.home = env.home;
  for (char** e = environ; *e; ++e) req.env.emplace_back(*e);
  for (int i = 0; i < 3; ++i) req.stdio[i] = sys::standard_fd_given(i) ? i : -1;
  req.settings = std::move(env.settings);
  req.settings_files = std::move(env.guarded_files);
  req.extra_writable = std::move(env.extra_writable);
  req.pass_env = o.pass_env;
  req.disable_sandbox = o.disable_sandbox;
  req.every_ask_needs_approval = o.no_prompt;
  req.network_only = o.network_only;
  req.network_off = o.network == "off";
  return req;
}

}  // namespace wb::cli
