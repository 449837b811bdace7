// Opens with write intent and AF_UNIX connects, performed by the supervisor (see
// bwrap/supervise/supervise.hpp for why).
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <linux/openat2.h>
#include <linux/rtnetlink.h>
#include <linux/seccomp.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "bwrap/supervise/supervise.hpp"
#include "bwrap/supervise/supervise_util.hpp"
#include "core/paths.hpp"
#include "core/protect.hpp"

namespace wb::lnx {
using namespace detail;

namespace {
Performed with_error(Performed r, int err) {
  r.error = err;
  return r;
}
}  // namespace

// An open descriptor of the caller, opened again: it exists, nothing is created, and the magic
// link leads straight to the file (nothing after it is walked). Only as the descriptor itself
// allows: a read-only stdin (a host file the caller redirected) must not come back writable.
// The descriptor is taken once (pidfd_getfd), checked, and that very file reopened: the caller
// cannot swap what number n names between the check and the open.
Performed Supervisor::reopen_own_fd(pid_t pid, int n, int flags, const std::string& path, Performed r) {
  if (flags & O_EXCL) return with_error(r, EEXIST);
  sys::Fd pidfd(task_pidfd(pid));
  sys::Fd held(pidfd.valid() ? static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), n, 0)) : -1);
  if (!held.valid()) return with_error(r, EBADF);
  // Reported as the file the descriptor is (what the command wrote to, whatever it called it).
  const std::string file = fd_path(held.get());
  if (!file.empty() && file[0] == '/') r.path = file;
  const int held_flags = ::fcntl(held.get(), F_GETFL);
  const int held_mode = held_flags & O_ACCMODE;
  if ((flags & O_ACCMODE) != O_RDONLY && held_mode != O_WRONLY && held_mode != O_RDWR) {
    r.refused = fmt::format("through {}, a descriptor opened read-only", path);
    return with_error(r, EACCES);
  }
  // Opened again, a file the policy does not make writable (the caller's `>> log` as stdout)
  // keeps what the caller gave: appending stays appending, and it is never truncated.
  struct stat st;
  int extra = 0;
  if ((flags & O_ACCMODE) != O_RDONLY && ::fstat(held.get(), &st) == 0 && S_ISREG(st.st_mode) && !file.empty() &&
      !writable_(file)) {
    if (flags & O_TRUNC) return with_error(r, EPERM);
    if (held_flags & O_APPEND) extra = O_APPEND;
  }
  int fd = ::open(fmt::format("/proc/self/fd/{}", held.get()).c_str(),
                  (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW)) | extra | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return with_error(r, errno);
  if (!(flags & O_NONBLOCK)) (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  r.fd = fd;
  if (r.path.empty()) r.path = path;
  return r;
}

