#include "bwrap/facts.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <map>

#include "core/paths.hpp"
#include "core/sys/fs.hpp"

namespace wb::lnx {

namespace {

// realpath(3) for many paths in one go: a resolved parent is remembered, so the ancestors the
// policy's paths share ($HOME, the workspace, .git) are resolved once, not once per path. A
// path that is not itself a symbolic link resolves to its parent's resolution plus its name;
// a link is left to realpath(3). Paths come normalized and absolute. Only for one probe pass.
class RealPaths {
 public:
  // The resolution of path, "" when it or an ancestor does not exist. lstat_result: the
  // caller's lstat of path, when it has one.
  std::string real(const std::string& path, const struct stat* lstat_result = nullptr) {
    if (path == "/") return path;
    auto it = cache_.find(path);
    if (it != cache_.end()) return it->second;
    struct stat st;
    if (!lstat_result) {
      if (::lstat(path.c_str(), &st) != 0) return cache_[path] = "";
      lstat_result = &st;
    }
    std::string r;
    if (S_ISLNK(lstat_result->st_mode)) {
      r = sys::real_path_or_empty(path);
    } else {
      std::string parent = real(paths::parent(path));
      r = parent.empty() ? "" : paths::join(parent, paths::basename(path));
    }
    return cache_[path] = r;
  }

  // stat(2) of a directory the policy's missing paths share (their nearest existing ancestor,
  // $HOME or the workspace most of the time), once per pass: 0, or -1 with errno.
  int stat(const std::string& path, struct stat* st) {
    auto it = stats_.find(path);
    if (it == stats_.end()) {
      struct stat s {};
      int rc = ::stat(path.c_str(), &s);
      it = stats_.emplace(path, std::make_pair(rc == 0 ? 0 : errno, s)).first;
    }
    if (it->second.first != 0) {
      errno = it->second.first;
      return -1;
    }
    *st = it->second.second;
    return 0;
  }

 private:
  std::map<std::string, std::string> cache_;
  std::map<std::string, std::pair<int, struct stat>> stats_;
};

PathFact probe_path(const std::string& path, RealPaths& real_paths) {
  PathFact f;
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
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
  // Find the deepest existing ancestor; the path below it is what a stub would start.
  auto anc = paths::ancestors(path);
  for (auto it = anc.rbegin(); it != anc.rend(); ++it) {
    struct stat a;
    if (real_paths.stat(*it, &a) != 0) continue;
    if (!S_ISDIR(a.st_mode)) {
      f.real = path;
      f.creatable = false;
      return f;
    }
    std::string real = real_paths.real(*it);
    if (real.empty()) real = *it;
    std::string rest = path.substr(*it == "/" ? 1 : it->size() + 1);
    f.real = paths::normalize(real + "/" + rest);
    auto slash = rest.find('/');
    f.first_missing = paths::join(real, slash == std::string::npos ? rest : rest.substr(0, slash));
    return f;
  }
  f.real = path;
  f.creatable = false;
  return f;
}

}  // namespace

std::vector<std::string> expand_globs(FsPolicy& policy) {
  std::vector<std::string> notes;
  // Write rules: what matches now is guarded (or writable); what is created later to match is
  // not (Linux binds concrete paths), which is said once per rule.
  std::vector<GuardedPath> deny_write;
  for (auto& g : policy.deny_write) {
    if (!paths::has_glob(g.path)) {
      deny_write.push_back(g);
      continue;
    }
    auto matches = sys::expand_glob(g.path);
    for (auto& m : matches) deny_write.push_back({m, g.type, false, "", g.why});
    notes.push_back(
        fmt::format("denyWrite \"{}\" covers the {} path(s) that match it now; what is created "
                    "later to match it is not covered (name the directory to cover all of it)",
                    g.path, matches.size()));
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
  return notes;
}

void probe_policy_paths(const FsPolicy& policy, LinuxFacts& facts) {
  RealPaths real_paths;
  auto probe = [&](const std::string& p) {
    if (!facts.paths.count(p)) facts.paths.emplace(p, probe_path(p, real_paths));
  };
  for (const auto& w : policy.writable) probe(w.path);
  for (const auto& g : policy.deny_write) probe(g.path);
  for (const auto& g : policy.deny_read) probe(g.path);
  for (const auto& a : policy.allow_read) probe(a);
  for (const auto& v : policy.visible) probe(v);
}

}  // namespace wb::lnx
