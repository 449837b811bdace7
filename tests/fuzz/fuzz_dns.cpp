// libFuzzer target: a datagram to the sandbox's resolver, read as a query and answered.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "netproxy/dns.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto q = wb::netproxy::parse_dns_query(in);
  if (!q) return 0;
  // The answer echoes the question; its name is never longer than a name can be.
  if (q->name.size() > 253 || q->question.size() + 12 > size) __builtin_trap();
  auto a = wb::netproxy::dns_answer_a(*q, 0x7f640001, 60);
  if (a.size() != 12 + q->question.size() + 16) __builtin_trap();
  return 0;
}
