// pure
#include "core/invocation.hpp"

#include <fmt/format.h>

#include "core/hash.hpp"

namespace wb {

std::string invocation_id(const Invocation& inv) {
  std::uint64_t h = kFnv1aStart;
  auto field = [&h](const std::string& s) {
    h = fnv1a(s, h);
    h = fnv1a(std::string_view("\x1f", 1), h);  // between fields
  };
  auto list = [&](const std::vector<std::string>& v) {
    field(std::to_string(v.size()));
    for (const auto& s : v) field(s);
  };
  field(inv.program);
  list(inv.args);
  list(inv.options);
  list(inv.env);
  list(inv.command);
  field(inv.mounts);
  return fmt::format("{:016x}", h);
}

}  // namespace wb
