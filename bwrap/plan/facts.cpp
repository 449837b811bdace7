#include "bwrap/plan/facts.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <map>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "core/paths.hpp"
#include "core/sys/fs.hpp"
#include "core/sys/fswitness.hpp"

namespace wb::lnx {

namespace {

// Maps keyed by paths, looked up by views of them (no string made to ask).
struct PathHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using PathMap = std::unordered_map<std::string, V, PathHash, std::equal_to<>>;

std::string_view parent_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == 0 ? std::string_view("/") : path.substr(0, slash);
}

std::string joined(std::string_view dir, std::string_view rest) {
  std::string out;
  out.reserve(dir.size() + rest.size() + 1);
  if (dir != "/") out.append(dir);
  out += '/';
  out.append(rest);
  return out;
}

// realpath(3) for many paths in one go: a resolved parent is remembered, so the ancestors the
// policy's paths share ($HOME, the workspace, .git) are resolved once, not once per path. A
// path that is not itself a symbolic link resolves to its parent's resolution plus its name;
// a link is left to realpath(3). Paths come normalized and absolute. Only for one probe pass.
class RealPaths {
 public:
  // The resolution of path, "" when it or an ancestor does not exist. lstat_result: the
  // caller's lstat of path, when it has one.
  const std::string& real(std::string_view path, const struct stat* lstat_result = nullptr) {
    static const std::string root = "/";
    if (path == "/") return root;
    auto it = cache_.find(path);
    if (it != cache_.end()) return it->second;
    std::string key(path);
    struct stat st;
    if (!lstat_result) {
      if (::lstat(key.c_str(), &st) != 0) return cache_[key] = "";
      lstat_result = &st;
    }
    std::string r;
    if (S_ISLNK(lstat_result->st_mode)) {
      r = sys::real_path_or_empty(key);
    } else {
      const std::string& parent = real(parent_of(path));
      if (!parent.empty()) r = joined(parent, path.substr(path.rfind('/') + 1));
    }
    return cache_[key] = std::move(r);
  }

  // stat(2) of a directory the policy's missing paths share (their nearest existing ancestor,
  // $HOME or the workspace most of the time), once per pass: 0, or -1 with errno.
  int stat(std::string_view path, struct stat* st) {
    auto it = stats_.find(path);
    if (it == stats_.end()) {
      std::string key(path);
      struct stat s {};
      int rc = ::stat(key.c_str(), &s);
      it = stats_.emplace(std::move(key), std::make_pair(rc == 0 ? 0 : errno, s)).first;
    }
    if (it->second.first != 0) {
      errno = it->second.first;
      return -1;
    }
    *st = it->second.second;
    return 0;
  }

 private:
  PathMap<std::string> cache_;
  PathMap<std::pair<int, struct stat>> stats_;
};

// A directory's names, read once per pass in place of an lstat of each missing one: most of the
// policy's paths are files that do not exist in $HOME and the workspace (the credential list,
// shell startup files), and one listing answers them all. Only where a lookup finds exactly
// what a listing shows: a directory this process may search, small, on ext4, tmpfs or btrfs,
// not case-folded (a folded directory finds ".SSH" as ".ssh"). Anywhere else (procfs lists no
// threads, autofs mounts on lookup, FUSE answers as it likes, XFS can fold case) each path is
// looked up. A name created after its listing was read counts as created after the probe.
class Listings {
 public:
  // Directories asked about at least this often are listed; the others are not worth it.
  static constexpr int kMinNames = 4;
  void want(std::string_view dir) {
    auto it = wanted_.find(dir);
    if (it == wanted_.end()) it = wanted_.emplace(std::string(dir), Listing{}).first;
    ++it->second.wanted;
  }
  // Whether name is certainly not in dir now (lstat would fail with ENOENT).
  bool absent(std::string_view dir, std::string_view name) {
    if (name.empty() || name.size() > NAME_MAX || dir.size() + name.size() + 2 > PATH_MAX) return false;
    auto it = wanted_.find(dir);
    if (it == wanted_.end() || it->second.wanted < kMinNames) return false;
    Listing& l = it->second;
    if (!l.read) {
      l.read = true;
      l.usable = read(it->first, l.names);
    }
    return l.usable && !l.names.count(name);
  }