// Another entry of the caller's own /proc directory (oom_score_adj, attr/...): nothing there can
// be created, and no link in it is followed. Opened in the sandbox's own /proc (its mount flags
// apply: read-only with the host's).
Performed Supervisor::open_own_proc(pid_t pid, const std::string& norm, int flags, const std::string& path,
                                    Performed r) {
  if (norm.rfind("/proc/", 0) != 0) return with_error(r, ENOENT);  // /dev/std*, /dev/fd/N: nothing to open
  std::string rest =
      norm.rfind("/proc/thread-self/", 0) == 0 ? norm.substr(17) : norm.substr(std::string("/proc/self").size());
  pid_t inside = pid_inside(pid);
  if (inside <= 0 || root(pid) < 0) return with_error(r, ENOENT);
  long fd = openat2_in(root(pid), fmt::format("/proc/{}{}", inside, rest),
                       (flags & ~(O_CREAT | O_EXCL)) | O_CLOEXEC | O_NOCTTY,
                       RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (fd < 0) return with_error(r, errno);
  r.fd = static_cast<int>(fd);
  r.path = path;
  return r;
}

// The name made here: O_EXCL, not through a final link, with the caller's umask and never a
// set-ID or world-writable mode. A descriptor, or -1 with errno.
int Supervisor::make_new(pid_t pid, const Parent& p, int flags, mode_t mode) {
  UmaskScope u(umask_of(pid));
  return ::openat(p.fd.get(), p.name.c_str(), flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  mode & ~(S_ISUID | S_ISGID | S_IWOTH));
}

// A name that does not exist yet, created here (O_EXCL, the caller's umask): false when it
// appeared meanwhile and the caller did not ask for O_EXCL (then it is looked at again).
bool Supervisor::create_fresh(pid_t pid, const Parent& p, int flags, mode_t mode, Performed& r) {
  if (p.trailing_slash) {
    r.error = EISDIR;
    return true;
  }
  if (std::string why = refusal(r.path, p.fd.get(), false); !why.empty()) {
    r.error = EACCES;
    r.refused = why;
    return true;
  }
  if (!writable_(r.path)) {  // as the mounts would, had the host not removed one (read_only_here)
    r.error = EROFS;
    return true;
  }
  int fd = make_new(pid, p, flags, mode);
  if (fd < 0 && errno == EEXIST && !(flags & O_EXCL)) return false;
  if (fd < 0) {
    r.error = errno;
  } else {
    r.fd = fd;
  }
  return true;
}

bool Supervisor::create_first(pid_t pid, const Parent& p, int flags, mode_t mode, Performed& r) {
  if (p.trailing_slash || !writable_(r.path)) return false;
  bool allowed_new = false;
  if (!refusal(r.path, p.fd.get(), false, &allowed_new).empty()) return false;
  int fd = make_new(pid, p, flags, mode);
  if (fd < 0 && errno == EEXIST) return false;  // an existing name: looked at as such
  if (fd < 0) {
    r.error = errno;
    return true;
  }
  r.fd = fd;
  if (allowed_new) note_allowed_new(r.path);
  return true;
}

// A FIFO's open that would wait (a writer's for a reader, a reader's for a writer): not on this
// thread, which answers every call. A writer whose reader is there already opens at once; else a
// helper thread opens it and answers the call itself.
Performed Supervisor::open_fifo(const Parent& p, int flags, int open_flags, int listener, unsigned long long id,
                                Performed r) {
  if ((flags & O_ACCMODE) == O_WRONLY) {
    int fd = ::openat(p.fd.get(), p.name.c_str(), open_flags | O_NONBLOCK);
    if (fd >= 0) {
      (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      r.fd = fd;
      return r;
    }
    if (errno != ENXIO) return with_error(r, errno);
  }
  int dir = ::dup(p.fd.get());
  int lis = ::dup(listener);
  if (dir < 0 || lis < 0) {
    if (dir >= 0) ::close(dir);
    if (lis >= 0) ::close(lis);
    return with_error(r, EMFILE);
  }
  std::string name = p.name;
  bool cloexec = r.cloexec;
  try {
    std::thread([dir, lis, name, open_flags, id, cloexec] {
      int fd = ::openat(dir, name.c_str(), open_flags);
      int err = errno;
      if (fd >= 0) {
        struct seccomp_notif_addfd add {};
        add.id = id;
        add.flags = SECCOMP_ADDFD_FLAG_SEND;
        add.srcfd = static_cast<__u32>(fd);
        add.newfd_flags = cloexec ? O_CLOEXEC : 0;
        (void)::ioctl(lis, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
        ::close(fd);
      } else {
        struct seccomp_notif_resp resp {};
        resp.id = id;
        resp.error = -err;
        (void)::ioctl(lis, SECCOMP_IOCTL_NOTIF_SEND, &resp);
      }
      ::close(dir);
      ::close(lis);
    }).detach();
  } catch (...) {
    ::close(dir);
    ::close(lis);
    return with_error(r, EAGAIN);
  }
  r.deferred = true;
  return r;
}

Performed Supervisor::open_for_write(pid_t pid, long long dirfd, const std::string& path0, int flags, mode_t mode,
                                     int listener, unsigned long long id) {
  Performed r;
  r.handled = true;
  r.cloexec = (flags & O_CLOEXEC) != 0;
  std::string path = path0;
  for (int hop = 0; hop < kMaxHops; ++hop) {
    bool under_self = false;
    if (!path.empty() && path[0] == '/') {
      int n = self_fd(paths::normalize(path), &under_self);
      if (n >= 0) return reopen_own_fd(pid, n, flags, path, r);
    }
    // A name inside a directory descriptor (/dev/fd/N/name): parent_of opens the directory.
    if (under_self && self_dir_entry(paths::normalize(path))) under_self = false;
    if (under_self) return open_own_proc(pid, paths::normalize(path), flags, path, r);
    Parent p;
    if (int err = parent_of(pid, dirfd, path, p)) return with_error(r, err);
    r.path = paths::join(p.path, p.name);
    // Another process's /proc entries (/proc/1/mem): this thread's credentials are not the
    // caller's (it owns the sandbox's user namespace), so they are not opened here at all.
    if (paths::is_within(r.path, "/proc")) return with_error(r, EACCES);
    // Most opens with O_CREAT make a new name (an archive extracted, a build's outputs): made at
    // once with O_EXCL when nothing refuses it; a name that is there is looked at below.
    if ((flags & O_CREAT) && create_first(pid, p, flags, mode, r)) return r;
    struct stat st;
    if (::fstatat(p.fd.get(), p.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT || !(flags & O_CREAT)) return with_error(r, errno);
      if (create_fresh(pid, p, flags, mode, r)) return r;
      continue;  // appeared meanwhile: look again
    }
    if (flags & O_EXCL) return with_error(r, EEXIST);
    if (!S_ISLNK(st.st_mode) && !late_ro_.empty()) {
      if (const Late* l = late_guard(r.path, false)) {
        r.refused = l->why;
        return with_error(r, EROFS);
      }
    }
    if (S_ISLNK(st.st_mode)) {
      if (flags & O_NOFOLLOW) return with_error(r, ELOOP);
      std::string target = read_link_at(p.fd.get(), p.name.c_str());
      if (target.empty()) return with_error(r, ENOENT);
      path = target[0] == '/' ? target : p.path + "/" + target;
      dirfd = AT_FDCWD;
      continue;
    }
    // A file the plan keeps read-only, refused here too: its mount may be gone (the host
    // replaced the file: an unlink or a rename over a mount point detaches the mount in every
    // other namespace, this sandbox's included, and the new file is the workspace's).
    if (S_ISREG(st.st_mode) && ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) && !writable_(r.path)) {
      r = with_error(r, EROFS);
      if (writable_(p.path)) r.guarded = true;
      return r;
    }
    // A socket cannot be opened; /dev/tty is the caller's controlling terminal, and the
    // sandbox's processes have none (a session of their own).
    if (S_ISSOCK(st.st_mode) || (S_ISCHR(st.st_mode) && major(st.st_rdev) == 5 && minor(st.st_rdev) == 0)) {
      return with_error(r, ENXIO);
    }
    // Never the controlling terminal of this process (the caller has none: a session of its
    // own; one that wants a terminal's takes it with TIOCSCTTY).
    const int open_flags = (flags & ~(O_CREAT | O_EXCL)) | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;
    // A FIFO takes writes through a read-only mount (a host daemon's control pipe): only where
    // the sandbox may write.
    if (S_ISFIFO(st.st_mode) && (flags & O_ACCMODE) != O_RDONLY && !writable_(r.path)) return with_error(r, EACCES);
    if (S_ISFIFO(st.st_mode) && !(flags & O_NONBLOCK) && (flags & O_ACCMODE) != O_RDWR) {
      return open_fifo(p, flags, open_flags, listener, id, r);
    }
    int fd = ::openat(p.fd.get(), p.name.c_str(), open_flags);
    if (fd < 0 && (errno == ELOOP || errno == ENOENT)) continue;  // replaced meanwhile: look again
    if (fd < 0) return with_error(r, errno);
    r.fd = fd;
    return r;
  }
  return with_error(r, ELOOP);
}

// Whether a Unix socket bound in the sandbox's network namespace has this file: a dump of the
// namespace's Unix sockets with their files (UDIAG_SHOW_VFS). No answer: false (refused).
bool Supervisor::bound_in_sandbox(dev_t dev, ino_t ino) {
  if (!unix_diag_.valid()) return false;
  struct {
    struct nlmsghdr nlh;
    struct unix_diag_req req;
  } msg{};
  const unsigned seq = ++diag_seq_;
  msg.nlh.nlmsg_len = sizeof msg;
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  msg.nlh.nlmsg_seq = seq;
  msg.req.sdiag_family = AF_UNIX;
  msg.req.udiag_states = ~0u;
  msg.req.udiag_show = UDIAG_SHOW_VFS;
  struct sockaddr_nl to {};
  to.nl_family = AF_NETLINK;
  if (::sendto(unix_diag_.get(), &msg, sizeof msg, 0, reinterpret_cast<sockaddr*>(&to), sizeof to) < 0) return false;
  // The kernel's dev_t (20-bit minor) in the answer, userspace's in st_dev.
  const unsigned want_major = major(dev), want_minor = minor(dev);
  bool found = false;
  alignas(struct nlmsghdr) char buf[32768];
  for (int rounds = 0; rounds < 100000; ++rounds) {
    ssize_t n = ::recv(unix_diag_.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    int left = static_cast<int>(n);
    for (auto* h = reinterpret_cast<struct nlmsghdr*>(buf); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_seq != seq) continue;
      if (h->nlmsg_type == NLMSG_DONE) return found;
      if (h->nlmsg_type == NLMSG_ERROR) return false;
      if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg))) continue;
      auto* d = static_cast<struct unix_diag_msg*>(NLMSG_DATA(h));
      int alen = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof *d));
      for (auto* a = reinterpret_cast<struct rtattr*>(d + 1); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
        if (a->rta_type != UNIX_DIAG_VFS || RTA_PAYLOAD(a) < sizeof(struct unix_diag_vfs)) continue;
        struct unix_diag_vfs v;
        std::memcpy(&v, RTA_DATA(a), sizeof v);
        if (v.udiag_vfs_ino == ino && (v.udiag_vfs_dev >> 20) == want_major &&
            (v.udiag_vfs_dev & 0xfffff) == want_minor) {
          found = true;
        }
      }
    }
  }
  return false;
}

