#pragma once
// The workspace scan for protected names at any depth (nested .git, .vscode, ...), with a cache
// of directory mtimes so a repeat run re-reads only directories that changed.
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
  std::string timing;
};

// Walks root without following symlinks and without entering .git directories. The cache lives
// in cache_dir (a directory the sandbox cannot write); an unreadable or stale cache is rebuilt.
Result<ScanResult> scan_tree(const std::string& root, const std::string& cache_dir);

}  // namespace wb::sys
