#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "bwrap/supervise.hpp"
#include "bwrap/supervise_util.hpp"
#include "core/paths.hpp"

// The supervisor's late guards (bwrap/late_scan.hpp): paths found to guard after the plan,
// refused here by path as their mounts would have refused them; and the one check of a hard
// link's source.
namespace wb::lnx {
using namespace detail;

void Supervisor::add_late_read_only(const std::vector<std::string>& paths, const std::string& why) {
  for (const auto& p : paths) late_ro_.push_back({p, why});
}

const Supervisor::Late* Supervisor::late_guard(const std::string& path, bool ancestors) const {
  for (const auto& l : late_ro_) {
    if (paths::is_within(path, l.path) || (ancestors && paths::is_within(l.path, path))) return &l;
  }
  return nullptr;
}

// A call the kernel carries out (unlink, rmdir, truncate, chown, utimensat, chmod), when late
// guards exist: its target looked up on the sandbox's tree and refused inside one (EROFS, as
// the mount would answer; removing a directory that holds one, EBUSY). The kernel reads the
// path again after this: a thread racing it could still remove, truncate or chmod a late-guarded
// file (nothing it could create: every creation is performed here), for this run only.
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
  // A guard in a writable tree, by the plan (its mount may be gone: the host replaced the file).
  if (!writable_(r.path) && writable_(p.path)) {
    r = failed(r, EROFS);
    r.refused = kProtected;
    return r;
  }
  // chmod, truncate, chown and utimes follow a final symbolic link (unless told not to): what it
  // leads to, on the sandbox's tree, is checked too.
  const bool nofollow =
      nr == SYS_unlink || nr == SYS_unlinkat || nr == SYS_rmdir || nr == SYS_lchown ||
      ((nr == SYS_fchownat || nr == SYS_utimensat) && (a[nr == SYS_fchownat ? 4 : 3] & AT_SYMLINK_NOFOLLOW));
  struct stat st;
  if (!nofollow && ::fstatat(p.fd.get(), p.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
    int rt = root(pid);
    long fd = rt < 0 ? -1 : openat2_in(rt, r.path, O_PATH | O_CLOEXEC, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
    if (fd < 0) return failed(r, rt < 0 ? EACCES : errno);
    sys::Fd target(static_cast<int>(fd));
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
      r.refused = kProtected;
      r.path = real;
      return r;
    }
  }
  return {};
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
