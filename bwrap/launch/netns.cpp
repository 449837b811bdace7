#include "bwrap/launch/netns.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/close_range.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
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

using ChildError = wb_keeper_error;  // the keeper's {step, errno} (bwrap/shim/wire.h)
const char* step_name(int step) {
  return wb_step_name(step);
}

[[noreturn]] void child_fail(int errfd, int step) {
  ChildError e{step, errno};
  (void)!::write(errfd, &e, sizeof e);
  ::_exit(127);
}

struct SpawnChild {
  const std::string* shim;
  std::vector<char*>* av;
  std::vector<char*>* ev;
  const std::vector<std::pair<int, int>>* dups;
  int sock, err, sock_fd, err_fd;
  const std::vector<int>* join;  // cgroup.procs to write "0" to: the sandbox's cgroup, first
};

// In the forked child: only system calls from here to exec.
[[noreturn]] void spawn_child(const SpawnChild* c) {
  // Out of the way of the descriptors the dups below create.
  int sock_hi = ::fcntl(c->sock, F_DUPFD_CLOEXEC, 200);
  int err_hi = ::fcntl(c->err, F_DUPFD_CLOEXEC, 200);
  if (sock_hi < 0 || err_hi < 0) ::_exit(127);
  // Into the run's cgroup before anything: every process of the sandbox descends from this one.
  for (int fd : *c->join) {
    if (::write(fd, "0", 1) != 1) child_fail(err_hi, WB_STEP_CGROUP);
  }
  // Handlers do not survive exec (wavebox has none installed yet anyway); what the caller
  // ignores stays ignored, as through env or nohup. Only the mask, which exec keeps, is cleared.
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Its own process group: a terminal's Ctrl-C reaches wavebox, which forwards it.
  ::setpgid(0, 0);
  if (const struct rlimit* r = sys::original_fd_limit()) ::setrlimit(RLIMIT_NOFILE, r);
  for (const auto& [from, to] : *c->dups) {
    if (::dup2(from, to) < 0) child_fail(err_hi, WB_STEP_EXEC_BWRAP);
  }
  if (::dup2(sock_hi, c->sock_fd) < 0 || ::dup2(err_hi, c->err_fd) < 0) child_fail(err_hi, WB_STEP_EXEC_BWRAP);
  // Descriptors the caller leaked must not reach the sandbox.
  ::syscall(SYS_close_range, static_cast<unsigned>(c->err_fd + 1), ~0U, 0);
  ::execve(c->shim->c_str(), c->av->data(), c->ev->data());
  child_fail(c->err_fd, WB_STEP_EXEC_BWRAP);
}

// vfork: no copy of our page tables, and none of our pages made copy-on-write (each first write
// after a fork would fault); we wait only for the child's exec. (With fork the child was often
// queued on our CPU, which stays busy planning, and waited ~0.8 ms for it while the other sat
// idle; after vfork it is the one running, and we are the one woken, on the idle CPU.)
__attribute__((noinline)) pid_t start_child(const SpawnChild* c) {
  pid_t pid = ::vfork();
  if (pid == 0) spawn_child(c);
  return pid;
}

}  // namespace

Result<NetnsChild> spawn_in_netns(const std::string& shim, const std::vector<std::string>& argv,
                                  const std::vector<std::string>& env, const std::vector<std::pair<int, int>>& dups,
                                  int close_from, const std::vector<int>& join) {
  // Everything the child needs is prepared here: after fork only async-signal-safe calls.
  const int sock_fd = close_from, err_fd = close_from + 1;
  std::vector<std::string> args = {shim,
                                   "keeper",
                                   std::to_string(::getpid()),
                                   std::to_string(::geteuid()),
                                   std::to_string(::getegid()),
                                   std::to_string(sock_fd),
                                   std::to_string(err_fd)};
  args.insert(args.end(), argv.begin(), argv.end());
  std::vector<char*> av, ev;
  for (const auto& a : args) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  for (const auto& e : env) ev.push_back(const_cast<char*>(e.c_str()));
  ev.push_back(nullptr);
  int sv[2], ep[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 || ::pipe2(ep, O_CLOEXEC) != 0) {
    return make_error(ErrorKind::kSandboxFailed, fmt::format("socketpair/pipe failed: {}", std::strerror(errno)));
  }
  sys::Fd ours(sv[0]), theirs(sv[1]), err_rd(ep[0]), err_wr(ep[1]);

  // Every signal stays blocked in the child until just before its exec, so no handler of ours
  // runs in it (it shares our memory until then).
  SpawnChild c{&shim, &av, &ev, &dups, theirs.get(), err_wr.get(), sock_fd, err_fd, &join};
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = start_child(&c);
  int clone_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) return make_error(ErrorKind::kSandboxFailed, fmt::format("fork failed: {}", std::strerror(clone_errno)));
  theirs.reset();
  err_wr.reset();

  NetnsChild child;
  child.pid = pid;
  child.control = std::move(ours);
  child.error_pipe = std::move(err_rd);
  return child;
}

