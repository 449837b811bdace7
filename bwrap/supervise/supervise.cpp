#include "bwrap/supervise/supervise.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
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
#include <tuple>

#include "bwrap/supervise/supervise_util.hpp"
#include "core/paths.hpp"
#include "core/protect.hpp"

namespace wb::lnx {

// One process_vm_readv, no open of /proc/PID/mem. A read that crosses into an unmapped page
// returns what came before it.
bool read_caller_memory(pid_t pid, unsigned long long addr, void* buf, size_t len, size_t* got) {
  struct iovec local = {buf, len};
  struct iovec remote = {reinterpret_cast<void*>(addr), len};
  ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (n <= 0) {
    size_t to_page = 4096 - (addr & 4095);
    if (to_page >= len) return false;
    local.iov_len = remote.iov_len = to_page;
    n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n <= 0) return false;
  }
  *got = static_cast<size_t>(n);
  return true;
}

namespace detail {

// The string at addr in the caller, read once: what is checked is what is used. EFAULT as the
// kernel would answer; ENAMETOOLONG past PATH_MAX.
int read_string(pid_t pid, unsigned long long addr, std::string& out) {
  if (addr == 0) return EFAULT;
  char buf[PATH_MAX];
  size_t got = 0;
  if (!read_caller_memory(pid, addr, buf, 256, &got)) return EFAULT;
  size_t len = strnlen(buf, got);
  if (len == got) {
    if (!read_caller_memory(pid, addr, buf, sizeof buf, &got)) return EFAULT;
    len = strnlen(buf, got);
    if (len == sizeof buf) return ENAMETOOLONG;
    if (len == got) return EFAULT;
  }
  out.assign(buf, len);
  return 0;
}

std::string read_link_at(int dirfd, const char* p) {
  char buf[PATH_MAX];
  ssize_t n = ::readlinkat(dirfd, p, buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

std::string fd_path(int fd) {
  return read_link_at(AT_FDCWD, fmt::format("/proc/self/fd/{}", fd).c_str());
}

// The /dev links every sandbox has (bwrap's and the shim's /dev) and /proc/self, which name the
// calling process: rewritten to the caller's own entries in the host's /proc. Returns the
// descriptor number for "/proc/self/fd/N" exactly, else -1; *rest gets what follows
// "/proc/self/" for other paths there.
int self_fd(const std::string& p, bool* under_self) {
  std::string s = p;
  if (s == "/dev/stdin") s = "/proc/self/fd/0";
  if (s == "/dev/stdout") s = "/proc/self/fd/1";
  if (s == "/dev/stderr") s = "/proc/self/fd/2";
  if (s.rfind("/dev/fd/", 0) == 0) s = "/proc/self/fd/" + s.substr(8);
  if (s.rfind("/proc/thread-self/", 0) == 0) s = "/proc/self/" + s.substr(18);
  *under_self = s.rfind("/proc/self/", 0) == 0 || s == "/proc/self";
  if (s.rfind("/proc/self/fd/", 0) != 0) return -1;
  std::string n = s.substr(14);
  if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(n);
}

// "/dev/fd/N/..." or "/proc/self/fd/N/...": a name below a directory descriptor of the caller.
bool self_dir_entry(const std::string& p) {
  std::string s = p;
  if (s.rfind("/dev/fd/", 0) == 0) s = "/proc/self/fd/" + s.substr(8);
  if (s.rfind("/proc/thread-self/fd/", 0) == 0) s = "/proc/self/fd/" + s.substr(21);
  if (s.rfind("/proc/self/fd/", 0) != 0) return false;
  std::string rest = s.substr(14);
  size_t slash = rest.find('/');
  if (slash == std::string::npos || slash == 0) return false;
  return rest.substr(0, slash).find_first_not_of("0123456789") == std::string::npos;
}

long openat2_in(int root, const std::string& p, int flags, unsigned long long resolve) {
  struct open_how how {};
  how.flags = static_cast<unsigned long long>(flags);
  how.resolve = resolve;
  long fd;
  for (int i = 0; i < 8; ++i) {  // EAGAIN: a rename raced with RESOLVE_IN_ROOT's walk
    fd = ::syscall(SYS_openat2, root, p.c_str(), &how, sizeof how);
    if (fd >= 0 || errno != EAGAIN) break;
  }
  return fd;
}

// Hard links to a repository's code-bearing files (config, hooks, commondir) are refused.
std::string link_source_refusal(const std::string& src) {
  const std::string name = paths::basename(src);
  const std::string parent = paths::basename(paths::parent(src));
  // (An object store's files, a submodule's .git/modules/<name>/objects/ too, carry no code.)
  const size_t git = src.find("/.git/");
  bool in_git = git != std::string::npos && src.find("/objects/", git) == std::string::npos;
  if (in_git || parent == "hooks" || name == "config" || name == "commondir" || name == "config.worktree" ||
      is_protected_name(name)) {
    return "another name for a repository's config or hooks";
  }
  return {};
}

// EEXIST when the name is taken (the call would fail so; answered here, so that a name removed
// by another thread right after this look is not then created unchecked).
int exists_already_at(int dir, const std::string& name) {
  struct stat st;
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return EEXIST;
  return errno == ENOENT ? 0 : errno;
}

// EBUSY when name in dir is the root of a mount of the sandbox's tree; 0 when not (or absent).
int mount_point(int dir, const std::string& name) {
  struct statx sx {};
  if (::statx(dir, name.c_str(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_BASIC_STATS, &sx) != 0) {
    return errno == ENOENT ? 0 : errno;
  }
  if (!(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)) return EBUSY;  // cannot tell: refuse
  return (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) ? EBUSY : 0;
}

}  // namespace detail
using namespace detail;

Supervisor::Supervisor(std::function<bool(const std::string&)> writable, Refuses refuses,
                       std::function<std::string(const std::string&)> moving)
    : writable_(std::move(writable)), refuses_(std::move(refuses)), moving_(std::move(moving)) {}

Supervisor::~Supervisor() = default;

ThreadState& detail::thread_state() {
  thread_local ThreadState state;
  return state;
}

void Supervisor::drop_thread_privileges() {
  ThreadState& t = thread_state();
  // The umask becomes this thread's own, set per call to the caller's.
  if (::unshare(CLONE_FS) == 0) {
    t.umask = ::umask(022);
    ::umask(t.umask);
    t.own_umask = true;
  }
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &hdr, data) != 0) return;
  if (data[0].effective || data[1].effective) {
    data[0].effective = data[1].effective = 0;
    if (::syscall(SYS_capset, &hdr, data) != 0) return;
  }
  t.caps_off = true;
}

// The caller's pid as the sandbox's /proc numbers it: the host's /proc (enableWeakerNested-
// Sandbox) numbers as wavebox does; the sandbox's own, as its innermost pid namespace.
pid_t Supervisor::pid_inside(pid_t pid) {
  if (host_proc_) return pid;
  sys::Fd f(::open(fmt::format("/proc/{}/status", pid).c_str(), O_RDONLY | O_CLOEXEC));
  if (!f.valid()) return -1;
  char buf[2048];
  ssize_t n = ::read(f.get(), buf, sizeof buf - 1);
  if (n <= 0) return -1;
  buf[n] = 0;
  const char* ns = std::strstr(buf, "NSpid:");
  if (!ns) return -1;
  const char* end = std::strchr(ns, '\n');
  std::string line(ns + 6, end ? static_cast<size_t>(end - ns - 6) : std::strlen(ns + 6));
  size_t last = line.find_last_of(" \t");
  return static_cast<pid_t>(std::atoi(line.c_str() + (last == std::string::npos ? 0 : last + 1)));
}

mode_t Supervisor::umask_of(pid_t pid) {
  auto it = umask_.find(pid);
  if (it != umask_.end()) return it->second;
  mode_t m = 022;
  sys::Fd f(::open(fmt::format("/proc/{}/status", pid).c_str(), O_RDONLY | O_CLOEXEC));
  if (f.valid()) {
    char buf[512];
    ssize_t n = ::read(f.get(), buf, sizeof buf - 1);
    if (n > 0) {
      buf[n] = 0;
      if (const char* u = std::strstr(buf, "Umask:")) m = static_cast<mode_t>(std::strtoul(u + 6, nullptr, 8)) & 0777;
    }
  }
  if (umask_.size() > 4096) umask_.clear();
  umask_.emplace(pid, m);
  return m;
}

namespace {
// A refusal says what to do, as a refused write of a protected file does (core/policy.hpp,
// protection_reason): the name is the user's to make, outside the sandbox.
std::string with_remedy(std::string why, const char* verb) {
  if (!why.empty() && why.find("outside the sandbox") == std::string::npos) {
    why += fmt::format("; {} it outside the sandbox", verb);
  }
  return why;
}
}  // namespace

std::string Supervisor::refusal(const std::string& path, int parent, bool tree, bool* allowed_new) {
  if (const Late* l = late_guard(path, tree)) return with_remedy(l->why, "create");
  if (!writable_(path)) return {};  // the mounts refuse it anyway, and say so with EROFS
  const bool in_new = is_new_dir(parent);
  std::string why = refuses_(path, in_new, tree);
  // A name allowed only because its directory is new, or lies in a dependency tree (a
  // protected name, or HEAD): noted, so that the workspace is looked at again after the run and
  // such a name found outside a dependency tree (its directory moved there) is said. Asked again
  // without the new directory only for such names.
  if (why.empty()) {
    const std::string name = paths::basename(path);
    const bool noted = is_protected_name(name) || (in_new && name == "HEAD" && !refuses_(path, false, tree).empty());
    if (noted) {
      if (allowed_new) {
        *allowed_new = true;  // the caller notes it once the name is made
      } else {
        note_allowed_new(path);
      }
    }
  }
  return with_remedy(std::move(why), "create");
}

void Supervisor::note_allowed_new(const std::string& path) {
  if (allowed_new_.size() < 1000) allowed_new_.push_back(path);
}

namespace detail {

Performed failed(int err) {
  Performed r;
  r.handled = true;
  r.error = err;
  return r;
}

// The answer to a call performed here, keeping the path it was about (the report names it).
Performed done_with(Performed r, long rc) {
  r.handled = true;
  if (rc < 0) r.error = errno;
  return r;
}

Performed failed(Performed r, int err) {
  r.handled = true;
  r.error = err;
  return r;
}

long long dirfd_arg(unsigned long long v) {
  return static_cast<long long>(static_cast<int>(v));
}

int task_pidfd(pid_t tid) {
  constexpr unsigned kPidfdThread = O_EXCL;  // PIDFD_THREAD
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, tid, kPidfdThread));
  if (fd >= 0) return fd;
  fd = static_cast<int>(::syscall(SYS_pidfd_open, tid, 0));  // a thread group's leader
  if (fd >= 0 || errno != EINVAL) return fd;
  // Another thread of a process, on a kernel without PIDFD_THREAD: its thread group's.
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/status", static_cast<int>(tid));
  std::FILE* f = std::fopen(path, "re");
  if (!f) return -1;
  char line[256];
  long tgid = -1;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "Tgid: %ld", &tgid) == 1) break;
  }
  std::fclose(f);
  return tgid > 0 ? static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(tgid), 0)) : -1;
}

}  // namespace detail