 private:
  struct Listing {
    int wanted = 0;
    bool read = false, usable = false;
    std::unordered_set<std::string, PathHash, std::equal_to<>> names;
  };
  template <typename Set>
  static bool read(const std::string& dir, Set& names) {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return false;
    struct statfs fs;
    struct stat st;
    unsigned flags = 0;
    bool ok = ::fstatfs(fd, &fs) == 0 &&
              (fs.f_type == EXT4_SUPER_MAGIC || fs.f_type == TMPFS_MAGIC || fs.f_type == BTRFS_SUPER_MAGIC) &&
              ::fstat(fd, &st) == 0 && st.st_size <= 256 * 1024 && ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 &&
              !(flags & FS_CASEFOLD_FL) && ::faccessat(AT_FDCWD, dir.c_str(), X_OK, AT_EACCESS) == 0;
    alignas(8) char buf[32768];
    while (ok) {
      long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ok = n == 0;
        break;
      }
      for (long off = 0; off < n;) {
        auto* e = reinterpret_cast<struct dirent64*>(buf + off);
        names.emplace(e->d_name);
        off += e->d_reclen;
      }
    }
    ::close(fd);
    if (!ok) names.clear();
    return ok;
  }
  PathMap<Listing> wanted_;
};

// For the paths below a directory that do not exist: the deepest ancestor there is (stat(2),
// links followed), its resolution, and whether it is a directory. Once per directory a pass.
struct Base {
  std::string at;    // the existing ancestor; "" when none could be stat'ed (not even "/")
  std::string real;  // its resolution (at itself when it has none)
  bool dir = false;
};

const Base& base_of(std::string_view dir, RealPaths& real_paths, PathMap<Base>& bases) {
  auto it = bases.find(dir);
  if (it != bases.end()) return it->second;
  Base b;
  struct stat a;
  if (real_paths.stat(dir, &a) == 0) {
    b.at = std::string(dir);
    b.dir = S_ISDIR(a.st_mode);
    if (b.dir) {
      b.real = real_paths.real(dir);
      if (b.real.empty()) b.real = b.at;
    }
  } else if (dir != "/") {
    b = base_of(parent_of(dir), real_paths, bases);
  }
  return bases.emplace(std::string(dir), std::move(b)).first->second;
}

PathFact probe_path(const std::string& path, RealPaths& real_paths, Listings& listings, PathMap<Base>& bases) {
  if (sys::FsReads* rec = sys::recording()) rec->path(path);
  PathFact f;
  struct stat st;
  const std::string_view parent = parent_of(path);
  const bool absent = path != "/" && listings.absent(parent, std::string_view(path).substr(path.rfind('/') + 1));
  if (absent) errno = ENOENT;
  if (!absent && ::lstat(path.c_str(), &st) == 0) {
    f.is_symlink = S_ISLNK(st.st_mode);
    f.real = real_paths.real(path, &st);
    struct stat t;
    if (f.real.empty() || (f.is_symlink ? ::stat(f.real.c_str(), &t) : 0) != 0) {
      f.real = path;  // a dangling link: something exists, and it is not a place for a mount
      f.kind = PathKind::kOther;
      return f;
    }
    if (!f.is_symlink) t = st;  // not a link: what lstat saw is what it is
    f.kind = S_ISDIR(t.st_mode) ? PathKind::kDir : S_ISREG(t.st_mode) ? PathKind::kFile : PathKind::kOther;
    if (f.kind == PathKind::kOther && !S_ISLNK(t.st_mode)) f.kind = PathKind::kFile;  // devices, fifos
    return f;
  }
  f.kind = PathKind::kMissing;
  if (errno != ENOENT) {
    // EACCES, ELOOP, ENOTDIR: not seen. The deepest ancestor that is there is guarded whole
    // where the sandbox could write it (plan_mounts), and the path itself stays protected.
    f.real = path;
    f.creatable = false;
    auto anc = paths::ancestors(path);
    // ENOTDIR or ELOOP: nothing is below a file or a link loop; what replaces them is created
    // through the supervisor, which refuses the path. EACCES: something may be there unseen.
    if (errno != EACCES && errno != EPERM) anc.clear();
    for (auto it = anc.rbegin(); it != anc.rend(); ++it) {
      struct stat a;
      if (::lstat(it->c_str(), &a) == 0 && S_ISDIR(a.st_mode)) {
        f.unreachable_at = real_paths.real(*it);
        if (f.unreachable_at.empty()) f.unreachable_at = *it;
        break;
      }
    }
    return f;
  }
  // The deepest existing ancestor; the path below it is what a stub would start.
  const Base& b = base_of(parent, real_paths, bases);
  if (b.at.empty() || !b.dir) {
    f.real = path;
    f.creatable = false;
    return f;
  }
  const std::string_view rest = std::string_view(path).substr(b.at == "/" ? 1 : b.at.size() + 1);
  f.real = paths::normalize(joined(b.real, rest));
  f.first_missing = joined(b.real, rest.substr(0, rest.find('/')));
  return f;
}

}  // namespace

