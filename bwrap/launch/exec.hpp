#pragma once
// Starts bubblewrap with the planned arguments and supervises it: signals forwarded to the
// command, the command's exit status told apart from bubblewrap's own failure (--json-status-fd),
// an optional timeout, the observer's notifications, and (when the caller's stderr is a pipe)
// the command's stderr relayed line by line so refused reads can be recognised.
#include <signal.h>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bwrap/launch/netns.hpp"
#include "bwrap/shim/wire.h"
#include "bwrap/supervise/observer.hpp"
#include "core/log.hpp"
#include "core/result.hpp"
#include "core/sys/fd.hpp"

namespace wb::lnx {

constexpr int kArgsFd = WB_FD_ARGS;
constexpr int kStatusFd = WB_FD_STATUS;
constexpr int kSeccompFd = WB_FD_SECCOMP;
constexpr int kShimSpecFd = WB_FD_SPEC;
constexpr int kObserverSockFd = WB_FD_OBSERVER;
constexpr int kShimMountsFd = WB_FD_MOUNTS;

// The start of a run, before anything is planned: the keeper (bwrap/launch/netns.hpp) makes the
// namespaces and starts bwrap, which waits for its options on a pipe (fd 3), while wavebox
// plans. The command line is fixed now — `bwrap --args 3 -- wavebox-shim 5 7 6 8` — and
// everything that depends on the plan comes later through the descriptors: the seccomp program
// (fd 5), the command, its limits and where it was found (fd 6, the spec), the mounts (fd 8),
// the environment and bwrap's options (fd 3). The shim's socket is fd 7.
// Destroying a launch that was not run ends all of it (the keeper's death takes bwrap along).
// Nothing of the process changes: no signal mask, no handler, no environment; the keeper's end
// is seen through its pidfd. (Its parent-death signal follows the thread that made it: make
// launches on a thread that outlives the run.)
struct Launch {
  sys::Fd status_rd, status_wr, args_rd, args_wr, err_rd, err_wr, obs_ours, obs_theirs, keeper_pidfd;
  sys::Fd filter, spec, mounts;  // memory files, filled before the options are sent
  NetnsChild child;
  bool consumed = false;
  bool options_sent = false;     // bwrap has its options (sent before the plan)
  bool net_config_sent = false;  // the keeper has the allowlist's ports (send_net_config)
  std::string env_options;       // --clearenv/--setenv..., sent with the options
  std::vector<std::string> env;  // the keeper's and bwrap's own environment
  const Logger* log = nullptr;
  // err_rd carries bwrap's own messages always, the command's stderr too when this is set.
  bool relay_command_stderr = false;
  Launch() = default;
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;
  ~Launch();
};

// relay_stderr: the command's stderr goes through the pipe wavebox reads (see ExecRequest), the
// one bwrap writes its messages to. The command's standard descriptors never pass through bwrap
// (it has /dev/null and that pipe): the shim receives them with the word to start, so once the
// command and its processes are gone nothing but wavebox holds the caller's output open.
// bwrap's command line for a launch: `--args 3 -- wavebox-shim 5 7 6 8` (everything else comes
// through those descriptors).
std::vector<std::string> launch_args(const std::string& shim);

// env: the environment the keeper and bwrap start with (the caller's); the command's comes later.
// join: the run's cgroup (its cgroup.procs descriptors), which the keeper enters first.
// net: the allowlist's ports and addresses, sent to the keeper, which waits for them before it
// makes the listeners: at once, or (null) later by send_net_config (a sandbox started before the
// settings are read).
Result<std::unique_ptr<Launch>> start_launch(const std::string& bwrap, const std::string& shim, bool relay_stderr,
                                             const std::vector<std::string>& env, const Logger& log,
                                             const std::vector<int>& join = {}, const wb_net_config* net = nullptr);
Status send_net_config(Launch& L, const wb_net_config& net);
// A launch the launcher started before wavebox-core was loaded (bwrap/shim/wire.h,
// WB_ENV_EARLY_LAUNCH): its keeper (our child: the launcher became this process) and its
// descriptors in wb_early_fd order, each checked for what it must be, and the keeper checked to be
// our child running shim (the same file), before any is taken; a refusal takes nothing.
Result<std::unique_ptr<Launch>> adopt_launch(pid_t keeper, const int fds[], const std::string& shim, bool relay_stderr,
                                             const std::vector<std::string>& env, const Logger& log);
// A record not taken (adopt_launch refused it, or it names another shim): its numbers closed, and
// its keeper, when it is our child running shim, killed and reaped (an unsandboxed command would
// otherwise inherit it: an exec fires no parent-death signal).
void drop_unadopted(pid_t keeper, const int fds[], const std::string& shim);
// The keeper's WB_WORD_NET_CONFIG message ("" when net is not one).
std::string encode_net_config(const wb_net_config& net);

// Signals for the command from any thread (the caller's terminal, serve's terminate): queued,
// and the supervision loop woken through fd(). SIGKILL ends the whole sandbox.
class SignalQueue {
 public:
  SignalQueue();
  // Signals read from a signalfd instead (the CLI's terminal signals, when it supervises on its
  // own thread); the fd stays the caller's.
  explicit SignalQueue(int signalfd) : signalfd_(signalfd) {}
  void push(int sig);
  std::vector<int> take();
  int fd() const { return signalfd_ >= 0 ? signalfd_ : efd_.get(); }
  // The process's own signals (a one-command process): a stop of the command stops it too.
  bool whole_process() const { return signalfd_ >= 0; }

