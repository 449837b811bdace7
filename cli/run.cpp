// `wavebox run`, `wrap` and `decide`: options -> a RunRequest -> the engine -> what is printed.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/options.hpp"
#include "cli/setup.hpp"
#include "core/decision.hpp"
#include "core/learn.hpp"
#include "core/log.hpp"
#include "core/paths.hpp"
#include "core/shell_split.hpp"
#include "core/sys/fs.hpp"
#include "core/sys/platform.hpp"
#include "core/violations.hpp"
#include "engine/audit.hpp"
#include "engine/engine.hpp"

extern char** environ;

namespace wb::cli {
namespace {

// Runs the command exactly as without wavebox: same argv, environment, descriptors; our process
// is replaced, so its exit status is the command's.
int exec_unsandboxed(const Options& o, const std::vector<std::string>& argv) {
  if (!o.cwd.empty() && ::chdir(o.cwd.c_str()) != 0) {
    log::error(fmt::format("cannot change to \"{}\": {}", o.cwd, std::strerror(errno)));
    return 125;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  int err = errno;
  std::string msg = fmt::format("{}: {}", argv[0], err == ENOENT ? "command not found" : std::strerror(err));
  std::fprintf(stderr, "wavebox: %s\n", msg.c_str());
  return err == ENOENT ? 127 : 126;
}

}  // namespace

std::string command_string(const Options& o) {
  if (o.shell_command) return *o.shell_command;
  return shell_join(o.command);
}

namespace {

// An ask rule matched: the user's answer on the terminal, or --approve from a caller that asked.
// Asked only of a user at a terminal (stdin and stderr are one): a script, CI or an agent host
// never blocks on /dev/tty; it gets exit 125 naming the rule and --approve.
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

}  // namespace

// --learn: what would have allowed what was refused, never a protected path, a credential, a
// directory on PATH or wavebox's own files. The command chose what it tried, so every line is
// for the user to review.
void print_learned(const Options& o, const std::vector<Violation>& refused, const std::string& home,
                   const std::string& workspace, const std::vector<std::string>& settings_files,
                   const std::vector<std::string>& deny_read) {
  LearnContext ctx{home, workspace, settings_files, deny_read};
  if (auto st = sys::ensure_state_dir(); st.ok()) {
    ctx.never.push_back(st->root);
    ctx.never.push_back(st->base);
  }
  if (const char* path = std::getenv("PATH")) {
    std::string list = path;
    for (size_t pos = 0; pos <= list.size();) {
      size_t end = list.find(':', pos);
      if (end == std::string::npos) end = list.size();
      std::string dir = list.substr(pos, end - pos);
      if (!dir.empty() && dir[0] == '/' && !paths::is_within(dir, workspace)) ctx.never.push_back(dir);
      pos = end + 1;
    }
  }
  Learned l = learn_from(refused, ctx);
  // A writable path must exist for the sandbox to bind it: a directory the command could not
  // make is suggested as its nearest existing ancestor, unless that is too broad to name.
  for (auto& w : l.allow_write) {
    std::string at = w;
    while (!sys::exists(at) && at != "/") at = paths::parent(at);
    if (at == w) continue;
    if (at == "/" || at == home || paths::parent(at) == "/") {
      l.not_suggested.push_back(w + ": does not exist (make it first, then allow it)");
      w.clear();
    } else {
      w = at;
    }
  }
  std::erase_if(l.allow_write, [](const std::string& w) { return w.empty(); });
  for (const auto& n : l.not_suggested) std::fprintf(stderr, "wavebox: learn: not suggested: %s\n", n.c_str());
  if (l.empty()) {
    std::fprintf(stderr, "wavebox: learn: %s\n",
                 refused.empty() ? "nothing was refused" : "nothing to suggest (see above)");
    return;
  }
  const std::string text = learned_settings_json(l);
  if (!o.learn_file.empty()) {
    std::string file = paths::resolve(o.learn_file, home, sys::current_dir());
    if (auto st = sys::write_file_atomic(file, text); !st) {
      log::warn("learn: " + st.error().message);
    } else {
      std::fprintf(stderr, "wavebox: learn: wrote %s; review it, then run with --settings <yours> --settings %s\n",
                   file.c_str(), file.c_str());
    }
    return;
  }
  std::fprintf(
      stderr,
      "wavebox: learn: these additions would have allowed what was refused (review each; the command "
      "chose what it tried). Merged after your settings (--settings yours --settings this), arrays add up:\n%s",
      text.c_str());
}

// sandbox.auditLog and --audit-log: one line for every outcome, the command's or why it did not
// run, appended to each file named.
class AuditLines {
 public:
  explicit AuditLines(const Options& o) : started_(std::chrono::steady_clock::now()) {
    if (!o.audit_log.empty()) paths_.push_back(paths::resolve(o.audit_log, "", sys::current_dir()));
    home = std::getenv("HOME") ? std::getenv("HOME") : "";
    record.argv = o.command;
    record.cwd = o.cwd.empty() ? sys::current_dir() : o.cwd;
  }
  void add_path(const std::string& p) {
    if (std::find(paths_.begin(), paths_.end(), p) == paths_.end()) paths_.push_back(p);
  }
  std::string first_path() const { return paths_.empty() ? "" : paths_[0]; }
  bool wanted() const { return !paths_.empty(); }
  void write(const Report& r, std::optional<int> exit_code) {
    if (paths_.empty()) return;
    record.outcome = r.outcome;
    record.outcome.exit_code = exit_code;
    record.outcome.elapsed_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started_).count();
    for (const auto& p : paths_) {
      if (auto st = engine::append_audit(p, record, home); !st) log::warn(st.error().message);
    }
  }
  engine::AuditRecord record;
  std::string home;

