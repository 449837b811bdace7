#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string>

#include "bwrap/supervise/supervise.hpp"
#include "bwrap/supervise/supervise_util.hpp"
#include "core/paths.hpp"

// The supervisor's late guards (bwrap/plan/late_scan.hpp): paths found to guard after the plan,
// refused here by path as their mounts would have refused them; and the one check of a hard
// link's source.
namespace wb::lnx {
using namespace detail;

void Supervisor::add_late_read_only(const std::vector<std::string>& paths, const std::string& why) {
  for (const auto& p : paths) late_ro_.push_back({p, why});
}

void Supervisor::add_write_patterns(const std::vector<std::string>& globs) {
  for (const auto& g : globs) late_ro_.push_back({g, "denyWrite " + g, true});
}

namespace {
// Whether a path, or a directory it lies in, matches the glob; with ancestors, also whether the
// glob could match below it (its leading components match the path; a glob with "**" could
// match below almost anything, so it is checked by the names made, not by the trees moved).
bool glob_covers(const std::string& glob, const std::string& path, bool ancestors) {
  for (std::string p = path; p.size() > 1; p = paths::parent(p)) {
    if (paths::glob_matches(glob, p)) return true;
  }
  if (!ancestors || glob.find("**") != std::string::npos) return false;
  const int d = paths::depth(path);
  int n = 0;
  for (size_t i = 1; i < glob.size(); ++i) {
    if (glob[i] == '/' && ++n == d) return paths::glob_matches(glob.substr(0, i), path);
  }
  return false;
}
}  // namespace

namespace {
// Walks a tree below fd (dest: where it will be), calling hit for each path; false once limit
// entries were seen or a directory in it cannot be read (then the caller refuses: a tree it
// cannot look at whole is not let in; a directory closed with chmod opens again later).
bool walk_tree(int fd, const std::string& dest, const std::function<bool(const std::string&)>& hit, int depth,
               size_t& seen) {
  if (depth > 64) return false;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return false;
  }
  bool ok = true;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    if (++seen > 20000) {
      ok = false;
      break;
    }
    const std::string path = dest + "/" + n;
    if (hit(path)) {
      ok = false;
      break;
    }
    if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN) {
      int sub = ::openat(::dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      // ENOTDIR, ELOOP: not a directory after all (a file, a link), checked by name above.
      if (sub < 0 && errno != ENOTDIR && errno != ELOOP) {
        ok = false;
        break;
      }
      if (sub >= 0 && !walk_tree(sub, path, hit, depth + 1, seen)) {
        ok = false;
        break;
      }
    }
  }
  ::closedir(d);
  return ok;
}
}  // namespace

std::string Supervisor::tree_meets_glob(int dirfd, const std::string& name, const std::string& dest) const {
  const Late* deep = nullptr;
  for (const auto& l : late_ro_) {
    if (l.glob && l.path.find("**") != std::string::npos) deep = &l;
  }
  if (!deep) return {};
  int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    // Not a directory: its own name was checked. Unreadable: not let in (see walk_tree).
    if (errno == ENOTDIR || errno == ELOOP || errno == ENOENT) return {};
    return "a tree that cannot be read whole to check it against the denyWrite globs (" + deep->path + ")";
  }
  std::string why;
  size_t seen = 0;
  auto hit = [&](const std::string& p) {
    for (const auto& l : late_ro_) {
      if (l.glob && paths::glob_matches(l.path, p)) {
        why = l.why;
        return true;
      }
    }
    return false;
  };
  if (!walk_tree(fd, dest, hit, 0, seen) && why.empty()) {
    why = "a tree too large, or not readable whole, to check against the denyWrite globs (" + deep->path + ")";
  }
  return why;
}

const Supervisor::Late* Supervisor::late_guard(const std::string& path, bool ancestors) const {
  for (const auto& l : late_ro_) {
    if (l.glob ? glob_covers(l.path, path, ancestors)
               : paths::is_within_any_case(path, l.path) || (ancestors && paths::is_within_any_case(l.path, path))) {
      return &l;
    }
  }
  return nullptr;
}

