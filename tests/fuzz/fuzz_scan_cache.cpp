// libFuzzer target: the workspace scan's cache format. Whatever the bytes, parsing stays within
// them; what parses serializes back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/scan_cache.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The fuzzer's bytes after a valid header, often enough to reach the records.
  const std::string root = "/ws";
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (size > 0 && data[0] == 'H') bytes = std::string("wavebox-scan-3\0/ws\0", 19) + bytes.substr(1);
  std::vector<wb::ScanRecord> recs;
  if (wb::parse_scan_cache(bytes, root, recs)) {
    for (const auto& r : recs) wb::for_each_name(r.subdirs, [](std::string_view) {});
    if (wb::serialize_scan_cache(root, recs) != bytes) __builtin_trap();
  }
  return 0;
}