bool Supervisor::refuse_creation(Performed& r, const std::string& path, int parent, bool tree) {
  std::string why = refusal(path, parent, tree);
  if (why.empty() && !writable_(path)) {
    // Read-only in the plan: refused here as the mounts would refuse it, also where the host
    // removed a guard's mount meanwhile (an unlink or rename of a mount point detaches it in
    // every other namespace, the sandbox's included).
    r.handled = true;
    r.error = EROFS;
    r.path = path;
    // A guard in a writable tree says what refused it (a plain read-only place needs no word).
    if (writable_(paths::parent(path))) r.guarded = true;
    return true;
  }
  if (!why.empty()) {
    r.handled = true;
    r.error = EACCES;
    r.refused = why;
    r.path = path;
  }
  return !why.empty();
}

// A name about to be made (mkdir, mknod, symlink, link): its directory on the sandbox's tree,
// EEXIST when it is taken, the refusal when it is protected. True when r is the answer.
bool Supervisor::new_name(pid_t pid, Performed& r, long long dirfd, const std::string& path, Parent& p, bool tree) {
  if (int err = parent_of(pid, dirfd, path, p)) {
    r = failed(err);
    return true;
  }
  r.path = paths::join(p.path, p.name);
  if (int err = exists_already(p)) {
    r.handled = true;
    r.error = err;
    return true;
  }
  return refuse_creation(r, r.path, p.fd.get(), tree);
}

