// `wavebox run`'s parts that are not the engine's: the prompt, the audit lines, the early sandbox.
#include "cli/run_parts.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "core/log.hpp"
#include "core/paths.hpp"

namespace wb::cli {

bool approved(const Options& o, const Decision& d, const std::string& command) {
  if (o.approve) return true;
  if (o.no_prompt || !::isatty(0) || !::isatty(2)) return false;
  int tty = ::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
  if (tty < 0) return false;
  std::string who = d.matched_rule.empty() ? std::string("running unsandboxed") : d.matched_rule;
  std::string prompt = fmt::format("wavebox: {} asks before running: {}\nRun it? [y/N] ", who, command);
  (void)!::write(tty, prompt.data(), prompt.size());
  char buf[16] = {0};
  ssize_t n = ::read(tty, buf, sizeof buf - 1);
  ::close(tty);
  // Ctrl-C (or a TERM, a hang-up) at the prompt is a no, whatever was typed after it.
  sigset_t pending;
  if (::sigpending(&pending) == 0 &&
      (sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM) || sigismember(&pending, SIGHUP))) {
    return false;
  }
  return n > 0 && (buf[0] == 'y' || buf[0] == 'Y');
}

AuditLines::AuditLines(const Options& o) : started_(std::chrono::steady_clock::now()) {
  if (!o.audit_log.empty()) paths_.push_back(paths::resolve(o.audit_log, "", sys::current_dir()));
  home = std::getenv("HOME") ? std::getenv("HOME") : "";
  record.argv = o.command;
  record.cwd = o.cwd.empty() ? sys::current_dir() : o.cwd;
}

void AuditLines::write(const Report& r, std::optional<int> exit_code) {
  if (paths_.empty()) return;
  record.outcome = r.outcome;
  record.outcome.exit_code = exit_code;
  record.outcome.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started_).count();
  for (const auto& p : paths_) {
    if (auto st = engine::append_audit(p, record, home); !st) log::warn(st.error().message);
  }
}

// Started by start_run_early, taken by cmd_run, or dropped by drop_run_early (`run --help`, an
// option wavebox does not know): its keeper ends bwrap, reaps it and is reaped, nothing left.
std::shared_ptr<engine::EarlyLaunch>& early_slot() {
  static auto* slot = new std::shared_ptr<engine::EarlyLaunch>();
  return *slot;
}

void drop_run_early() {
  early_slot().reset();
}

// Before the options are parsed (-v is not known yet: quiet). (On a thread of its own it was
// measured no faster: on two cores the keeper and bwrap take the other one either way.)
void start_run_early(const std::string& inherited) {
  static const auto* quiet = new Logger();
  int stdio[3];
  for (int i = 0; i < 3; ++i) stdio[i] = sys::standard_fd_given(i) ? i : -1;
  early_slot() = engine::start_early(stdio, *quiet, inherited);
}

}  // namespace wb::cli
