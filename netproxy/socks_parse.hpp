#pragma once
// Incremental SOCKS5 parser (RFC 1928): the greeting, then a CONNECT request with an IPv4,
// domain or IPv6 destination. BIND and UDP ASSOCIATE are refused. Pure.
#include <string>
#include <string_view>

#include "netproxy/http_parse.hpp"

namespace wb::netproxy {

struct SocksGreeting {
  ParseStatus status = ParseStatus::kNeedMore;
  bool no_auth = false;    // the client offers "no authentication"
  bool user_pass = false;  // the client offers username/password (RFC 1929)
  size_t consumed = 0;
};

struct SocksRequest {
  ParseStatus status = ParseStatus::kNeedMore;
  int reply = 0;     // for kError: the reply code to send (0x07 command, 0x08 address type, 0x02 bad host)
  std::string host;  // canonical
  int port = 0;
  size_t consumed = 0;
};

SocksGreeting parse_socks_greeting(std::string_view buf);

// The username/password sub-negotiation (RFC 1929): VER=1 ULEN UNAME PLEN PASSWD.
struct SocksAuth {
  ParseStatus status = ParseStatus::kNeedMore;
  std::string user, password;
  size_t consumed = 0;
};
SocksAuth parse_socks_auth(std::string_view buf);
SocksRequest parse_socks_request(std::string_view buf);
// A reply: VER REP RSV ATYP=1 0.0.0.0:0.
std::string socks_reply(int code);

}  // namespace wb::netproxy