Performed Supervisor::perform(pid_t pid, int nr, const unsigned long long* a, int listener, unsigned long long id) {
  dirs_.release_evicted();  // (the last call's borrowed descriptors are done with)
  switch (nr) {
    case SYS_connect: {
      if (unix_sockets_open_) return {};
      listener_ = listener;
      id_ = id;
      NoCapsScope no_caps;
      return unix_address(pid, a);
    }
    case SYS_bind: {  // a creation, whatever the socket setting
      listener_ = listener;
      id_ = id;
      NoCapsScope no_caps;
      return unix_bind(pid, a);
    }
    case SYS_ftruncate:
    case SYS_fallocate: {
      listener_ = listener;
      id_ = id;
      NoCapsScope no_caps;
      return fd_write(pid, a);
    }
    case SYS_fchmod:
    case SYS_fchown: {
      listener_ = listener;
      id_ = id;
      NoCapsScope no_caps;
      return fd_attributes(pid, a[0]);
    }
    case SYS_chmod:
    case SYS_fchmodat:
      if (Performed r = check_chmod(nr == SYS_chmod ? a[1] : a[2]); r.handled) return r;
      [[fallthrough]];  // then as the other calls the kernel carries out
    case SYS_unlink:
    case SYS_unlinkat:
    case SYS_rmdir:
    case SYS_truncate:
    case SYS_chown:
    case SYS_lchown:
    case SYS_fchownat:
    case SYS_utimensat: {
      if (nr == SYS_utimensat && a[1] == 0) {  // futimens(2): on the descriptor itself
        listener_ = listener;
        id_ = id;
        NoCapsScope no_caps;
        return fd_attributes(pid, a[0]);
      }
      // Carried out by the kernel, which the mounts restrain; a late guard has no mount, and a
      // guard's mount may be gone (the host replaced the file): its target is checked here.
      listener_ = listener;
      id_ = id;
      NoCapsScope no_caps;
      return late_target(pid, nr, a);
    }
    case SYS_open:
    case SYS_openat:
    case SYS_creat:
    case SYS_openat2:
    case SYS_mkdir:
    case SYS_mkdirat:
    case SYS_mknod:
    case SYS_mknodat:
    case SYS_symlink:
    case SYS_symlinkat:
    case SYS_link:
    case SYS_linkat:
    case SYS_rename:
    case SYS_renameat:
    case SYS_renameat2:
      break;
    default:
      return {};
  }
  listener_ = listener;
  id_ = id;
  NoCapsScope no_caps;
  switch (nr) {
    case SYS_open:
    case SYS_openat:
    case SYS_creat:
    case SYS_openat2:
      return perform_open(pid, nr, a, listener, id);
    case SYS_mkdir:
    case SYS_mkdirat:
    case SYS_mknod:
    case SYS_mknodat:
      return perform_mknod(pid, nr, a);
    case SYS_symlink:
    case SYS_symlinkat:
      return perform_symlink(pid, nr, a);
    case SYS_link:
    case SYS_linkat:
      return perform_link(pid, nr, a);
    default:
      return perform_rename(pid, nr, a);
  }
}

