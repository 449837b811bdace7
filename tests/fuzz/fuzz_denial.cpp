// libFuzzer target: a line of `log stream --style ndjson` read for a run's Seatbelt refusals.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "seatbelt/denials.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto v = wb::seatbelt::parse_denial(in, "wavebox_0123456789abcdef");
  // A refusal names its operation; the tag never leaks into what the block shows.
  if (v && (v->operation().empty() || v->target.find("wavebox_0123456789abcdef") != std::string::npos))
    __builtin_trap();
  return 0;
}
