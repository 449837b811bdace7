#include "bwrap/exec.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "bwrap/netns.hpp"
#include "core/log.hpp"
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

// The only child of a process, from /proc (the first, if several).
pid_t only_child(pid_t pid) {
  auto c = sys::read_file(fmt::format("/proc/{}/task/{}/children", pid, pid));
  return c.ok() ? static_cast<pid_t>(std::strtol(c->c_str(), nullptr, 10)) : -1;
}

// bwrap's json status names its child by its pid inside our pid namespace; from the reaper
// (ours) down: reaper -> bwrap -> the sandbox's pid 1.
pid_t sandbox_init(pid_t reaper) {
  pid_t bwrap = only_child(reaper);
  return bwrap > 0 ? only_child(bwrap) : -1;
}

void write_all(int fd, const char* data, size_t len) {
  while (len > 0) {
    ssize_t n = ::write(fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    len -= static_cast<size_t>(n);
  }
}

double now_s() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
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
  Fd seccomp, obs_bpf, obs_sock, err_rd, err_wr;
  if (req.seccomp_fd >= 0) seccomp = Fd(::fcntl(req.seccomp_fd, F_DUPFD_CLOEXEC, 10));
  bool observe = req.observer && req.observer_bpf_fd >= 0 && !req.shim.empty();
  if (observe) {
    obs_bpf = Fd(::fcntl(req.observer_bpf_fd, F_DUPFD_CLOEXEC, 10));
    obs_sock = Fd(::fcntl(req.observer->shim_socket_fd(), F_DUPFD_CLOEXEC, 10));
    req.observer->close_shim_end();
  }
  if (req.stderr_line) {
    if (::pipe2(pfd, O_CLOEXEC) != 0) return sys::sys_error("pipe2", "stderr", errno);
    err_rd = high_fd(pfd[0]);
    err_wr = high_fd(pfd[1]);
  }

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
  if (seccomp.valid()) posix_spawn_file_actions_adddup2(&fa, seccomp.get(), kSeccompFd);
  if (observe) {
    posix_spawn_file_actions_adddup2(&fa, obs_bpf.get(), kObserverBpfFd);
    posix_spawn_file_actions_adddup2(&fa, obs_sock.get(), kObserverSockFd);
  }
  if (err_wr.valid()) posix_spawn_file_actions_adddup2(&fa, err_wr.get(), 2);
  // Descriptors the caller leaked to us must not reach the sandbox: an open directory there
  // would be a way around every mount (openat on it sees the host).
  posix_spawn_file_actions_addclosefrom_np(&fa, kObserverSockFd + 1);
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

  std::string fd_arg = std::to_string(kArgsFd), bpf_arg = std::to_string(kObserverBpfFd),
              sock_arg = std::to_string(kObserverSockFd);
  std::vector<char*> argv = {const_cast<char*>(req.bwrap.c_str()), const_cast<char*>("--args"), fd_arg.data(),
                             const_cast<char*>("--")};
  if (observe) {
    argv.insert(argv.end(), {const_cast<char*>(req.shim.c_str()), bpf_arg.data(), sock_arg.data(),
                             const_cast<char*>(req.limits.c_str())});
  }
  for (const auto& c : req.command) argv.push_back(const_cast<char*>(c.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : req.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  pid_t reaper_pid = -1;  // pid 1 of the sandbox's outer pid namespace: SIGKILL ends everything
  int rc = 0;
  std::string netns_error;
  if (req.netns) {
    std::vector<std::pair<int, int>> dups = {{args.get(), kArgsFd}, {status_wr.get(), kStatusFd}};
    if (seccomp.valid()) dups.emplace_back(seccomp.get(), kSeccompFd);
    if (observe) {
      dups.emplace_back(obs_bpf.get(), kObserverBpfFd);
      dups.emplace_back(obs_sock.get(), kObserverSockFd);
    }
    if (err_wr.valid()) dups.emplace_back(err_wr.get(), 2);
    std::vector<std::string> av(argv.begin(), argv.end() - 1);
    auto child = spawn_in_netns(req.shim, av, req.env, dups, kObserverSockFd + 1);
    log::timing("network namespace ready");
    if (!child.ok()) {
      netns_error = child.error().message;
      rc = -1;
    } else {
      pid = child->pid;
      reaper_pid = child->reaper_pid;
      if (req.on_listeners) {
        auto st = req.on_listeners(std::move(child->http_listener), std::move(child->socks_listener));
        if (!st) {
          ::kill(pid, SIGKILL);
          int ws;
          ::waitpid(pid, &ws, 0);
          netns_error = st.error().message;
          rc = -1;
        }
      }
    }
  } else {
    rc = ::posix_spawn(&pid, req.bwrap.c_str(), &fa, &attr, argv.data(), envp.data());
  }
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  status_wr.reset();
  args.reset();
  seccomp.reset();
  obs_bpf.reset();
  obs_sock.reset();
  err_wr.reset();
  if (rc != 0) {
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    if (!netns_error.empty()) return make_error(ErrorKind::kSandboxFailed, netns_error);
    return make_error(ErrorKind::kSandboxFailed, fmt::format("cannot start \"{}\": {}", req.bwrap, std::strerror(rc)));
  }

  std::string status_text, err_line;
  pid_t init_pid = -1;
  int wait_status = 0;
  bool exited = false, timed_out = false, status_eof = false, err_eof = !err_rd.valid();
  bool observer_lost = false;
  double start = now_s(), exited_at = 0;
  while (!exited || !status_eof || !err_eof || (observe && req.observer->socket_fd() >= 0)) {
    int timeout_ms = -1;
    if (req.timeout_seconds && !timed_out && init_pid > 0) {
      double left = *req.timeout_seconds - (now_s() - start);
      if (left <= 0) {
        timed_out = true;
        // pid 1 of a pid namespace: all of it goes, bwrap's nested namespace included.
        ::kill(reaper_pid > 0 ? reaper_pid : init_pid, SIGKILL);
        continue;
      }
      timeout_ms = static_cast<int>(left * 1000) + 1;
    }
    if (exited) {
      // bwrap is gone; the pipes close as soon as the last sandboxed process does. A process
      // that escaped the pid namespace could hold them open: give up after a while.
      if (now_s() - exited_at > 2.0) break;
      timeout_ms = 200;
    }
    struct pollfd p[5] = {
        {sigfd.get(), POLLIN, 0},
        {status_eof ? -1 : status_rd.get(), POLLIN, 0},
        {err_eof ? -1 : err_rd.get(), POLLIN, 0},
        {observe && req.observer->socket_fd() >= 0 ? req.observer->socket_fd() : -1, POLLIN, 0},
    };
    int n = ::poll(p, 4, timeout_ms);
    if (n < 0 && errno != EINTR) break;
    if (p[3].revents) {
      if (req.observer->receive_listener()) {
        log::timing("observer listener received");
        req.observer->start();
      } else {
        observer_lost = true;
      }
    }
    if (p[2].revents) {
      char buf[8192];
      ssize_t r = ::read(err_rd.get(), buf, sizeof buf);
      if (r > 0) {
        // Relayed unchanged and at once; lines are only copied for recognition.
        write_all(2, buf, static_cast<size_t>(r));
        err_line.append(buf, static_cast<size_t>(r));
        size_t nl;
        while ((nl = err_line.find('\n')) != std::string::npos) {
          req.stderr_line(err_line.substr(0, nl));
          err_line.erase(0, nl + 1);
        }
        if (err_line.size() > 65536) err_line.erase(0, err_line.size() - 4096);
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        err_eof = true;
        log::timing("stderr closed");
        if (!err_line.empty()) req.stderr_line(err_line);
      }
    }
    if (p[1].revents) {
      char buf[512];
      ssize_t r = ::read(status_rd.get(), buf, sizeof buf);
      if (r > 0) {
        status_text.append(buf, static_cast<size_t>(r));
        if (status_text.find("exit-code") != std::string::npos) log::timing("bwrap reported the exit code");
        if (init_pid < 0) {
          init_pid = static_cast<pid_t>(find_json_number(status_text, "\"child-pid\""));
          if (init_pid > 0) log::timing("bwrap reported its child");
        }
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        status_eof = true;
        log::timing("bwrap status closed");
      }
    }
    if (p[0].revents) {
      struct signalfd_siginfo si;
      while (::read(sigfd.get(), &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGCHLD) continue;
        forward_signal(reaper_pid > 0 ? sandbox_init(reaper_pid) : init_pid, static_cast<int>(si.ssi_signo));
      }
      if (!exited && ::waitpid(pid, &wait_status, WNOHANG) == pid) {
        exited = true;
        exited_at = now_s();
        log::timing("bwrap reaped");
      }
    }
  }
  if (!exited) {
    while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
    }
  }
  if (observe) req.observer->stop();
  ::sigprocmask(SIG_SETMASK, &old, nullptr);

  if (timed_out) return 124;
  if (init_pid <= 0) {
    int code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
    return make_error(ErrorKind::kSandboxFailed,
                      fmt::format("bubblewrap could not set up the sandbox (status {}); its message is above", code));
  }
  if (observe && (observer_lost || !req.observer->ready())) {
    return make_error(ErrorKind::kSandboxFailed, "the observer did not start inside the sandbox; its message is above");
  }
  long code = find_json_number(status_text, "\"exit-code\"");
  if (code >= 0) return static_cast<int>(code);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return WEXITSTATUS(wait_status);
}

}  // namespace wb::lnx
