// libFuzzer target: settings parsing, validation and merge. Any input is either a Settings value
// or an error naming the file; never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/settings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto r = wb::load_settings({{"/f/settings.json", text}}, "/home/u");
  if (!r.ok() && r.error().message.find("/f/settings.json") == std::string::npos) __builtin_trap();
  return 0;
}
