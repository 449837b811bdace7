#pragma once
// One run is a value. A RunRequest (argv, cwd, environment, standard descriptors, settings,
// flags, logger) goes in; prepare() decides (core/decision.hpp), checks the platform and builds the policy;
// start() runs it; Run::wait() gives the Outcome. Nothing process-wide is read or changed on the
// way (no signal mask or handler, no cwd, no environment, no fds 0-2 of the process, no global
// log): the CLI, `serve` and the component tests run commands through here, several at once in
// one process if they like.
#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/decision.hpp"

namespace wb::netproxy {
class Proxy;
}
namespace wb::lnx {
struct Standby;
class PlanCache;
}  // namespace wb::lnx
#include "core/invocation.hpp"
#include "core/log.hpp"
#include "core/policy.hpp"
#include "core/result.hpp"
#include "core/settings.hpp"
#include "core/sys/fd.hpp"
#include "core/sys/fs.hpp"
#include "core/sys/platform.hpp"
#include "core/violations.hpp"
#include "seatbelt/plan.hpp"

namespace wb::engine {

// A sandbox's keeper and bwrap started before the request is made: `wavebox run` starts one
// first thing, so that the namespaces and bwrap get going on the other core while it reads the
// settings. prepare() runs the command in it when it is what the settings would start (the same
// bwrap, the same standard descriptors, no cgroup of the run's own), and drops it otherwise (its
// keeper ends bwrap and exits; nothing is left to reap). Null where no sandbox can start.
struct EarlyLaunch;
// inherited: the launcher's record of the keeper it started (take_inherited_launch); taken when
// it checks out, else a launch of this process's own.
std::shared_ptr<EarlyLaunch> start_early(const int stdio[3], const Logger& log, const std::string& inherited = "");
// The launcher's record (WB_ENV_EARLY_LAUNCH), removed from the environment: called first thing
// in main, before anything reads or copies the environment ("" when there is none).
std::string take_inherited_launch();

struct RunRequest {
  std::vector<std::string> argv;  // the command
  std::string command_line;       // the command as a shell would see it (the decision's input)
  std::string cwd;                // where the command starts, absolute
  // The project, writable (empty: cwd): the root settings discovery found (cli), the session's
  // directory (serve). cwd lies inside it.
  std::string workspace;
  std::string home;
  std::vector<std::string> env;  // the caller's environment, "K=V"
  int stdio[3] = {0, 1, 2};      // the command's standard descriptors (-1: closed for it)
  // When stdin and stdout are one terminal, the command gets a pty of its own that wavebox
  // relays (job control inside); `wavebox run` asks for it, serve never has a terminal.
  bool own_terminal = false;
  Settings settings;                        // merged; --allow-domain hosts already in the allowlist
  std::vector<std::string> settings_files;  // read or discoverable: write-protected
  std::vector<std::string> extra_writable;  // --allow-write, absolute
  std::vector<std::string> pass_env;        // credential variables passed through anyway
  bool disable_sandbox = false;             // --dangerously-disable-sandbox
  bool network_only = false;                // --network-only
  bool network_off = false;                 // --network off
  bool plan_only = false;                   // `wrap`: nothing is started
  // An ask rule matched (or an unsandboxed run needs approval): the user's answer. The CLI asks
  // the terminal (or takes --approve); serve takes the request's "approve". Empty: refused.
  std::function<bool(const Decision&)> approve;
  // No one can be asked (--no-prompt, serve): every "ask" decision needs approve's yes, whatever
  // its reason (an unusable sandbox, no allow rule), not only a matched rule's.
  bool every_ask_needs_approval = false;
  // A host on neither network list: asked about when set (serve's network/requestApproval),
  // on the proxy's thread; answer(true | false) once, from any thread. Empty: refused.
  std::function<void(const std::string& host, int port, std::function<void(bool)> answer)> ask_network;
  double network_approval_timeout_s = 30;
  // A proxy loop shared by many runs (serve): the run attaches its listeners to it instead of
  // starting a proxy of its own. It must outlive the run.
  netproxy::Proxy* shared_proxy = nullptr;
  std::string audit_log;  // --audit-log (besides sandbox.auditLog): guarded in the sandbox
  // The system planned for: the one wavebox runs on, or macOS for `wrap --platform macos`
  // (planned from cwd, home and settings only). A run (not plan_only) for macOS on another
  // system needs macos.sandbox_exec set by the caller (the executor's tests, with a fake).
  std::optional<sys::Platform> platform;
  seatbelt::Facts macos;
  const Logger* log = &log::process();
  // Each refusal as it happens, once per distinct line, from any thread (serve pushes them to
  // its client); the outcome still lists them all at the end.
  std::function<void(const Violation&)> on_refusal;
  // The PATH of whoever asked for the run when the command's own differs (serve: the server's,
  // started by the user's shell; a client may give the command another): guarded as well.
  std::string host_path;
  // Every PATH whose directories are guarded: the command's and host_path.
  std::vector<std::string> path_values() const {
    std::vector<std::string> v;
    for (const auto& kv : env) {
      if (kv.rfind("PATH=", 0) == 0) v.assign(1, kv.substr(5));
    }
    if (!host_path.empty()) v.push_back(host_path);
    return v;
  }
  // A sandbox made ahead for this request's session (make_standby): the run starts in it when
  // it is what the run would make now (the same plan, the same files under its mounts); else it
  // is dropped and the run made as usual.
  std::shared_ptr<lnx::Standby> standby;
  // A session's kept plan (new_plan_cache): its runs and standbys plan from it while nothing
  // the plan read of the filesystem changed. Null: every run plans afresh.
  std::shared_ptr<lnx::PlanCache> plan_cache;
  bool prepare_ahead = false;          // make_standby's own request (no command of its own runs)
  std::shared_ptr<EarlyLaunch> early;  // start_early's, taken or dropped by prepare()
};

struct Availability {
  bool enabled_here = false;  // sandbox.enabled, and this platform is in enabledPlatforms
  // A missing dependency or platform (degrade with one warning unless
  // failIfUnavailable): why the sandbox cannot run here.
  std::string unavailable;
  // Everything is installed but the sandbox cannot start (user namespaces refused): never a
  // reason to run unsandboxed; the run is refused with the fix.
  std::string cannot_start;
};
Availability check_availability(const Settings& s, const sys::PlatformInfo& plat, const sys::BwrapInfo& bwrap,
                                const std::string& state_root);

Availability availability_here(const Settings& s);
// The entries of these PATH values, each also where it leads on disk (for core/policy's guards).
std::vector<std::string> resolved_path_entries(const std::vector<std::string>& path_values, const std::string& home);
// Why a command the decision lets run would still not run on this machine (a sandbox that
// cannot start, or one the settings require that is unavailable); "" when it would run.
std::string wont_run_here(const Settings& s, const Decision& d);

// `wavebox decide`: the decision for a command string under these settings, on this machine
// (whether the sandbox is available here counts), and the object it prints.
Decision decide_here(const Settings& s, const std::string& command, bool disable_sandbox, const Logger& log);
nlohmann::json decision_json(const Decision& d, const std::vector<std::string>& adds_hosts);

// What the policy is made from, for this request and state dir (doctor prints the policy too).
Result<PolicyContext> policy_context(const RunRequest& req, const sys::StateDir& state);

struct Outcome {
  int exit_code = 0;  // the command's, 128+N, 124 on timeout
  bool sandboxed = false;
  std::vector<Violation> violations;  // in order, deduplicated, ignoreViolations applied
  size_t more = 0;                    // refusals beyond the cap
  bool timed_out = false;             // sandbox.resources.timeoutSeconds ended it
  double elapsed_ms = 0;              // from prepare() to the end
  bool prepared_ahead = false;        // it ran in RunRequest::standby
  bool plan_kept = false;             // planned from RunRequest::plan_cache, nothing probed again
};

struct Internal;  // the platform's part (engine.cpp)

// A run decided and planned, not started. Dropping it ends what it started ahead (the keeper).
struct Prepared {
  Decision decision;
  bool sandboxed = false;
  // Unsandboxed: what runs, as it would without wavebox (program as given, looked up on PATH by
  // whoever executes it; env the caller's; command the argv). Sandboxed: empty.
  Invocation unsandboxed;
  std::string cwd;
  std::unique_ptr<Internal> internal;
  Prepared();
  Prepared(Prepared&&) noexcept;
  Prepared& operator=(Prepared&&) noexcept;
  ~Prepared();
};

// Decides, checks, plans. Errors carry their kind: kDenied (a deny rule), kNeedsApproval (an ask
// without approval),
// kNotFound/kNotExecutable (127/126), kUnavailable, kUsage, kSettings, kSandboxFailed (125).
Result<Prepared> prepare(RunRequest req);
// `wavebox wrap`: what the run would execute, as text (json: as a JSON object; macOS only).
Result<std::string> describe(Prepared& p, bool json = false);

class Run {
 public:
  ~Run();  // a run not waited for is ended (SIGKILL to its whole sandbox) and reaped
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;
  // Blocks until the command and everything it started have ended. Once.
  Result<Outcome> wait();
  // Forwards a signal to the command's process group; SIGKILL ends the whole sandbox.
  void signal(int sig);
  void cancel() { signal(SIGKILL); }
  // Readable once the run has ended (poll it beside other work; then wait() returns at once).
  int done_fd() const { return done_.get(); }

