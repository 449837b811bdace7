// The workspace scan's part of a Linux run (bwrap/run/prepared.hpp).
#include <fmt/format.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "bwrap/run/prepared.hpp"
#include "core/log.hpp"
#include "core/paths.hpp"
#include "core/sys/fs.hpp"
#include "core/sys/guards.hpp"
#include "core/sys/scan.hpp"

namespace wb::lnx {

// A large tree's known hits, from its cache alone (every root's), or nullopt: then it is scanned
// before the plan, as a small one always is.
static std::optional<std::vector<sys::ScanHit>> cached_hits(const Logger& log, const std::vector<std::string>& roots,
                                                            const std::string& cache,
                                                            std::vector<std::string>& unreadable,
                                                            std::vector<std::string>& too_deep) {
  std::vector<sys::ScanHit> hits;
  size_t dirs = 0;
  const double t0 = now_ms();
  for (const auto& r : roots) {
    auto res = sys::scan_cached(r, cache, 1);
    if (!res) {
      unreadable.clear();
      too_deep.clear();
      return std::nullopt;
    }
    dirs += res->dirs_total;
    hits.insert(hits.end(), res->hits.begin(), res->hits.end());
    unreadable.insert(unreadable.end(), res->unreadable.begin(), res->unreadable.end());
    too_deep.insert(too_deep.end(), res->too_deep.begin(), res->too_deep.end());
  }
  if (dirs < LateScan::kMinDirs) {
    unreadable.clear();
    too_deep.clear();
    return std::nullopt;
  }
  log.info(
      fmt::format("planned from the scan cache ({} directories, read in {:.2f} ms); checked while the command "
                  "starts",
                  dirs, now_ms() - t0));
  return hits;
}

// The scan's findings become guards: repositories, protected names, directories it could not
// read (read-only), hard links and depths it cannot handle (refused). late: a large tree may be
// planned from its cache and checked while the command starts (p.late).
Status guard_what_the_scan_found(const LinuxRun& run, const FsPolicy& policy, Prepared& p, bool late) {
  p.scan_roots = sys::scan_roots_of(policy);
  std::vector<std::string> unreadable, too_deep;
  std::string ws_real = sys::real_path_or_empty(run.cwd);
  std::vector<sys::ScanHit> hits;
  auto cached = late ? cached_hits(*run.log, p.scan_roots, run.state.scan, unreadable, too_deep) : std::nullopt;
  if (cached) {
    p.late = std::make_shared<LateScan>(p.scan_roots, run.state.scan, ws_real.empty() ? run.cwd : ws_real, run.home);
    if (!p.late->usable()) {  // no eventfd to hold the command's calls with: checked now instead
      p.late.reset();
      cached.reset();
      unreadable.clear();
      too_deep.clear();
    }
  }
  if (cached) {
    hits = std::move(*cached);
  } else {
    hits = WB_TRY(sys::scan_all(*run.log, p.scan_roots, run.state.scan, &unreadable, &too_deep));
  }
  sys::ScanFound found = WB_TRY(
      sys::guards_from_scan(hits, unreadable, too_deep, ws_real.empty() ? run.cwd : ws_real, run.home, *run.log));
  for (const auto& g : found.hit_guards) p.scan_guards.insert(g);
  for (const auto& z : found.findings.zones) p.scan_guards.insert("zone:" + z.dir);
  for (const auto& r : found.repo_dirs) p.scan_guards.insert("repo:" + r);
  p.findings = std::move(found.findings);
  p.unreadable = std::move(found.unreadable);
  p.git_dirs = std::move(found.git_dirs);
  p.repo_dirs = std::move(found.repo_dirs);
  for (const auto& h : hits) {
    if (is_protected_name(h.name)) p.protected_hits.push_back(paths::join(h.dir, h.name));
  }
  return ok_status();
}

// New repositories: from the observer's record of created ".git" entries when it ran (exact and
// free), else by scanning again.
void warn_new_repositories(const Logger& log, const Prepared& before, const std::string& cache, const std::string& home,
                           const Observer* observer) {
  // Exact and free from the observer's record when nothing of the kind was made (the common
  // case); else the workspace is scanned again (its cache makes that a stat per directory):
  // what was made may have been moved since (git init tmp && mv tmp repo).
  if (observer && observer->created_git().empty() && observer->allowed_in_new_dirs().empty() &&
      !observer->hid_something() && !observer->moved_across_deps()) {
    return;
  }
  std::vector<std::string> unreadable, too_deep;
  auto hits = sys::scan_all(log, before.scan_roots, cache, &unreadable, &too_deep);
  if (!hits.ok()) return;
  std::set<std::string> was_unreadable(before.unreadable.begin(), before.unreadable.end());
  for (const auto& u : unreadable) {
    struct stat st;
    if (was_unreadable.count(u) || ::lstat(u.c_str(), &st) != 0 || st.st_uid != ::geteuid()) continue;
    log.warn(
        fmt::format("the command made \"{}\" unreadable: what it holds (a repository?) was not checked; "
                    "look inside before running git or other tools there outside the sandbox",
                    log::quote(u)));
  }
  std::string ws = before.scan_roots.empty() ? "/" : before.scan_roots[0];
  auto now = sys::guards_for_hits(*hits, ws, home);
  std::set<std::string> known(before.git_dirs.begin(), before.git_dirs.end());
  std::set<std::string> warned;
  for (const auto& p : now.git_dirs) {
    if (!known.count(p) && warned.insert(p).second) {
      log.warn(
          fmt::format("the command created the git repository \"{}\"; its hooks and config were "
                      "writable during this run (they are protected from the next run on). "
                      "Check them before running git there outside the sandbox",
                      log::quote(p)));
    }
  }
  std::set<std::string> had(before.protected_hits.begin(), before.protected_hits.end());
  std::set<std::string> made;
  if (observer) made.insert(observer->allowed_in_new_dirs().begin(), observer->allowed_in_new_dirs().end());
  for (const auto& h : *hits) {
    std::string p = paths::join(h.dir, h.name);
    if (!is_protected_name(h.name) || in_dependency_tree(p, ws) || had.count(p) || !warned.insert(p).second) continue;
    if (made.count(p)) {
      log.warn(
          fmt::format("the command created \"{}\" in a directory it made during this run (a clone or an "
                      "extraction, so it was allowed); it is protected from the next run on. Check it before "
                      "opening that directory with a tool that loads it",
                      log::quote(p)));
    } else {
      // Made where such names are allowed (a new directory, a node_modules tree) and moved here
      // with its directory.
      log.warn(
          fmt::format("the command left \"{}\" here during this run: it came with a directory moved here from "
                      "where such names are allowed (one the run made, or a node_modules tree); it is protected "
                      "from the next run on. Check it before opening that directory with a tool that loads it",
                      log::quote(p)));
    }
  }
}

// What the check of a cached plan found that the plan lacks, given to the supervisor before it
// answers anything: guarded paths that exist are read-only (by path, as their mounts would
// have made them), missing ones may not be created, new zones and repositories count as at plan
// time. What the plan would have refused (a guarded file with other names, a tree too deep),
// and a check that failed, make the whole workspace read-only for the run: never a guard less.
void apply_late(const LinuxRun& run, Prepared& p, Observer& obs) {
  const LateScan::Found* f = p.late->found();
  const Logger& log = *run.log;
  const std::string why = "protected (found while the command started)";
  std::vector<std::string> ro;
  auto lock_all = [&](const std::string& reason) {
    log.warn(fmt::format("{}: the workspace is read-only for this run; run the command again", reason));
    ro.insert(ro.end(), p.scan_roots.begin(), p.scan_roots.end());
  };
  if (!f || !f->ok) {
    lock_all(fmt::format("the workspace could not be checked for new repositories ({})", f ? f->error : "no result"));
    obs.add_late_read_only(ro, why);
    return;
  }
  const auto& g = f->guards;
  if (!g.linked.empty()) {
    lock_all(fmt::format("the protected file \"{}\" has other names (hard links); remove them", g.linked[0]));
  }
  if (!f->too_deep.empty()) {
    lock_all(fmt::format("\"{}\" lies deeper than the longest path the kernel takes", f->too_deep[0]));
  }
  size_t added = 0;
  for (const auto& d : g.deny_write) {
    if (p.scan_guards.count(d.path)) continue;
    ++added;
    struct stat st;
    if (::lstat(d.path.c_str(), &st) == 0) {
      ro.push_back(d.path);
      std::string real = sys::real_path_or_empty(d.path);
      if (!real.empty() && real != d.path) ro.push_back(real);
    } else {
      p.guard.add_path(d.path, d.why.empty() ? why : d.why);
    }
  }
  for (const auto& z : g.zones) {
    if (p.scan_guards.count("zone:" + z.dir)) continue;
    ++added;
    p.guard.add_zone(z.dir, z.carve, z.why);
  }
  for (const auto& r : g.repo_dirs) {
    if (p.scan_guards.count("repo:" + r)) continue;
    ++added;
    p.guard.add_repository(r);
  }
  std::set<std::string> had(p.unreadable.begin(), p.unreadable.end());
  for (const auto& u : f->unreadable) {
    struct stat st;
    if (had.count(u) || (::lstat(u.c_str(), &st) == 0 && st.st_uid != ::geteuid())) continue;
    run.log->warn(
        fmt::format("cannot read \"{}\" to look for protected files in it, so it is read-only in the "
                    "sandbox; make it readable (chmod u+rx) to have it writable again",
                    log::quote(u)));
    ro.push_back(u);
    ++added;
  }
  log.info(
      fmt::format("checked the plan against the tree ({} directories, {:.1f} ms): {} guards found after it, "
                  "enforced by the supervisor",
                  f->dirs, f->ms, added));
  obs.add_late_read_only(ro, why);
}

// The lists the warnings after the run compare with: the tree as the check saw it.
void adopt_late_findings(Prepared& p) {
  const LateScan::Found* f = p.late ? p.late->found() : nullptr;
  if (!f || !f->ok) return;
  p.git_dirs = f->guards.git_dirs;
  p.repo_dirs = f->guards.repo_dirs;
  p.unreadable = f->unreadable;
  p.protected_hits.clear();
  for (const auto& h : f->hits) {
    if (is_protected_name(h.name)) p.protected_hits.push_back(paths::join(h.dir, h.name));
  }
}

}  // namespace wb::lnx