 private:
  std::chrono::steady_clock::time_point started_;
  std::vector<std::string> paths_;
};

namespace {
// Started by start_run_early, taken by cmd_run, or dropped by drop_run_early (`run --help`, an
// option wavebox does not know): its keeper ends bwrap, reaps it and is reaped, nothing left.
std::shared_ptr<engine::EarlyLaunch>& early_slot() {
  static auto* slot = new std::shared_ptr<engine::EarlyLaunch>();
  return *slot;
}
}  // namespace

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

int cmd_run(const Options& o) {
  ForwardedSignals sigs;
  const ReportTarget report = o.report_json.empty() ? ReportTarget() : ReportTarget(o.report_json);
  Report r;
  r.extra_domains = o.allow_domains;
  if (o.allow_network) r.extra_domains.push_back("*");
  auto write_report = [&] {
    if (!report.wanted()) return;
    if (auto st = report.write(r); !st) log::warn(st.error().message);
  };
  // The sandbox most likely runs: its keeper and bwrap started before the options were parsed,
  // on the other core, while the settings are read and the run planned (prepare drops them when
  // they do not fit; an unsandboxed run here, before its command replaces wavebox).
  std::shared_ptr<engine::EarlyLaunch> early = std::move(early_slot());
  if (o.disable_sandbox) early.reset();
  AuditLines audit(o);
  auto write_audit = [&](std::optional<int> exit_code) { audit.write(r, exit_code); };
  // The command did not run: said on stderr, and in the report (what an agent most needs).
  OutcomeRecord& out = r.outcome;
  auto failed = [&](const Error& e) {
    const int status = report_error(e);
    out.exit_code = status;
    out.error = e.message;
    if (e.kind == ErrorKind::kDenied) out.decision = "deny";
    if (e.kind == ErrorKind::kNeedsApproval) out.decision = "ask";
    write_report();
    write_audit(status);
    return status;
  };
  auto env = load_environment(o);
  if (!env.ok()) return failed(env.error());
  if (const auto& a = env->settings.sandbox.audit_log) audit.add_path(*a);
  const ResourceSettings res = env->settings.sandbox.resources;
  auto req = run_request(o, std::move(*env));
  req.own_terminal = true;  // used when stdin and stdout are one terminal (WAVEBOX_PTY=0: never)
  req.early = std::move(early);
  const std::string learn_home = req.home;
  audit.home = req.home;
  const std::vector<std::string> learn_settings = req.settings_files;
  const std::vector<std::string> learn_deny_read = req.settings.sandbox.filesystem.deny_read;
  req.audit_log = audit.first_path();
  audit.record.argv = req.argv;
  audit.record.cwd = req.cwd;
  audit.record.command_line = req.command_line;
  req.approve = [&o, line = req.command_line](const Decision& d) { return approved(o, d, line); };
  auto prepared = engine::prepare(std::move(req));
  if (!prepared.ok()) return failed(prepared.error());
  out.decision = prepared->decision.decision;
  out.reason = prepared->decision.reason;
  out.rule = prepared->decision.matched_rule;
  if (!prepared->sandboxed) {
    log::info("running the command UNSANDBOXED: " + out.reason);
    if (report.wanted() || audit.wanted()) {
      // A report or a record must carry the command's real exit status: it runs as our child.
      auto outcome = engine::run_here(std::move(*prepared), sigs.fd.get());
      if (!outcome.ok()) return failed(outcome.error());
      out.exit_code = outcome->exit_code;
      out.elapsed_ms = outcome->elapsed_ms;
      write_report();
      write_audit(outcome->exit_code);
      return outcome->exit_code;
    }
    out.exit_code = std::nullopt;  // the command replaces wavebox: its status is not known here
    write_report();
    write_audit(std::nullopt);
    sigs.restore();  // the command gets the signal mask wavebox was given
    return exec_unsandboxed(o, prepared->unsandboxed.command);
  }
  // One command in this process: supervised on this thread, the terminal's signals forwarded.
  auto outcome = engine::run_here(std::move(*prepared), sigs.fd.get());
  if (!outcome.ok()) return failed(outcome.error());
  // A limit that ended the command says so, besides the exit status.
  if (outcome->timed_out) {
    log::error(fmt::format("the command was ended after {} s (sandbox.resources.timeoutSeconds); exit status 124",
                           res.timeout_seconds.value_or(0)));
  } else if (res.cpu_seconds && outcome->exit_code == 128 + SIGXCPU) {
    log::error(fmt::format("the command used its {} s of CPU time (sandbox.resources.cpuSeconds) and was ended",
                           *res.cpu_seconds));
  }
  std::string block = render_block(outcome->violations, outcome->more);
  if (!block.empty()) std::fwrite(block.data(), 1, block.size(), stderr);
  out.exit_code = outcome->exit_code;
  out.sandboxed = true;
  out.violations = outcome->violations;
  out.more = outcome->more;
  out.elapsed_ms = outcome->elapsed_ms;
  write_report();
  write_audit(outcome->exit_code);
  if (o.learn) print_learned(o, outcome->violations, learn_home, audit.record.cwd, learn_settings, learn_deny_read);
  return outcome->exit_code;
}

int cmd_wrap(const Options& o) {
  auto env = load_environment(o);
  if (!env.ok()) return report_error(env.error());
  auto req = run_request(o, std::move(*env));
  req.plan_only = true;
  if (o.platform == "macos") req.platform = sys::Platform::kMacos;
  if (o.platform == "linux") req.platform = sys::Platform::kLinux;
  auto prepared = engine::prepare(std::move(req));
  if (!prepared.ok()) return report_error(prepared.error());
  auto text = engine::describe(*prepared, o.json);
  if (!text.ok()) return report_error(text.error());
  std::fwrite(text->data(), 1, text->size(), stdout);
  return 0;
}

int cmd_decide(const Options& o) {
  if (o.command.empty() && !o.shell_command) {
    log::error("no command given: wavebox decide [OPTIONS] -- 'COMMAND STRING'");
    return 125;
  }
  auto env = load_environment(o);
  if (!env.ok()) return report_error(env.error());
  const Settings& s = env->settings;
  for (const auto& w : s.warnings) log::warn(w);
  // A single argument is the command string itself; several are joined like a shell would see them.
  std::string cmd = o.shell_command ? *o.shell_command : (o.command.size() == 1 ? o.command[0] : command_string(o));
  Decision d = engine::decide_here(s, cmd, o.disable_sandbox, log::process());
  std::vector<std::string> adds = o.allow_domains;
  if (o.allow_network) adds.push_back("*");  // every host: never a read-only call
  nlohmann::json j = engine::decision_json(d, adds);
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace wb::cli
