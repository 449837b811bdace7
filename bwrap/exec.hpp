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
  // Memory files the caller creates now and fills in `prepare` (bwrap reads them only after
  // its options, which come last):
  int seccomp_fd = -1;  // fd 5: the compiled filter, refusals and observed calls in one program
  std::vector<std::string> command;
  std::string exe;  // command[0] found on PATH already ("" = the shim searches PATH)
  std::vector<std::string> env;
  std::optional<double> timeout_seconds;
  // The command runs as `shim 5 7 LIMITS 8 EXE COMMAND...` (bwrap/shim.c): the shim places the
  // mounts of fd 8 (render_shim_mounts, filled in `prepare`), loads the filter of fd 5 with a
  // notification listener and hands the listener out over its socket, fd 7.
  std::string shim;
  std::string limits = "0:0:0";  // CPU seconds : processes : memory MB for the command (0 = none)
  int shim_mounts_fd = -1;
  Observer* observer = nullptr;
  // bwrap runs inside a fresh network namespace (bwrap/netns.hpp); on_listeners receives the
  // proxy's listening sockets before the command can connect, and must start serving them.
  std::function<Status(sys::Fd http, sys::Fd socks)> on_listeners;
  // Runs while the namespace is made and bwrap starts: plans the sandbox, fills the memory
  // files and returns bwrap's options (bwrap_options), which go to bwrap through a pipe on
  // fd 3 (`--args 3`, so they never show in its command line). An error stops everything
  // before bwrap reads a thing.
  std::function<Result<std::string>()> prepare;
  // Called with each complete line the command wrote on stderr, when stderr is relayed.
  std::function<void(const std::string&)> stderr_line;
  // Called once bwrap reports the command's exit code: pid 1 of the sandbox has ended, and with
  // it every process inside, so what the sandbox held on the host (stubs) can be given back
  // while bwrap and the keeper finish.
  std::function<void()> on_sandbox_ended;
};

constexpr int kArgsFd = 3;
constexpr int kStatusFd = 4;
constexpr int kSeccompFd = 5;
constexpr int kObserverSockFd = 7;
constexpr int kShimMountsFd = 8;

// A new memory file (close-on-exec), for ExecRequest's fds.
Result<sys::Fd> new_memfd(const char* name);
// bwrap's options as `--args` reads them (NUL-separated), with the --json-status-fd exec_bwrap
// relies on.
std::string bwrap_options(const std::vector<std::string>& args);

// Returns the exit status wavebox should exit with (the command's, 128+N, or 124 on timeout),
// or kSandboxFailed when bubblewrap could not start the command.
Result<int> exec_bwrap(const ExecRequest& req);

}  // namespace wb::lnx
