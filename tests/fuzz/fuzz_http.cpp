// libFuzzer target: the HTTP proxy-request parser and the upstream head it builds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "netproxy/http_parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto p = wb::netproxy::parse_http_request(in, 4096);
  if (p.status == wb::netproxy::ParseStatus::kDone) {
    auto head = wb::netproxy::upstream_head(p.req);
    // The rewritten head never carries a bare CR or LF inside a line: no request smuggling.
    if (head.find("\r\n\r\n") != head.size() - 4) __builtin_trap();
  }
  return 0;
}
