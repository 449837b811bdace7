#pragma once
// Turns scan hits into guarded paths: git directories (hooks, config, commondir, modules,
// worktrees), git files (worktrees, submodules) and editor/agent folders at any depth.
#include <string>
#include <vector>

#include "core/log.hpp"
#include "core/policy.hpp"
#include "core/result.hpp"
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

// The run's scan, the same on every platform. The trees it searches: the policy's scan roots as
// the file system resolves them, each once, none inside another.
std::vector<std::string> scan_roots_of(const FsPolicy& policy);
// Every root scanned (its cache in cache_dir, or none); what could not be read and what lies too
// deep, appended.
Result<std::vector<ScanHit>> scan_all(const Logger& log, const std::vector<std::string>& roots,
                                      const std::string& cache_dir, std::vector<std::string>* unreadable,
                                      std::vector<std::string>* too_deep);
// What the scan found, as guards: those of its hits and of the user's git configuration; a
// directory it could not read read-only (said; another user's, which the command cannot open
// either, left alone); a protected file with other names (hard links) or a path deeper than the
// kernel takes refuses the run. workspace: where the run is (for the hits' guards and the advice).
struct ScanFound {
  Findings findings;
  std::vector<std::string> hit_guards;  // the paths its hits' guards name
  std::vector<std::string> git_dirs;    // every repository found, for the after-run comparison
  std::vector<std::string> repo_dirs;   // every git directory guarded
  std::vector<std::string> unreadable;  // every directory it could not read
};
Result<ScanFound> guards_from_scan(const std::vector<ScanHit>& hits, const std::vector<std::string>& unreadable,
                                   const std::vector<std::string>& too_deep, const std::string& workspace,
                                   const std::string& home, const Logger& log);

}  // namespace wb::sys
