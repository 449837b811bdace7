#pragma once
// Starts bubblewrap with the planned arguments and supervises it: signals forwarded to the
// command, the command's exit status told apart from bubblewrap's own failure (--json-status-fd),
// an optional timeout.
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace wb::lnx {

struct ExecRequest {
  std::string bwrap;
  std::vector<std::string> args;  // passed through --args, so they never show in /proc/*/cmdline
  std::vector<std::string> command;
  std::vector<std::string> env;
  int seccomp_fd = -1;            // becomes fd 5 in bwrap when >= 0 (args must say --seccomp 5)
  std::optional<double> timeout_seconds;
};

constexpr int kArgsFd = 3;
constexpr int kStatusFd = 4;
constexpr int kSeccompFd = 5;

// Returns the exit status wavebox should exit with (the command's, 128+N, or 124 on timeout),
// or kSandboxFailed when bubblewrap could not start the command.
Result<int> exec_bwrap(const ExecRequest& req);

}  // namespace wb::lnx