// unlink, rmdir, truncate, chown, utimensat, chmod: the target looked up once on the sandbox's
// tree (the parent resolved in its root; for a call that follows a final link, what that leads
// to), checked against the late guards and the plan's read-only guards in writable trees (a
// guard's mount may be gone: the host replaced the file), and the call carried out here on what
// was checked. Continued to the kernel instead, its second lookup of the caller's path could
// meet another file (a thread swapping a link meanwhile).
Performed Supervisor::fd_write(pid_t pid, const unsigned long long* a) {
  sys::Fd pidfd(task_pidfd(pid));
  sys::Fd held(pidfd.valid() ? static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), static_cast<int>(a[0]), 0))
                             : -1);
  if (!held.valid()) return {};  // the kernel answers for a descriptor that is not there
  struct stat st;
  if (::fstat(held.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  const std::string path = fd_path(held.get());
  if (path.empty() || path[0] != '/') return {};
  Performed r;
  r.path = path;
  if (const Late* l = late_guard(path, false)) {
    r = failed(r, EROFS);
    r.refused = l->why;
    return r;
  }
  // Written through the caller's own descriptor, it is still a file the policy does not make
  // writable: its size is not the command's to change (a `>> log` truncated to nothing).
  if (!writable_(path)) return failed(r, EPERM);
  return {};
}

Performed Supervisor::fd_attributes(pid_t pid, unsigned long long fd) {
  if (late_ro_.empty()) return {};
  sys::Fd pidfd(task_pidfd(pid));
  sys::Fd held(pidfd.valid() ? static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), static_cast<int>(fd), 0)) : -1);
  if (!held.valid()) return {};  // the kernel answers for a descriptor that is not there
  const std::string path = fd_path(held.get());
  if (path.empty() || path[0] != '/') return {};  // a pipe, a socket, an anonymous file
  if (const Late* l = late_guard(path, false)) {
    Performed r;
    r.path = path;
    r = failed(r, EROFS);
    r.refused = l->why;
    return r;
  }
  return {};
}