// connect of AF_UNIX sockets, performed here on the caller's own socket (pidfd_getfd): the
// address is read once; a path is resolved on the sandbox's tree and connected to through
// /proc/self/fd/DIR/NAME, so what was checked is what the kernel connects to. A socket outside
// the writable set is a host daemon's (docker, ssh-agent, D-Bus, systemd): refused. Abstract
// addresses are the sandbox's own (its network namespace) and pass unchanged. bind is left to
// the kernel (the name it makes is a socket, which no tool reads as code or configuration, and
// getsockname must report the caller's own path).
// bind() makes a name like mkdir does when the socket is a Unix one: at a protected name (a
// repository's fsmonitor--daemon.ipc or commondir, .wave, a missing hook's path) it is refused.
// The kind of socket comes from the socket itself (taken once with pidfd_getfd) and the address
// is read once. Every other family's bind is performed here, on that very socket, with that
// copy: continued, the kernel would look the descriptor up again (another thread may have put a
// Unix socket there meanwhile) and read the address again. A Unix bind goes on to the kernel,
// which must record the caller's own path (getsockname(), multiprocessing's listener address):
// a thread that rewrites the path between this check and the kernel's read can still leave a
// socket file at a protected name (it runs nothing, and nothing listens once the sandbox is
// gone, but git refuses a repository whose commondir is one). What cannot be resolved here is
// refused, never passed on.
Performed Supervisor::unix_bind(pid_t pid, const unsigned long long* a) {
  Performed r;
  r.handled = true;
  sys::Fd pidfd(task_pidfd(pid));
  sys::Fd sock(pidfd.valid() ? static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), static_cast<int>(a[0]), 0))
                             : -1);
  if (!sock.valid()) {
    r.error = errno == EBADF ? EBADF : EACCES;
    return r;
  }
  int domain = -1;
  socklen_t dlen = sizeof domain;
  if (::getsockopt(sock.get(), SOL_SOCKET, SO_DOMAIN, &domain, &dlen) != 0) {
    r.error = ENOTSOCK;
    return r;
  }
  struct sockaddr_storage ss {};
  size_t len = std::min<size_t>(a[2], sizeof ss);
  size_t got = 0;
  if (a[1] == 0 || !read_caller_memory(pid, a[1], &ss, len, &got) || got < len) {
    r.error = EFAULT;
    return r;
  }
  if (domain != AF_UNIX) {
    // The socket lives in the sandbox's network namespace: bound there, whoever binds it.
    if (::bind(sock.get(), reinterpret_cast<sockaddr*>(&ss), static_cast<socklen_t>(got)) < 0) r.error = errno;
    return r;
  }
  auto* sun = reinterpret_cast<struct sockaddr_un*>(&ss);
  if (got <= offsetof(struct sockaddr_un, sun_path) || sun->sun_path[0] == '\0') {
    // Abstract or autobind: no file is made; the name is the sandbox's network namespace's.
    if (::bind(sock.get(), reinterpret_cast<sockaddr*>(&ss), static_cast<socklen_t>(got)) < 0) r.error = errno;
    return r;
  }
  if (sun->sun_family != AF_UNIX) {
    r.error = EINVAL;
    return r;
  }
  std::string path(sun->sun_path, strnlen(sun->sun_path, std::min(got - offsetof(struct sockaddr_un, sun_path),
                                                                  sizeof sun->sun_path)));
  Parent p;
  if (int err = parent_of(pid, AT_FDCWD, path, p)) {
    r.error = err;
    return r;
  }
  struct stat st;
  if (::fstatat(p.fd.get(), p.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    r.error = EADDRINUSE;
    return r;
  }
  if (refuse_creation(r, paths::join(p.path, p.name), p.fd.get(), false)) return r;
  return Performed{};  // a Unix name, checked: the kernel binds it with the caller's path
}

