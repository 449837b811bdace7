// Where a supervised call lands: the caller's root and working directory, the parent
// directory of the path it names resolved in the sandbox's tree (from the cache of recently
// resolved ones, DirCache, or walked), and directories' identities (for "made in this run").
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "bwrap/supervise/supervise.hpp"
#include "bwrap/supervise/supervise_util.hpp"
#include "core/paths.hpp"

namespace wb::lnx {

bool dir_identity(int fd, const char* name, DirId* out) {
  struct statx sx {};
  const bool at_fd = name == nullptr || *name == '\0';
  if (::statx(fd, at_fd ? "" : name, (at_fd ? AT_EMPTY_PATH : 0) | AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
              STATX_INO | STATX_TYPE | STATX_BTIME, &sx) != 0) {
    return false;
  }
  out->dev = (static_cast<unsigned long long>(sx.stx_dev_major) << 32) | sx.stx_dev_minor;
  out->ino = sx.stx_ino;
  // Without a birth time (a file system that keeps none), device and inode alone.
  out->birth_s = (sx.stx_mask & STATX_BTIME) ? sx.stx_btime.tv_sec : 0;
  out->birth_ns = (sx.stx_mask & STATX_BTIME) ? sx.stx_btime.tv_nsec : 0;
  return S_ISDIR(sx.stx_mode);
}

int DirCache::find(const std::string& path) {
  for (auto& e : entries_) {
    if (e.path != path) continue;
    // Moved, removed ("... (deleted)") or replaced since: the kernel names it otherwise now.
    if (detail::fd_path(e.fd.get()) != path) {
      evicted_.push_back(std::move(e.fd));
      e = std::move(entries_.back());
      entries_.pop_back();
      return -1;
    }
    e.used = ++tick_;
    return e.fd.get();
  }
  return -1;
}

int DirCache::keep(sys::Fd fd, const std::string& path) {
  for (auto& e : entries_) {
    if (e.path == path) {  // (one that no longer named its path: replaced)
      evicted_.push_back(std::move(e.fd));
      e.fd = std::move(fd);
      e.id_known = false;
      e.used = ++tick_;
      return e.fd.get();
    }
  }
  if (entries_.size() >= kEntries) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](const Entry& a, const Entry& b) { return a.used < b.used; });
    evicted_.push_back(std::move(oldest->fd));
    *oldest = std::move(entries_.back());
    entries_.pop_back();
  }
  entries_.push_back(Entry{std::move(fd), path, {}, false, ++tick_});
  return entries_.back().fd.get();
}

bool DirCache::identity(int fd, DirId* out) {
  for (auto& e : entries_) {
    if (e.fd.get() != fd) continue;
    if (!e.id_known) e.id_known = dir_identity(fd, nullptr, &e.id);
    if (e.id_known) *out = e.id;
    return e.id_known;
  }
  return false;
}

void DirCache::clear() {
  for (auto& e : entries_) evicted_.push_back(std::move(e.fd));
  entries_.clear();
}

using namespace detail;

