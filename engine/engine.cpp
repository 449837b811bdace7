// The run as a value: request -> prepared (decision, policy, plan inputs) -> started -> outcome.
#include "engine/engine.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>

#include "bwrap/plan/plan.hpp"
#include "bwrap/run/prepared.hpp"
#include "bwrap/run/run.hpp"
#include "bwrap/shim/wire.h"
#include "bwrap/warm/kept_plan.hpp"
#include "core/domain.hpp"
#include "core/paths.hpp"
#include "core/policy.hpp"
#include "core/secrets.hpp"
#include "core/sys/fs.hpp"
#include "engine/environment.hpp"
#include "engine/macos_run.hpp"
#include "netproxy/proxy.hpp"

namespace wb::engine {

using Clock = std::chrono::steady_clock;

struct Internal {
  RunRequest req;  // settings, log, stdio and the command line for ignoreViolations
  Clock::time_point started;
  lnx::LinuxRun run;
  netproxy::NetPolicy net_policy;
  std::unique_ptr<MacRun> mac;  // a macOS run (engine/macos_run.hpp) instead of run
};

Prepared::Prepared() = default;
Prepared::Prepared(Prepared&&) noexcept = default;
Prepared& Prepared::operator=(Prepared&&) noexcept = default;
Prepared::~Prepared() = default;

namespace {

// PATH as the given environment has it ("" when it has none).
std::string path_of(const std::vector<std::string>& env) {
  std::string path;
  for (const auto& kv : env) {
    if (kv.rfind("PATH=", 0) == 0) path = kv.substr(5);
  }
  return path;
}

// A directory as a standard descriptor reaches past every mount (openat(0, "..", ...)).
Status check_stdio(const RunRequest& req) {
  for (int i = 0; i < 3; ++i) {
    struct stat st;
    if (req.stdio[i] >= 0 && ::fstat(req.stdio[i], &st) == 0 && S_ISDIR(st.st_mode)) {
      return make_error(ErrorKind::kSandboxFailed,
                        fmt::format("standard {} is a directory, which would let the command reach files outside the "
                                    "sandbox; redirect it from a file or /dev/null",
                                    i == 0   ? "input"
                                    : i == 1 ? "output"
                                             : "error"));
    }
  }
  return ok_status();
}

// The decision (wavebox(1)) and whether the sandbox can run: deny always wins; an explicit ask
// rule, and a command that runs unsandboxed on request (excludedCommands,
// --dangerously-disable-sandbox) with no allow rule covering it, need the user's approval.
Result<bool> decide_sandboxed(const RunRequest& req, const Availability& avail, Decision& d) {
  const Settings& s = req.settings;
  const Logger& log = *req.log;
  d = decide(s, {req.command_line, req.disable_sandbox, avail.enabled_here && avail.unavailable.empty()});
  for (const auto& w : d.warnings) log.warn(w);
  if (d.decision == "deny") return make_error(ErrorKind::kDenied, d.reason + "; the command did not run");
  const bool unsandboxed_on_request = avail.enabled_here && avail.unavailable.empty() && !d.sandboxed;
  // Without a way to ask (--no-prompt, serve), every "ask" is one: an unusable sandbox, or no allow
  // rule with autoAllowBashIfSandboxed off, too. A sandbox the user turned off is not a question.
  const bool asks =
      !d.matched_rule.empty() || unsandboxed_on_request || (req.every_ask_needs_approval && avail.enabled_here);
  if (d.decision == "ask" && asks && !req.plan_only && !(req.approve && req.approve(d))) {
    return make_error(ErrorKind::kNeedsApproval,
                      fmt::format("{}: needs the user's approval (rerun with --approve once the "
                                  "user agreed); the command did not run",
                                  d.reason));
  }
  bool sandboxed = d.sandboxed;
  if (d.sandboxed && !avail.cannot_start.empty() && !req.plan_only) {
    return make_error(ErrorKind::kSandboxFailed,
                      "the sandbox cannot start: " + avail.cannot_start +
                          ". wavebox never runs a command weaker for this; allow user namespaces here, or run "
                          "where they are allowed. The command did not run");
  }
  if (avail.enabled_here && !avail.unavailable.empty()) {
    if (s.sandbox.fail_if_unavailable) {
      return make_error(ErrorKind::kUnavailable, "the sandbox is unavailable: " + avail.unavailable +
                                                     " (sandbox.failIfUnavailable is set, so the command did not run)");
    }
    bool wanted = !(req.disable_sandbox && s.sandbox.allow_unsandboxed_commands);
    if (wanted) log.warn("the sandbox is unavailable, running the command UNSANDBOXED: " + avail.unavailable);
    sandboxed = false;
  }
  return sandboxed;
}

}  // namespace

// The keeper's and bwrap's own PATH (never the caller's: a directory the sandbox may write).
constexpr const char* kLaunchPath = WB_LAUNCH_PATH;

// What the keeper and bwrap start with, outside the sandbox: nothing of the request's (its
// LD_PRELOAD, a caller's library path) — the command's own environment comes with bwrap's
// options.
static std::vector<std::string> launch_environment() {
  return {kLaunchPath};
}

// The keeper's record of the allowlist (bwrap/shim/wire.h): its own ports get transparent
// listeners too (github.com:22, a database's), as 80 and 443 have; its IPv4 literals become
// addresses of the namespace, so a direct connection to one is decided like a proxied one.
static wb_net_config keeper_net_config(const Settings& s) {
  wb_net_config net;
  std::memset(&net, 0, sizeof net);  // padding too: the record goes over as it lies in memory
  for (int port : allowlist_ports(s.sandbox.network.allowed_domains)) {
    if (net.n_ports == WB_MAX_EXTRA_PORTS) break;
    net.ports[net.n_ports++] = static_cast<uint16_t>(port);
  }
  for (const auto& e : s.sandbox.network.allowed_domains) {
    auto pat = parse_pattern(e);
    if (!pat || pat->wildcard || pat->host.find(':') != std::string::npos) continue;
    auto v4 = parse_ipv4(pat->host);
    if (!v4) continue;
    if (net.n_addrs == WB_MAX_NET_ADDRS) break;
    net.addrs[net.n_addrs++] = htonl(*v4);
  }
  return net;
}

namespace {

// The Linux run: policy, the command's environment and where it is, limits, network.
Status plan_linux(Internal& in, const sys::StateDir& state, const sys::BwrapInfo& bwrap) {
  const RunRequest& req = in.req;
  const Settings& s = req.settings;
  lnx::LinuxRun& run = in.run;
  run.log = req.log;
  run.on_refusal = req.on_refusal;
  run.cwd = req.cwd;
  run.home = req.home;
  run.launch_env = launch_environment();
  run.net = keeper_net_config(s);
  run.plan_cache = req.plan_cache;
  if (size_t n = allowlist_ports(s.sandbox.network.allowed_domains).size(); n > WB_MAX_EXTRA_PORTS) {
    req.log->warn(
        fmt::format("sandbox.network.allowedDomains names {} ports besides 80 and 443; the first {} get "
                    "transparent listeners, the others are reached through the proxy variables only",
                    n, WB_MAX_EXTRA_PORTS));
  }
  std::copy(std::begin(req.stdio), std::end(req.stdio), run.stdio);
  run.own_terminal = req.own_terminal;
  PolicyContext ctx = WB_TRY(policy_context(req, state));
  std::vector<std::string> pass = s.sandbox.pass_environment;
  pass.insert(pass.end(), req.pass_env.begin(), req.pass_env.end());
  run.env =
      sandbox_env(req.env, ctx.tmpdir, ctx.cache_dir, pass, s.sandbox.mode == Mode::kPermissive, *req.log, &s.sandbox);
  run.exe = WB_TRY(find_command(req.argv, req.cwd, run.env));
  // Mode strict: the system trees, the command itself (wherever it was found) and the shim
  // bwrap starts inside; the planner adds the writable roots and allowRead.
  ctx.visible = lnx::strict_system_paths();
  ctx.visible.push_back(run.exe);
  if (std::string shim = lnx::shim_path(); !shim.empty()) ctx.visible.push_back(shim);
  run.policy = make_fs_policy(s.sandbox, ctx, req.network_only);
  for (const auto& w : run.policy.warnings) req.log->warn(w);
  run.command = req.argv;
  run.bwrap = bwrap.path;
  std::copy(std::begin(bwrap.version), std::end(bwrap.version), run.bwrap_version);
  run.state = state;
  run.timeout_seconds = s.sandbox.resources.timeout_seconds;
  run.cpu_seconds = s.sandbox.resources.cpu_seconds.value_or(0);
  run.pids = s.sandbox.resources.pids.value_or(0);
  run.memory_mb = s.sandbox.resources.memory_mb.value_or(0);
  run.cpus = s.sandbox.resources.cpus.value_or(0);
  run.allow_unix_sockets = s.sandbox.network.allow_all_unix_sockets;
  // The host sockets the settings name (ssh-agent, docker, gpg-agent), by their real paths: the
  // supervisor compares the path a connect resolves to with these.
  for (const auto& u : s.sandbox.network.allow_unix_sockets) {
    std::string real = sys::real_path_or_empty(u);
    if (real.empty()) {
      req.log->warn(
          fmt::format("sandbox.network.allowUnixSockets: \"{}\" does not exist; not reachable in this run", u));
      continue;
    }
    run.unix_socket_paths.push_back(real);
  }
  run.network_off = req.network_off;
  in.net_policy = WB_TRY(netproxy::make_net_policy(s.sandbox.network));
  return ok_status();
}

}  // namespace

struct EarlyLaunch {
  std::unique_ptr<lnx::Launch> launch;
  sys::StateDir state;   // what it found, prepare() takes too (the same process, moments later)
  sys::BwrapInfo bwrap;  // the system's bwrap, probed once
  int stdio[3] = {-1, -1, -1};
  bool by_launcher = false;  // started by the launcher, before this program was loaded
};

std::string take_inherited_launch() {
  char* v = std::getenv(WB_ENV_EARLY_LAUNCH);
  if (!v) return {};
  std::string out = v;
  // Blanked where it lies too (the environment block /proc/PID/environ shows), then removed.
  std::memset(v, ' ', out.size());
  ::unsetenv(WB_ENV_EARLY_LAUNCH);
  return out;
}

namespace {

// The launcher's record (bwrap/shim/wire.h, wb_early_decode).
bool parse_inherited(const std::string& text, pid_t& pid, int fds[WB_EARLY_FDS], std::string& shim,
                     std::string& bwrap) {
  int p = 0;
  const char *shim_at = nullptr, *bwrap_at = nullptr;
  size_t shim_len = 0;
  if (wb_early_decode(text.c_str(), &p, fds, &shim_at, &shim_len, &bwrap_at) != 0) return false;
  pid = static_cast<pid_t>(p);
  shim.assign(shim_at, shim_len);
  bwrap = bwrap_at;
  return true;
}

}  // namespace

std::shared_ptr<EarlyLaunch> start_early(const int stdio[3], const Logger& log, const std::string& inherited) {
  if (sys::probe_platform().platform == sys::Platform::kMacos) return nullptr;
  std::unique_ptr<lnx::Launch> adopted;
  std::string adopted_bwrap;
  if (!inherited.empty()) {
    pid_t pid = -1;
    int fds[WB_EARLY_FDS];
    std::string named_shim;
    if (parse_inherited(inherited, pid, fds, named_shim, adopted_bwrap)) {
      // The shim is compared as a file (the launcher names it by the path it built), by the
      // keeper's /proc/PID/exe.
      const std::string shim = lnx::shim_path();
      auto l = shim.empty()
                   ? Result<std::unique_ptr<lnx::Launch>>(make_error(ErrorKind::kUnavailable, "no shim"))
                   : lnx::adopt_launch(pid, fds, shim, lnx::stderr_relayable(stdio), launch_environment(), log);
      if (l.ok()) {
        adopted = std::move(*l);
      } else {
        lnx::drop_unadopted(pid, fds, shim);
      }
    }
  }
  auto state = sys::ensure_state_dir();
  if (!state.ok()) return nullptr;
  auto early = std::make_shared<EarlyLaunch>();
  early->bwrap = sys::probe_bwrap("", state->root + "/bwrap-version");
  if (early->bwrap.path.empty()) return nullptr;
  early->state = std::move(*state);
  std::copy(stdio, stdio + 3, early->stdio);
  // The launcher's, when it started what this process would (else it ends, unused, here).
  if (adopted && adopted_bwrap == early->bwrap.path) {
    early->launch = std::move(adopted);
    early->by_launcher = true;
    return early;
  }
  adopted.reset();
  auto l = lnx::launch_sandbox(early->bwrap.path, early->stdio, launch_environment(), log, nullptr, nullptr);
  if (!l.ok()) return nullptr;
  early->launch = std::move(*l);
  return early;
}

Result<Prepared> prepare(RunRequest request) {
  Prepared out;
  out.internal = std::make_unique<Internal>();
  Internal& in = *out.internal;
  in.started = Clock::now();
  // Taken below, or dropped when prepare returns: nothing started early outlives it unused.
  std::shared_ptr<EarlyLaunch> early = std::move(request.early);
  in.req = std::move(request);
  const RunRequest& req = in.req;
  const Settings& s = req.settings;
  const Logger& log = *req.log;
  if (req.argv.empty()) {
    return make_error(ErrorKind::kUsage, "no command given: wavebox run [OPTIONS] -- COMMAND [ARG...] or -c 'STRING'");
  }
  // Every string here ends up NUL-separated in bwrap's options or the shim's spec: a NUL inside
  // one would add options of its own (a library caller can pass them; a command line cannot).
  auto has_nul = [](const std::string& v) { return v.find('\0') != std::string::npos; };
  if (has_nul(req.cwd) || has_nul(req.home) || std::any_of(req.argv.begin(), req.argv.end(), has_nul) ||
      std::any_of(req.env.begin(), req.env.end(), has_nul) ||
      std::any_of(req.extra_writable.begin(), req.extra_writable.end(), has_nul)) {
    return make_error(ErrorKind::kUsage, "a NUL byte in the command, its environment or a path");
  }
  for (const auto& w : s.warnings) log.warn(w);
  for (const auto& n : s.notes) log.info(n);
  log.timing("settings loaded");
  const bool wanted = s.sandbox.enabled && !req.disable_sandbox;
  if (wanted && !req.plan_only) WB_TRY(check_stdio(req));
  auto plat = sys::probe_platform();
  const bool here_mac = plat.platform == sys::Platform::kMacos;
  if (req.platform) plat.platform = *req.platform;
  const bool mac = plat.platform == sys::Platform::kMacos;
  if (mac && !here_mac && !req.plan_only && in.req.macos.sandbox_exec == seatbelt::Facts().sandbox_exec) {
    return make_error(ErrorKind::kUnavailable, "a macOS run needs macOS (wavebox wrap --platform macos plans one)");
  }
  // (A sandbox started early found the state dir and the system's bwrap already.)
  auto state = mac     ? Result<sys::StateDir>(make_error(ErrorKind::kUnavailable, "macOS"))
               : early ? Result<sys::StateDir>(early->state)
                       : sys::ensure_state_dir();
  if (state.ok() && !state->relocated.empty()) log.warn(state->relocated);
  auto bwrap = mac                              ? sys::BwrapInfo{}
               : early && !s.sandbox.bwrap_path ? early->bwrap
                                                : sys::probe_bwrap(s.sandbox.bwrap_path.value_or(""),
                                                                   state.ok() ? state->root + "/bwrap-version" : "");
  // The sandbox will most likely run: its namespaces and bwrap start now, on the other core,
  // while the rest is checked and planned (they wait for bwrap's options). A run that does not
  // happen after all drops them (the keeper is killed, and bwrap with it).
  if (!req.plan_only && wanted && state.ok() && !bwrap.path.empty() && !req.standby) {
    // The run's cgroup first (sandbox.resources): the keeper joins it before anything starts.
    const auto& r = s.sandbox.resources;
    in.run.cgroup = WB_TRY(lnx::run_cgroup({r.memory_mb.value_or(0), r.pids.value_or(0), r.cpus.value_or(0)}, log));
    if (early && early->launch && early->bwrap.path == bwrap.path && !in.run.cgroup && !req.prepare_ahead &&
        std::equal(req.stdio, req.stdio + 3, early->stdio) &&
        lnx::send_net_config(*early->launch, keeper_net_config(s)).ok()) {
      in.run.launch = std::move(early->launch);
      log.timing(early->by_launcher ? "the sandbox the launcher started before the settings were read fits"
                                    : "the sandbox started before the settings were read fits");
    }
    early.reset();
    if (!in.run.launch) {
      const wb_net_config net = keeper_net_config(s);
      auto l = lnx::launch_sandbox(bwrap.path, req.prepare_ahead ? nullptr : req.stdio, launch_environment(), log,
                                   in.run.cgroup.get(), &net);
      if (l.ok()) in.run.launch = std::move(*l);
    }
  }
  Availability avail = check_availability(s, plat, bwrap, state.ok() ? state->root : "");
  if (mac) {
    // Planning needs nothing of the Mac; a run needs its sandbox-exec (the facts', for tests).
    const std::string& sbx = in.req.macos.sandbox_exec;
    avail.unavailable = req.plan_only || ::access(sbx.c_str(), X_OK) == 0 ? "" : sbx + " is missing";
  }
  log.timing("platform probed");
  out.sandboxed = WB_TRY(decide_sandboxed(req, avail, out.decision));
  out.cwd = req.cwd;
  if (!out.sandboxed) {
    in.run.launch.reset();
    in.run.cgroup.reset();
    out.unsandboxed.program = req.argv[0];
    out.unsandboxed.args.assign(req.argv.begin() + 1, req.argv.end());
    out.unsandboxed.env = req.env;
    out.unsandboxed.command = req.argv;
    return out;
  }
  if (!mac && !state.ok()) return state.error();
  // The workspace is writable: "/" as the workspace would make the whole system writable.
  if (!req.network_only && !s.sandbox.filesystem.disabled && sys::real_path_or_empty(req.cwd) == "/") {
    return make_error(ErrorKind::kUsage,
                      "the workspace would be \"/\", which would make every path writable; run from a project "
                      "directory or pass --cwd DIR");
  }
  if (mac) {
    if (in.req.macos.helper.empty()) {
      char self[4096];
      ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
      in.req.macos.helper = n > 0 ? std::string(self, static_cast<size_t>(n)) : "/usr/local/bin/wavebox";
    }
    in.mac = std::make_unique<MacRun>(WB_TRY(plan_macos(in.req)));
    return out;
  }
  WB_TRY(plan_linux(in, *state, bwrap));
  in.run.standby = std::move(in.req.standby);
  return out;
}

std::shared_ptr<PlanCache> new_plan_cache() {
  auto is = [](const char* name, const char* value) {
    const char* v = std::getenv(name);
    return v && std::string(v) == value;
  };
  return std::make_shared<lnx::PlanCache>(is("WAVEBOX_PLAN_CACHE_CHECK", "1"), is("WAVEBOX_PLAN_CACHE", "0"));
}

void finish_standby_ends() {
  lnx::finish_standby_ends();
}

Result<std::shared_ptr<lnx::Standby>> make_standby(RunRequest req) {
  req.argv = {"true"};
  req.command_line = "true";
  req.approve = nullptr;
  req.standby.reset();
  req.prepare_ahead = true;
  for (int& fd : req.stdio) fd = -1;
  Prepared p = WB_TRY(prepare(std::move(req)));
  if (!p.sandboxed || p.internal->mac) {
    return make_error(ErrorKind::kUnavailable, "only a sandboxed Linux run is prepared ahead");
  }
  return lnx::make_standby(std::move(p.internal->run));
}

Result<std::string> describe(Prepared& p, bool json) {
  if (p.sandboxed && p.internal->mac) return describe_macos(*p.internal->mac, json);
  if (json) return make_error(ErrorKind::kUsage, "--json: for --platform macos (the Linux invocation prints as text)");
  if (!p.sandboxed) {
    std::string line;
    for (const auto& a : p.unsandboxed.command) line += (line.empty() ? "" : " ") + a;
    return fmt::format("# unsandboxed ({})\n{}\n", p.decision.reason, line);
  }
  return lnx::describe_sandboxed(std::move(p.internal->run));
}

// ---- running ----

struct Run::State {
  std::unique_ptr<Internal> internal;
  bool sandboxed = false;
  lnx::SignalQueue signals;
  pid_t pid = -1;  // unsandboxed: the command
  Result<Outcome> result = Outcome{};
  std::unique_ptr<MacStarted> mac;  // a macOS run's process and proxy
  std::mutex proxy_mu;              // the proxy's refusals (on its thread)
  ViolationLog proxy_refusals;
};

Run::Run(std::unique_ptr<State> state) : state_(std::move(state)), done_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

Run::~Run() {
  if (thread_.joinable()) {
    signal(SIGKILL);
    thread_.join();
  }
}

void Run::signal(int sig) {
  if (state_->mac) {
    if (!waited_) state_->mac->process->signal(sig);
  } else if (state_->sandboxed) {
    state_->signals.push(sig);
  } else if (state_->pid > 0 && !waited_) {
    ::kill(state_->pid, sig);
  }
}

Result<Outcome> Run::wait() {
  if (body_) std::exchange(body_, nullptr)();
  if (thread_.joinable()) thread_.join();
  waited_ = true;
  return state_->result;
}

namespace {

Outcome finish(const Internal& in, const lnx::RunOutcome& o);

// The proxy for one run: its own policy and violation sink, on the listeners of its own
// network namespace. Started at the first connection.
void wire_network(Internal& in, std::unique_ptr<netproxy::Proxy>& proxy, std::uint64_t& tenant) {
  lnx::LinuxRun& run = in.run;
  const Settings& s = in.req.settings;
  run.start_network = [&in, &s, &proxy, &tenant](sys::NetListeners listeners,
                                                 std::function<void(const Violation&)> sink) -> Status {
    netproxy::ProxyConfig cfg;
    cfg.policy = in.net_policy;
    cfg.on_refusal = std::move(sink);
    cfg.forward_http_port = s.sandbox.network.http_proxy_port;
    cfg.forward_socks_port = s.sandbox.network.socks_proxy_port;
    cfg.ask = in.req.ask_network;
    cfg.approval_timeout_s = in.req.network_approval_timeout_s;
    if (in.req.shared_proxy) {
      tenant = WB_TRY(in.req.shared_proxy->attach(std::move(cfg), std::move(listeners)));
      return ok_status();
    }
    proxy = WB_TRY(netproxy::Proxy::start(std::move(cfg), std::move(listeners)));
    return ok_status();
  };
  run.stop_network = [&in, &proxy, &tenant] {
    if (proxy) proxy->stop();
    if (tenant && in.req.shared_proxy) in.req.shared_proxy->detach(std::exchange(tenant, 0));
  };
}

// The sandboxed run on the calling thread, signals taken from signals.
Result<Outcome> supervise_here(Internal& in, lnx::SignalQueue& signals) {
  // The proxy holds two sockets per tunnel: the soft limit goes up once for the process (a
  // sandbox's keeper gets the original back).
  static std::once_flag raised;
  std::call_once(raised, sys::raise_fd_limit);
  std::unique_ptr<netproxy::Proxy> proxy;
  std::uint64_t tenant = 0;
  wire_network(in, proxy, tenant);
  in.run.signals = &signals;
  auto ran = lnx::run_sandboxed(std::move(in.run));
  // The run stops its network itself (bwrap/run/run.cpp); this only makes sure.
  if (tenant && in.req.shared_proxy) in.req.shared_proxy->detach(std::exchange(tenant, 0));
  auto o = WB_TRY(std::move(ran));
  return finish(in, o);
}

Outcome finish(const Internal& in, const lnx::RunOutcome& o) {
  Outcome out;
  out.sandboxed = true;
  out.exit_code = o.exit_code;
  std::string command_line;
  for (const auto& a : in.req.argv) command_line += (command_line.empty() ? "" : " ") + a;
  out.violations = filter_ignored(o.violations, in.req.settings.sandbox.ignore_violations, command_line);
  out.more = o.more;
  out.timed_out = o.timed_out;
  out.prepared_ahead = o.prepared_ahead;
  out.plan_kept = o.plan_kept;
  out.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - in.started).count();
  return out;
}

// The unsandboxed command as a child (the CLI execs it in place instead).
Result<pid_t> spawn_unsandboxed(const Internal& in) {
  const RunRequest& req = in.req;
  const std::string path_env = path_of(req.env);
  std::string exe = req.argv[0].find('/') != std::string::npos ? req.argv[0] : sys::find_in_path(req.argv[0], path_env);
  if (exe.empty()) return make_error(ErrorKind::kNotFound, fmt::format("{}: command not found", req.argv[0]));
  std::vector<char*> av, ev;
  for (const auto& a : req.argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  for (const auto& e : req.env) ev.push_back(const_cast<char*>(e.c_str()));
  ev.push_back(nullptr);
  // Its standard descriptors moved above 2 first, so that placing one cannot clobber another.
  int from[3];
  for (int i = 0; i < 3; ++i) from[i] = req.stdio[i] < 0 ? -1 : ::fcntl(req.stdio[i], F_DUPFD_CLOEXEC, 10);
  int errpipe[2];
  if (::pipe2(errpipe, O_CLOEXEC) != 0) return sys::sys_error("pipe2", "spawn", errno);
  const pid_t parent = ::getpid();
  const char* cwd = req.cwd.c_str();
  const char* path = exe.c_str();
  // fork, not posix_spawn: the child arms its parent-death signal (nothing may outlive the
  // process that started it, SIGKILL of a server included); only async-signal-safe calls after.
  pid_t pid = ::fork();
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // serve blocks SIGPIPE in its threads
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
    for (int i = 0; i < 3; ++i) {
      if (from[i] < 0) {
        ::close(i);
      } else if (::dup2(from[i], i) != i) {
        ::_exit(127);
      }
    }
    int err = 0;
    if (::chdir(cwd) != 0) {
      err = errno;
    } else {
      ::execve(path, av.data(), ev.data());
      err = errno;
    }
    (void)!::write(errpipe[1], &err, sizeof err);
    ::_exit(127);
  }
  int fork_err = errno;
  for (int f : from) {
    if (f >= 0) ::close(f);
  }
  ::close(errpipe[1]);
  if (pid < 0) {
    ::close(errpipe[0]);
    return sys::sys_error("fork", req.argv[0], fork_err);
  }
  int err = 0;
  ssize_t n;
  do {
    n = ::read(errpipe[0], &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  ::close(errpipe[0]);
  if (n == static_cast<ssize_t>(sizeof err)) {
    int ws;
    ::waitpid(pid, &ws, 0);
    if (err == ENOENT) return make_error(ErrorKind::kNotFound, fmt::format("{}: command not found", req.argv[0]));
    return make_error(ErrorKind::kNotExecutable, fmt::format("{}: {}", req.argv[0], std::strerror(err)));
  }
  return pid;
}

}  // namespace

Result<std::unique_ptr<Run>> start(Prepared p, bool in_wait) {
  auto st = std::make_unique<Run::State>();
  st->internal = std::move(p.internal);
  st->sandboxed = p.sandboxed;
  if (!st->sandboxed) st->pid = WB_TRY(spawn_unsandboxed(*st->internal));
  if (st->sandboxed && st->internal->mac) {
    Run::State* raw = st.get();
    st->mac = WB_TRY(start_macos(std::move(*st->internal->mac), st->internal->req, [raw](const Violation& v) {
      std::lock_guard<std::mutex> lk(raw->proxy_mu);
      if (raw->proxy_refusals.add(v) && raw->internal->req.on_refusal) raw->internal->req.on_refusal(v);
    }));
  }
  std::unique_ptr<Run> run(new Run(std::move(st)));
  Run::State* state = run->state_.get();
  int done = run->done_.get();
  auto body = [state, done] {
    if (state->mac) {
      seatbelt::Exit e = state->mac->process->wait();
      state->mac->proxy.reset();  // its refusals are all in
      state->mac->warn_new_repositories(*state->internal->req.log);
      lnx::RunOutcome o;
      o.exit_code = e.exit_code;
      o.timed_out = e.timed_out;
      o.violations = e.violations;
      o.more = e.more;
      for (auto& v : o.violations) {
        if (v.kind != Refused::kFileWrite || !v.reason.empty()) continue;
        // A guard that covers it says why, and no setting allows it.
        if (std::string why = protection_reason(state->mac->protections, v.target); !why.empty()) {
          v.reason = std::move(why);
          v.code = RefusalCode::kProtected;
        }
      }
      {
        std::lock_guard<std::mutex> lk(state->proxy_mu);
        for (const auto& v : state->proxy_refusals.items()) o.violations.push_back(v);
        o.more += state->proxy_refusals.dropped();
      }
      state->result = finish(*state->internal, o);
    } else if (state->sandboxed) {
      state->result = supervise_here(*state->internal, state->signals);
    } else {
      int ws = 0;
      while (::waitpid(state->pid, &ws, 0) < 0 && errno == EINTR) {
      }
      Outcome out;
      out.exit_code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
      out.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - state->internal->started).count();
      state->result = out;
    }
    uint64_t one = 1;
    (void)!::write(done, &one, sizeof one);
  };
  if (in_wait) {
    run->body_ = std::move(body);
  } else {
    run->thread_ = std::thread(std::move(body));
  }
  return run;
}

Result<Outcome> run_here(Prepared p, int signal_fd) {
  if (!p.sandboxed || p.internal->mac) {
    // macOS, or unsandboxed: the run on its own thread; this one forwards signals until it ends.
    // An unsandboxed command shares the caller's process group, so the terminal's own signals
    // reach it without us; only those sent to wavebox (kill) are passed on.
    const bool shares_group = !p.sandboxed;
    auto run = WB_TRY(start(std::move(p)));
    while (signal_fd >= 0) {
      struct pollfd fds[2] = {{run->done_fd(), POLLIN, 0}, {signal_fd, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
      if (fds[0].revents) break;
      struct signalfd_siginfo si;
      if (fds[1].revents && ::read(signal_fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si) &&
          !(shares_group && si.ssi_code == SI_KERNEL)) {
        run->signal(static_cast<int>(si.ssi_signo));
      }
    }
    return run->wait();
  }
  lnx::SignalQueue signals(signal_fd);
  return supervise_here(*p.internal, signals);
}

Result<std::shared_ptr<netproxy::Proxy>> start_shared_proxy() {
  static std::once_flag raised;
  std::call_once(raised, sys::raise_fd_limit);
  auto p = WB_TRY(netproxy::Proxy::start_shared());
  return std::shared_ptr<netproxy::Proxy>(std::move(p));
}

long proxy_thread_id(const netproxy::Proxy& proxy) {
  return proxy.loop_thread_id();
}

}  // namespace wb::engine
