#pragma once
// The Linux run: probes, plan, stubs, exec, cleanup. The one place on Linux that acts.
#include <optional>
#include <string>
#include <vector>

#include "core/policy.hpp"
#include "core/result.hpp"
#include "core/sys/fs.hpp"

namespace wb::lnx {

struct LinuxRun {
  FsPolicy policy;
  std::vector<std::string> command;  // resolved argv
  std::string cwd;
  std::string home;
  std::vector<std::string> env;  // the command's environment
  std::string bwrap;
  int bwrap_version[3] = {0, 0, 0};
  sys::StateDir state;
  std::optional<double> timeout_seconds;
  bool allow_unix_sockets = false;  // network.allowAllUnixSockets
};

// Runs the command sandboxed; returns the exit status to pass on.
Result<int> run_sandboxed(LinuxRun run);
// Prints the bubblewrap command line the run would use (stubs it would create as comments).
Result<std::string> describe_sandboxed(LinuxRun run);

}  // namespace wb::lnx
