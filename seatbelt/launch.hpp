#pragma once
// macOS: the executor (POSIX only, so it runs and is tested anywhere against a fake sandbox-exec
// and a fake log). Starts sandbox-exec in a session of its own (the user's terminal is not its
// controlling terminal: no TIOCSTI into the user's shell; no job control inside), learns from the helper
// that the profile was applied, forwards signals, ends the group on timeout or when dropped, and
// collects the run's refusals from `log stream`. Nothing process-wide is changed (no signal
// handler or mask, no cwd, no environment): several may run at once in one process.
#include <sys/types.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/invocation.hpp"
#include "core/log.hpp"
#include "core/result.hpp"
#include "core/violations.hpp"

namespace wb::seatbelt {

struct LaunchSpec {
  Invocation inv;  // sandbox-exec, its arguments (profile, parameters, helper, command), env
  std::string cwd;
  int stdio[3] = {0, 1, 2};  // -1: closed for the command
  std::optional<double> timeout_s;
  std::string log_program;  // `log`; empty: no refusal reports
  std::string tag;          // the run's tag in every refusal
  const Logger* log = &log::process();
};

struct Exit {
  int exit_code = 0;  // the command's; 128+N for a signal; 124 on timeout
  bool timed_out = false;
  std::vector<Violation> violations;
  size_t more = 0;
};

class LogReader;

class Process {
 public:
  // Returns once the command runs inside the sandbox. kSandboxFailed (125) when sandbox-exec
  // could not be started or did not apply the profile: the command did not run.
  static Result<std::unique_ptr<Process>> start(LaunchSpec spec);
  ~Process();  // a process not waited for is ended (SIGKILL to its group) and reaped
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  void signal(int sig);  // to the whole process group, while it runs
  Exit wait();           // once

 private:
  Process() = default;
  LaunchSpec spec_;
  pid_t pid_ = -1;
  int notify_[2] = {-1, -1};  // the waiter writes a byte when the child is reaped
  std::thread waiter_;
  std::mutex mu_;
  bool reaped_ = false;
  int status_ = 0;
  bool waited_ = false;
  std::unique_ptr<LogReader> reader_;
  void reap_blocking();
};

}  // namespace wb::seatbelt