namespace {

// An inet socket's connect, made here on the socket itself with the address read once: continued,
// the kernel would look the descriptor up again, and another thread could have put a Unix socket
// there meanwhile (dup2), which the kernel would then connect to a host socket's path unchecked.
// The namespace and the proxy decide.
Performed connect_inet(pid_t pid, int sock, const unsigned long long* a) {
  Performed r;
  r.handled = true;
  struct sockaddr_storage ss {};
  size_t len = std::min<size_t>(a[2], sizeof ss);
  size_t got = 0;
  if (a[2] != 0 && (a[1] == 0 || !read_caller_memory(pid, a[1], &ss, len, &got) || got < len)) {
    r.error = EFAULT;
    return r;
  }
  if (::connect(sock, got ? reinterpret_cast<sockaddr*>(&ss) : nullptr, static_cast<socklen_t>(got)) < 0) {
    r.error = errno;
    // Nowhere to go from the sandbox's namespace: an address that is not its own (the proxy's,
    // the resolver's pool, its loopback). Said; what those refuse they report themselves.
    if (r.error == ENETUNREACH || r.error == EHOSTUNREACH) {
      char ip[INET6_ADDRSTRLEN] = {0};
      if (ss.ss_family == AF_INET) {
        auto* in = reinterpret_cast<struct sockaddr_in*>(&ss);
        ::inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
        r.direct = fmt::format("{}:{}", ip, ntohs(in->sin_port));
      } else if (ss.ss_family == AF_INET6) {
        auto* in6 = reinterpret_cast<struct sockaddr_in6*>(&ss);
        ::inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
        r.direct = fmt::format("[{}]:{}", ip, ntohs(in6->sin6_port));
      }
    }
  }
  return r;
}

}  // namespace