Performed Supervisor::late_target(pid_t pid, int nr, const unsigned long long* a) {
  long long dirfd = AT_FDCWD;
  unsigned long long addr = a[0];
  if (nr == SYS_unlinkat || nr == SYS_fchownat || nr == SYS_fchmodat || nr == SYS_utimensat) {
    dirfd = dirfd_arg(a[0]);
    addr = a[1];
  }
  std::string path;
  if (int err = read_string(pid, addr, path)) return failed(err);
  Parent p;
  if (int err = parent_of(pid, dirfd, path, p)) return failed(err);
  Performed r;
  r.path = paths::join(p.path, p.name);
  // /proc/PID/fd/N, cwd, root, exe: magic links the kernel follows to anything; not here.
  if (paths::is_within(r.path, "/proc")) return failed(r, EACCES);
  const bool removes_dir = nr == SYS_rmdir || (nr == SYS_unlinkat && (a[2] & AT_REMOVEDIR));
  if (const Late* l = late_guard(r.path, removes_dir)) {
    r = failed(r, paths::is_within(r.path, l->path) ? EROFS : EBUSY);
    r.refused = l->why;
    return r;
  }
  // A guard in a writable tree, by the plan.
  if (!writable_(r.path) && writable_(p.path)) {
    r = failed(r, EROFS);
    r.guarded = true;
    return r;
  }
  // chmod, truncate, chown and utimes follow a final symbolic link (unless told not to): what it
  // leads to, on the sandbox's tree, is checked too, and is what they act on.
  const bool dots = p.name == "." || p.name == "..";
  const bool nofollow =
      (nr == SYS_unlink || nr == SYS_unlinkat || nr == SYS_rmdir || nr == SYS_lchown ||
       ((nr == SYS_fchownat || nr == SYS_utimensat) && (a[nr == SYS_fchownat ? 4 : 3] & AT_SYMLINK_NOFOLLOW))) &&
      !dots;
  const bool removes = nr == SYS_unlink || nr == SYS_unlinkat || nr == SYS_rmdir;
  if (nofollow || removes) return carry_out(pid, nr, a, p, std::move(r), -1, removes_dir);
  long fd = ::openat(p.fd.get(), p.name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return failed(r, errno);
  sys::Fd target(static_cast<int>(fd));
  struct stat st;
  if (::fstat(target.get(), &st) != 0) return failed(r, errno);
  if (S_ISLNK(st.st_mode)) {
    int rt = root(pid);
    fd = rt < 0 ? -1 : openat2_in(rt, r.path, O_PATH | O_CLOEXEC, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
    if (fd < 0) return failed(r, rt < 0 ? EACCES : errno);
    target.reset(static_cast<int>(fd));
  }
  // The file itself, by its real path (a final "..", a link): checked as the name was.
  std::string real = fd_path(target.get());
  if (real.empty() || real[0] != '/' || paths::is_within(real, "/proc")) return failed(r, EACCES);
  if (const Late* l = late_guard(real, false)) {
    r = failed(r, EROFS);
    r.refused = l->why;
    r.path = real;
    return r;
  }
  if (!writable_(real) && writable_(paths::parent(real))) {
    r = failed(r, EROFS);
    r.guarded = true;
    r.path = real;
    return r;
  }
  if (real != r.path) r.path = real;
  return carry_out(pid, nr, a, p, std::move(r), target.get(), removes_dir);
}

// The checked call itself. target: the file a following call acts on (an O_PATH descriptor),
// else -1 and the call acts on p's name. Errors as the kernel gives them.
Performed Supervisor::carry_out(pid_t pid, int nr, const unsigned long long* a, const Parent& p, Performed r,
                                int target, bool removes_dir) {
  const char* name = p.name.c_str();
  const std::string via = target >= 0 ? fmt::format("/proc/self/fd/{}", target) : std::string();
  struct stat st {};
  if (target >= 0 && ::fstat(target, &st) != 0) return failed(r, errno);
  // "file/" names a directory: only a directory answers to it.
  if (target >= 0 && p.trailing_slash && !S_ISDIR(st.st_mode)) return failed(r, ENOTDIR);
  switch (nr) {
    case SYS_unlink:
    case SYS_unlinkat:
    case SYS_rmdir: {
      if (nr == SYS_unlinkat && (a[2] & ~static_cast<unsigned long long>(AT_REMOVEDIR))) return failed(r, EINVAL);
      if (p.name == ".") return failed(r, removes_dir ? EINVAL : EISDIR);
      if (p.name == "..") return failed(r, removes_dir ? ENOTEMPTY : EISDIR);
      // A mount point of the sandbox's tree is busy there (our own lookup, in the host's
      // namespace, would not see it as one, and would detach the mount).
      if (int err = mount_point(p.fd.get(), p.name)) return failed(r, err);
      if (!removes_dir && p.trailing_slash) {
        struct stat ls {};
        return failed(
            r, ::fstatat(p.fd.get(), name, &ls, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(ls.st_mode) ? EISDIR : ENOTDIR);
      }
      return done_with(r, ::unlinkat(p.fd.get(), name, removes_dir ? AT_REMOVEDIR : 0));
    }
    case SYS_truncate: {
      if (S_ISDIR(st.st_mode)) return failed(r, EISDIR);
      if (!S_ISREG(st.st_mode)) return failed(r, EINVAL);
      const auto length = static_cast<long long>(a[1]);
      if (length < 0) return failed(r, EINVAL);
      sys::Fd w(::open(via.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
      if (!w.valid()) return failed(r, errno);
      return done_with(r, ::ftruncate(w.get(), length));
    }
    case SYS_chmod:
    case SYS_fchmodat:
      return done_with(
          r, ::fchmodat(AT_FDCWD, via.c_str(), static_cast<mode_t>((nr == SYS_chmod ? a[1] : a[2]) & 07777), 0));
    case SYS_chown:
    case SYS_lchown:
    case SYS_fchownat: {
      const auto uid = static_cast<uid_t>(nr == SYS_fchownat ? a[2] : a[1]);
      const auto gid = static_cast<gid_t>(nr == SYS_fchownat ? a[3] : a[2]);
      if (nr == SYS_fchownat && (a[4] & ~static_cast<unsigned long long>(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))) {
        return failed(r, EINVAL);
      }
      if (target < 0) return done_with(r, ::fchownat(p.fd.get(), name, uid, gid, AT_SYMLINK_NOFOLLOW));
      return done_with(r, ::fchownat(target, "", uid, gid, AT_EMPTY_PATH));
    }
    case SYS_utimensat: {
      struct timespec ts[2];
      const struct timespec* times = nullptr;
      if (a[2]) {
        size_t got = 0;
        if (!read_caller_memory(pid, a[2], ts, sizeof ts, &got) || got != sizeof ts) return failed(r, EFAULT);
        times = ts;
      }
      if (a[3] & ~static_cast<unsigned long long>(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)) return failed(r, EINVAL);
      if (target < 0) return done_with(r, ::utimensat(p.fd.get(), name, times, AT_SYMLINK_NOFOLLOW));
      return done_with(r, ::utimensat(AT_FDCWD, via.c_str(), times, 0));
    }
    default:
      return failed(r, ENOSYS);
  }
}

// Another name for a late-guarded file (no mount refuses it: EXDEV, as across mounts) or for a
// repository's config or hooks (writable once they are guarded, from the next run on) is
// refused; so is a source whose path cannot be told.
bool Supervisor::refuse_link_source(Performed& r, const std::string& from) {
  if (from.empty() || from[0] != '/') {
    r = failed(r, EXDEV);
    return true;
  }
  std::string why;
  int err = 0;
  if (const Late* l = late_guard(from, false)) {
    why = l->why;
    err = EXDEV;
  } else if (why = link_source_refusal(from); !why.empty()) {
    err = EPERM;
  }
  if (why.empty()) return false;
  r = failed(r, err);
  r.refused = why;
  r.path = from;
  return true;
}

}  // namespace wb::lnx
