#pragma once
// The Linux run: probes, plan, stubs, exec, cleanup. The one place on Linux that acts.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bwrap/launch/exec.hpp"
#include "core/log.hpp"
#include "core/policy.hpp"
#include "core/result.hpp"
#include "core/settings.hpp"
#include "core/sys/cgroup.hpp"
#include "core/sys/fd.hpp"
#include "core/sys/fs.hpp"
#include "core/violations.hpp"

namespace wb::lnx {

struct Standby;   // bwrap/warm/standby.cpp
class PlanCache;  // bwrap/warm/kept_plan.hpp

struct LinuxRun {
  FsPolicy policy;
  std::vector<std::string> command;  // resolved argv
  std::string exe;                   // where command[0] was found on PATH ("" = let the shim search PATH)
  std::string cwd;
  std::string home;
  std::vector<std::string> env;         // the command's environment
  std::vector<std::string> launch_env;  // what the keeper and bwrap start with
  wb_net_config net{};                  // the allowlist's own ports and addresses, for the keeper
  int stdio[3] = {0, 1, 2};             // the command's standard descriptors (-1: closed)
  // An interactive run: when stdin and stdout are one terminal, the command gets a terminal of
  // its own (bwrap/launch/terminal.hpp), so job control works inside.
  bool own_terminal = false;
  SignalQueue* signals = nullptr;  // signals for the command while it runs
  const Logger* log = &log::process();
  std::function<void(const Violation&)> on_refusal;  // each new refusal as it happens (RunRequest's)
  std::string bwrap;
  int bwrap_version[3] = {0, 0, 0};
  sys::StateDir state;
  std::optional<double> timeout_seconds;
  long long cpu_seconds = 0, pids = 0, memory_mb = 0;  // sandbox.resources (0 = none)
  double cpus = 0;
  // The run's own cgroup (core/sys/cgroup.hpp), when the limits could be the kernel's: made
  // before the launch, which joins it; memory and pids are then not rlimits.
  std::shared_ptr<sys::RunCgroup> cgroup;
  bool allow_unix_sockets = false;             // network.allowAllUnixSockets
  std::vector<std::string> unix_socket_paths;  // network.allowUnixSockets, real paths
  bool network_off = false;                    // --network off: no proxy, no proxy variables
  // Serves the sandbox's proxy listeners (the caller starts netproxy here; bwrap/ does not
  // include netproxy/); refusals go to sink, from any thread.
  std::function<Status(sys::NetListeners listeners, std::function<void(const Violation&)> sink)> start_network;
  std::function<void()> stop_network;
  // Started early by launch_sandbox (the namespaces and bwrap get going while the caller still
  // checks and plans); run_sandboxed starts one itself when this is empty.
  std::unique_ptr<Launch> launch;
  // Made ahead (make_standby, for serve): used instead of a new sandbox when this run's plan is
  // the one it was made from and its mounts' files are unchanged; else dropped.
  std::shared_ptr<Standby> standby;
  // A session's kept plan (serve): the standby's and the command's plans come from it while
  // nothing they read changed.
  std::shared_ptr<PlanCache> plan_cache;
};

// Starts the keeper and bwrap for a run (bwrap/launch/exec.hpp, Launch); dropping the result unused
// ends them. Fails when wavebox-shim is missing. stdio: the command's (whether its stderr can
// be relayed); nullptr for a standby (serve: always a pipe of its own).
// cgroup: the run's, which the sandbox is started in (or null). net: the allowlist's ports and
// addresses for the keeper; null: they come later (send_net_config), from settings not read yet.
Result<std::unique_ptr<Launch>> launch_sandbox(const std::string& bwrap, const int* stdio,
                                               const std::vector<std::string>& env, const Logger& log,
                                               const sys::RunCgroup* cgroup, const wb_net_config* net);
// The run's own cgroup for sandbox.resources (memoryMB, pids, cpus), when one can be made; null
// otherwise (the rlimits hold; a cpus setting, which has none, is warned about). An error when
// the settings' limit would not hold without it: pids for root (RLIMIT_NPROC does not bind root).
Result<std::shared_ptr<sys::RunCgroup>> run_cgroup(const sys::CgroupLimits& limits, const Logger& log);
// The rlimits the shim sets on the command: those the cgroup does not hold.
std::string rlimits_for(const LinuxRun& run, const sys::RunCgroup* cgroup);

// A sandbox made before its command (bwrap/warm/standby.cpp): namespaces, bwrap, mounts, filter and
// the observer's listener, for run's policy (its command is not run). Give it to a later
// LinuxRun::standby. An error when this run cannot have one (stubs, --network off, a plan bwrap
// must place, no mount API): then runs are made the usual way. Dropping it ends it. The keeper's
// parent-death signal follows the calling thread: call it on a thread that outlives the standby.
Result<std::shared_ptr<Standby>> make_standby(LinuxRun run);
// Blocks until every standby ending in the background (after its command, or dropped) has
// ended: a server calls it before it exits, so nothing of one is left when the process goes.
void finish_standby_ends();

struct RunOutcome {
  int exit_code = 0;
  std::vector<Violation> violations;  // in order, deduplicated, not yet filtered by ignore rules
  size_t more = 0;                    // beyond the cap
  bool observed_writes = false;       // the observer ran (write reports are complete)
  bool relayed_stderr = false;        // stderr was relayed (read reports are possible)
  bool timed_out = false;             // sandbox.resources.timeoutSeconds ended it
  bool prepared_ahead = false;        // it ran in LinuxRun::standby
  bool plan_kept = false;             // its plan was the session's kept one (LinuxRun::plan_cache)
};

// Runs the command sandboxed; returns its exit status and what was refused.
Result<RunOutcome> run_sandboxed(LinuxRun run);
// Prints the bubblewrap command line the run would use (stubs it would create as comments).
Result<std::string> describe_sandboxed(LinuxRun run);

// Where wavebox-shim is ("" when missing): next to wavebox, or in ../libexec/wavebox/.
std::string shim_path();

// Whether wavebox-shim places the plain read-only mounts itself (Linux 5.12+ mount API, and
// WAVEBOX_SHIM_MOUNTS is not 0); otherwise bwrap places every mount.
bool shim_mounts_available();
// Whether read masks can be FUSE filesystems that report each read (/dev/fuse opens for the
// caller, and WAVEBOX_FUSE is not 0); otherwise reads are recognised in a relayed stderr only
// (*why: the reason).
bool fuse_masks_available(std::string* why = nullptr);

}  // namespace wb::lnx
