#include "bwrap/terminal.hpp"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace wb::lnx {
namespace {

bool same_terminal(int a, int b) {
  struct stat sa, sb;
  return ::isatty(a) && ::isatty(b) && ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_rdev == sb.st_rdev;
}

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) {
      struct pollfd pf = {fd, POLLOUT, 0};
      (void)::poll(&pf, 1, 100);
      continue;
    }
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

std::unique_ptr<Terminal> Terminal::open_for(int in, int out, int err) {
  const char* env = std::getenv("WAVEBOX_PTY");
  if ((env && std::string(env) == "0") || in < 0 || out < 0 || !same_terminal(in, out)) return nullptr;
  if (::tcgetpgrp(in) != ::getpgrp()) return nullptr;
  std::unique_ptr<Terminal> t(new Terminal());
  if (::tcgetattr(in, &t->saved_) != 0) return nullptr;
  t->master_ = sys::Fd(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!t->master_.valid() || ::grantpt(t->master_.get()) != 0 || ::unlockpt(t->master_.get()) != 0) return nullptr;
  char name[128];
  if (::ptsname_r(t->master_.get(), name, sizeof name) != 0) return nullptr;
  t->slave_ = sys::Fd(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!t->slave_.valid()) return nullptr;
  // The caller's modes and size: the command sees the terminal it would have seen.
  (void)::tcsetattr(t->slave_.get(), TCSANOW, &t->saved_);
  int fl = ::fcntl(t->master_.get(), F_GETFL);
  if (fl < 0 || ::fcntl(t->master_.get(), F_SETFL, fl | O_NONBLOCK) != 0) return nullptr;
  t->in_ = in;
  t->out_ = out;
  t->err_too_ = err >= 0 && same_terminal(in, err);
  t->resize();
  return t;
}

Terminal::~Terminal() {
  restore();
}

bool Terminal::foreground() const {
  return ::tcgetpgrp(in_) == ::getpgrp();
}

void Terminal::raw() {
  if (is_raw_ || !foreground()) return;
  struct termios r = saved_;
  ::cfmakeraw(&r);
  r.c_oflag = saved_.c_oflag;  // wavebox's own lines (a warning during the run) stay lines
  if (::tcsetattr(in_, TCSANOW, &r) == 0) is_raw_ = true;
}

void Terminal::restore() {
  if (!is_raw_) return;
  (void)::tcsetattr(in_, TCSADRAIN, &saved_);
  is_raw_ = false;
}

void Terminal::resize() {
  struct winsize ws;
  if (::ioctl(out_, TIOCGWINSZ, &ws) == 0) (void)::ioctl(master_.get(), TIOCSWINSZ, &ws);
}

void Terminal::from_caller() {
  char buf[4096];
  ssize_t n = ::read(in_, buf, sizeof buf);
  // EIO: put in the background meanwhile (the loop stops reading until it is back).
  if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN && errno != EIO)) {
    in_eof_ = true;
    return;
  }
  if (n > 0) to_master_.append(buf, static_cast<size_t>(n));
  flush_input();
}

void Terminal::flush_input() {
  while (!to_master_.empty()) {
    ssize_t w = ::write(master_.get(), to_master_.data(), to_master_.size());
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // full (EAGAIN): the loop waits for POLLOUT
    to_master_.erase(0, static_cast<size_t>(w));
  }
}

void Terminal::to_caller() {
  char buf[16384];
  ssize_t n = ::read(master_.get(), buf, sizeof buf);
  if (n > 0) write_all(out_, buf, static_cast<size_t>(n));
}

void Terminal::drain() {
  char buf[16384];
  for (int i = 0; i < 4096; ++i) {
    ssize_t n = ::read(master_.get(), buf, sizeof buf);
    if (n <= 0) return;
    write_all(out_, buf, static_cast<size_t>(n));
  }
}

}  // namespace wb::lnx
