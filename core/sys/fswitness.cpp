#include "core/sys/fswitness.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <deque>

#include "core/paths.hpp"
#include "core/policy.hpp"
#include "core/sys/fs.hpp"

namespace wb::sys {

namespace {

thread_local FsReads* t_recording = nullptr;

// A name event in a directory: an entry made, removed, renamed or changed in mode.
constexpr uint32_t kChildren = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB;
// The watched file itself: its mode, owner or link count changed; it was removed or moved.
constexpr uint32_t kSelf = IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;
constexpr uint32_t kContent = IN_MODIFY | IN_CLOSE_WRITE;

// Filesystems whose every change on this machine reaches inotify, by the names it was made
// with. Not network or FUSE ones (a change made elsewhere, or by the server behind them, is
// never reported), nor procfs or sysfs; not XFS or ZFS either, which can fold case for a whole
// filesystem (a lookup of ".ssh" then finds ".SSH", whose creation names another name).
bool reports_every_change(const std::string& path) {
  struct statfs fs;
  if (::statfs(path.c_str(), &fs) != 0) return false;
  switch (static_cast<unsigned long>(fs.f_type)) {
    case EXT4_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case TMPFS_MAGIC:
    case RAMFS_MAGIC:
    case F2FS_SUPER_MAGIC:
    case OVERLAYFS_SUPER_MAGIC:
    case 0xca451a4eUL:  // bcachefs
      return true;
    default:
      return false;
  }
}

// Whether a directory is known not to fold case (ext4, F2FS, tmpfs and bcachefs can, one
// directory at a time: chattr +F). Not known (no flags to ask) counts as folding.
bool case_sensitive(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned long flags = 0;
  const bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && !(flags & FS_CASEFOLD_FL);
  ::close(fd);
  return ok;
}

std::deque<std::string> components(std::string_view path) {
  std::deque<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.emplace_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

void FsReads::path(std::string_view p) {
  paths_.emplace(p);
}
void FsReads::content(std::string_view p) {
  contents_.emplace(p);
}
void FsReads::links(std::string_view p) {
  links_.emplace(p);
}
void FsReads::listing(std::string_view d) {
  listings_.emplace(d);
}
void FsReads::scan_dir(std::string_view d) {
  scan_dirs_.emplace(d);
}

bool FsReads::includes(const FsReads& o) const {
  auto in = [](const std::set<std::string>& set, const std::string& s) { return set.count(s) > 0; };
  for (const auto& p : o.paths_) {
    if (!in(paths_, p) && !in(contents_, p) && !in(listings_, p) && !in(scan_dirs_, p)) return false;
  }
  for (const auto& p : o.contents_) {
    if (!in(contents_, p)) return false;
  }
  for (const auto& p : o.links_) {
    if (!in(links_, p)) return false;
  }
  for (const auto& p : o.listings_) {
    if (!in(listings_, p)) return false;
  }
  return std::includes(scan_dirs_.begin(), scan_dirs_.end(), o.scan_dirs_.begin(), o.scan_dirs_.end());
}

FsReads* recording() {
  return t_recording;
}

Recording::Recording(FsReads* into) : previous_(t_recording) {
  t_recording = into;
}
Recording::~Recording() {
  t_recording = previous_;
}

Result<std::unique_ptr<FsWitness>> FsWitness::watch(const FsReads& reads) {
  std::unique_ptr<FsWitness> w(new FsWitness);
  w->reads_ = reads;
  // The mount table first: a filesystem mounted over a watched path changes no watched inode.
  w->mounts_ = Fd(::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
  if (!w->mounts_.valid()) return sys_error("open", "/proc/self/mountinfo", errno);
  w->inotify_ = Fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!w->inotify_.valid()) return sys_error("inotify_init1", "", errno);
  // Parents before children: each directory is watched before anything is looked up in it (each
  // path is resolved from "/"; the scanned directories, a sorted set below roots resolved
  // first, are reached through watched ones), so a change made while the watches are placed is
  // seen by one of them.
  for (const auto& p : reads.paths()) WB_TRY(w->resolve(p));
  for (const auto& p : reads.contents()) WB_TRY(w->resolve(p));
  for (const auto& p : reads.links()) WB_TRY(w->resolve(p));
  for (const auto& p : reads.listings()) WB_TRY(w->resolve(p));
  for (const auto& d : reads.scan_dirs()) {
    Watched role;
    role.scan = true;
    WB_TRY(w->add(d, true, role));
  }
  return w;
}

FsWitness::~FsWitness() = default;

Status FsWitness::add(const std::string& path, bool dir_only, Watched role) {
  uint32_t mask = kSelf | IN_MASK_ADD | IN_DONT_FOLLOW;
  if (dir_only) mask |= kChildren | IN_ONLYDIR;
  if (role.content) mask |= kContent;
  int wd = ::inotify_add_watch(inotify_.get(), path.c_str(), mask);
  // A file this user may not read (inotify asks for read access) is watched through its
  // directory alone: what its names do is seen there; what it holds the plan never read.
  if (wd < 0 && errno == EACCES && !dir_only && !role.content && !role.must_watch) return ok_status();
  if (wd < 0) {
    // ENOSPC: the user's watch limit (fs.inotify.max_user_watches); ENOENT, ENOTDIR: it changed
    // since it was read.
    return sys_error("inotify_add_watch", path, errno);
  }
  if (checked_.insert(path).second) {
    if (!reports_every_change(path)) {
      return make_error(ErrorKind::kUnavailable, "\"" + path + "\" is on a filesystem whose changes inotify may miss");
    }
    if (dir_only && !case_sensitive(path)) {
      return make_error(ErrorKind::kUnavailable,
                        "\"" + path + "\" may fold case (its names are not what inotify says)");
    }
  }
  role.path = path;
  auto& roles = dirs_[wd];
  for (auto& r : roles) {
    if (r.path == path) {
      r.listing = r.listing || role.listing;
      r.scan = r.scan || role.scan;
      r.content = r.content || role.content;
      return ok_status();
    }
  }
  roles.push_back(std::move(role));
  return ok_status();
}

// Looks path up as the kernel does, one component at a time, following every symbolic link
// (at most 40 hops, as the kernel): each directory a name is looked up in is watched, the name
// remembered, and what path ends at is watched itself.
Status FsWitness::resolve(const std::string& path) {
  Watched final_role;
  final_role.content = reads_.contents().count(path) > 0;
  final_role.listing = reads_.listings().count(path) > 0;
  final_role.must_watch = final_role.content || reads_.links().count(path) > 0;
  std::deque<std::string> rest = components(path);
  std::string cur = "/";
  WB_TRY(add(cur, true, rest.empty() ? final_role : Watched{}));
  int hops = 0;
  while (!rest.empty()) {
    std::string comp = std::move(rest.front());
    rest.pop_front();
    if (comp == ".") continue;
    if (comp == "..") {
      cur = paths::parent(cur);
      continue;
    }
    std::string full = paths::join(cur, comp);
    lookups_.insert(full);
    struct stat st;
    if (::lstat(full.c_str(), &st) != 0) return ok_status();  // missing or unseen: its lookup is watched
    if (S_ISLNK(st.st_mode)) {
      if (++hops > 40) return ok_status();  // a loop, for the plan too
      WB_TRY(add(full, false, Watched{}));
      char buf[PATH_MAX];
      ssize_t n = ::readlink(full.c_str(), buf, sizeof buf);
      if (n <= 0 || n >= static_cast<ssize_t>(sizeof buf)) return sys_error("readlink", full, n < 0 ? errno : EINVAL);
      std::string target(buf, static_cast<size_t>(n));
      auto more = components(target);
      rest.insert(rest.begin(), more.begin(), more.end());
      if (target[0] == '/') cur = "/";
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      cur = full;
      WB_TRY(add(cur, true, rest.empty() ? final_role : Watched{}));
      continue;
    }
    if (!rest.empty()) return ok_status();  // a file where a directory would be: nothing below
    WB_TRY(add(full, false, final_role));
  }
  return ok_status();
}

bool FsWitness::relevant(const Watched& w, std::string_view name, unsigned mask) const {
  if (name.empty()) {
    if (mask & kContent) return w.content;
    return true;  // the watched file itself: mode, links, removed, moved, unwatched
  }
  if (w.listing) return true;
  const std::string full = paths::join(w.path, name);
  if (lookups_.count(full)) return true;
  if (w.scan) {
    // What the scan reads of a directory: its subdirectories and the names it looks for.
    if (mask & IN_ISDIR) return true;
    const std::string n(name);
    if ((n[0] == '.' && is_scanned_name(n)) || n == "HEAD") return true;
  }
  return false;
}

bool FsWitness::unchanged() {
  if (changed_) return false;
  struct pollfd p = {mounts_.get(), POLLPRI, 0};
  if (::poll(&p, 1, 0) != 0) changed_ = true;
  alignas(struct inotify_event) char buf[16384];
  while (!changed_) {
    ssize_t n = ::read(inotify_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) {
      changed_ = true;
      break;
    }
    for (ssize_t off = 0; off < n && !changed_;) {
      auto* e = reinterpret_cast<const struct inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(struct inotify_event) + e->len);
      if (e->mask & (IN_Q_OVERFLOW | IN_IGNORED | IN_UNMOUNT)) {
        changed_ = true;
        break;
      }
      auto it = dirs_.find(e->wd);
      if (it == dirs_.end()) {
        changed_ = true;
        break;
      }
      const std::string_view name = e->len ? std::string_view(e->name) : std::string_view();
      for (const auto& w : it->second) {
        if (relevant(w, name, e->mask)) {
          changed_ = true;
          break;
        }
      }
    }
  }
  return !changed_;
}

}  // namespace wb::sys
