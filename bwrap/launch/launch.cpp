// The start of a run (bwrap/launch/exec.hpp, Launch): the keeper and bwrap started with their
// descriptors, and what does not depend on the plan (the command's spec, its environment for
// bwrap) sent ahead; the supervision of what then runs is bwrap/launch/exec.cpp's.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "bwrap/launch/exec.hpp"
#include "bwrap/launch/netns.hpp"
#include "bwrap/shim/wire.h"
#include "core/log.hpp"
#include "core/sys/fd.hpp"
#include "core/sys/fdpass.hpp"
#include "core/sys/fs.hpp"

namespace wb::lnx {
namespace {

using sys::Fd;

// Moves an fd above the range we hand to bwrap, so dup2 in the child always changes numbers
// (which is what clears close-on-exec).
Fd high_fd(int fd) {
  int h = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
  ::close(fd);
  return Fd(h);
}

}  // namespace

// Writes bwrap's options into its pipe. A bwrap that died meanwhile gives EPIPE, not SIGPIPE:
// the signal is blocked for this thread only and, if the write raised it, taken back before the
// mask is (the process's handling of SIGPIPE never changes); await_bwrap then says what happened.
Status send_options(const std::string& data, int to) {
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  bool broken = false;
  Status st = ok_status();
  size_t off = 0;
  while (off < data.size()) {
    ssize_t w = ::write(to, data.data() + off, data.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      broken = errno == EPIPE;
      if (!broken) st = sys::sys_error("write", "bwrap's options", errno);
      break;
    }
    off += static_cast<size_t>(w);
  }
  if (broken && !sigismember(&old, SIGPIPE)) {
    struct timespec zero = {0, 0};
    while (::sigtimedwait(&pipe_only, nullptr, &zero) == SIGPIPE) {
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return st;
}

std::string encode_limits(long long cpu_seconds, long long processes, long long memory_mb) {
  return fmt::format("{}:{}:{}", cpu_seconds, processes, memory_mb);
}

std::string encode_spec(const std::string& limits, const std::string& exe, const std::vector<std::string>& command) {
  std::string spec = limits + '\0' + (exe.empty() ? std::string("-") : exe) + '\0';
  for (const auto& a : command) spec += a + '\0';
  return spec;
}

std::string encode_go_spec(const std::string& limits, const std::string& exe, const std::string& cwd,
                           const std::vector<std::string>& env, const std::vector<std::string>& command) {
  std::string out;
  for (const std::string& f : {limits, exe.empty() ? std::string("-") : exe, cwd, std::to_string(env.size())}) {
    out.append(f);
    out += '\0';
  }
  for (const auto& v : {std::cref(env), std::cref(command)}) {
    for (const auto& f : v.get()) {
      out.append(f);
      out += '\0';
    }
  }
  return out;
}

Result<sys::Fd> new_memfd(const char* name) {
  Fd fd(::memfd_create(name, MFD_CLOEXEC));
  if (!fd.valid()) return sys::sys_error("memfd_create", name, errno);
  return high_fd(fd.release());
}

std::string bwrap_options(const std::vector<std::string>& args) {
  std::string data = "--json-status-fd";
  data += '\0';
  data += std::to_string(kStatusFd);
  data += '\0';
  for (const auto& a : args) {
    data += a;
    data += '\0';
  }
  return data;
}

Launch::~Launch() {
  if (!consumed && child.pid > 0) {
    // Not run. A keeper still waiting for the allowlist's ports (a launch started before the
    // settings were read, and dropped) sees its socket's end, ends bwrap, waits for it and exits:
    // nothing is left for the system to reap. Otherwise, or when it does not end soon, SIGKILL:
    // its death ends bwrap (its parent-death signal), waiting for its options, and the namespace.
    bool ended = false;
    if (!net_config_sent && child.control.valid() && keeper_pidfd.valid()) {
      child.control.reset();
      struct pollfd pf = {keeper_pidfd.get(), POLLIN, 0};
      int n;
      do {
        n = ::poll(&pf, 1, 500);
      } while (n < 0 && errno == EINTR);
      ended = n > 0;
    }
    if (!ended) ::kill(child.pid, SIGKILL);
    int ws;
    while (::waitpid(child.pid, &ws, 0) < 0 && errno == EINTR) {
    }
  }
}

std::vector<std::string> launch_args(const std::string& shim) {
  return {"--args",
          std::to_string(kArgsFd),
          "--",
          shim,
          std::to_string(kSeccompFd),
          std::to_string(kObserverSockFd),
          std::to_string(kShimSpecFd),
          std::to_string(kShimMountsFd)};
}

SignalQueue::SignalQueue() : efd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

void SignalQueue::push(int sig) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back(sig);
  }
  uint64_t one = 1;
  (void)!::write(efd_.get(), &one, sizeof one);
}

std::vector<int> SignalQueue::take() {
  if (signalfd_ >= 0) {
    std::vector<int> got;
    struct signalfd_siginfo si;
    while (::read(signalfd_, &si, sizeof si) == sizeof si) got.push_back(static_cast<int>(si.ssi_signo));
    return got;
  }
  uint64_t n;
  (void)!::read(efd_.get(), &n, sizeof n);
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(pending_, {});
}

Result<std::unique_ptr<Launch>> start_launch(const std::string& bwrap, const std::string& shim, bool relay_stderr,
                                             const std::vector<std::string>& env, const Logger& log,
                                             const std::vector<int>& join, const wb_net_config* net) {
  auto L = std::make_unique<Launch>();
  L->log = &log;
  L->env = env;
  int pfd[2];
  if (::pipe2(pfd, O_CLOEXEC) != 0) return sys::sys_error("pipe2", "status", errno);
  L->status_rd = high_fd(pfd[0]);
  L->status_wr = high_fd(pfd[1]);
  // bwrap's options go through a pipe: bwrap starts while we plan and waits on it.
  if (::pipe2(pfd, O_CLOEXEC) != 0) return sys::sys_error("pipe2", "arguments", errno);
  L->args_rd = high_fd(pfd[0]);
  L->args_wr = high_fd(pfd[1]);
  (void)::fcntl(L->args_wr.get(), F_SETPIPE_SZ, 1 << 20);  // most lists then fit without waiting
  if (::pipe2(pfd, O_CLOEXEC) != 0) return sys::sys_error("pipe2", "stderr", errno);
  L->err_rd = high_fd(pfd[0]);
  L->err_wr = high_fd(pfd[1]);
  L->relay_command_stderr = relay_stderr;
  Fd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null.valid()) return sys::sys_error("open", "/dev/null", errno);
  null = high_fd(null.release());
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pfd) != 0)
    return sys::sys_error("socketpair", "shim", errno);
  L->obs_ours = high_fd(pfd[0]);
  L->obs_theirs = high_fd(pfd[1]);
  L->filter = WB_TRY(new_memfd("wavebox-seccomp"));
  L->spec = WB_TRY(new_memfd("wavebox-command"));
  L->mounts = WB_TRY(new_memfd("wavebox-mounts"));

  std::vector<std::string> argv = launch_args(shim);
  argv.insert(argv.begin(), bwrap);
  std::vector<std::pair<int, int>> dups = {
      {L->args_rd.get(), kArgsFd},  {L->status_wr.get(), kStatusFd},        {L->filter.get(), kSeccompFd},
      {L->spec.get(), kShimSpecFd}, {L->obs_theirs.get(), kObserverSockFd}, {L->mounts.get(), kShimMountsFd}};
  dups.emplace_back(null.get(), 0);
  dups.emplace_back(null.get(), 1);
  dups.emplace_back(L->err_wr.get(), 2);
  // The keeper and bwrap start with the caller's environment; the command's comes with the options.
  L->child = WB_TRY(spawn_in_netns(shim, argv, L->env, dups, kShimMountsFd + 1, join));
  // Its end wakes the supervision loop (no SIGCHLD: the process's signals are not ours). A
  // kernel without pidfds (before 5.3): the loop looks every 50 ms instead.
  L->keeper_pidfd = Fd(static_cast<int>(::syscall(SYS_pidfd_open, L->child.pid, 0)));
  log.timing("keeper started");
  L->args_rd.reset();
  L->obs_theirs.reset();
  if (net) WB_TRY(send_net_config(*L, *net));
  return L;
}

