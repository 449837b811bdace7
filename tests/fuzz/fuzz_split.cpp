// libFuzzer target: shell command splitting and candidate stripping.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/shell_split.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  auto r = wb::split_command(in);
  if (r.subcommands.empty() && !r.parsed) __builtin_trap();
  for (const auto& s : r.subcommands) (void)wb::match_candidates(s);
  return 0;
}
