#include "bwrap/netns.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/close_range.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/sys/fdpass.hpp"
#include "core/sys/fs.hpp"

namespace wb::lnx {
namespace {

// Child-side failure report: the step and errno, written to a close-on-exec pipe.
struct ChildError {
  int step;
  int err;
};

const char* step_name(int step) {
  switch (step) {
    case 1: return "creating the user and network namespace";
    case 2: return "writing the user namespace's id maps";
    case 3: return "raising the loopback interface";
    case 4: return "binding the proxy listeners";
    case 5: return "handing the listeners over";
    case 6: return "starting bubblewrap";
    case 7: return "starting the namespace's reaper";
    default: return "setting up the network namespace";
  }
}

[[noreturn]] void child_fail(int errfd, int step) {
  ChildError e{step, errno};
  (void)!::write(errfd, &e, sizeof e);
  ::_exit(127);
}

bool write_file(const char* path, const char* data, size_t len) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, data, len) == static_cast<ssize_t>(len);
  ::close(fd);
  return ok;
}

int listener(int port) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  int one = 1;
  ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s, 1024) != 0) return -1;
  return s;
}

}  // namespace

Result<NetnsChild> spawn_in_netns(const std::string& path, const std::vector<std::string>& argv,
                                  const std::vector<std::string>& env, const std::vector<std::pair<int, int>>& dups,
                                  int close_from) {
  // Everything the child needs is prepared here: after fork only async-signal-safe calls.
  std::string uid_map = fmt::format("{0} {0} 1\n", ::geteuid());
  std::string gid_map = fmt::format("{0} {0} 1\n", ::getegid());
  std::vector<char*> av, ev;
  for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  for (const auto& e : env) ev.push_back(const_cast<char*>(e.c_str()));
  ev.push_back(nullptr);
  int sv[2], ep[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 || ::pipe2(ep, O_CLOEXEC) != 0) {
    return make_error(ErrorKind::kSandboxFailed, fmt::format("socketpair/pipe failed: {}", std::strerror(errno)));
  }
  sys::Fd ours(sv[0]), theirs(sv[1]), err_rd(ep[0]), err_wr(ep[1]);

  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return make_error(ErrorKind::kSandboxFailed, fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    // The keeper. Out of the way of the descriptors the dups below create.
    int errfd = ::fcntl(err_wr.get(), F_DUPFD_CLOEXEC, 200);
    if (errfd < 0) errfd = err_wr.get();
    if (errfd != err_wr.get()) ::close(err_wr.get());
    ::close(ours.get());
    ::close(err_rd.get());
    // Dies with wavebox; armed first, then checked, so no moment is uncovered.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
    sigset_t none;
    sigemptyset(&none);
    for (int s = 1; s < NSIG; ++s) {
      if (s != SIGKILL && s != SIGSTOP) ::signal(s, SIG_DFL);
    }
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // Its own process group: a terminal's Ctrl-C reaches wavebox, which forwards it.
    ::setpgid(0, 0);
    if (const struct rlimit* r = sys::original_fd_limit()) ::setrlimit(RLIMIT_NOFILE, r);
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWPID) != 0) child_fail(errfd, 1);
    // An unprivileged process may map exactly its own ids, after giving up setgroups.
    if (!write_file("/proc/self/setgroups", "deny", 4) ||
        !write_file("/proc/self/uid_map", uid_map.data(), uid_map.size()) ||
        !write_file("/proc/self/gid_map", gid_map.data(), gid_map.size())) {
      child_fail(errfd, 2);
    }
    // The loopback must be raised by a process inside the namespace: an ioctl, not `ip`.
    int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr {};
    std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
    if (s < 0 || ::ioctl(s, SIOCGIFFLAGS, &ifr) != 0) child_fail(errfd, 3);
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
    if (::ioctl(s, SIOCSIFFLAGS, &ifr) != 0) child_fail(errfd, 3);
    ::close(s);
    int lh = listener(kHttpProxyPort), ls = listener(kSocksProxyPort);
    if (lh < 0 || ls < 0) child_fail(errfd, 4);

    // The reaper: pid 1 of the new pid namespace. A pipe tells it whether the keeper still
    // lives (getppid() is 0 across a pid namespace boundary).
    int alive[2];
    if (::pipe2(alive, O_CLOEXEC) != 0) child_fail(errfd, 7);
    pid_t reaper = ::fork();
    if (reaper < 0) child_fail(errfd, 7);
    if (reaper == 0) {
      ::close(alive[1]);
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ::_exit(127);
      struct pollfd pf = {alive[0], POLLIN, 0};
      if (::poll(&pf, 1, 0) > 0) ::_exit(127);  // EOF: the keeper is already gone
      ::close(lh);
      ::close(ls);
      ::close(theirs.get());
      pid_t bw = ::fork();
      if (bw < 0) ::_exit(127);
      if (bw == 0) {
        for (const auto& [from, to] : dups) {
          if (::dup2(from, to) < 0) child_fail(errfd, 6);
        }
        // Descriptors the caller leaked must not reach the sandbox (errfd is close-on-exec).
        if (errfd > close_from) ::syscall(SYS_close_range, static_cast<unsigned>(close_from), static_cast<unsigned>(errfd - 1), 0);
        ::syscall(SYS_close_range, static_cast<unsigned>(errfd + 1), ~0U, 0);
        ::execve(path.c_str(), av.data(), ev.data());
        child_fail(errfd, 6);
      }
      ::close(errfd);
      // As pid 1: reap everything; when bwrap ends, so does the namespace.
      for (;;) {
        int st;
        pid_t p = ::wait(&st);
        if (p < 0 && errno == EINTR) continue;
        if (p < 0) ::_exit(127);
        if (p == bw) ::_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
      }
    }
    ::close(alive[0]);
    int fds[2] = {lh, ls};
    struct {
      char byte;
      pid_t reaper;
    } hello = {'L', reaper};
    if (!sys::send_fds(theirs.get(), fds, 2, &hello, sizeof hello)) child_fail(errfd, 5);
    ::close(lh);
    ::close(ls);
    ::close(errfd);
    ::close(theirs.get());
    // The keeper waits for the reaper and passes its status on.
    for (;;) {
      int st;
      pid_t p = ::waitpid(reaper, &st, 0);
      if (p < 0 && errno == EINTR) continue;
      if (p < 0) ::_exit(127);
      ::_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    }
  }
  theirs.reset();
  err_wr.reset();

  NetnsChild child;
  child.pid = pid;
  int fds[2] = {-1, -1};
  struct {
    char byte;
    pid_t reaper;
  } hello = {0, -1};
  if (sys::recv_fds(ours.get(), fds, 2, &hello, sizeof hello) == 2) {
    child.http_listener.reset(fds[0]);
    child.socks_listener.reset(fds[1]);
    child.reaper_pid = hello.reaper;
  }
  // The error pipe closes on a successful exec; otherwise it says which step failed.
  ChildError e{};
  ssize_t got;
  do {
    got = ::read(err_rd.get(), &e, sizeof e);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof e) || !child.http_listener.valid()) {
    int st;
    ::waitpid(pid, &st, 0);
    return make_error(ErrorKind::kSandboxFailed,
                      fmt::format("network namespace: {} failed: {}", step_name(e.step),
                                  e.err ? std::strerror(e.err) : "no listeners received"));
  }
  return child;
}

}  // namespace wb::lnx
