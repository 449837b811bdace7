#include "core/scan_cache.hpp"

#include <cstring>

namespace wb {
namespace {

constexpr char kMagic[] = "wavebox-scan-4";  // 4: change times, HEAD, more names
static_assert(sizeof(ScanStamp) == 40, "the cache's fixed part has no padding");

}  // namespace

void append_name(std::string& blob, std::string_view name) {
  blob.append(name);
  blob += '\0';
}

bool parse_scan_cache(std::string_view data, const std::string& root, std::vector<ScanRecord>& recs) {
  size_t pos = 0;
  auto field = [&](std::string_view& f) {
    size_t end = data.find('\0', pos);
    if (end == std::string_view::npos) return false;
    f = data.substr(pos, end - pos);
    pos = end + 1;
    return true;
  };
  std::string_view magic, r;
  std::uint64_t count = 0;
  if (!field(magic) || magic != kMagic || !field(r) || r != root || data.size() - pos < sizeof count) return false;
  std::memcpy(&count, data.data() + pos, sizeof count);
  pos += sizeof count;
  if (count == 0 || count > (data.size() - pos) / sizeof(ScanStamp)) return false;
  recs.clear();
  recs.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    ScanRecord rec;
    if (data.size() - pos < sizeof rec.f) return false;
    std::memcpy(&rec.f, data.data() + pos, sizeof rec.f);
    pos += sizeof rec.f;
    const size_t left = data.size() - pos;
    if (rec.f.rel_len >= left || rec.f.sub_len > left - rec.f.rel_len - 1 ||
        rec.f.hit_len > left - rec.f.rel_len - 1 - rec.f.sub_len) {
      return false;
    }
    if (data[pos + rec.f.rel_len] != '\0') return false;
    if (rec.f.parent >= static_cast<std::int64_t>(i) || (i > 0) != (rec.f.parent >= 0)) return false;
    rec.rel = data.substr(pos, rec.f.rel_len);
    rec.subdirs = data.substr(pos + rec.f.rel_len + 1, rec.f.sub_len);
    rec.hits = data.substr(pos + rec.f.rel_len + 1 + rec.f.sub_len, rec.f.hit_len);
    pos += size_t{rec.f.rel_len} + 1 + rec.f.sub_len + rec.f.hit_len;
    // A relative path holds no NUL (it goes to the kernel as a C string); the root's is empty.
    if (rec.rel.find('\0') != std::string_view::npos || (i == 0) != rec.rel.empty()) return false;
    recs.push_back(rec);
  }
  return pos == data.size();
}

std::string serialize_scan_cache(const std::string& root, const std::vector<ScanRecord>& recs) {
  size_t size = sizeof kMagic + root.size() + 1 + sizeof(std::uint64_t);
  for (const auto& r : recs) size += sizeof r.f + r.rel.size() + 1 + r.subdirs.size() + r.hits.size();
  std::string out;
  out.reserve(size);
  append_name(out, kMagic);
  append_name(out, root);
  std::uint64_t count = recs.size();
  out.append(reinterpret_cast<const char*>(&count), sizeof count);
  for (const auto& r : recs) {
    ScanStamp f = r.f;
    f.rel_len = static_cast<std::uint32_t>(r.rel.size());
    f.sub_len = static_cast<std::uint32_t>(r.subdirs.size());
    f.hit_len = static_cast<std::uint32_t>(r.hits.size());
    out.append(reinterpret_cast<const char*>(&f), sizeof f);
    append_name(out, r.rel);
    out.append(r.subdirs);
    out.append(r.hits);
  }
  return out;
}

}  // namespace wb
