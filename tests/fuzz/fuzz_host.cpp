// libFuzzer target: host canonicalisation and domain patterns. A canonical host is a fixed point
// and holds no control bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/domain.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto c = wb::canonical_host(in)) {
    for (unsigned char ch : *c) {
      if (ch <= 0x20 || ch == 0x7f) __builtin_trap();
    }
    auto again = wb::canonical_host(*c);
    if (!again || *again != *c) __builtin_trap();
  }
  if (auto p = wb::parse_pattern(in)) (void)wb::matches(*p, "a.example.com", 443);
  return 0;
}
