#include "core/sys/guards.hpp"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "core/paths.hpp"
#include "core/protect.hpp"
#include "core/sys/fs.hpp"
#include "core/sys/fswitness.hpp"

namespace wb::sys {
namespace {

// A directory whose names the guards depend on, opened for reading them (recorded for a plan
// that is kept while nothing it read changes).
DIR* open_listing(const std::string& dir) {
  if (FsReads* rec = recording()) rec->listing(dir);
  return ::opendir(dir.c_str());
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string unquote(std::string v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.erase(v.begin());
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.pop_back();
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  return v;
}

// The files a git config makes git read or run besides itself: include.path and
// includeIf.<cond>.path (more config, relative to the including file), core.hooksPath (hooks,
// relative to where hooks run: the worktree's top, or the git directory when bare). Guarded
// like the config itself, existing or not (husky's .husky/_ before `npm install` made it).
void guard_config_targets(const std::string& config, const std::string& top, const std::string& home, HitGuards& out,
                          int depth) {
  auto text = read_regular_file(config);
  if (!text.ok() || depth > 4) return;
  std::string section;
  size_t pos = 0;
  while (pos < text->size()) {
    size_t end = text->find('\n', pos);
    if (end == std::string::npos) end = text->size();
    std::string line = text->substr(pos, end - pos);
    pos = end + 1;
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos || line[i] == '#' || line[i] == ';') continue;
    if (line[i] == '[') {
      size_t close = line.find(']', i);
      std::string head = line.substr(i + 1, close == std::string::npos ? std::string::npos : close - i - 1);
      std::string name = head.substr(0, head.find_first_of(" \t\"."));
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      section = name;
      if (close == std::string::npos) continue;
      line = line.substr(close + 1);  // "[core] hooksPath = x" on one line
      i = line.find_first_not_of(" \t");
      if (i == std::string::npos) continue;
    }
    size_t eq = line.find('=', i);
    if (eq == std::string::npos) continue;
    std::string key = unquote(line.substr(i, eq - i));
    for (auto& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = unquote(line.substr(eq + 1));
    if (value.empty()) continue;
    auto resolve = [&](const std::string& base) {
      if (value.rfind("~/", 0) == 0) return paths::join(home, value.substr(2));
      return paths::resolve(value, home, base);
    };
    if ((section == "include" || section == "includeif") && key == "path") {
      std::string target = resolve(paths::parent(config));
      out.deny_write.push_back({target, LeafType::kFile, true, "", "a file the repository's git config includes"});
      guard_config_targets(target, top, home, out, depth + 1);
    } else if (section == "core" && key == "hookspath") {
      out.deny_write.push_back({resolve(top), LeafType::kDir, true, "", "git runs the hooks in core.hooksPath"});
    }
  }
}

// A git directory's code-bearing files, and whatever its config points git at.
void guard_gitdir(const std::string& g, HitGuards& out, int depth, const std::string& home, const std::string& top) {
  const std::string config_why = "git runs the programs a repository's config names (core.fsmonitor, core.hooksPath)";
  out.repo_dirs.push_back(g);
  out.deny_write.push_back({paths::join(g, "hooks"), LeafType::kDir, true, "", "git runs a repository's hooks"});
  out.deny_write.push_back({paths::join(g, "config"), LeafType::kFile, true, "", config_why});
  out.deny_write.push_back(
      {paths::join(g, "commondir"), LeafType::kFile, true, "", "it points git at the repository it trusts"});
  out.deny_write.push_back({paths::join(g, "config.worktree"), LeafType::kFile, true, "", config_why});
  // git's builtin fsmonitor (core.fsmonitor=true) asks whoever listens here which files changed:
  // a sandboxed listener would tell the host's git status and git add what to see.
  out.deny_write.push_back(
      {paths::join(g, "fsmonitor--daemon.ipc"), LeafType::kFile, true, "", "git trusts what answers there"});
  auto single_name = [&](const std::string& f) {
    // Its link count counts: watched itself (a new hard link is told to the file's own watch
    // alone, never to its directory's).
    if (FsReads* rec = recording()) rec->links(f);
    struct stat st;
    if (::lstat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink > 1) out.linked.push_back(f);
  };
  for (const char* f : {"config", "commondir", "config.worktree"}) single_name(paths::join(g, f));
  if (DIR* hooks = open_listing(paths::join(g, "hooks"))) {
    while (struct dirent* e = ::readdir(hooks)) {
      if (e->d_name[0] != '.') single_name(paths::join(paths::join(g, "hooks"), e->d_name));
    }
    ::closedir(hooks);
  }
  guard_config_targets(paths::join(g, "config"), top, home, out, 0);
  guard_config_targets(paths::join(g, "config.worktree"), top, home, out, 0);
  if (depth > 8) return;
  // No submodule git directory may appear that git did not have: a new modules/<name> would
  // hold hooks and a config that the host's `git submodule update` then runs.
  FsPolicy::Zone zone{paths::join(g, "modules"), {}, "a new submodule's git directory (hooks, config)"};
  if (!is_dir(zone.dir)) {
    out.deny_write.push_back({zone.dir, LeafType::kDir, true, "", zone.why});
  }
  // Submodules' git directories live in modules/<name>[/modules/<name>...].
  std::vector<std::string> stack = {paths::join(g, "modules")};
  while (!stack.empty()) {
    std::string d = stack.back();
    stack.pop_back();
    DIR* dir = open_listing(d);
    if (!dir) continue;
    while (struct dirent* e = ::readdir(dir)) {
      std::string n = e->d_name;
      if (n == "." || n == ".." || e->d_type == DT_LNK) continue;
      std::string sub = paths::join(d, n);
      if (!is_dir(sub)) continue;
      if (exists(paths::join(sub, "HEAD"))) {
        zone.carve.push_back(sub);
        guard_gitdir(sub, out, depth + 1, home, sub);
      } else {
        stack.push_back(sub);
      }
    }
    ::closedir(dir);
  }
  if (is_dir(zone.dir)) out.zones.push_back(std::move(zone));
  // Linked worktrees: each has its own commondir and config.worktree.
  std::string wt = paths::join(g, "worktrees");
  if (DIR* dir = open_listing(wt)) {
    while (struct dirent* e = ::readdir(dir)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      std::string sub = paths::join(wt, n);
      out.repo_dirs.push_back(sub);
      out.deny_write.push_back({paths::join(sub, "commondir"), LeafType::kFile, false, ""});
      out.deny_write.push_back({paths::join(sub, "config.worktree"), LeafType::kFile, false, ""});
      out.deny_write.push_back({paths::join(sub, "gitdir"), LeafType::kFile, false, ""});
    }
    ::closedir(dir);
  }
}

}  // namespace

std::vector<GuardedPath> guards_for_user_git_config(const std::string& home) {
  HitGuards out;
  // The user's own git configuration is protected (policy); what it includes or names as
  // core.hooksPath may lie anywhere, a workspace included.
  for (const char* rel : {".gitconfig", ".config/git/config"}) {
    guard_config_targets(paths::join(home, rel), home, home, out, 0);
  }
  return out.deny_write;
}

HitGuards guards_for_hits(const std::vector<ScanHit>& hits, const std::string& workspace, const std::string& home) {
  HitGuards out;
  for (const auto& h : hits) {
    std::string p = paths::join(h.dir, h.name);
    if (paths::same_name(h.name, "HEAD")) {
      // A bare repository's layout, which git takes for a repository before looking further up.
      // Or HEAD with a commondir naming where objects/ and refs/ are (a linked worktree's layout).
      // (git only checks that objects and refs can be entered: plain files pass for it too.)
      bool layout = exists(paths::join(h.dir, "objects")) && exists(paths::join(h.dir, "refs"));
      auto common = read_regular_file(paths::join(h.dir, "commondir"));
      if (!h.is_dir && (layout || common.ok())) {
        out.git_dirs.push_back(h.dir);
        guard_gitdir(h.dir, out, 0, home, h.dir);
        if (common.ok() && !trim(*common).empty()) {
          std::string c = paths::resolve(trim(*common), "/", h.dir);
          if (is_dir(c)) guard_gitdir(c, out, 0, home, c);
        }
      }
    } else if (paths::same_name(h.name, ".git") && h.is_dir) {
      out.git_dirs.push_back(p);
      guard_gitdir(p, out, 0, home, h.dir);
    } else if (paths::same_name(h.name, ".git")) {
      // A gitlink file ("gitdir: X"): a linked worktree or a submodule. The file itself is
      // guarded so it cannot be pointed at a directory the command controls.
      out.git_dirs.push_back(p);
      out.deny_write.push_back({p, LeafType::kFile, false, ""});
      auto text = read_regular_file(p);
      if (!text.ok() || text->rfind("gitdir:", 0) != 0) continue;
      std::string target = trim(text->substr(7));
      while (!target.empty() && target.front() == ' ') target.erase(target.begin());
      if (target.empty()) continue;
      std::string gitdir = paths::resolve(target, "/", h.dir);
      if (!is_dir(gitdir)) continue;
      std::string common = gitdir;
      out.repo_dirs.push_back(gitdir);
      if (auto c = read_regular_file(paths::join(gitdir, "commondir")); c.ok()) {
        common = paths::resolve(trim(*c), "/", gitdir);
        out.deny_write.push_back({paths::join(gitdir, "commondir"), LeafType::kFile, false, ""});
        out.deny_write.push_back({paths::join(gitdir, "config.worktree"), LeafType::kFile, false, ""});
      }
      guard_gitdir(common, out, 0, home, h.dir);
      // A linked worktree: git in it writes locks, objects and refs in the main repository. Only for
      // a real linked worktree: the .git file names <main>/.git/worktrees/<name>, whose gitdir
      // file names this .git file back, and the common directory is a repository. A .git file
      // is the workspace's to write when it is not a repository yet, so "gitdir: /etc" must
      // never make /etc writable (the back-pointer lies outside what a command can write).
      auto back = read_regular_file(paths::join(gitdir, "gitdir"));
      bool linked = back.ok() && paths::resolve(trim(*back), "/", gitdir) == p &&
                    paths::basename(paths::parent(gitdir)) == "worktrees" &&
                    paths::parent(paths::parent(gitdir)) == common && exists(paths::join(common, "HEAD")) &&
                    is_dir(paths::join(common, "objects")) && is_dir(paths::join(common, "refs"));
      if (h.dir == workspace && linked) out.writable.push_back(common);
    } else if (!in_dependency_tree(p, paths::is_within(p, workspace) ? workspace : h.dir)) {
      for (auto& g : guarded_for_entry(h.dir, h.name, h.dir == workspace)) out.deny_write.push_back(g);
    }
  }
  return out;
}

}  // namespace wb::sys

namespace wb::sys {

std::vector<std::string> scan_roots_of(const FsPolicy& policy) {
  std::vector<std::string> roots;
  for (const auto& r : policy.scan_roots) {
    std::string real = real_path_or_empty(r);
    if (real.empty() || !is_dir(real)) continue;
    roots.push_back(real);
  }
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  std::vector<std::string> out;
  for (const auto& r : roots) {
    bool nested = std::any_of(out.begin(), out.end(), [&](const std::string& o) { return paths::is_within(r, o); });
    if (!nested) out.push_back(r);
  }
  return out;
}

Result<std::vector<ScanHit>> scan_all(const Logger& log, const std::vector<std::string>& roots,
                                      const std::string& cache_dir, std::vector<std::string>* unreadable,
                                      std::vector<std::string>* too_deep) {
  std::vector<ScanHit> hits;
  for (const auto& r : roots) {
    auto res = WB_TRY(scan_tree(r, cache_dir));
    log.info(fmt::format("scanned {}: {} directories, {} read ({})", log::quote(r), res.dirs_total, res.dirs_read,
                         res.timing));
    hits.insert(hits.end(), res.hits.begin(), res.hits.end());
    if (unreadable) unreadable->insert(unreadable->end(), res.unreadable.begin(), res.unreadable.end());
    if (too_deep) too_deep->insert(too_deep->end(), res.too_deep.begin(), res.too_deep.end());
  }
  return hits;
}

Result<ScanFound> guards_from_scan(const std::vector<ScanHit>& hits, const std::vector<std::string>& unreadable,
                                   const std::vector<std::string>& too_deep, const std::string& workspace,
                                   const std::string& home, const Logger& log) {
  HitGuards guards = guards_for_hits(hits, workspace, home);
  if (!guards.linked.empty()) {
    return make_error(ErrorKind::kSandboxFailed,
                      fmt::format("the protected file \"{}\" has other names (hard links), which would stay writable "
                                  "in the sandbox; remove them (find {} -samefile {}) and run again",
                                  guards.linked[0], log::quote(workspace), log::quote(guards.linked[0])));
  }
  if (!too_deep.empty()) {
    return make_error(ErrorKind::kSandboxFailed,
                      fmt::format("\"{}\" lies deeper than the longest path the kernel takes, so wavebox cannot look "
                                  "into it for repositories to guard; move it higher up",
                                  too_deep[0]));
  }
  ScanFound out;
  Findings& found = out.findings;
  for (const auto& g : guards.deny_write) out.hit_guards.push_back(g.path);
  found.deny_write = std::move(guards.deny_write);
  for (auto& g : guards_for_user_git_config(home)) found.deny_write.push_back(std::move(g));
  found.writable = std::move(guards.writable);
  found.zones = std::move(guards.zones);
  // A directory the scan could not read may hold a repository or an editor folder it did not
  // see; the command could open it up (chmod) and write there. It stays read-only instead.
  for (const auto& u : unreadable) {
    // Another user's directory (in a shared /tmp): the command, running as this user, cannot
    // open it up either.
    struct stat st;
    if (::lstat(u.c_str(), &st) == 0 && st.st_uid != ::geteuid()) continue;
    log.warn(
        fmt::format("cannot read \"{}\" to look for protected files in it, so it is read-only in the "
                    "sandbox; make it readable (chmod u+rx) to have it writable again",
                    log::quote(u)));
    found.deny_write.push_back({u, LeafType::kDir, true, "", "a directory wavebox could not look into"});
  }
  out.git_dirs = std::move(guards.git_dirs);
  out.repo_dirs = std::move(guards.repo_dirs);
  out.unreadable = unreadable;
  return out;
}

}  // namespace wb::sys