// The mode is in a register: refused here without a race. A set-user-ID or set-group-ID file left
// in the workspace runs as its owner for whoever executes it on the host. World-writable, sticky
// or not: another local user could then rewrite what the user runs later (chmod 777 .git), or add
// to it (git trusts a commondir whoever made it). A directory the owner can no longer list could
// hide a repository from the scan after the run: noted, so that the workspace is scanned again
// then (and the warning given).
Performed Supervisor::check_chmod(unsigned long long mode) {
  if (!(mode & S_IRUSR) || !(mode & S_IXUSR)) hid_something_ = true;
  if (mode & (S_ISUID | S_ISGID | S_IWOTH)) return failed(EPERM);
  return {};
}

Performed Supervisor::perform_open(pid_t pid, int nr, const unsigned long long* a, int listener,
                                   unsigned long long id) {
  long long dirfd = nr == SYS_openat || nr == SYS_openat2 ? dirfd_arg(a[0]) : AT_FDCWD;
  unsigned long long addr = nr == SYS_openat || nr == SYS_openat2 ? a[1] : a[0];
  int flags;
  mode_t mode;
  if (nr == SYS_creat) {
    flags = O_CREAT | O_WRONLY | O_TRUNC;
    mode = static_cast<mode_t>(a[1]);
  } else if (nr == SYS_open) {
    flags = static_cast<int>(a[1]);
    mode = static_cast<mode_t>(a[2]);
  } else if (nr == SYS_openat) {
    flags = static_cast<int>(a[2]);
    mode = static_cast<mode_t>(a[3]);
  } else {
    struct open_how how {};
    size_t got = 0;
    size_t len = std::min<size_t>(a[3], sizeof how);
    if (a[3] < 24 || !read_caller_memory(pid, a[2], &how, len, &got) || got < 24) return failed(EFAULT);
    if (!(how.flags & (O_CREAT | O_WRONLY | O_RDWR | O_TRUNC))) return {};  // a read: the kernel does it
    // Resolution flags ask for a walk of the caller's own: callers fall back to openat.
    if (how.resolve != 0) return failed(ENOSYS);
    flags = static_cast<int>(how.flags);
    mode = static_cast<mode_t>(how.mode);
  }
  // Every open with write intent (the filter sends no other): a path continued to the kernel
  // would be read again from the caller's memory, after the check.
  if (!(flags & (O_CREAT | O_WRONLY | O_RDWR | O_TRUNC))) return {};
  // O_TMPFILE makes no name (linkat gives it one, through here); its directory is resolved by
  // the kernel, and the mounts decide.
  if ((flags & __O_TMPFILE) == __O_TMPFILE) return {};
  // O_PATH opens nothing for reading or writing and creates nothing: the kernel ignores the
  // other flags (its flags are in a register here, not in memory the caller could change).
  if ((flags & O_PATH) && nr != SYS_openat2) return {};
  std::string path;
  if (int err = read_string(pid, addr, path)) return failed(err);
  return open_for_write(pid, dirfd, path, flags, mode & 07777, listener, id);
}