Status receive_listeners(NetnsChild& child) {
  int fds[WB_KEEPER_FDS + WB_MAX_EXTRA_PORTS];
  for (int& f : fds) f = -1;
  char hello[2] = {0, 0};
  int n = sys::recv_fds(child.control.get(), fds, WB_KEEPER_FDS + WB_MAX_EXTRA_PORTS, hello, 2);
  if (n >= WB_KEEPER_FDS && hello[0] == WB_WORD_LISTENERS && hello[1] == n) {
    child.listeners.http.reset(fds[0]);
    child.listeners.socks.reset(fds[1]);
    child.unix_diag.reset(fds[2]);
    child.listeners.dns.reset(fds[3]);
    child.listeners.dns_tcp.reset(fds[4]);
    for (int i = 5; i < n; ++i) child.listeners.transparent.emplace_back(fds[i]);
  } else {
    for (int i = 0; i < n; ++i) ::close(fds[i]);
  }
  // A failure so far shows now as a report on the error pipe (its end of file instead means
  // bwrap was already exec'd: all well).
  struct pollfd pf = {child.error_pipe.get(), POLLIN, 0};
  ChildError e{};
  ssize_t got = 0;
  if (child.listeners.http.valid() && ::poll(&pf, 1, 0) > 0 && (pf.revents & POLLIN)) {
    got = ::read(child.error_pipe.get(), &e, sizeof e);
  }
  if (!child.listeners.http.valid() || got == static_cast<ssize_t>(sizeof e)) {
    if (!child.listeners.http.valid()) got = ::read(child.error_pipe.get(), &e, sizeof e);
    int st;
    ::waitpid(child.pid, &st, 0);
    return make_error(ErrorKind::kSandboxFailed,
                      fmt::format("network namespace: {} failed: {}", step_name(got == sizeof e ? e.step : 0),
                                  got == sizeof e && e.err ? std::strerror(e.err) : "no listeners received"));
  }
  return ok_status();
}

Status await_bwrap(NetnsChild& child) {
  pid_t bwrap = -1;
  ssize_t n;
  do {
    n = ::read(child.control.get(), &bwrap, sizeof bwrap);
  } while (n < 0 && errno == EINTR);
  child.control.reset();
  if (n == static_cast<ssize_t>(sizeof bwrap)) {
    child.bwrap_pid = bwrap;
    // The error pipe closes once bwrap is exec'd; otherwise it says which step failed.
    ChildError e{};
    ssize_t got;
    do {
      got = ::read(child.error_pipe.get(), &e, sizeof e);
    } while (got < 0 && errno == EINTR);
    child.error_pipe.reset();
    if (got != static_cast<ssize_t>(sizeof e)) return ok_status();
    return make_error(ErrorKind::kSandboxFailed,
                      fmt::format("network namespace: {} failed: {}", step_name(e.step), std::strerror(e.err)));
  }
  ChildError e{};
  ssize_t got = ::read(child.error_pipe.get(), &e, sizeof e);
  child.error_pipe.reset();
  return make_error(ErrorKind::kSandboxFailed,
                    fmt::format("network namespace: {} failed: {}", step_name(got == sizeof e ? e.step : 0),
                                got == sizeof e && e.err ? std::strerror(e.err) : "the keeper ended"));
}

}  // namespace wb::lnx
