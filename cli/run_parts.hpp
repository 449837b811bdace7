#pragma once
// What `wavebox run` needs beyond the engine: the user's answer to an ask rule, the terminal's
// signals, the audit lines, the sandbox started before the options were read, --learn's output.
#include <signal.h>
#include <sys/signalfd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "cli/report.hpp"
#include "core/decision.hpp"
#include "core/sys/fs.hpp"
#include "core/violations.hpp"
#include "engine/audit.hpp"
#include "engine/engine.hpp"

namespace wb::cli {

// An ask rule matched: the user's answer on the terminal, or --approve from a caller that asked.
// Asked only of a user at a terminal (stdin and stderr are one): a script, CI or an agent host
// never blocks on /dev/tty; it gets exit 125 naming the rule and --approve.
bool approved(const Options& o, const Decision& d, const std::string& command);

// Terminal signals reach wavebox (the command runs in a session of its own): they are taken
// from a signalfd and forwarded to the command while it runs.
struct ForwardedSignals {
  sigset_t set{}, old{};
  sys::Fd fd;
  ForwardedSignals() {
    sigemptyset(&set);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGTSTP, SIGCONT}) {
      sigaddset(&set, sig);
    }
    ::pthread_sigmask(SIG_BLOCK, &set, &old);
    fd = sys::Fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  }
  ~ForwardedSignals() { restore(); }
  void restore() { ::pthread_sigmask(SIG_SETMASK, &old, nullptr); }
};

// sandbox.auditLog and --audit-log: one line for every outcome, the command's or why it did not
// run, appended to each file named.
class AuditLines {
 public:
  explicit AuditLines(const Options& o);
  void add_path(const std::string& p) {
    if (std::find(paths_.begin(), paths_.end(), p) == paths_.end()) paths_.push_back(p);
  }
  std::string first_path() const { return paths_.empty() ? "" : paths_[0]; }
  bool wanted() const { return !paths_.empty(); }
  void write(const Report& r, std::optional<int> exit_code);
  engine::AuditRecord record;
  std::string home;

 private:
  std::chrono::steady_clock::time_point started_;
  std::vector<std::string> paths_;
};

// Started by start_run_early, taken by cmd_run, or dropped by drop_run_early.
std::shared_ptr<engine::EarlyLaunch>& early_slot();

// --learn: what would have allowed what was refused, never a protected path, a credential, a
// directory on PATH or wavebox's own files. The command chose what it tried, so every line is
// for the user to review.
void print_learned(const Options& o, const std::vector<Violation>& refused, const std::string& home,
                   const std::string& workspace, const std::vector<std::string>& settings_files,
                   const std::vector<std::string>& deny_read);

}  // namespace wb::cli
