// `wavebox run` and `wavebox wrap`: settings, platform decision, then the platform's executor.
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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
#include "netproxy/proxy.hpp"
#include "core/decision.hpp"
#include "core/hash.hpp"
#include "core/secrets.hpp"

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

// FS-6: package managers' caches of the sandbox's own, in its TMPDIR. The host's (~/.npm,
// the pnpm store, the yarn cache) stay read-only: what a sandboxed install leaves in a cache is
// unpacked and run later by the host's own installs (npx reruns ~/.npm/_npx). A cache the
// caller named in the environment is kept (then it is writable only if the policy says so).
std::vector<std::string> sandbox_env(const std::string& tmpdir, const std::string& caches,
                                     const std::vector<std::string>& pass, bool pass_all) {
  std::vector<std::string> env;
  // One set of caches per workspace, writable by that workspace's runs only: what a hostile
  // run leaves in a cache reaches only later installs of the same workspace (which it could
  // write anyway), never another project's. (pnpm's settings go through PNPM_HOME and the XDG
  // directories: as npm_config_* variables, npm warns about each.)
  std::vector<std::pair<std::string, std::string>> defaults = {
      {"npm_config_cache", caches + "/npm"},         // npm, npx
      {"PNPM_HOME", caches + "/pnpm"},               // pnpm's store and global bin
      {"XDG_CACHE_HOME", caches + "/xdg-cache"},     // pnpm's metadata, pip's cache, ...
      {"XDG_STATE_HOME", caches + "/xdg-state"},     // pnpm's state
      {"YARN_CACHE_FOLDER", caches + "/yarn"},       // yarn 1
      {"YARN_GLOBAL_FOLDER", caches + "/yarn-berry"},  // yarn 2+
  };
  if (caches.empty()) defaults.clear();
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("TMPDIR=", 0) == 0) continue;
    for (auto it = defaults.begin(); it != defaults.end(); ++it) {
      if (kv.rfind(it->first + "=", 0) == 0) {
        defaults.erase(it);
        break;
      }
    }
    env.push_back(std::move(kv));
  }
  env.push_back("TMPDIR=" + tmpdir);
  for (const auto& [k, v] : defaults) env.push_back(k + "=" + v);
  if (!pass_all) {
    // Secrets by default: tokens, keys, passwords and agent sockets stay outside, except what
    // the settings or --pass-env name (mode "permissive" passes everything).
    std::vector<std::string> removed;
    env = without_credentials(env, pass, &removed);
    if (!removed.empty()) {
      std::string names;
      for (const auto& n : removed) names += (names.empty() ? "" : " ") + n;
      log::info("credential variables kept out of the sandbox (pass one with --pass-env NAME or "
                "sandbox.passEnvironment): " + names);
    }
  }
  return env;
}

}  // namespace

Availability check_availability(const Settings& s, const sys::PlatformInfo& plat, const sys::BwrapInfo& bwrap,
                                const std::string& state_root) {
  Availability a;
  if (!s.sandbox.enabled) return a;
  if (s.sandbox.enabled_platforms) {
    const auto& v = *s.sandbox.enabled_platforms;
    std::string name = sys::platform_name(plat.platform);
    if (std::find(v.begin(), v.end(), name) == v.end()) return a;
  }
  a.enabled_here = true;
  switch (plat.platform) {
    case sys::Platform::kLinux:
    case sys::Platform::kWsl2:
      break;
    case sys::Platform::kWsl1:
      a.unavailable = "WSL1 has no user namespaces; upgrade this distribution to WSL2 (wsl --set-version <distro> 2)";
      return a;
    case sys::Platform::kMacos:
      a.unavailable = "this build of wavebox has no Seatbelt executor yet";
      return a;
    case sys::Platform::kOther:
      a.unavailable = "this platform is not supported (Linux, WSL2 and macOS are)";
      return a;
  }
  if (bwrap.path.empty()) {
    a.unavailable = s.sandbox.bwrap_path
                        ? fmt::format("bubblewrap not found at \"{}\" (sandbox.bwrapPath)", *s.sandbox.bwrap_path)
                        : "bubblewrap (bwrap) is not installed; install it: apt-get install bubblewrap "
                          "(Debian/Ubuntu) or dnf install bubblewrap (Fedora)";
    return a;
  }
  std::string cache = state_root.empty() ? "" : state_root + "/userns-ok";
  if (std::string why = sys::probe_userns_cached(cache); !why.empty()) a.unavailable = why;
  return a;
}

