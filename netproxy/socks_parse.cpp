// pure
#include "netproxy/socks_parse.hpp"

#include <fmt/format.h>

#include "core/domain.hpp"

namespace wb::netproxy {

SocksGreeting parse_socks_greeting(std::string_view b) {
  SocksGreeting g;
  if (b.size() < 2) return g;
  if (static_cast<unsigned char>(b[0]) != 5) {
    g.status = ParseStatus::kError;
    return g;
  }
  size_t n = static_cast<unsigned char>(b[1]);
  if (b.size() < 2 + n) return g;
  for (size_t i = 0; i < n; ++i) {
    if (b[2 + i] == 0) g.no_auth = true;
    if (b[2 + i] == 2) g.user_pass = true;
  }
  g.consumed = 2 + n;
  g.status = ParseStatus::kDone;
  return g;
}

SocksAuth parse_socks_auth(std::string_view b) {
  SocksAuth a;
  if (b.size() < 2) return a;
  if (static_cast<unsigned char>(b[0]) != 1) {
    a.status = ParseStatus::kError;
    return a;
  }
  size_t ulen = static_cast<unsigned char>(b[1]);
  if (b.size() < 2 + ulen + 1) return a;
  size_t plen = static_cast<unsigned char>(b[2 + ulen]);
  if (b.size() < 3 + ulen + plen) return a;
  a.user = std::string(b.substr(2, ulen));
  a.password = std::string(b.substr(3 + ulen, plen));
  a.consumed = 3 + ulen + plen;
  a.status = ParseStatus::kDone;
  return a;
}

SocksRequest parse_socks_request(std::string_view b) {
  SocksRequest r;
  if (b.size() < 4) return r;
  auto u = [&](size_t i) { return static_cast<unsigned char>(b[i]); };
  if (u(0) != 5) {
    r.status = ParseStatus::kError;
    r.reply = 0x01;
    return r;
  }
  size_t need = 0;
  std::string host;
  switch (u(3)) {
    case 1:
      need = 4 + 4 + 2;
      if (b.size() < need) return r;
      host = fmt::format("{}.{}.{}.{}", u(4), u(5), u(6), u(7));
      break;
    case 3: {
      if (b.size() < 5) return r;
      size_t len = u(4);
      need = 5 + len + 2;
      if (b.size() < need) return r;
      if (len == 0) {
        r.status = ParseStatus::kError;
        r.reply = 0x02;
        return r;
      }
      host = std::string(b.substr(5, len));
      break;
    }
    case 4: {
      need = 4 + 16 + 2;
      if (b.size() < need) return r;
      std::string t;
      for (int i = 0; i < 8; ++i) t += fmt::format("{}{:x}", i ? ":" : "", (u(4 + 2 * i) << 8) | u(5 + 2 * i));
      host = t;
      break;
    }
    default:
      r.status = ParseStatus::kError;
      r.reply = 0x08;
      return r;
  }
  r.consumed = need;
  r.port = (u(need - 2) << 8) | u(need - 1);
  if (u(1) != 1) {  // only CONNECT
    r.status = ParseStatus::kError;
    r.reply = 0x07;
    return r;
  }
  auto c = canonical_host(host);
  if (!c || r.port == 0) {
    r.status = ParseStatus::kError;
    r.reply = 0x02;
    return r;
  }
  r.host = *c;
  r.status = ParseStatus::kDone;
  return r;
}

std::string socks_reply(int code) {
  return std::string{5, static_cast<char>(code), 0, 1, 0, 0, 0, 0, 0, 0};
}

}  // namespace wb::netproxy