Performed Supervisor::unix_address(pid_t pid, const unsigned long long* a) {
  Performed r;
  // What kind of socket this is comes from the socket itself, never from the caller's memory:
  // another thread could turn the address's family from AF_INET to AF_UNIX after it was read, and
  // a call continued to the kernel reads it again. A Unix socket's connect is always answered
  // here; only an inet one goes on to the kernel (which refuses it a Unix address).
  sys::Fd pidfd(task_pidfd(pid));
  sys::Fd sock(pidfd.valid() ? static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), static_cast<int>(a[0]), 0))
                             : -1);
  int domain = -1;
  socklen_t dlen = sizeof domain;
  r.handled = true;
  if (sock.valid() && ::getsockopt(sock.get(), SOL_SOCKET, SO_DOMAIN, &domain, &dlen) == 0 && domain != AF_UNIX) {
    return connect_inet(pid, sock.get(), a);
  }
  if (!sock.valid()) {
    r.error = errno == EBADF ? EBADF : ENOTSOCK;
    return r;
  }
  if (domain != AF_UNIX) {
    r.error = ENOTSOCK;
    return r;
  }
  struct sockaddr_un sun {};
  size_t len = std::min<size_t>(a[2], sizeof sun);
  size_t got = 0;
  if (a[1] == 0 || !read_caller_memory(pid, a[1], &sun, len, &got)) {
    r.error = EFAULT;
    return r;
  }
  if (len < sizeof(sa_family_t) || got < sizeof(sa_family_t) || sun.sun_family != AF_UNIX) {
    r.error = EINVAL;  // what the kernel answers a Unix socket given another family
    return r;
  }
  const size_t path_len = got - offsetof(struct sockaddr_un, sun_path);
  if (got <= offsetof(struct sockaddr_un, sun_path) || sun.sun_path[0] == '\0') {
    // Unnamed (autobind) or abstract: looked up in the socket's own network namespace.
    if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&sun), static_cast<socklen_t>(got)) < 0) r.error = errno;
    return r;
  }
  std::string path(sun.sun_path, strnlen(sun.sun_path, path_len));
  Parent p;
  if (int err = parent_of(pid, AT_FDCWD, path, p)) {
    r.error = err;
    return r;
  }
  r.path = paths::join(p.path, p.name);
  {
    struct stat st;
    if (::fstatat(p.fd.get(), p.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      r.error = errno;
      return r;
    }
    if (S_ISLNK(st.st_mode)) {
      // A link to a socket would be followed by the kernel from here, outside the sandbox's
      // tree; sockets are named directly.
      r.error = ELOOP;
      return r;
    }
    // The sandbox's own sockets are those bound in its network namespace (the kernel says so,
    // file by file); any other is a host daemon's (docker, ssh-agent, D-Bus, a dev server's),
    // wherever it is and whatever its times say (the command can chmod a host socket in a
    // writable place). Nothing can rename another file to this name meanwhile: the sandbox's
    // renames are performed by this thread, after this call.
    const bool made_in_run = S_ISSOCK(st.st_mode) && bound_in_sandbox(st.st_dev, st.st_ino);
    // One that network.allowUnixSockets names, by its real path (the directories on the way are
    // resolved above, and the name itself is no link).
    const bool allowed = S_ISSOCK(st.st_mode) &&
                         std::find(allowed_sockets_.begin(), allowed_sockets_.end(), r.path) != allowed_sockets_.end();
    if (!allowed && (!writable_(r.path) || !made_in_run)) {
      r.error = EACCES;
      r.refused = writable_(r.path) ? "a host socket, not one the sandbox made"
                                    : "a host socket, outside the sandbox's writable places";
      r.network = true;
      return r;
    }
  }
  struct sockaddr_un via {};
  via.sun_family = AF_UNIX;
  std::string through = fmt::format("/proc/self/fd/{}/{}", p.fd.get(), p.name);
  if (through.size() >= sizeof via.sun_path) {
    r.error = ENAMETOOLONG;
    return r;
  }
  std::memcpy(via.sun_path, through.c_str(), through.size() + 1);
  socklen_t vlen = static_cast<socklen_t>(offsetof(struct sockaddr_un, sun_path) + through.size() + 1);
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&via), vlen) < 0) r.error = errno;
  return r;
}

}  // namespace wb::lnx
