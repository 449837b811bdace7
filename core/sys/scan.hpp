#pragma once
// The workspace scan for protected names at any depth (nested .git, .vscode, ...), with a cache
// of directory mtimes so a repeat run re-reads only directories that changed.
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace wb::sys {

struct ScanHit {
  std::string dir;   // absolute directory holding the entry
  std::string name;  // ".git", ".vscode", ...
  bool is_dir = false;
};

struct ScanResult {
  std::vector<ScanHit> hits;
  size_t dirs_total = 0;
  size_t dirs_read = 0;  // directories whose entries were read (not served from the cache)
  // Directories that could not be read (EACCES): what they hold is unseen, so they are guarded
  // whole (a sandboxed command could chmod them open again).
  std::vector<std::string> unreadable;
  // Directories whose path is too long to open (ENAMETOOLONG): unseen, and no mount can be
  // placed there either; the run is refused.
  std::vector<std::string> too_deep;
  std::string timing;
};

// Walks root without following symlinks and without entering .git directories. The cache lives
// in cache_dir (a directory the sandbox cannot write); an unreadable or stale cache is rebuilt.
// Directories changed within this window before a scan are read again next time whatever the
// cache says (2 s; tests set 0 instead of waiting).
void set_scan_racy_window_ns(long long ns);
// cancel: once set, a scan still checking the known directories gives up (an error) and saves
// nothing; one past that finishes.
// one_thread: no helper threads (a check beside a starting sandbox must not take its CPUs).
// cache_dir "": no cache read or written (a plan for another machine, made here).
Result<ScanResult> scan_tree(const std::string& root, const std::string& cache_dir,
                             const std::atomic<bool>* cancel = nullptr, bool one_thread = false);
// What the cache says the tree holds, without looking at the tree: nullopt when there is no
// cache for root, or one of fewer than min_dirs directories (which a scan checks in no time).
// A plan made from it must be checked by scan_tree before anything the command writes counts
// (bwrap/plan/late_scan.hpp). Directories the cache cannot vouch for are not in it.
std::optional<ScanResult> scan_cached(const std::string& root, const std::string& cache_dir, size_t min_dirs);

}  // namespace wb::sys
