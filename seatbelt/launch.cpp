#include "seatbelt/launch.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>

#include "seatbelt/denials.hpp"
#include "seatbelt/plan.hpp"

extern char** environ;

namespace wb::seatbelt {

namespace {

using Clock = std::chrono::steady_clock;

bool make_pipe(int fds[2]) {
  if (::pipe(fds) != 0) return false;
  ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(fds[1], F_SETFD, FD_CLOEXEC);
  return true;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

struct Argv {
  std::vector<std::string> store;
  std::vector<char*> ptrs;
  explicit Argv(std::vector<std::string> v) : store(std::move(v)) {
    for (auto& s : store) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
  }
};

// In the child, after fork: only async-signal-safe calls. Places the descriptors (each moved
// above 10 first, so placing one cannot clobber another), resets signals, enters cwd, execs.
[[noreturn]] void child(const char* program, char** argv, char** envp, const char* cwd, const int from[4],
                        int report_given) {
  // A session of its own: the user's terminal is no longer its controlling terminal, so TIOCSTI
  // (which needs it, for anyone but root) cannot type into the user's shell, during the run or
  // after it. Its process group is its own too (signals, the timeout).
  ::setsid();
  // Out of the way of the numbers placed below; closed by the exec.
  const int report_w = ::fcntl(report_given, F_DUPFD_CLOEXEC, 10);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s = 1; s < 32; ++s) {
    if (s != SIGKILL && s != SIGSTOP) ::signal(s, SIG_DFL);
  }
  auto fail = [&](int err) {
    char msg[1 + sizeof err];
    msg[0] = 'X';
    std::memcpy(msg + 1, &err, sizeof err);
    (void)!::write(report_w, msg, sizeof msg);
    ::_exit(125);
  };
  int high[4];
  for (int i = 0; i < 4; ++i) {
    high[i] = from[i] < 0 ? -1 : ::fcntl(from[i], F_DUPFD_CLOEXEC, 10);
    if (from[i] >= 0 && high[i] < 0) fail(errno);
  }
  for (int i = 0; i < 4; ++i) {
    if (high[i] < 0) {
      ::close(i);
    } else if (::dup2(high[i], i) != i) {
      fail(errno);
    }
  }
  // Nothing else of the process's reaches the sandbox (a caller's descriptors left inheritable);
  // the report descriptor stays for a failure below (it closes itself on exec).
  bool closed = false;
#if defined(__linux__) && defined(SYS_close_range)
  closed = (report_w <= 4 || ::syscall(SYS_close_range, 4u, static_cast<unsigned>(report_w - 1), 0u) == 0) &&
           ::syscall(SYS_close_range, static_cast<unsigned>(std::max(report_w + 1, 4)), ~0u, 0u) == 0;
#endif
  if (!closed) {
    long max = ::sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536) max = 65536;
    for (int fd = 4; fd < max; ++fd) {
      if (fd != report_w) ::close(fd);
    }
  }
  if (::chdir(cwd) != 0) fail(errno);
  ::execve(program, argv, envp);
  fail(errno);
  ::_exit(125);
}

}  // namespace

// `log stream`, outside the sandbox, in a process group of its own; its lines are kept until the
// run ends and then read for this run's tag.
class LogReader {
 public:
  static std::unique_ptr<LogReader> start(const std::string& program, const std::string& tag, const Logger& log) {
    auto r = std::unique_ptr<LogReader>(new LogReader);
    int out[2];
    if (!make_pipe(out)) return nullptr;
    Argv av([&] {
      std::vector<std::string> v = {program};
      for (auto& a : log_stream_args(tag)) v.push_back(a);
      return v;
    }());
    int err_pipe[2];
    if (!make_pipe(err_pipe)) {
      ::close(out[0]);
      ::close(out[1]);
      return nullptr;
    }
    int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    pid_t pid = ::fork();
    if (pid == 0) {
      const int from[4] = {devnull, out[1], out[1], -1};
      child(av.ptrs[0], av.ptrs.data(), environ, "/", from, err_pipe[1]);
    }
    ::close(out[1]);
    ::close(err_pipe[1]);
    if (devnull >= 0) ::close(devnull);
    if (pid < 0) {
      ::close(out[0]);
      ::close(err_pipe[0]);
      return nullptr;
    }
    char buf[8];
    ssize_t n = ::read(err_pipe[0], buf, sizeof buf);  // EOF: exec worked
    ::close(err_pipe[0]);
    if (n > 0) {
      int ws;
      ::waitpid(pid, &ws, 0);
      ::close(out[0]);
      log.warn(fmt::format("cannot start {} to read Seatbelt's refusals; the run goes on without them", program));
      return nullptr;
    }
    r->pid_ = pid;
    r->fd_ = out[0];
    r->thread_ = std::thread([p = r.get()] { p->read_loop(); });
    // Refusals logged before the stream is set up would be lost: wait a little for it to say it
    // is filtering (or for anything at all).
    std::unique_lock<std::mutex> lk(r->mu_);
    r->cv_.wait_for(lk, std::chrono::milliseconds(500), [&] { return r->ready_ || r->eof_; });
    return r;
  }

  // After the run: a moment for the last events to arrive, then the stream ends.
  std::vector<std::string> finish() {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    if (pid_ > 0) {
      ::kill(-pid_, SIGTERM);
      ::kill(pid_, SIGTERM);
    }
    if (thread_.joinable()) thread_.join();
    if (pid_ > 0) {
      int ws;
      while (::waitpid(pid_, &ws, 0) < 0 && errno == EINTR) {
      }
      pid_ = -1;
    }
    close_fd(fd_);
    std::lock_guard<std::mutex> lk(mu_);
    return lines_;
  }

  ~LogReader() { finish(); }

