#include "bwrap/supervise/observer.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "bwrap/shim/wire.h"
#include "bwrap/supervise/supervise_util.hpp"
#include "core/log.hpp"
#include "core/paths.hpp"
#include "core/sys/fdpass.hpp"
#include "core/sys/fs.hpp"

namespace wb::lnx {
namespace {

bool read_mem(pid_t pid, unsigned long long addr, void* buf, size_t len, size_t* got) {
  return read_caller_memory(pid, addr, buf, len, got);
}

bool read_path(pid_t pid, unsigned long long addr, std::string& out) {
  if (addr == 0) return false;
  // Most paths are short: one small read, the full PATH_MAX only when no NUL came back.
  char small[256];
  size_t got = 0;
  if (!read_mem(pid, addr, small, sizeof small, &got)) return false;
  size_t len = strnlen(small, got);
  if (len < got) {
    out.assign(small, len);
    return true;
  }
  char buf[PATH_MAX];
  if (!read_mem(pid, addr, buf, sizeof buf, &got)) return false;
  out.assign(buf, strnlen(buf, got));
  return true;
}

std::string read_link(const std::string& p) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(p.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace

// The absolute path the command meant: relative paths against its cwd (cached per thread; the
// filter notifies chdir and fchdir, which drop the entry) or the directory fd.
std::string Observer::absolute(pid_t pid, long long dirfd, const std::string& p) {
  if (!p.empty() && p[0] == '/') return paths::normalize(p);
  std::string base;
  if (static_cast<int>(dirfd) == AT_FDCWD) {
    auto it = cwd_cache_.find(pid);
    if (it != cwd_cache_.end()) {
      base = it->second;
    } else {
      base = read_link(fmt::format("/proc/{}/cwd", pid));
      if (cwd_cache_.size() > 4096) cwd_cache_.clear();
      if (!base.empty()) cwd_cache_.emplace(pid, base);
    }
  } else {
    base = read_link(fmt::format("/proc/{}/fd/{}", pid, static_cast<int>(dirfd)));
  }
  if (base.empty()) base = "/";
  return paths::normalize(base + "/" + p);
}

namespace {

// The same path with its parent resolved through symlinks, as the kernel will (the host's view
// equals the sandbox's for the parents that matter). Only paths that look refused pay for it.
std::string resolved(const std::string& full) {
  if (full == "/") return full;
  std::string parent = sys::real_path_or_empty(paths::parent(full));
  return parent.empty() ? full : paths::join(parent, paths::basename(full));
}

// Whether the parent of a path is reached through a symbolic link (then the lexical path is not
// where the write lands). One openat2 with RESOLVE_NO_SYMLINKS instead of a realpath walk.
bool via_symlink(const std::string& full) {
  struct open_how how {};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS;
  long fd = ::syscall(SYS_openat2, AT_FDCWD, paths::parent(full).c_str(), &how, sizeof how);
  if (fd >= 0) {
    ::close(static_cast<int>(fd));
    return false;
  }
  return errno == ELOOP;
}

}  // namespace

Observer::Observer(std::function<bool(const std::string&)> writable, std::function<void(const Violation&)> sink,
                   Supervisor::Refuses refuses, std::function<std::string(const std::string&)> moving)
    : writable_(writable), sink_(std::move(sink)), supervisor_(writable, std::move(refuses), std::move(moving)) {
  struct seccomp_notif_sizes sizes {};
  if (::syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0) {
    req_size_ = std::max<size_t>(sizes.seccomp_notif, sizeof(struct seccomp_notif));
    resp_size_ = std::max<size_t>(sizes.seccomp_notif_resp, sizeof(struct seccomp_notif_resp));
    req_ = std::calloc(1, req_size_);
    resp_ = std::calloc(1, resp_size_);
  }
}

Observer::~Observer() {
  stop();
  std::free(req_);
  std::free(resp_);
}

bool Observer::receive_listener() {
  // The word, a byte per FUSE mask asked for; the listener, then the served masks' connections.
  char word[1 + WB_MAX_FUSE_MASKS];
  int fds[1 + WB_MAX_FUSE_MASKS];
  const size_t want = 1 + fuse_.expected();
  size_t got_bytes = 0;
  int got = sys::recv_fds(ours_.get(), fds, 1 + WB_MAX_FUSE_MASKS, word, want, &got_bytes);
  bool ok = got >= 1 && got_bytes == want && word[0] == WB_WORD_LISTENERS;
  if (ok) {
    ok = fuse_.adopt(word + 1, want - 1, fds + 1, static_cast<size_t>(got - 1));  // takes fds[1..] either way
  } else {
    for (int i = 1; i < got; ++i) ::close(fds[i]);
  }
  if (!ok) {
    if (got >= 1) ::close(fds[0]);
    ours_.reset();
    return false;
  }
  listener_.reset(fds[0]);
  if (fuse_.size() < fuse_.expected()) {
    // Out of reach, or the kernel would not mount it here: the old mask, reads from stderr only.
    log_->info(fmt::format("{} of {} read masks are FUSE filesystems (the rest report from stderr only)", fuse_.size(),
                           fuse_.expected()));
  }
  // The shim waits for this before it starts the command (see bwrap/shim/init.c).
  char ack = WB_WORD_ACK;
  (void)!::send(ours_.get(), &ack, 1, MSG_NOSIGNAL);
  return true;
}

bool Observer::receive_end(int* status, int* stopped) {
  unsigned char msg[2];
  ssize_t n;
  do {
    n = ::recv(ours_.get(), msg, sizeof msg, MSG_WAITALL);
  } while (n < 0 && errno == EINTR);
  if (stopped) *stopped = 0;
  if (stopped && n == static_cast<ssize_t>(sizeof msg) && msg[0] == WB_WORD_STOPPED) {
    *stopped = msg[1] ? msg[1] : SIGSTOP;  // the socket stays: the end comes later
    return true;
  }
  ours_.reset();
  if (n != static_cast<ssize_t>(sizeof msg) || msg[0] != WB_WORD_END) return false;
  *status = msg[1];
  return true;
}

namespace {
constexpr int kStopSignal = 40;  // a real-time signal, no-op handler: interrupts the blocking receive
void on_stop_signal(int) {}
// Linux 6.7: the notifier hands the CPU straight to the supervisor and back.
constexpr unsigned long kNotifSetFlags = SECCOMP_IOW(4, __u64);
constexpr __u64 kSyncWakeUp = 1;
}  // namespace

std::vector<std::string> Observer::created_git() const {
  std::lock_guard<std::mutex> lock(created_mu_);
  return created_git_;
}

bool Observer::parent_via_symlink(const std::string& path) {
  std::string parent = paths::parent(path);
  auto it = symlink_cache_.find(parent);
  if (it != symlink_cache_.end()) return it->second;
  bool v = via_symlink(path);
  if (symlink_cache_.size() > 8192) symlink_cache_.clear();
  symlink_cache_.emplace(parent, v);
  return v;
}

void Observer::start() {
  if (!listener_.valid() || thread_.joinable()) return;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;  // no SA_RESTART: the ioctl returns EINTR
  ::sigaction(kStopSignal, &sa, nullptr);
  (void)::ioctl(listener_.get(), kNotifSetFlags, kSyncWakeUp);  // older kernels: EINVAL, fine
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error& e) {
    // Slower, but every notified call is still answered (a call left unanswered would hang).
    without_thread_ = true;
    log_->warn(fmt::format("no thread for the write observer ({}): the supervision loop answers it", e.what()));
  }
}

void Observer::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  ::pthread_kill(thread_.native_handle(), kStopSignal);
  thread_.join();
}

void Observer::run() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, kStopSignal);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  Supervisor::drop_thread_privileges();
  while (!stopping_ && listener_.valid()) handle_one();
}