Performed Supervisor::perform_mknod(pid_t pid, int nr, const unsigned long long* a) {
  bool at = nr == SYS_mkdirat || nr == SYS_mknodat;
  long long dirfd = at ? dirfd_arg(a[0]) : AT_FDCWD;
  std::string path;
  if (int err = read_string(pid, at ? a[1] : a[0], path)) return failed(err);
  Performed r;
  Parent p;
  if (new_name(pid, r, dirfd, path, p, false)) return r;
  mode_t mode = static_cast<mode_t>(at ? a[2] : a[1]);
  UmaskScope u(umask_of(pid));
  if (nr == SYS_mkdir || nr == SYS_mkdirat) {
    int rc = ::mkdirat(p.fd.get(), p.name.c_str(), mode & ~(S_ISUID | S_IWOTH));
    if (rc == 0) remember_new_dir(p.fd.get(), p.name);
    return done_with(r, rc);
  }
  if (p.trailing_slash) return failed(r, ENOENT);
  dev_t dev = static_cast<dev_t>(at ? a[3] : a[2]);
  return done_with(r, ::mknodat(p.fd.get(), p.name.c_str(), mode & ~(S_ISUID | S_ISGID | S_IWOTH), dev));
}

Performed Supervisor::perform_symlink(pid_t pid, int nr, const unsigned long long* a) {
  long long dirfd = nr == SYS_symlinkat ? dirfd_arg(a[1]) : AT_FDCWD;
  std::string target, path;
  if (int err = read_string(pid, a[0], target)) return failed(err);
  if (int err = read_string(pid, nr == SYS_symlinkat ? a[2] : a[1], path)) return failed(err);
  Performed r;
  Parent p;
  if (new_name(pid, r, dirfd, path, p, true)) return r;
  if (p.trailing_slash) return failed(r, ENOENT);
  return done_with(r, ::symlinkat(target.c_str(), p.fd.get(), p.name.c_str()));
}

