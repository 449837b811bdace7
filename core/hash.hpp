#pragma once
// FNV-1a, 64 bits: names cache and registry files after what they stand for. It guards nothing
// (those directories are the user's own, 0700); it only has to spread.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace wb {

constexpr std::uint64_t kFnv1aStart = 1469598103934665603ULL;

// Continues a hash `h` over n bytes (start from kFnv1aStart).
inline std::uint64_t fnv1a(const void* p, std::size_t n, std::uint64_t h = kFnv1aStart) {
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ULL;
  return h;
}
inline std::uint64_t fnv1a(std::string_view s, std::uint64_t h = kFnv1aStart) {
  return fnv1a(s.data(), s.size(), h);
}

}  // namespace wb