int Supervisor::root(pid_t pid) {
  // Every process of the sandbox has the same root: chroot, pivot_root, setns and mounts are
  // refused by its seccomp program. Taken from the first caller while its call is pending (so
  // the pid is still the caller's, not a reused one).
  if (!root_.valid()) {
    sys::Fd fd(::open(fmt::format("/proc/{}/root", pid).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    unsigned long long id = id_;
    if (fd.valid() && ::ioctl(listener_, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0) root_ = std::move(fd);
  }
  return root_.get();
}

std::string Supervisor::base_of(pid_t pid, long long dirfd, int* err) {
  std::string base;
  if (static_cast<int>(dirfd) == AT_FDCWD) {
    // Read every time, not cached: another thread of the caller may have changed directory
    // between the chdir's notification and now.
    base = read_link_at(AT_FDCWD, fmt::format("/proc/{}/cwd", pid).c_str());
  } else {
    base = read_link_at(AT_FDCWD, fmt::format("/proc/{}/fd/{}", pid, static_cast<int>(dirfd)).c_str());
    if (base.empty()) {
      *err = EBADF;
      return {};
    }
  }
  if (base.empty() || base[0] != '/') {
    *err = ENOTDIR;
    return {};
  }
  const std::string deleted = " (deleted)";
  if (base.size() > deleted.size() && base.compare(base.size() - deleted.size(), deleted.size(), deleted) == 0) {
    *err = ENOENT;
    return {};
  }
  return base;
}

int Supervisor::parent_of(pid_t pid, long long dirfd, const std::string& path, Parent& out) {
  if (path.empty()) return ENOENT;
  std::string full;
  if (path[0] == '/') {
    full = path;
  } else {
    int err = 0;
    std::string base = base_of(pid, dirfd, &err);
    if (err) return err;
    full = base + "/" + path;
  }
  out.trailing_slash = false;
  while (full.size() > 1 && full.back() == '/') {
    full.pop_back();
    out.trailing_slash = true;
  }
  size_t slash = full.rfind('/');
  std::string dir = slash == 0 ? "/" : full.substr(0, slash);
  out.name = full.substr(slash + 1);
  if (out.name.empty()) out.name.assign(1, '.');  // (not = ".": GCC 12 warns, -Wrestrict)
  bool under_self = false;
  int n = self_fd(dir, &under_self);
  long fd;
  if (n >= 0) {
    // A directory descriptor named through /dev/fd/N or /proc/self/fd/N: the caller's own.
    fd = ::open(fmt::format("/proc/{}/fd/{}", pid, n).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  } else if (under_self) {
    return ENOENT;
  } else {
    return open_dir(pid, dir, out);
  }
  if (fd < 0) return errno;
  out.fd.reset(static_cast<int>(fd));
  out.path = fd_path(out.fd.get());
  if (out.path.empty() || out.path[0] != '/') return ENOENT;
  return 0;
}

namespace {
// An absolute path with nothing the kernel resolves otherwise than as written: no "." or ".."
// component, no empty one. Only such a path can name a cached directory by its real path.
bool plain_absolute(const std::string& p) {
  if (p.empty() || p[0] != '/') return false;
  if (p.size() == 1) return true;
  if (p.back() == '/') return false;
  for (size_t i = 0; i < p.size();) {
    size_t next = p.find('/', i + 1);
    if (next == std::string::npos) next = p.size();
    const size_t len = next - i - 1;
    if (len == 0 || (len == 1 && p[i + 1] == '.') || (len == 2 && p[i + 1] == '.' && p[i + 2] == '.')) return false;
    i = next;
  }
  return true;
}
}  // namespace

int Supervisor::open_dir(pid_t pid, const std::string& dir, Parent& out) {
  // The common case, a directory looked at a moment ago (the next file of an archive, the next
  // entry of a tree being removed): the cache's descriptor, still named by this very path.
  const bool plain = plain_absolute(dir);
  if (plain) {
    int fd = dirs_.find(dir);
    if (fd >= 0) {
      out.fd.fd = fd;
      out.path = dir;
      return 0;
    }
  }
  int r = root(pid);
  if (r < 0) return EACCES;
  long fd = openat2_in(r, dir, O_PATH | O_DIRECTORY | O_CLOEXEC, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
  if (fd < 0) return errno;
  sys::Fd own(static_cast<int>(fd));
  out.path = fd_path(own.get());
  if (out.path.empty() || out.path[0] != '/') return ENOENT;
  // Kept under its real path (what later calls name it by when no link is on the way); not
  // /proc, whose entries depend on the caller.
  if (plain_absolute(out.path) && !paths::is_within(out.path, "/proc")) {
    out.fd.fd = dirs_.keep(std::move(own), out.path);
  } else {
    out.fd.reset(own.release());
  }
  return 0;
}

bool Supervisor::is_new_dir(int fd) {
  if (new_dirs_.empty()) return false;
  DirId id;
  if (!dirs_.identity(fd, &id) && !dir_identity(fd, nullptr, &id)) return false;
  return new_dirs_.count(id) != 0;
}

void Supervisor::remember_new_dir(int parent, const std::string& name) {
  DirId id;
  // Bounded: past it, new directories are treated as old ones (their names refused).
  if (new_dirs_.size() < 1000000 && dir_identity(parent, name.c_str(), &id)) new_dirs_.insert(id);
}

int Supervisor::exists_already(const Parent& p) {
  return exists_already_at(p.fd.get(), p.name);
}

}  // namespace wb::lnx
