#pragma once
// The workspace scan's cache format (pure: no system calls; core/sys/scan.cpp reads and writes
// the file). One file per workspace: a header, then one record per directory, parents before
// their children. A record is a fixed part and three byte strings: the path relative to the root
// (NUL-terminated in the file, so it can be passed to the kernel in place), the names of its
// subdirectories ("a\0b\0") and its entries of interest ("Dname\0Fname\0": D a directory, F
// anything else). Parsing allocates nothing per record: the records point into the bytes.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wb {

struct ScanStamp {
  std::uint64_t ino = 0;
  std::int64_t mtime_s = 0;  // -1: always read again (modified within two seconds of the scan)
  std::int64_t mtime_ns = 0;
  std::int32_t parent = -1;                             // index of the parent record; -1 for the root
  std::uint32_t rel_len = 0, sub_len = 0, hit_len = 0;  // set by serialize_scan_cache
};

struct ScanRecord {
  ScanStamp f;
  std::string_view rel, subdirs, hits;
};

// False (recs unspecified) unless data is a whole, consistent cache of root: records in order
// (each parent before its children, the root first and only the root without one), every length
// within the bytes.
bool parse_scan_cache(std::string_view data, const std::string& root, std::vector<ScanRecord>& recs);
std::string serialize_scan_cache(const std::string& root, const std::vector<ScanRecord>& recs);

// Calls f(name) for each NUL-terminated name of a blob.
template <class F>
void for_each_name(std::string_view blob, F f) {
  size_t pos = 0;
  while (pos < blob.size()) {
    size_t end = blob.find('\0', pos);
    if (end == std::string_view::npos) break;
    f(blob.substr(pos, end - pos));
    pos = end + 1;
  }
}

// Appends name and its terminating NUL to a blob.
void append_name(std::string& blob, std::string_view name);

}  // namespace wb