std::string command_string(const Options& o) {
  if (o.shell_command) return *o.shell_command;
  std::string out;
  for (const auto& a : o.command) {
    bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%^") == std::string::npos;
    std::string q = plain ? a : "'" + a + "'";
    if (!plain) {
      q = "'";
      for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      q += "'";
    }
    out += (out.empty() ? "" : " ") + q;
  }
  return out;
}

namespace {

// An ask rule matched: the user's answer on the terminal, or --approve from a caller that asked.
bool approved(const Options& o, const Decision& d, const std::string& command) {
  if (o.approve) return true;
  int tty = ::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
  if (tty < 0) return false;
  std::string who = d.matched_rule.empty() ? std::string("running unsandboxed") : d.matched_rule;
  std::string prompt = fmt::format("wavebox: {} asks before running: {}\nRun it? [y/N] ", who, command);
  (void)!::write(tty, prompt.data(), prompt.size());
  char buf[16] = {0};
  ssize_t n = ::read(tty, buf, sizeof buf - 1);
  ::close(tty);
  return n > 0 && (buf[0] == 'y' || buf[0] == 'Y');
}

int run_or_wrap(const Options& o, bool dry) {
  auto started = std::chrono::steady_clock::now();
  auto argv = command_argv(o);
  if (argv.empty()) {
    log::error("no command given: wavebox run [OPTIONS] -- COMMAND [ARG...] or -c 'STRING'");
    return 125;
  }
  auto env = load_environment(o);
  if (!env.ok()) return report_error(env.error());
  const Settings& s = env->settings;
  for (const auto& w : s.warnings) log::warn(w);
  log::timing("settings loaded");

  // A directory as a standard descriptor reaches past every mount (openat(0, "..", ...)).
  for (int fd = 0; fd < 3 && !dry; ++fd) {
    struct stat st;
    if (s.sandbox.enabled && !o.disable_sandbox && ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      return report_error(make_error(ErrorKind::kSandboxFailed,
                                     fmt::format("standard {} is a directory, which would let the command reach "
                                                 "files outside the sandbox; redirect it from a file or /dev/null",
                                                 fd == 0 ? "input" : fd == 1 ? "output" : "error")));
    }
  }
  auto state = sys::ensure_state_dir();
  std::string bwrap_cache = state.ok() ? state->root + "/bwrap-version" : "";
  auto bwrap = sys::probe_bwrap(s.sandbox.bwrap_path.value_or(""), bwrap_cache);
  // The sandbox will most likely run: its namespaces and bwrap start now, on the other core,
  // while the rest is checked and planned (they wait for bwrap's options). A run that does not
  // happen after all drops them (the keeper is killed, and bwrap with it).
  std::unique_ptr<lnx::Launch> launch;
  if (!dry && s.sandbox.enabled && !o.disable_sandbox && state.ok() && !bwrap.path.empty()) {
    if (auto l = lnx::launch_sandbox(bwrap.path); l.ok()) launch = std::move(*l);
  }
  auto plat = sys::probe_platform();
  Availability avail = check_availability(s, plat, bwrap, state.ok() ? state->root : "");
  log::timing("platform probed");

  // Permission linkage (SPEC §5): deny always wins; an explicit ask rule needs approval.
  std::string cmdline = command_string(o);
  Decision d = decide(s, {cmdline, o.disable_sandbox, avail.enabled_here && avail.unavailable.empty()});
  for (const auto& w : d.warnings) log::warn(w);
  if (d.decision == "deny") {
    return report_error(make_error(ErrorKind::kDenied, d.reason + "; the command did not run"));
  }
  // An ask rule, and a command that runs unsandboxed on request (excludedCommands,
  // --dangerously-disable-sandbox) with no allow rule covering it, as `decide` says "ask".
  const bool unsandboxed_on_request = avail.enabled_here && avail.unavailable.empty() && !d.sandboxed;
  if (d.decision == "ask" && (!d.matched_rule.empty() || unsandboxed_on_request) && !dry && !approved(o, d, cmdline)) {
    return report_error(make_error(ErrorKind::kDenied,
                                   fmt::format("{}: needs the user's approval (rerun with --approve once the "
                                               "user agreed); the command did not run",
                                               d.reason)));
  }
  bool sandboxed = d.sandboxed;
  if (avail.enabled_here && !avail.unavailable.empty()) {
    if (s.sandbox.fail_if_unavailable) {
      return report_error(make_error(ErrorKind::kUnavailable,
                                     "the sandbox is unavailable: " + avail.unavailable +
                                         " (sandbox.failIfUnavailable is set, so the command did not run)"));
    }
    bool wanted = !(o.disable_sandbox && s.sandbox.allow_unsandboxed_commands);
    if (wanted) log::warn("the sandbox is unavailable, running the command UNSANDBOXED: " + avail.unavailable);
    sandboxed = false;
  }
  if (!sandboxed) {
    if (dry) {
      std::string line;
      for (const auto& a : argv) line += (line.empty() ? "" : " ") + a;
      std::printf("# unsandboxed (%s)\n%s\n", d.reason.c_str(), line.c_str());
      return 0;
    }
    if (!o.report_json.empty()) {
      // The command replaces wavebox, so its exit status is not in the report (-1).
      Report r{-1, false, d.decision, d.reason, {}, 0, 0, o.allow_domains};
      if (auto st = write_report(o.report_json, r); !st) log::warn(st.error().message);
    }
    launch.reset();  // its signal mask must not reach the command
    return exec_unsandboxed(o, argv);
  }
  if (!state.ok()) return report_error(state.error());
  // The workspace is writable: "/" as the workspace would make the whole system writable.
  if (!o.network_only && !s.sandbox.filesystem.disabled && sys::real_path_or_empty(env->cwd) == "/") {
    return report_error(make_error(ErrorKind::kUsage,
                                   "the workspace would be \"/\", which would make every path writable; run "
                                   "from a project directory or pass --cwd DIR"));
  }

  lnx::LinuxRun run;
  run.cwd = env->cwd;
  run.home = env->home;
  const PolicyContext ctx = policy_context(*env, *state, o);
  run.policy = make_fs_policy(s.sandbox, ctx, o.network_only);
  for (const auto& w : run.policy.warnings) log::warn(w);
  std::vector<std::string> pass = s.sandbox.pass_environment;
  pass.insert(pass.end(), o.pass_env.begin(), o.pass_env.end());
  run.env = sandbox_env(state->tmp, ctx.cache_dir, pass, s.sandbox.mode == Mode::kPermissive);
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
  run.exe = exe;
  run.bwrap = bwrap.path;
  std::copy(std::begin(bwrap.version), std::end(bwrap.version), run.bwrap_version);
  run.state = *state;
  run.timeout_seconds = s.sandbox.resources.timeout_seconds;
  run.cpu_seconds = s.sandbox.resources.cpu_seconds.value_or(0);
  run.pids = s.sandbox.resources.pids.value_or(0);
  run.memory_mb = s.sandbox.resources.memory_mb.value_or(0);
  run.allow_unix_sockets = s.sandbox.network.allow_all_unix_sockets;
  run.network_off = o.network == "off";
  auto net_policy = netproxy::make_net_policy(s.sandbox.network);
  if (!net_policy.ok()) return report_error(net_policy.error());
  std::unique_ptr<netproxy::Proxy> proxy;
  run.start_network = [&](sys::Fd http, sys::Fd socks, std::function<void(const Violation&)> sink) -> Status {
    netproxy::ProxyConfig cfg;
    cfg.policy = *net_policy;
    cfg.on_refusal = std::move(sink);
    cfg.forward_http_port = s.sandbox.network.http_proxy_port;
    cfg.forward_socks_port = s.sandbox.network.socks_proxy_port;
    proxy = WB_TRY(netproxy::Proxy::start(std::move(cfg), std::move(http), std::move(socks)));
    return ok_status();
  };
  run.stop_network = [&] {
    if (proxy) proxy->stop();
  };
  run.launch = std::move(launch);
  if (dry) {
    auto text = lnx::describe_sandboxed(std::move(run));
    if (!text.ok()) return report_error(text.error());
    std::fwrite(text->data(), 1, text->size(), stdout);
    return 0;
  }
  std::string command_line;
  for (const auto& a : argv) command_line += (command_line.empty() ? "" : " ") + a;
  // Only now, for the sandboxed run (the command gets the original limit back): an unsandboxed
  // command must see exactly the limits it would without wavebox.
  sys::raise_fd_limit();
  auto outcome = lnx::run_sandboxed(std::move(run));
  if (!outcome.ok()) return report_error(outcome.error());
  auto shown = filter_ignored(outcome->violations, s.sandbox.ignore_violations, command_line);
  std::string block = render_block(shown, outcome->more);
  if (!block.empty()) std::fwrite(block.data(), 1, block.size(), stderr);
  if (!o.report_json.empty()) {
    Report r{outcome->exit_code, true, d.decision, d.reason, shown, outcome->more,
             std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count(),
             o.allow_domains};
    auto st = write_report(o.report_json, r);
    if (!st) log::warn(st.error().message);
  }
  return outcome->exit_code;
}

}  // namespace

