#pragma once
// What a sandboxed command must never leave behind: the one table of protected names (what
// runs or trusts each, and where), and the rule the supervisor applies to every creation.
// Pure: shared by both backends and printed by `wavebox doctor -v`.
#include <set>
#include <string>
#include <vector>

#include "core/policy.hpp"

namespace wb {

enum class ProtectScope {
  kAnyDepth,   // the name, in any directory the sandbox may write
  kWorkspace,  // relative to the workspace root
  kHome,       // relative to the home directory
};

struct ProtectedEntry {
  const char* rel;  // a name (kAnyDepth) or a relative path
  ProtectScope scope;
  LeafType type;
  const char* runs_it;  // the host tool that executes or trusts it
};

// The whole table, in the order `doctor -v` prints it.
const std::vector<ProtectedEntry>& protected_table();
const char* scope_name(ProtectScope s);

// Whether a name is protected in every writable directory (kAnyDepth rows).
bool is_protected_name(const std::string& name);

// The supervisor's rule for creations (open with O_CREAT, mkdir, mknod, symlink, link, the
// target of a rename): a creation is refused when it would make a protected name. Built once per
// run; refuses() is called on the supervisor's thread for every creation in a writable place.
class CreationGuard {
 public:
  // A protected path that does not exist: creating it, an ancestor of it or anything below it
  // is refused (a directory renamed into place counts as created).
  void add_path(const std::string& path, const std::string& why);
  // A repository's git directory: HEAD may be written there (git checkout), nowhere else that
  // existed before the run.
  void add_repository(const std::string& gitdir);
  // The trees the sandbox writes (the workspace first): node_modules counts below them only.
  void set_roots(std::vector<std::string> roots) { roots_ = std::move(roots); }
  // A directory in which nothing new may appear except below one of the carve-outs
  // (a repository's modules/: new submodule git directories).
  void add_zone(const std::string& dir, std::vector<std::string> carve, const std::string& why);
  // Refusal reason for creating the absolute path, or empty when it may be created.
  // in_new_dir: its directory was made during this run (a fresh clone or extraction): the
  // protected names are allowed there (warned about after the run, guarded from the next run
  // on), except .wave, wavebox's own settings. tree: what is created may be a directory tree
  // or a link (a rename, a symlink): then a directory that would hold a guarded path counts.
  std::string refuses(const std::string& path, bool in_new_dir = false, bool tree = true) const;
  // Refusal reason for moving (renaming away) the path: a zone's directory or one that holds
  // it (moved away, the zone could be made anew, empty). Guarded paths need no such rule: made
  // anew, they are refused again by path.
  std::string moving_refused(const std::string& path) const;
  size_t size() const { return paths_.size() + zones_.size(); }
  std::vector<std::string> describe() const;

 private:
  struct Path {
    std::string path, why;
  };
  struct Zone {
    std::string dir;
    std::vector<std::string> carve;
    std::string why;
  };
  std::vector<Path> paths_;
  std::vector<Zone> zones_;
  std::set<std::string> repos_;
  std::vector<std::string> roots_;
  bool in_deps(const std::string& path) const;
};

// Whether a path lies in a package manager's dependency tree (a node_modules below root; a
// workspace that itself lies in some node_modules is still a project).
bool in_dependency_tree(const std::string& path, const std::string& root);

}  // namespace wb
