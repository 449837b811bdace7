#include "bwrap/launch/terminal.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace wb::lnx {
namespace {

// The terminal a descriptor reaches: the device /dev/tty or /dev/console stand for (TIOCGDEV),
// not their own numbers, so that a descriptor opened through /dev/tty counts as the terminal.
dev_t terminal_device(int fd) {
  unsigned int dev = 0;
  if (::ioctl(fd, TIOCGDEV, &dev) == 0) return static_cast<dev_t>(dev);
  struct stat st;
  return ::fstat(fd, &st) == 0 ? st.st_rdev : 0;
}

bool same_terminal(int a, int b) {
  if (!::isatty(a) || !::isatty(b)) return false;
  const dev_t d = terminal_device(a);
  return d != 0 && d == terminal_device(b);
}

// wavebox's own writes and mode changes on the caller's terminal never stop it: in the
// background with `stty tostop`, the kernel would stop a writer with SIGTTOU (and with it the
// timeout and the command's end), unless the signal is blocked, when the write goes through,
// as the command's own writes did when it held the terminal itself.
struct TtouBlocked {
  TtouBlocked() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGTTOU);
    ::pthread_sigmask(SIG_BLOCK, &s, &old);
  }
  ~TtouBlocked() { ::pthread_sigmask(SIG_SETMASK, &old, nullptr); }
  TtouBlocked(const TtouBlocked&) = delete;
  TtouBlocked& operator=(const TtouBlocked&) = delete;
  sigset_t old;
};

constexpr size_t kOutputHeld = 1 << 16;  // the master is not read while this much waits (wants_output)

}  // namespace

std::unique_ptr<Terminal> Terminal::open_for(int in, int out, int err) {
  const char* env = std::getenv("WAVEBOX_PTY");
  if (env && std::string(env) == "0") return nullptr;
  const bool both = in >= 0 && out >= 0 && same_terminal(in, out);
  // The caller's terminal among the standard descriptors: stdin's when stdin and stdout are one
  // terminal, else the first that is wavebox's controlling terminal (another terminal handed
  // to the command, `< /dev/pts/N`, is the command's business).
  int term = both ? in : -1;
  for (int fd : {in, out, err}) {
    if (term < 0 && fd >= 0 && ::isatty(fd) && ::tcgetpgrp(fd) >= 0) term = fd;
  }
  if (term < 0) return nullptr;
  // wavebox started as a background job of that terminal (`cmd > log &`, `cmd < file &`): handed
  // over as it is, the command (in a session of its own, so no SIGTTIN stops it) could read what
  // is typed for the shell, through any descriptor that is the terminal. Each of them is then a
  // terminal of its own, which wavebox feeds only while it is the foreground job. (Started in
  // the foreground with only some of them the terminal, as for `| less`, the caller's terminal
  // is handed over as before: wavebox reading it too would take keystrokes from the pager.)
  const pid_t fg = ::tcgetpgrp(term);
  const bool background = fg >= 0 && fg != ::getpgrp();
  if (!both && !background) return nullptr;
  std::unique_ptr<Terminal> t(new Terminal());
  t->term_ = term;
  t->in_too_ = in >= 0 && same_terminal(in, term);
  t->out_too_ = out >= 0 && same_terminal(out, term);
  t->err_too_ = err >= 0 && same_terminal(err, term);
  // In the background the caller's modes are its shell's (readline's: no echo, no canonical
  // lines), not the ones a job gets: they are taken once wavebox is first in the foreground,
  // and the command's terminal keeps a new pty's sane modes.
  if (!background && ::tcgetattr(term, &t->saved_) != 0) return nullptr;
  t->saved_taken_ = !background;
  t->master_ = sys::Fd(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!t->master_.valid() || ::grantpt(t->master_.get()) != 0 || ::unlockpt(t->master_.get()) != 0) return nullptr;
  char name[128];
  if (::ptsname_r(t->master_.get(), name, sizeof name) != 0) return nullptr;
  t->slave_ = sys::Fd(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!t->slave_.valid()) return nullptr;
  // The caller's modes and size: the command sees the terminal it would have seen.
  if (t->saved_taken_) (void)::tcsetattr(t->slave_.get(), TCSANOW, &t->saved_);
  if (!t->in_too_) {
    // Output alone: the caller's terminal, never made raw, does the output processing (a "\n"
    // becomes "\r\n" there once, as when the command wrote to it itself, not twice).
    struct termios m {};
    if (::tcgetattr(t->slave_.get(), &m) == 0) {
      m.c_oflag &= static_cast<tcflag_t>(~OPOST);
      (void)::tcsetattr(t->slave_.get(), TCSANOW, &m);
    }
  }
  int fl = ::fcntl(t->master_.get(), F_GETFL);
  if (fl < 0 || ::fcntl(t->master_.get(), F_SETFL, fl | O_NONBLOCK) != 0) return nullptr;
  // Writes to the caller's terminal through a description of our own, non-blocking (setting
  // O_NONBLOCK on the caller's descriptor would change it for the caller's shell too). The
  // command's output goes there, and the echo of what is typed.
  t->out_ =
      sys::Fd(::open(fmt::format("/proc/self/fd/{}", term).c_str(), O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC));
  if (!t->out_.valid()) return nullptr;
  // What is typed is read only for a command whose stdin is the sandbox's terminal.
  t->in_ = t->in_too_ ? in : -1;
  // Not wavebox's controlling terminal (a harness's pty handed down): no job control to follow.
  t->ctty_ = fg >= 0;
  t->resize();
  return t;
}