void Observer::answer_performed(unsigned long long id, int nr, Performed& done, const struct timespec& tb) {
  bool valid = true;
  if (done.deferred) {
    // Answered by the thread that waits for the FIFO's reader.
  } else if (done.fd >= 0) {
    struct seccomp_notif_addfd add {};
    add.id = id;
    add.flags = SECCOMP_ADDFD_FLAG_SEND;
    add.srcfd = static_cast<__u32>(done.fd);
    add.newfd_flags = done.cloexec ? O_CLOEXEC : 0;
    valid = ::ioctl(listener_.get(), SECCOMP_IOCTL_NOTIF_ADDFD, &add) >= 0;
    ::close(done.fd);
  } else {
    auto* resp = static_cast<struct seccomp_notif_resp*>(resp_);
    std::memset(resp, 0, resp_size_);
    resp->id = id;
    resp->error = done.error ? -done.error : 0;
    resp->val = done.error ? 0 : done.value;
    valid = ::ioctl(listener_.get(), SECCOMP_IOCTL_NOTIF_SEND, resp) == 0;
  }
  struct timespec te;
  ::clock_gettime(CLOCK_MONOTONIC, &te);
  busy_ns_ += (te.tv_sec - tb.tv_sec) * 1000000000LL + (te.tv_nsec - tb.tv_nsec);
  if (valid && !done.direct.empty()) {
    sink_({Refused::kConnect, done.direct, "direct connection; use the proxy", RefusalCode::kDirect});
    return;
  }
  if (!valid || done.path.empty()) return;
  if (nr == SYS_rename || nr == SYS_renameat || nr == SYS_renameat2 || nr == SYS_symlink || nr == SYS_symlinkat ||
      nr == SYS_unlink || nr == SYS_unlinkat || nr == SYS_rmdir) {
    symlink_cache_.clear();
  }
  if (!done.refused.empty() || done.guarded) {
    if (done.network) {
      sink_({Refused::kConnect, "unix:" + done.path, done.refused, RefusalCode::kHostSocket});
    } else {
      write_refused(done.path, done.refused, done.guarded);
    }
    return;
  }
  if (!done.error) {
    std::string name = paths::basename(done.path);
    if (name == ".git" || name == "HEAD" || name == "objects" || name == "refs") {
      std::lock_guard<std::mutex> lock(created_mu_);
      if (created_git_.size() < 10000) created_git_.push_back(name == ".git" ? done.path : paths::parent(done.path));
    }
    return;
  }
  if ((done.error == EROFS || done.error == EACCES || done.error == EPERM) && !writable_(done.path)) {
    write_refused(done.path, "", false);
  }
}

