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

HttpParse parse_http_request(std::string_view buf, size_t max_head = 65536);
// The request head to send upstream: origin-form target, hop-by-hop and Proxy-* headers
// removed, "Connection: close" (one request per upstream connection).
std::string upstream_head(const HttpRequest& r);

}  // namespace wb::netproxy
