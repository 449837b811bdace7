#pragma once
// Incremental parser for HTTP/1.1 proxy requests: CONNECT host:port (authority form) and
// absolute-URI requests (GET http://host[:port]/path). Pure.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wb::netproxy {

enum class ParseStatus { kNeedMore, kDone, kError };

struct HttpRequest {
  std::string method;
  std::string host;  // canonical
  int port = 0;
  std::string path;  // origin form for forwarding ("/x?q"); empty for CONNECT
  bool connect = false;
  std::vector<std::pair<std::string, std::string>> headers;
  size_t header_bytes = 0;  // bytes of buf the request head took
};

struct HttpParse {
  ParseStatus status = ParseStatus::kNeedMore;
  HttpRequest req;
  int error_code = 400;  // for kError: 400 or 431
  std::string error;
};

// origin_form: the request of a client that connected to the host itself (the transparent path):
// "GET /path HTTP/1.1", the host known from the connection, not from the request line.
HttpParse parse_http_request(std::string_view buf, size_t max_head = 65536, bool origin_form = false);

// The body's framing and the host the request names, checked against the host the allowlist
// decided. A server must read the request as the proxy did: two Content-Lengths, or a
// Transfer-Encoding (which this proxy does not relay), could frame a second request behind the
// first, and a Host other than the decided one routes a shared server or CDN to a host nobody
// allowed. `also` is another spelling of the decided host (the pool address behind its name).
struct Framing {
  bool ok = true;
  bool names_other_host = false;  // a refusal to report: the request reaches for another host
  int code = 400;                 // for !ok: the HTTP status
  std::string error;
  long long length = 0;  // the body's bytes
};
Framing check_framing(const HttpRequest& r, std::string_view host, int port, std::string_view also = {});
// The request head to send upstream: origin-form target, hop-by-hop and Proxy-* headers
// removed, "Connection: close" (one request per upstream connection).
std::string upstream_head(const HttpRequest& r);

}  // namespace wb::netproxy
