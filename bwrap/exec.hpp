#pragma once
// Starts bubblewrap with the planned arguments and supervises it: signals forwarded to the
// command, the command's exit status told apart from bubblewrap's own failure (--json-status-fd),
// an optional timeout, the observer's notifications, and (when the caller's stderr is a pipe)
// the command's stderr relayed line by line so refused reads can be recognised.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bwrap/observer.hpp"
#include "core/sys/fd.hpp"
#include "core/result.hpp"

namespace wb::lnx {

struct ExecRequest {
  std::string bwrap;
  std::vector<std::string> args;  // passed through --args, so they never show in /proc/*/cmdline
  std::vector<std::string> command;
  std::vector<std::string> env;
  int seccomp_fd = -1;            // becomes fd 5 in bwrap when >= 0 (args must say --seccomp 5)
  std::optional<double> timeout_seconds;
  // The observer: the command runs as `shim 6 7 COMMAND...` with the observer filter on fd 6 and
  // the shim's socket on fd 7.
  std::string shim;
  std::string limits = "0:0:0";  // CPU seconds : processes : memory MB for the command (0 = none)
  int observer_bpf_fd = -1;
  Observer* observer = nullptr;
  // Run bwrap inside a fresh network namespace (bwrap/netns.hpp); on_listeners receives the
  // proxy's listening sockets before the command can connect, and must start serving them.
  bool netns = false;
  std::function<Status(sys::Fd http, sys::Fd socks)> on_listeners;
  // Called with each complete line the command wrote on stderr, when stderr is relayed.
  std::function<void(const std::string&)> stderr_line;
};

constexpr int kArgsFd = 3;
constexpr int kStatusFd = 4;
constexpr int kSeccompFd = 5;
constexpr int kObserverBpfFd = 6;
constexpr int kObserverSockFd = 7;

// Returns the exit status wavebox should exit with (the command's, 128+N, or 124 on timeout),
// or kSandboxFailed when bubblewrap could not start the command.
Result<int> exec_bwrap(const ExecRequest& req);

}  // namespace wb::lnx
