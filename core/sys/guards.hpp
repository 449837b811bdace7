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
  std::vector<std::string> writable;  // FS-5: the main repository's .git of a worktree
  std::vector<std::string> git_dirs;  // every repository found, for the after-run comparison
};

HitGuards guards_for_hits(const std::vector<ScanHit>& hits, const std::string& workspace);

}  // namespace wb::sys