namespace {

// Whether pid runs shim (the same file): the keeper the launcher started is our child running
// the shim; nothing else of ours does (bwrap and the shim inside are the keeper's). Its command
// line is not asked: /proc/PID/cmdline reads empty at moments (while the keeper forks).
bool is_our_keeper(pid_t pid, const std::string& shim) {
  struct stat exe, want;
  return ::stat(("/proc/" + std::to_string(pid) + "/exe").c_str(), &exe) == 0 && ::stat(shim.c_str(), &want) == 0 &&
         exe.st_dev == want.st_dev && exe.st_ino == want.st_ino;
}

}  // namespace

namespace {
// Our own child (waitid answers ECHILD for any other process) running shim.
bool is_our_child_keeper(pid_t keeper, const std::string& shim) {
  siginfo_t si{};
  return keeper > 0 && ::waitid(P_PID, static_cast<id_t>(keeper), &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         is_our_keeper(keeper, shim);
}
}  // namespace

Result<std::unique_ptr<Launch>> adopt_launch(pid_t keeper, const int fds[], const std::string& shim, bool relay_stderr,
                                             const std::vector<std::string>& env, const Logger& log) {
  // Everything is checked before anything is taken: a refusal leaves the numbers to
  // drop_unadopted, and nothing here has closed one of them.
  bool ok = true;
  for (int i = 0; i < WB_EARLY_FDS && ok; ++i) {
    // Each number once, above the standard descriptors, and of the kind it must be.
    for (int j = 0; j < i; ++j) ok = ok && fds[j] != fds[i];
    struct stat st;
    ok = ok && fds[i] > 2 && ::fstat(fds[i], &st) == 0;
    if (!ok) break;
    const bool sock = i == WB_EARLY_OBS || i == WB_EARLY_CONTROL;
    const bool file = i == WB_EARLY_FILTER || i == WB_EARLY_SPEC || i == WB_EARLY_MOUNTS;
    ok = sock ? S_ISSOCK(st.st_mode) : file ? S_ISREG(st.st_mode) : S_ISFIFO(st.st_mode);
  }
  if (!ok) return make_error(ErrorKind::kSandboxFailed, "the launcher's sandbox: a descriptor is not what it must be");
  if (!is_our_child_keeper(keeper, shim)) {
    return make_error(ErrorKind::kSandboxFailed, "the launcher's keeper is not our child running the shim");
  }
  auto L = std::make_unique<Launch>();
  L->log = &log;
  L->env = env;
  L->relay_command_stderr = relay_stderr;
  Fd* slot[WB_EARLY_FDS] = {&L->status_rd, &L->status_wr,     &L->args_wr,         &L->err_rd,
                            &L->err_wr,    &L->obs_ours,      &L->filter,          &L->spec,
                            &L->mounts,    &L->child.control, &L->child.error_pipe};
  static_assert(WB_EARLY_STATUS_RD == 0 && WB_EARLY_ERROR_PIPE == 10 && WB_EARLY_FDS == 11);
  for (int i = 0; i < WB_EARLY_FDS; ++i) {
    (void)::fcntl(fds[i], F_SETFD, FD_CLOEXEC);
    slot[i]->reset(fds[i]);
  }
  L->child.pid = keeper;
  L->keeper_pidfd = Fd(static_cast<int>(::syscall(SYS_pidfd_open, keeper, 0)));
  log.timing("keeper started by the launcher");
  return L;
}

void drop_unadopted(pid_t keeper, const int fds[], const std::string& shim) {
  for (int i = 0; i < WB_EARLY_FDS; ++i) {
    bool seen = false;
    for (int j = 0; j < i; ++j) seen = seen || fds[j] == fds[i];
    if (fds[i] > 2 && !seen) ::close(fds[i]);
  }
  if (!shim.empty() && is_our_child_keeper(keeper, shim)) {
    ::kill(keeper, SIGKILL);
    while (::waitpid(keeper, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

std::string encode_net_config(const wb_net_config& net) {
  if (!wb_net_config_ok(&net)) return "";
  std::string word(1, WB_WORD_NET_CONFIG);
  word.append(reinterpret_cast<const char*>(&net), sizeof net);
  return word;
}

Status send_net_config(Launch& L, const wb_net_config& net) {
  if (L.net_config_sent) return make_error(ErrorKind::kSandboxFailed, "internal: the keeper's ports sent twice");
  std::string word = encode_net_config(net);
  if (word.empty()) {
    return make_error(ErrorKind::kSandboxFailed, "internal: the allowlist's ports do not fit the keeper's message");
  }
  // (A keeper gone already shows at the listeners: its error pipe says why.)
  for (size_t off = 0; off < word.size();) {
    ssize_t n = ::send(L.child.control.get(), word.data() + off, word.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) break;
    if (n <= 0) return sys::sys_error("send", "the keeper's socket", n < 0 ? errno : EIO);
    off += static_cast<size_t>(n);
  }
  L.net_config_sent = true;
  return ok_status();
}

Status begin_launch(Launch& L, const ExecRequest& req, const std::string& early_options) {
  // The command, its limits and where it was found, first: the shim reads them as soon as bwrap
  // runs it.
  WB_TRY(
      sys::replace_contents(L.spec.get(), encode_spec(req.limits, req.exe, req.command), "the command for the shim"));
  // The command's environment, for bwrap to set before it runs the shim.
  std::string& env_options = L.env_options;
  env_options.clear();
  auto option = [&](std::initializer_list<std::string_view> words) {
    for (auto w : words) {
      env_options.append(w);
      env_options += '\0';
    }
  };
  if (req.bwrap_clearenv) {
    option({"--clearenv"});
  } else {
    for (const auto& launch_kv : L.env) {
      std::string_view kv(launch_kv);
      std::string_view name = kv.substr(0, kv.find('='));
      bool kept = std::any_of(req.env.begin(), req.env.end(), [&](const std::string& mine) {
        return mine.size() > name.size() && mine.compare(0, name.size(), name) == 0 && mine[name.size()] == '=';
      });
      if (!kept && !name.empty()) option({"--unsetenv", name});
    }
  }
  for (const auto& kv : req.env) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string_view v(kv);
    option({"--setenv", v.substr(0, eq), v.substr(eq + 1)});
  }
  if (!early_options.empty()) {
    WB_TRY(send_options(env_options + early_options, L.args_wr.get()));
    L.args_wr.reset();
    L.options_sent = true;
  }
  return ok_status();
}

}  // namespace wb::lnx