Performed Supervisor::perform_link(pid_t pid, int nr, const unsigned long long* a) {
  bool at = nr == SYS_linkat;
  long long olddir = at ? dirfd_arg(a[0]) : AT_FDCWD;
  long long newdir = at ? dirfd_arg(a[2]) : AT_FDCWD;
  int flags = at ? static_cast<int>(a[4]) : 0;
  if (flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH)) return failed(EINVAL);
  std::string p1, p2;
  if (int err = read_string(pid, at ? a[1] : a[0], p1); err && !(flags & AT_EMPTY_PATH)) return failed(err);
  if (int err = read_string(pid, at ? a[3] : a[1], p2)) return failed(err);
  Performed r;
  Parent np;
  if (new_name(pid, r, newdir, p2, np, false)) return r;
  if (np.trailing_slash) return failed(r, ENOENT);
  sys::Fd src;
  if ((flags & AT_EMPTY_PATH) && p1.empty()) {
    // The caller's descriptor itself.
    src.reset(::open(fmt::format("/proc/{}/fd/{}", pid, static_cast<int>(olddir)).c_str(), O_PATH | O_CLOEXEC));
    if (!src.valid()) return failed(r, errno == ENOENT ? EBADF : errno);
    // What that descriptor is, checked as a path would be (an unlinked O_TMPFILE has no name).
    struct stat st;
    if (::fstat(src.get(), &st) != 0) return failed(r, errno);
    if (st.st_nlink > 0 && refuse_link_source(r, fd_path(src.get()))) return r;
  } else {
    Parent op;
    if (int err = parent_of(pid, olddir, p1, op)) return failed(r, err);
    if (refuse_link_source(r, paths::join(op.path, op.name))) return r;
    if (!(flags & AT_SYMLINK_FOLLOW)) {
      return done_with(r, ::linkat(op.fd.get(), op.name.c_str(), np.fd.get(), np.name.c_str(), 0));
    }
    std::string full = paths::join(op.path, op.name);
    long fd = openat2_in(root(pid), full, O_PATH | O_CLOEXEC, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
    if (fd < 0) return failed(r, errno);
    src.reset(static_cast<int>(fd));
    if (refuse_link_source(r, fd_path(src.get()))) return r;  // where the link led, as the name
  }
  return done_with(r, ::linkat(AT_FDCWD, fmt::format("/proc/self/fd/{}", src.get()).c_str(), np.fd.get(),
                               np.name.c_str(), AT_SYMLINK_FOLLOW));
}

