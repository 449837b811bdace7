#pragma once
// The Linux run: probes, plan, stubs, exec, cleanup. The one place on Linux that acts.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bwrap/exec.hpp"
#include "core/log.hpp"
#include "core/policy.hpp"
#include "core/result.hpp"
#include "core/settings.hpp"
#include "core/sys/fd.hpp"
#include "core/sys/fs.hpp"
#include "core/violations.hpp"

namespace wb::lnx {

struct LinuxRun {
  FsPolicy policy;
  std::vector<std::string> command;  // resolved argv
  std::string exe;                   // where command[0] was found on PATH ("" = let the shim search PATH)
  std::string cwd;
  std::string home;
  std::vector<std::string> env;         // the command's environment
  std::vector<std::string> launch_env;  // the caller's: what the keeper and bwrap start with
  int stdio[3] = {0, 1, 2};             // the command's standard descriptors (-1: closed)
  SignalQueue* signals = nullptr;       // signals for the command while it runs
  const Logger* log = &log::process();
  std::string bwrap;
  int bwrap_version[3] = {0, 0, 0};
  sys::StateDir state;
  std::optional<double> timeout_seconds;
  long long cpu_seconds = 0, pids = 0, memory_mb = 0;  // sandbox.resources (0 = none)
  bool allow_unix_sockets = false;                     // network.allowAllUnixSockets
  std::vector<std::string> unix_socket_paths;          // network.allowUnixSockets, real paths
  bool network_off = false;                            // --network off: no proxy, no proxy variables
  // Serves the sandbox's proxy listeners (the caller starts netproxy here; bwrap/ does not
  // include netproxy/); refusals go to sink, from any thread.
  std::function<Status(sys::NetListeners listeners, std::function<void(const Violation&)> sink)> start_network;
  std::function<void()> stop_network;
  // Started early by launch_sandbox (the namespaces and bwrap get going while the caller still
  // checks and plans); run_sandboxed starts one itself when this is empty.
  std::unique_ptr<Launch> launch;
};

// Starts the keeper and bwrap for a run (bwrap/exec.hpp, Launch); dropping the result unused
// ends them. Fails when wavebox-shim is missing.
Result<std::unique_ptr<Launch>> launch_sandbox(const std::string& bwrap, const int stdio[3],
                                               const std::vector<std::string>& env, const Logger& log);

struct RunOutcome {
  int exit_code = 0;
  std::vector<Violation> violations;  // in order, deduplicated, not yet filtered by ignore rules
  size_t more = 0;                    // beyond the cap
  bool observed_writes = false;       // the observer ran (write reports are complete)
  bool relayed_stderr = false;        // stderr was relayed (read reports are possible)
  bool timed_out = false;             // sandbox.resources.timeoutSeconds ended it
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

}  // namespace wb::lnx