 private:
  LogReader() = default;
  pid_t pid_ = -1;
  int fd_ = -1;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false, eof_ = false;
  std::vector<std::string> lines_;
  std::string partial_;
  static constexpr size_t kMaxLines = 100000;

  void read_loop() {
    char buf[65536];
    while (true) {
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      std::lock_guard<std::mutex> lk(mu_);
      partial_.append(buf, static_cast<size_t>(n));
      size_t nl;
      while ((nl = partial_.find('\n')) != std::string::npos) {
        if (lines_.size() < kMaxLines) lines_.push_back(partial_.substr(0, nl));
        partial_.erase(0, nl + 1);
        ready_ = true;
      }
      if (partial_.size() > (1u << 20)) partial_.clear();  // one event is never this long
      cv_.notify_all();
    }
    std::lock_guard<std::mutex> lk(mu_);
    eof_ = true;
    cv_.notify_all();
  }
};

Result<std::unique_ptr<Process>> Process::start(LaunchSpec spec) {
  std::unique_ptr<Process> p(new Process);
  p->spec_ = std::move(spec);
  const LaunchSpec& s = p->spec_;
  if (!s.log_program.empty()) p->reader_ = LogReader::start(s.log_program, s.tag, *s.log);
  int report[2];
  if (!make_pipe(report)) return make_error(ErrorKind::kSandboxFailed, "pipe: " + std::string(std::strerror(errno)));
  if (!make_pipe(p->notify_)) {
    ::close(report[0]);
    ::close(report[1]);
    return make_error(ErrorKind::kSandboxFailed, "pipe: " + std::string(std::strerror(errno)));
  }
  std::vector<std::string> args = {s.inv.program};
  args.insert(args.end(), s.inv.args.begin(), s.inv.args.end());
  Argv av(std::move(args));
  Argv ev(s.inv.env);
  const int from[4] = {s.stdio[0], s.stdio[1], s.stdio[2], report[1]};
  pid_t pid = ::fork();
  if (pid == 0) child(av.ptrs[0], av.ptrs.data(), ev.ptrs.data(), s.cwd.c_str(), from, report[1]);
  const int fork_err = errno;
  ::close(report[1]);
  if (pid < 0) {
    ::close(report[0]);
    return make_error(ErrorKind::kSandboxFailed, "fork: " + std::string(std::strerror(fork_err)));
  }
  p->pid_ = pid;
  p->waiter_ = std::thread([q = p.get()] { q->reap_blocking(); });
  // The report: 'X'+errno (sandbox-exec could not be executed), nothing (it ran but never
  // started the helper: the profile was refused), 'S' (the helper runs inside), then EOF (the
  // command was executed) or 'E'+errno (it could not be).
  std::string got;
  char buf[16];
  while (true) {
    ssize_t n = ::read(report[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(report[0]);
  auto err_of = [&](size_t at) {
    int e = 0;
    if (got.size() >= at + sizeof e) std::memcpy(&e, got.data() + at, sizeof e);
    return e;
  };
  if (!got.empty() && got[0] == 'X') {
    p->wait();
    return make_error(ErrorKind::kSandboxFailed, fmt::format("cannot run {}: {}; the command did not run",
                                                             s.inv.program, std::strerror(err_of(1))));
  }
  if (got.empty() || got[0] != kStarted) {
    Exit e = p->wait();
    return make_error(ErrorKind::kSandboxFailed,
                      fmt::format("{} did not apply the sandbox profile (exit status {}); the command did not run",
                                  s.inv.program, e.exit_code));
  }
  // 'E': the helper could not execute the command; it exits 126/127, which wait() reports.
  return p;
}

void Process::reap_blocking() {
  int ws = 0;
  while (::waitpid(pid_, &ws, 0) < 0 && errno == EINTR) {
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    status_ = ws;
    reaped_ = true;
    // What the command left in its group ends with it: nothing outlives the run.
    ::kill(-pid_, SIGKILL);
  }
  char one = 1;
  (void)!::write(notify_[1], &one, 1);
}

void Process::signal(int sig) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!reaped_ && pid_ > 0) ::kill(-pid_, sig);
}

Exit Process::wait() {
  Exit out;
  if (waited_) return out;
  waited_ = true;
  const Clock::time_point deadline =
      spec_.timeout_s
          ? Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*spec_.timeout_s))
          : Clock::time_point::max();
  auto wait_ms = [&](Clock::time_point until) {
    if (until == Clock::time_point::max()) return -1;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    return static_cast<int>(std::max<long long>(0, ms));
  };
  struct pollfd pfd = {notify_[0], POLLIN, 0};
  int r;
  do {
    r = ::poll(&pfd, 1, wait_ms(deadline));
  } while (r < 0 && errno == EINTR);
  if (r == 0) {
    out.timed_out = true;
    signal(SIGTERM);
    do {
      r = ::poll(&pfd, 1, 2000);
    } while (r < 0 && errno == EINTR);
    if (r == 0) signal(SIGKILL);
  }
  if (waiter_.joinable()) waiter_.join();
  close_fd(notify_[0]);
  close_fd(notify_[1]);
  out.exit_code = out.timed_out          ? 124
                  : WIFEXITED(status_)   ? WEXITSTATUS(status_)
                  : WIFSIGNALED(status_) ? 128 + WTERMSIG(status_)
                                         : 125;
  if (reader_) {
    ViolationLog vlog;
    for (const auto& line : reader_->finish()) {
      if (auto v = parse_denial(line, spec_.tag)) vlog.add(*v);
    }
    out.violations = vlog.items();
    out.more = vlog.dropped();
    reader_.reset();
  }
  return out;
}

Process::~Process() {
  if (!waited_) {
    signal(SIGKILL);
    wait();
  }
}

}  // namespace wb::seatbelt