// The receive; false when there is nothing to handle (stop(), a caller gone, the end).
bool Observer::receive(struct seccomp_notif* req) {
  std::memset(req, 0, req_size_);
  if (::ioctl(listener_.get(), SECCOMP_IOCTL_NOTIF_RECV, req) == 0) return true;
  if (errno == EINTR) return false;  // stop()
  if (errno == ENOENT) {
    ++empty_receives_;
    // The caller went away meanwhile; or every task under the filter has ended, and then the
    // receive fails at once, every time (a busy loop that would slow the sandbox's teardown):
    // the listener then reports a hang-up, and there is nothing more to observe.
    struct pollfd pf = {listener_.get(), POLLIN, 0};
    if (::poll(&pf, 1, 0) > 0 && (pf.revents & POLLHUP)) stopping_ = true;
    return false;
  }
  stopping_ = true;
  return false;
}

// What a call the kernel carries out writes: its paths, or the address of a direct connection.
Observer::Observed Observer::observe(pid_t pid, int nr, const unsigned long long* a) {
  Observed o;
  std::vector<std::string>& targets = o.targets;
  auto path_at = [&](long long dirfd, unsigned long long addr) {
    std::string p;
    if (read_path(pid, addr, p) && !p.empty()) targets.push_back(absolute(pid, dirfd, p));
  };
  switch (nr) {
    // O_PATH opens write nothing and create nothing (the kernel drops the other flags), so a
    // failure of one is no refused write (the supervisor continues them).
    case SYS_open:
      if (a[1] & O_PATH) break;
      path_at(AT_FDCWD, a[0]);
      o.create_only = !(a[1] & (O_WRONLY | O_RDWR | O_TRUNC));
      break;
    case SYS_openat:
      if (a[2] & O_PATH) break;
      path_at(static_cast<long long>(a[0]), a[1]);
      o.create_only = !(a[2] & (O_WRONLY | O_RDWR | O_TRUNC));
      break;
    case SYS_openat2: {
      unsigned long long flags = 0;
      size_t got = 0;
      if (!read_mem(pid, a[2], &flags, sizeof flags, &got) || !(flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC))) break;
      path_at(static_cast<long long>(a[0]), a[1]);
      o.create_only = !(flags & (O_WRONLY | O_RDWR | O_TRUNC));
      break;
    }
    case SYS_creat:
    case SYS_mkdir:
    case SYS_rmdir:
    case SYS_unlink:
    case SYS_chmod:
    case SYS_chown:
    case SYS_lchown:
    case SYS_truncate:
    case SYS_mknod:
      path_at(AT_FDCWD, a[0]);
      break;
    case SYS_mkdirat:
    case SYS_unlinkat:
    case SYS_fchmodat:
    case SYS_fchownat:
    case SYS_mknodat:
      path_at(static_cast<long long>(a[0]), a[1]);
      break;
    case SYS_utimensat:
      if (a[1] != 0) path_at(static_cast<long long>(a[0]), a[1]);
      break;
    case SYS_rename:
    case SYS_link:
      path_at(AT_FDCWD, a[0]);
      path_at(AT_FDCWD, a[1]);
      if (nr == SYS_link && !targets.empty()) targets.erase(targets.begin());  // the source is only read
      break;
    case SYS_symlink:
      path_at(AT_FDCWD, a[1]);
      break;
    case SYS_symlinkat:
      path_at(static_cast<long long>(a[1]), a[2]);
      break;
    case SYS_renameat:
    case SYS_renameat2:
      path_at(static_cast<long long>(a[0]), a[1]);
      path_at(static_cast<long long>(a[2]), a[3]);
      break;
    case SYS_linkat:
      path_at(static_cast<long long>(a[2]), a[3]);
      break;
    case SYS_connect: {
      struct sockaddr_storage ss {};
      size_t got = 0;
      size_t len = std::min<size_t>(a[2], sizeof ss);
      if (!read_mem(pid, a[1], &ss, len, &got)) break;
      char ip[INET6_ADDRSTRLEN] = {0};
      if (ss.ss_family == AF_INET) {
        auto* in = reinterpret_cast<struct sockaddr_in*>(&ss);
        if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) break;  // the sandbox's own loopback
        // Port 53 is the sandbox's own resolver, on every address it has (the host's nameservers
        // among them): it reports the names it refuses itself.
        if (ntohs(in->sin_port) == 53) break;
        ::inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
        o.network = fmt::format("{}:{}", ip, ntohs(in->sin_port));
      } else if (ss.ss_family == AF_INET6) {
        auto* in6 = reinterpret_cast<struct sockaddr_in6*>(&ss);
        if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) || ntohs(in6->sin6_port) == 53) break;
        ::inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
        o.network = fmt::format("[{}]:{}", ip, ntohs(in6->sin6_port));
      }
      break;
    }
    case SYS_chdir:
    case SYS_fchdir:
      cwd_cache_.erase(pid);
      break;
    default:
      break;
  }
  return o;
}

