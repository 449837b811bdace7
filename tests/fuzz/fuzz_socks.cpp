// libFuzzer target: the SOCKS5 greeting, username/password and request parsers.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "netproxy/socks_parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto a = wb::netproxy::parse_socks_auth(in);
  if (a.status == wb::netproxy::ParseStatus::kDone && a.consumed != 3 + a.user.size() + a.password.size())
    __builtin_trap();
  auto g = wb::netproxy::parse_socks_greeting(in);
  if (g.status == wb::netproxy::ParseStatus::kDone) {
    auto r = wb::netproxy::parse_socks_request(in.substr(g.consumed));
    if (r.status == wb::netproxy::ParseStatus::kDone && r.host.find('\0') != std::string::npos) __builtin_trap();
  }
  return 0;
}