namespace {
// Whether a path has a node_modules component (a superset of the guard's dependency trees,
// which also need the workspace root: used only to look again, never to allow).
bool in_node_modules(const std::string& path) {
  return (path + "/").find("/node_modules/") != std::string::npos;
}
}  // namespace

Performed Supervisor::perform_rename(pid_t pid, int nr, const unsigned long long* a) {
  bool at = nr != SYS_rename;
  long long olddir = at ? dirfd_arg(a[0]) : AT_FDCWD;
  long long newdir = at ? dirfd_arg(a[2]) : AT_FDCWD;
  unsigned flags = nr == SYS_renameat2 ? static_cast<unsigned>(a[4]) : 0;
  std::string p1, p2;
  if (int err = read_string(pid, at ? a[1] : a[0], p1)) return failed(err);
  if (int err = read_string(pid, at ? a[3] : a[1], p2)) return failed(err);
  Parent op, np;
  if (int err = parent_of(pid, olddir, p1, op)) return failed(err);
  if (int err = parent_of(pid, newdir, p2, np)) return failed(err);
  Performed r;
  r.path = paths::join(np.path, np.name);
  const std::string from = paths::join(op.path, op.name);
  if (refuse_creation(r, r.path, np.fd.get(), true)) return r;
  // A tree moved where a denyWrite glob with "**" reaches into it: what it holds is looked at
  // (an exchange moves the other tree too).
  for (const auto& [dir, name, dest] :
       {std::tuple<int, std::string, std::string>{op.fd.get(), op.name, r.path}, {np.fd.get(), np.name, from}}) {
    if (dest == from && !(flags & RENAME_EXCHANGE)) continue;
    if (std::string why = tree_meets_glob(dir, name, dest); !why.empty()) {
      r = failed(r, EACCES);
      r.refused = with_remedy(why, "create");
      return r;
    }
  }
  if (const Late* l = late_guard(from, true)) {
    r = failed(r, paths::is_within(from, l->path) ? EROFS : EBUSY);
    r.refused = l->why;
    r.path = from;
    return r;
  }
  if (!writable_(from)) {  // (refuse_creation: its mount may be gone)
    r = failed(r, EROFS);
    r.path = from;
    return r;
  }
  if (moving_) {
    if (std::string why = moving_(from); !why.empty()) {  // (from is writable: above)
      r = failed(r, EACCES);
      r.refused = with_remedy(std::move(why), "move");
      r.path = from;
      return r;
    }
  }
  // An exchange puts something new at the old name too.
  if ((flags & RENAME_EXCHANGE) && refuse_creation(r, from, op.fd.get(), true)) return r;
  // The kernel refuses to move a mount point only where it is one in the caller's mount
  // namespace, and this thread is in the host's: a guard's mount (or a pinned ancestor) of the
  // sandbox is found here, on the sandbox's tree, and refused as inside (EBUSY).
  if (int err = mount_point(op.fd.get(), op.name)) return failed(r, err);
  if (int err = mount_point(np.fd.get(), np.name)) {
    // Replacing a guarded file (git writes config.lock, then renames it over config): say what
    // refused it, in the command's error (EROFS) and in the block, not "busy".
    if (!writable_(r.path)) {
      std::string path = r.path;
      r = failed(r, EROFS);
      r.guarded = true;
      r.path = path;
      return r;
    }
    return failed(r, err);
  }
  r = done_with(r, ::syscall(SYS_renameat2, op.fd.get(), op.name.c_str(), np.fd.get(), np.name.c_str(), flags));
  // Out of a dependency tree, where protected names are allowed (a package's own .vscode): what
  // the moved tree holds is looked at after the run, as what a new directory holds is.
  if (r.error == 0 && (in_node_modules(from) != in_node_modules(r.path) || (flags & RENAME_EXCHANGE))) {
    moved_across_deps_ = true;
  }
  return r;
}

}  // namespace wb::lnx