// After the kernel was told to carry the call out: what it made (new repositories), the cache
// of symlink answers, and the report of what the mounts refused.
void Observer::after_continue(pid_t pid, int nr, const Observed& o) {
  const std::vector<std::string>& targets = o.targets;
  if (nr == SYS_chdir || nr == SYS_fchdir) {
    // Dropped again once the call has run: a lookup racing with it must not keep the old cwd.
    cwd_cache_.erase(pid);
    return;
  }
  bool creates = nr != SYS_unlink && nr != SYS_unlinkat && nr != SYS_rmdir && nr != SYS_chmod && nr != SYS_fchmodat &&
                 nr != SYS_chown && nr != SYS_lchown && nr != SYS_fchownat && nr != SYS_truncate && nr != SYS_utimensat;
  if (creates) {
    for (size_t i = (nr == SYS_rename || nr == SYS_renameat || nr == SYS_renameat2) ? 1 : 0; i < targets.size(); ++i) {
      if (paths::basename(targets[i]) == ".git") {
        std::lock_guard<std::mutex> lock(created_mu_);
        created_git_.push_back(targets[i]);
      }
    }
  }
  if (!o.network.empty()) {
    sink_({Refused::kConnect, o.network, "direct connection; use the proxy", RefusalCode::kDirect});
    return;
  }
  // Calls that change what a path name refers to drop the cached symlink answers below it.
  if (nr == SYS_rename || nr == SYS_renameat || nr == SYS_renameat2 || nr == SYS_symlink || nr == SYS_symlinkat ||
      nr == SYS_unlink || nr == SYS_unlinkat || nr == SYS_rmdir) {
    for (const auto& t : targets) {
      for (auto it = symlink_cache_.lower_bound(t); it != symlink_cache_.end() && paths::is_within(it->first, t);) {
        it = symlink_cache_.erase(it);
      }
    }
  }
  for (const auto& lexical : targets) {
    if (writable_(lexical) && !parent_via_symlink(lexical)) continue;
    std::string t = resolved(lexical);
    if (writable_(t)) continue;
    if (o.create_only && sys::exists(t)) continue;
    write_refused(t, "", false);
    break;
  }
}

