#include "bwrap/exec.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/sys/fd.hpp"
#include "core/sys/fs.hpp"

namespace wb::lnx {
namespace {

using sys::Fd;

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

// Moves an fd above the range we hand to bwrap, so dup2 in the child always changes numbers
// (which is what clears close-on-exec).
Fd high_fd(int fd) {
  int h = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
  ::close(fd);
  return Fd(h);
}

Result<Fd> args_memfd(const std::vector<std::string>& args) {
  Fd fd(::memfd_create("wavebox-args", MFD_CLOEXEC));
  if (!fd.valid()) return sys::sys_error("memfd_create", "wavebox-args", errno);
  std::string data;
  for (const auto& a : args) {
    data += a;
    data += '\0';
  }
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd.get(), data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys::sys_error("write", "wavebox-args", errno);
    off += static_cast<size_t>(n);
  }
  ::lseek(fd.get(), 0, SEEK_SET);
  return high_fd(fd.release());
}

long find_json_number(const std::string& text, const char* key) {
  auto pos = text.find(key);
  if (pos == std::string::npos) return -1;
  pos = text.find(':', pos);
  if (pos == std::string::npos) return -1;
  return std::strtol(text.c_str() + pos + 1, nullptr, 10);
}

// The command runs in its own session (bwrap --new-session), so terminal signals reach only us;
// we pass them to the process group of the sandbox's first process below bwrap's init.
void forward_signal(pid_t init_pid, int sig) {
  if (init_pid <= 0) return;
  auto children = sys::read_file(fmt::format("/proc/{}/task/{}/children", init_pid, init_pid));
  if (!children.ok()) return;
  const char* p = children->c_str();
  char* end = nullptr;
  for (long pid = std::strtol(p, &end, 10); end != p; pid = std::strtol(p, &end, 10)) {
    p = end;
    pid_t pgid = ::getpgid(static_cast<pid_t>(pid));
    if (pgid > 0 && pgid != init_pid) {
      ::kill(-pgid, sig);
    } else {
      ::kill(static_cast<pid_t>(pid), sig);
    }
  }
}

}  // namespace

Result<int> exec_bwrap(const ExecRequest& req) {
  std::vector<std::string> all = {"--json-status-fd", std::to_string(kStatusFd)};
  all.insert(all.end(), req.args.begin(), req.args.end());
  Fd args = WB_TRY(args_memfd(all));
  int pfd[2];
  if (::pipe2(pfd, O_CLOEXEC) != 0) return sys::sys_error("pipe2", "status", errno);
  Fd status_rd = high_fd(pfd[0]);
  Fd status_wr = high_fd(pfd[1]);
  Fd seccomp;
  if (req.seccomp_fd >= 0) seccomp = Fd(::fcntl(req.seccomp_fd, F_DUPFD_CLOEXEC, 10));

  sigset_t fwd, old;
  sigemptyset(&fwd);
  sigaddset(&fwd, SIGCHLD);
  for (int s : kForwarded) sigaddset(&fwd, s);
  ::sigprocmask(SIG_BLOCK, &fwd, &old);
  Fd sigfd(::signalfd(-1, &fwd, SFD_CLOEXEC | SFD_NONBLOCK));

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, args.get(), kArgsFd);
  posix_spawn_file_actions_adddup2(&fa, status_wr.get(), kStatusFd);
  int first_free = kStatusFd + 1;
  if (seccomp.valid()) {
    posix_spawn_file_actions_adddup2(&fa, seccomp.get(), kSeccompFd);
    first_free = kSeccompFd + 1;
  }
  // Descriptors the caller leaked to us must not reach the sandbox: an open directory there
  // would be a way around every mount (openat on it sees the host).
  posix_spawn_file_actions_addclosefrom_np(&fa, first_free);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigfillset(&defaults);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  // Its own process group: a terminal's Ctrl-C reaches wavebox, which forwards it, instead of
  // killing bwrap's monitor and with it (die-with-parent) the whole sandbox.
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  std::string fd_arg = std::to_string(kArgsFd);
  std::vector<char*> argv = {const_cast<char*>(req.bwrap.c_str()), const_cast<char*>("--args"),
                             fd_arg.data(), const_cast<char*>("--")};
  for (const auto& c : req.command) argv.push_back(const_cast<char*>(c.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : req.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, req.bwrap.c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  status_wr.reset();
  args.reset();
  seccomp.reset();
  if (rc != 0) {
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    return make_error(ErrorKind::kSandboxFailed, fmt::format("cannot start \"{}\": {}", req.bwrap, std::strerror(rc)));
  }

  std::string status_text;
  pid_t init_pid = -1;
  int wait_status = 0;
  bool exited = false, timed_out = false, status_eof = false;
  struct timespec start;
  ::clock_gettime(CLOCK_MONOTONIC, &start);
  while (!exited || !status_eof) {
    int timeout_ms = -1;
    if (req.timeout_seconds && !timed_out && init_pid > 0) {
      struct timespec now;
      ::clock_gettime(CLOCK_MONOTONIC, &now);
      double elapsed = (now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9;
      double left = *req.timeout_seconds - elapsed;
      if (left <= 0) {
        timed_out = true;
        ::kill(init_pid, SIGKILL);  // pid 1 of the sandbox: its whole pid namespace goes
        continue;
      }
      timeout_ms = static_cast<int>(left * 1000) + 1;
    }
    struct pollfd p[2] = {{sigfd.get(), POLLIN, 0}, {status_eof ? -1 : status_rd.get(), POLLIN, 0}};
    if (exited) timeout_ms = 1000;  // bwrap is gone; the pipe closes as soon as its children do
    int n = ::poll(p, 2, timeout_ms);
    if (n < 0 && errno != EINTR) break;
    if (n == 0 && exited) break;
    if (p[1].revents) {
      char buf[512];
      ssize_t r = ::read(status_rd.get(), buf, sizeof buf);
      if (r > 0) {
        status_text.append(buf, static_cast<size_t>(r));
        if (init_pid < 0) init_pid = static_cast<pid_t>(find_json_number(status_text, "\"child-pid\""));
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        status_eof = true;
      }
    }
    if (p[0].revents) {
      struct signalfd_siginfo si;
      while (::read(sigfd.get(), &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGCHLD) continue;
        forward_signal(init_pid, static_cast<int>(si.ssi_signo));
      }
      if (!exited) {
        pid_t w = ::waitpid(pid, &wait_status, WNOHANG);
        if (w == pid) exited = true;
      }
    }
  }
  if (!exited) {
    while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
    }
  }
  ::sigprocmask(SIG_SETMASK, &old, nullptr);

  if (timed_out) return 124;
  if (init_pid <= 0) {
    int code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
    return make_error(ErrorKind::kSandboxFailed,
                      fmt::format("bubblewrap could not set up the sandbox (status {}); its message is above", code));
  }
  long code = find_json_number(status_text, "\"exit-code\"");
  if (code >= 0) return static_cast<int>(code);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return WEXITSTATUS(wait_status);
}

}  // namespace wb::lnx