Terminal::~Terminal() {
  restore();
}

bool Terminal::foreground() const {
  return !ctty_ || ::tcgetpgrp(term_) == ::getpgrp();
}

void Terminal::raw() {
  // (Raw only to pass what is typed through: a terminal for output alone is left as it is.)
  if (is_raw_ || hung_up_ || !in_too_) return;
  if (ctty_) {
    const pid_t fg = ::tcgetpgrp(term_);
    if (fg < 0) return hang_up();  // the caller's terminal is gone (a background wavebox sees it here)
    if (fg != ::getpgrp()) return;
  }
  if (!saved_taken_) {
    if (::tcgetattr(term_, &saved_) != 0) return;
    saved_taken_ = true;
  }
  struct termios r = saved_;
  ::cfmakeraw(&r);
  TtouBlocked quiet;
  if (::tcsetattr(term_, TCSANOW, &r) == 0) is_raw_ = true;
}

void Terminal::restore() {
  if (!is_raw_) return;
  TtouBlocked quiet;
  (void)::tcsetattr(term_, TCSADRAIN, &saved_);
  is_raw_ = false;
}

void Terminal::resize() {
  struct winsize ws;
  if (master_.valid() && ::ioctl(term_, TIOCGWINSZ, &ws) == 0) (void)::ioctl(master_.get(), TIOCSWINSZ, &ws);
}

// The caller's terminal is gone (the window closed): so is the sandbox's, as a terminal
// emulator's would be (its foreground job gets SIGHUP, its reads end).
void Terminal::hang_up() {
  hung_up_ = true;
  is_raw_ = false;
  to_master_.clear();
  master_.reset();
}

void Terminal::from_caller() {
  char buf[4096];
  ssize_t n = ::read(in_, buf, sizeof buf);
  if (n > 0) {
    to_master_.append(buf, static_cast<size_t>(n));
    flush_input();
    return;
  }
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  // EIO in the background is not an end (the loop no longer reads then); a terminal whose
  // foreground cannot be told any more, or a read of 0 while raw, is a hang-up.
  if (n < 0 && errno == EIO && ctty_ && ::tcgetpgrp(term_) >= 0) return;
  if (n == 0 && !is_raw_ && foreground()) {
    // Ctrl-D while the terminal was still cooked (just brought back with fg): passed on.
    struct termios t {};
    char eof = ::tcgetattr(slave_.get(), &t) == 0 ? static_cast<char>(t.c_cc[VEOF]) : '\x04';
    to_master_.push_back(eof);
    flush_input();
    return;
  }
  hang_up();
}

void Terminal::flush_input() {
  while (!to_master_.empty() && master_.valid()) {
    ssize_t w = ::write(master_.get(), to_master_.data(), to_master_.size());
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // full (EAGAIN): the loop waits for POLLOUT
    to_master_.erase(0, static_cast<size_t>(w));
  }
}

void Terminal::from_master() {
  if (!master_.valid() || to_caller_.size() >= kOutputHeld) return;
  char buf[16384];
  ssize_t n = ::read(master_.get(), buf, sizeof buf);
  if (n > 0) to_caller_.append(buf, static_cast<size_t>(n));
  to_caller();
}

void Terminal::to_caller() {
  if (to_caller_.empty()) return;
  TtouBlocked quiet;
  while (!to_caller_.empty()) {
    ssize_t w = ::write(out_.get(), to_caller_.data(), to_caller_.size());
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno != EAGAIN) to_caller_.clear();  // the caller's terminal is gone
    if (w <= 0) return;
    to_caller_.erase(0, static_cast<size_t>(w));
  }
}

void Terminal::drain() {
  // Bounded: a terminal nobody reads (a stopped pager) holds the run's end for 2 s at most.
  for (int i = 0; i < 400 && master_.valid(); ++i) {
    if (to_caller_.size() < kOutputHeld) {
      char buf[16384];
      ssize_t n = ::read(master_.get(), buf, sizeof buf);
      if (n > 0) {
        to_caller_.append(buf, static_cast<size_t>(n));
      } else if (to_caller_.empty()) {
        break;  // all of it is out
      }
    }
    to_caller();
    if (!to_caller_.empty()) {
      struct pollfd p = {out_.get(), POLLOUT, 0};
      (void)::poll(&p, 1, 5);
    }
  }
}

TerminalModes::TerminalModes(const int* stdio) {
  for (int i = 0; i < 3 && fd_ < 0; ++i) {
    if (stdio[i] >= 0 && ::isatty(stdio[i]) && ::tcgetattr(stdio[i], &saved_) == 0) fd_ = stdio[i];
  }
}

TerminalModes::~TerminalModes() {
  if (fd_ < 0 || ::tcgetpgrp(fd_) != ::getpgrp()) return;
  struct termios now {};
  if (::tcgetattr(fd_, &now) == 0 && std::memcmp(&now, &saved_, sizeof now) != 0) {
    (void)::tcsetattr(fd_, TCSADRAIN, &saved_);
  }
}

}  // namespace wb::lnx
