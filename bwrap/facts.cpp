#include "bwrap/facts.hpp"

#include <sys/stat.h>

#include <cerrno>

#include "core/paths.hpp"
#include "core/sys/fs.hpp"

namespace wb::lnx {

PathFact probe_path(const std::string& path) {
  PathFact f;
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    f.is_symlink = S_ISLNK(st.st_mode);
    f.real = sys::real_path_or_empty(path);
    struct stat t;
    if (f.real.empty() || ::stat(f.real.c_str(), &t) != 0) {
      f.real = path;  // a dangling link: something exists, and it is not a place for a mount
      f.kind = PathKind::kOther;
      return f;
    }
    f.kind = S_ISDIR(t.st_mode) ? PathKind::kDir : S_ISREG(t.st_mode) ? PathKind::kFile : PathKind::kOther;
    if (f.kind == PathKind::kOther && !S_ISLNK(t.st_mode)) f.kind = PathKind::kFile;  // devices, fifos
    return f;
  }
  f.kind = PathKind::kMissing;
  if (errno != ENOENT) {
    // EACCES and the like: this user cannot reach it, and neither can the sandbox.
    f.real = path;
    f.creatable = false;
    return f;
  }
  // Find the deepest existing ancestor; the path below it is what a stub would start.
  auto anc = paths::ancestors(path);
  for (auto it = anc.rbegin(); it != anc.rend(); ++it) {
    struct stat a;
    if (::stat(it->c_str(), &a) != 0) continue;
    if (!S_ISDIR(a.st_mode)) {
      f.real = path;
      f.creatable = false;
      return f;
    }
    std::string real = sys::real_path_or_empty(*it);
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

void expand_read_globs(FsPolicy& policy) {
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
}

void probe_policy_paths(const FsPolicy& policy, LinuxFacts& facts) {
  auto probe = [&](const std::string& p) {
    if (!facts.paths.count(p)) facts.paths.emplace(p, probe_path(p));
  };
  for (const auto& w : policy.writable) probe(w.path);
  for (const auto& g : policy.deny_write) probe(g.path);
  for (const auto& g : policy.deny_read) probe(g.path);
  for (const auto& a : policy.allow_read) probe(a);
}

}  // namespace wb::lnx