// A refused write: a read-only mount or the plan's own read-only inside a writable tree
// (guarded) says only that; the guard that covers the path says why, and what to do.
void Observer::write_refused(const std::string& path, const std::string& reason, bool guarded) {
  if (explain_ && reason.empty()) {
    std::string why = explain_(path);
    if (!why.empty()) return sink_({Refused::kFileWrite, path, why, RefusalCode::kProtected});
  }
  // The plan's guard whose reason is not known here (its mount may be gone: refused by the plan).
  if (guarded && reason.empty()) {
    return sink_({Refused::kFileWrite, path, "protected: read-only in the sandbox", RefusalCode::kProtected});
  }
  // A reason of its own (a protected name, a FIFO of the host): no setting allows it.
  sink_({Refused::kFileWrite, path, reason, reason.empty() ? RefusalCode::kPolicy : RefusalCode::kProtected});
}

void Observer::handle_one() {
  if (!req_ || !resp_) return;
  auto* req = static_cast<struct seccomp_notif*>(req_);
  auto* resp = static_cast<struct seccomp_notif_resp*>(resp_);
  if (!receive(req)) return;
  ++handled_;
  struct timespec tb, te;
  ::clock_gettime(CLOCK_MONOTONIC, &tb);
  pid_t pid = static_cast<pid_t>(req->pid);
  const auto* a = req->data.args;
  int nr = req->data.nr;
  if (nr == SYS_umask) supervisor_.forget_umasks();
  // Creating calls are performed here, never continued: a continued call re-reads its path
  // from the caller's memory, which another thread may have rewritten since it was checked.
  {
    Performed done = supervisor_.perform(pid, nr, a, listener_.get(), req->id);
    if (done.handled) {
      answer_performed(req->id, nr, done, tb);
      return;
    }
  }
  const Observed o = observe(pid, nr, a);
  std::memset(resp, 0, resp_size_);
  resp->id = req->id;
  resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;  // the kernel decides; we only report
  // The memory we read belonged to this very call only if the notification was still pending
  // when we answered: the caller stays blocked until then, so a successful answer proves it (one
  // ioctl instead of a separate NOTIF_ID_VALID check before it).
  bool valid = ::ioctl(listener_.get(), SECCOMP_IOCTL_NOTIF_SEND, resp) == 0;
  ::clock_gettime(CLOCK_MONOTONIC, &te);
  busy_ns_ += (te.tv_sec - tb.tv_sec) * 1000000000LL + (te.tv_nsec - tb.tv_nsec);
  if (valid) after_continue(pid, nr, o);
}

}  // namespace wb::lnx