int cmd_run(const Options& o) { return run_or_wrap(o, false); }

int cmd_decide(const Options& o) {
  if (o.command.empty() && !o.shell_command) {
    log::error("no command given: wavebox decide [OPTIONS] -- 'COMMAND STRING'");
    return 125;
  }
  auto env = load_environment(o);
  if (!env.ok()) return report_error(env.error());
  const Settings& s = env->settings;
  for (const auto& w : s.warnings) log::warn(w);
  auto state = sys::ensure_state_dir();
  auto plat = sys::probe_platform();
  auto bwrap = sys::probe_bwrap(s.sandbox.bwrap_path.value_or(""), state.ok() ? state->root + "/bwrap-version" : "");
  Availability avail = check_availability(s, plat, bwrap, state.ok() ? state->root : "");
  // A single argument is the command string itself; several are joined like a shell would see them.
  std::string cmd = o.shell_command ? *o.shell_command
                                    : (o.command.size() == 1 ? o.command[0] : command_string(o));
  Decision d = decide(s, {cmd, o.disable_sandbox, avail.enabled_here && avail.unavailable.empty()});
  for (const auto& w : d.warnings) log::warn(w);
  nlohmann::json j;
  j["decision"] = d.decision;
  j["sandboxed"] = d.sandboxed;
  j["reason"] = d.reason;
  j["matchedRule"] = d.matched_rule.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.matched_rule);
  j["subcommands"] = d.subcommands;
  // A call that reaches more hosts than the settings say (seed 003: never read-only).
  j["addsHosts"] = o.allow_domains;
  std::printf("%s\n", j.dump().c_str());
  return 0;
}
int cmd_wrap(const Options& o) { return run_or_wrap(o, true); }

}  // namespace wb::cli