  struct State;

 private:
  friend Result<std::unique_ptr<Run>> start(Prepared p, bool in_wait);
  explicit Run(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
  sys::Fd done_;
  std::thread thread_;
  std::function<void()> body_;  // start(p, true): what wait() runs on its caller's thread
  bool waited_ = false;
};

// Starts the prepared run: the command runs when this returns without error. in_wait: its
// supervision runs in wait(), on the caller's thread, instead of a thread of its own (one
// hand-over less; serve's workers wait at once). signal() and cancel() work from any thread
// either way.
Result<std::unique_ptr<Run>> start(Prepared p, bool in_wait = false);
// A run on the calling thread, to its end: what a one-command process needs (no thread to make
// for a sandboxed run on Linux). signal_fd: a signalfd whose signals are forwarded to the command, or -1.
Result<Outcome> run_here(Prepared p, int signal_fd);

// A sandbox made before its command (serve keeps one per session, Linux only): for req's
// workspace, settings and environment, with everything but the command; hand it to the next
// RunRequest::standby of that session. An error when such a run cannot have one (unsandboxed,
// macOS, stubs needed, --network off). Call it on a thread that outlives the standby (the
// keeper's parent-death signal follows the thread).
Result<std::shared_ptr<lnx::Standby>> make_standby(RunRequest req);
// A kept plan for one session's runs (RunRequest::plan_cache); a new one for new settings.
using PlanCache = lnx::PlanCache;
std::shared_ptr<PlanCache> new_plan_cache();
// Blocks until every standby ending in the background has ended (before a server exits).
void finish_standby_ends();

// One proxy loop for many runs (serve): give it to each RunRequest::shared_proxy. Stopped when
// the last holder lets go (after every run using it).
Result<std::shared_ptr<netproxy::Proxy>> start_shared_proxy();
long proxy_thread_id(const netproxy::Proxy& proxy);

}  // namespace wb::engine