 private:
  std::mutex mu_;
  std::vector<int> pending_;
  sys::Fd efd_;
  int signalfd_ = -1;
};

class Terminal;
struct ExecRequest {
  std::vector<std::string> command;
  // --network off: the sandbox's listeners stop listening before the command can start (no
  // proxy, nothing reachable; a connection attempt is refused at once).
  bool network_off = false;
  std::string exe;  // command[0] found on PATH already ("" = the shim searches PATH)
  // The command's environment: bwrap gets it with its options (--clearenv, --setenv), so it
  // never shows in a command line and the shim starts with it.
  std::vector<std::string> env;
  // bwrap has --clearenv (0.5 and later); else each variable of wavebox's own environment the
  // command must not see is named with --unsetenv.
  bool bwrap_clearenv = true;
  std::optional<double> timeout_seconds;
  // The command's standard descriptors (-1: closed for it); stderr is relayed to stdio[2].
  int stdio[3] = {0, 1, 2};
  SignalQueue* signals = nullptr;  // what to forward to the command while it runs
  // A plan made from the scan cache (bwrap/plan/late_scan.hpp): no notification is handled before
  // late_fd is readable; then late_ready gives the observer what the check found.
  int late_fd = -1;
  std::function<void(Observer&)> late_ready;
  // Called at the command's first notification: a command that writes nothing (ls, cat, git
  // log) needs no check at all, and one that writes waits for it there, at its first call.
  std::function<void()> late_start;
  bool* timed_out = nullptr;  // set when the timeout ended the sandbox
  const Logger* log = nullptr;
  std::string limits = "0:0:0";  // CPU seconds : processes : memory MB for the command (0 = none)
  // Receives the listener of the shim's seccomp program (bwrap/shim/init.c).
  Observer* observer = nullptr;
  // An interactive run's terminal of its own (bwrap/launch/terminal.hpp): stdio holds its slave; the
  // supervision loop relays its master to the caller's terminal, raw while the command runs.
  Terminal* terminal = nullptr;
  // bwrap runs inside a fresh network namespace (bwrap/launch/netns.hpp); on_listeners receives the
  // proxy's listening sockets before the command can connect, and must start serving them.
  std::function<Status(sys::NetListeners)> on_listeners;
  // Called with each complete line the command wrote on stderr, when stderr is relayed.
  std::function<void(const std::string&)> stderr_line;
  // Called once bwrap reports the command's exit code: pid 1 of the sandbox has ended, and with
  // it every process inside, so what the sandbox held on the host (stubs) can be given back
  // while bwrap and the keeper finish.
  std::function<void()> on_sandbox_ended;
  // The process ends right after this run (wavebox run): once the shim said the sandbox is
  // empty, the keeper is killed, and reaped only after the run's other work (run_sandboxed), by
  // when it has died: no wait for it here (~0.1 ms); and what the run holds is left to the
  // process's exit. Never with a cgroup of the run's own, which is removed only once every
  // process of it is gone.
  bool leave_keeper = false;
};

// The shim's spec (bwrap/shim/wire.h): LIMITS, EXE ("-": search PATH), COMMAND, ARG...
std::string encode_limits(long long cpu_seconds, long long processes, long long memory_mb);
std::string encode_spec(const std::string& limits, const std::string& exe, const std::vector<std::string>& command);

// Writes bwrap's options into its pipe (EPIPE, not SIGPIPE, when bwrap is gone). Internal to
// bwrap/: the launch (bwrap/launch/launch.cpp) and the start (bwrap/launch/exec.cpp) send them.
Status send_options(const std::string& data, int to);

// A new memory file (close-on-exec), for the launch's fds.
Result<sys::Fd> new_memfd(const char* name);
// bwrap's options as `--args` reads them (NUL-separated), with the --json-status-fd exec_bwrap
// relies on.
std::string bwrap_options(const std::vector<std::string>& args);

// What does not depend on the plan, sent while the namespace is made and bwrap starts: the
// command, its limits and where it was found (the spec), and the command's environment; with
// early_options (bwrap's options when they are known before the plan: the shim places every
// mount, so they depend on the settings only) those too, so bwrap sets up its namespaces and
// root while the plan is made. An error drops the launch: nothing ran.
Status begin_launch(Launch& launch, const ExecRequest& req, const std::string& early_options);

// Once planned (the launch's filter and mount list filled): bwrap's options (bwrap_options) go
// to bwrap through the pipe on fd 3 (`--args 3`, so they never show in its command line), unless
// begin_launch sent them; then the shim gets the word to place the mounts and start the command.
// Returns the exit status wavebox should exit with (the command's, 128+N, or 124 on timeout),
// or kSandboxFailed when bubblewrap could not start the command.
Result<int> exec_bwrap(Launch& launch, const ExecRequest& req, const std::string& options);

// A sandbox made ahead of its command (serve's standby; bwrap/shim/wire.h): exec_bwrap's first
// half, up to the shim holding its mounts and filter and the observer its listener (req: the
// standby's observer; its command is not used). Then standby_go, once, with the command's
// request (its command, environment, limits, descriptors and signals; cwd: where it runs),
// supervises it as exec_bwrap would; or end_standby drops it (the keeper killed and reaped, and
// everything of the sandbox with it).
Status standby_begin(Launch& launch, const ExecRequest& req, const std::string& options);
Result<int> standby_go(Launch& launch, const ExecRequest& req, const std::string& cwd);
void end_standby(Launch& launch);
// Whether a standby still waits for its word (its keeper and shim alive, nothing said).
bool standby_alive(const Launch& launch, const Observer& observer);
// The standby's pid 1 (the shim), as the host numbers it; -1 when not known.
pid_t standby_init(const Launch& launch);
std::string encode_go_spec(const std::string& limits, const std::string& exe, const std::string& cwd,
                           const std::vector<std::string>& env, const std::vector<std::string>& command);

}  // namespace wb::lnx
