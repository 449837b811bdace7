#include "core/sys/guards.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>

#include "core/paths.hpp"
#include "core/sys/fs.hpp"

namespace wb::sys {
namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// A git directory's code-bearing files. A missing commondir gets a stub that points at the
// directory itself ("."), which git reads as "no separate common dir".
void guard_gitdir(const std::string& g, HitGuards& out, int depth) {
  out.deny_write.push_back({paths::join(g, "hooks"), LeafType::kDir, true, ""});
  out.deny_write.push_back({paths::join(g, "config"), LeafType::kFile, true, ""});
  out.deny_write.push_back({paths::join(g, "commondir"), LeafType::kFile, true, ".\n"});
  out.deny_write.push_back({paths::join(g, "config.worktree"), LeafType::kFile, true, ""});
  if (depth > 8) return;
  // Submodules' git directories live in modules/<name>[/modules/<name>...].
  std::vector<std::string> stack = {paths::join(g, "modules")};
  while (!stack.empty()) {
    std::string d = stack.back();
    stack.pop_back();
    DIR* dir = ::opendir(d.c_str());
    if (!dir) continue;
    while (struct dirent* e = ::readdir(dir)) {
      std::string n = e->d_name;
      if (n == "." || n == ".." || e->d_type == DT_LNK) continue;
      std::string sub = paths::join(d, n);
      if (!is_dir(sub)) continue;
      if (exists(paths::join(sub, "HEAD"))) {
        guard_gitdir(sub, out, depth + 1);
      } else {
        stack.push_back(sub);
      }
    }
    ::closedir(dir);
  }
  // Linked worktrees: each has its own commondir and config.worktree.
  std::string wt = paths::join(g, "worktrees");
  if (DIR* dir = ::opendir(wt.c_str())) {
    while (struct dirent* e = ::readdir(dir)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      std::string sub = paths::join(wt, n);
      out.deny_write.push_back({paths::join(sub, "commondir"), LeafType::kFile, false, ""});
      out.deny_write.push_back({paths::join(sub, "config.worktree"), LeafType::kFile, false, ""});
      out.deny_write.push_back({paths::join(sub, "gitdir"), LeafType::kFile, false, ""});
    }
    ::closedir(dir);
  }
}

}  // namespace

HitGuards guards_for_hits(const std::vector<ScanHit>& hits, const std::string& workspace) {
  HitGuards out;
  for (const auto& h : hits) {
    std::string p = paths::join(h.dir, h.name);
    if (h.name == ".git" && h.is_dir) {
      out.git_dirs.push_back(p);
      guard_gitdir(p, out, 0);
    } else if (h.name == ".git") {
      // A gitlink file ("gitdir: X"): a linked worktree or a submodule. The file itself is
      // guarded so it cannot be pointed at a directory the command controls.
      out.git_dirs.push_back(p);
      out.deny_write.push_back({p, LeafType::kFile, false, ""});
      auto text = read_file(p);
      if (!text.ok() || text->rfind("gitdir:", 0) != 0) continue;
      std::string target = trim(text->substr(7));
      while (!target.empty() && target.front() == ' ') target.erase(target.begin());
      if (target.empty()) continue;
      std::string gitdir = paths::resolve(target, "/", h.dir);
      if (!is_dir(gitdir)) continue;
      std::string common = gitdir;
      if (auto c = read_file(paths::join(gitdir, "commondir")); c.ok()) {
        common = paths::resolve(trim(*c), "/", gitdir);
        out.deny_write.push_back({paths::join(gitdir, "commondir"), LeafType::kFile, false, ""});
        out.deny_write.push_back({paths::join(gitdir, "config.worktree"), LeafType::kFile, false, ""});
      }
      guard_gitdir(common, out, 0);
      // FS-5: git in a worktree writes locks, objects and refs in the main repository.
      if (h.dir == workspace && is_dir(common)) out.writable.push_back(common);
    } else {
      for (auto& g : guarded_for_entry(h.dir, h.name, h.dir == workspace)) out.deny_write.push_back(g);
    }
  }
  return out;
}

}  // namespace wb::sys
