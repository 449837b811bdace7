#pragma once
// Turns scan hits into guarded paths: git directories (hooks, config, commondir, modules,
// worktrees), git files (worktrees, submodules) and editor/agent folders at any depth.
#include <string>
#include <vector>

#include "core/policy.hpp"
#include "core/sys/scan.hpp"

namespace wb::sys {

struct HitGuards {
  std::vector<GuardedPath> deny_write;
  std::vector<std::string> writable;   // the main repository's .git of a linked worktree
  std::vector<std::string> git_dirs;   // every repository found, for the after-run comparison
  std::vector<FsPolicy::Zone> zones;   // each repository's modules/: no new submodule git dirs
  std::vector<std::string> repo_dirs;  // every git directory guarded (a worktree's, a submodule's)
  // Guarded files with more than one name: another name (a hard link elsewhere in a writable
  // tree) would stay writable. The run is refused.
  std::vector<std::string> linked;
};

// What the user's own git configuration (~/.gitconfig, ~/.config/git/config) includes or names
// as core.hooksPath: guarded like the configuration itself.
std::vector<GuardedPath> guards_for_user_git_config(const std::string& home);

// home: for "~/" in the paths a git config names (include.path, core.hooksPath).
HitGuards guards_for_hits(const std::vector<ScanHit>& hits, const std::string& workspace, const std::string& home);

}  // namespace wb::sys