FsPolicy expand_globs(const FsPolicy& given, std::vector<std::string>& notes) {
  FsPolicy policy = given;
  // Write rules: what matches now is guarded (or writable). What is created later to match a
  // denyWrite glob is refused by the supervisor (CreationGuard::add_pattern, given the globs by
  // prepare_run); what is created later to match an allowWrite glob is not writable (Linux binds
  // concrete paths), which is said once per rule.
  std::vector<GuardedPath> deny_write;
  for (auto& g : policy.deny_write) {
    if (!paths::has_glob(g.path)) {
      deny_write.push_back(g);
      continue;
    }
    auto matches = sys::expand_glob(g.path);
    for (auto& m : matches) deny_write.push_back({m, g.type, false, "", g.why});
  }
  policy.deny_write = std::move(deny_write);
  std::vector<WritableRoot> writable;
  for (auto& w : policy.writable) {
    if (!paths::has_glob(w.path)) {
      writable.push_back(w);
      continue;
    }
    auto matches = sys::expand_glob(w.path);
    for (auto& m : matches) {
      writable.push_back({m, true});
      policy.scan_roots.push_back(m);  // searched for repositories and protected names like any root
    }
    notes.push_back(
        fmt::format("allowWrite \"{}\" makes the {} path(s) that match it now writable", w.path, matches.size()));
  }
  policy.writable = std::move(writable);
  std::vector<GuardedPath> deny;
  for (auto& g : policy.deny_read) {
    if (!paths::has_glob(g.path)) {
      deny.push_back(g);
      continue;
    }
    for (auto& m : sys::expand_glob(g.path)) deny.push_back({m, g.type, false, ""});
  }
  policy.deny_read = std::move(deny);
  std::vector<std::string> allow;
  for (auto& a : policy.allow_read) {
    if (!paths::has_glob(a)) {
      allow.push_back(a);
      continue;
    }
    for (auto& m : sys::expand_glob(a)) allow.push_back(m);
  }
  policy.allow_read = std::move(allow);
  return policy;
}

void probe_policy_paths(const FsPolicy& policy, LinuxFacts& facts) {
  RealPaths real_paths;
  Listings listings;
  PathMap<Base> bases;
  std::vector<const std::string*> todo;
  std::unordered_set<std::string_view> seen;
  auto add = [&](const std::string& p) {
    if (facts.paths.count(p) || !seen.insert(p).second) return;
    todo.push_back(&p);
    if (p != "/") listings.want(parent_of(p));
  };
  for (const auto& w : policy.writable) add(w.path);
  for (const auto& g : policy.deny_write) add(g.path);
  for (const auto& g : policy.deny_read) add(g.path);
  for (const auto& a : policy.allow_read) add(a);
  for (const auto& v : policy.visible) add(v);
  for (const std::string* p : todo) facts.paths.emplace(*p, probe_path(*p, real_paths, listings, bases));
}

}  // namespace wb::lnx
