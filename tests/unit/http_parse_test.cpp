// The proxy's HTTP request parser and the framing check every plain-HTTP request passes, on the
// proxy's path and the transparent one.
#include "netproxy/http_parse.hpp"

#include <catch2/catch.hpp>

using namespace wb::netproxy;

namespace {
HttpRequest parsed(const std::string& head, bool origin = false) {
  auto p = parse_http_request(head, 65536, origin);
  REQUIRE(p.status == ParseStatus::kDone);
  return p.req;
}
}  // namespace

TEST_CASE("proxy form and origin form") {
  auto r = parsed("GET http://Allowed.Test:8080/x?y HTTP/1.1\r\nHost: allowed.test:8080\r\n\r\n");
  CHECK(r.host == "allowed.test");
  CHECK(r.port == 8080);
  CHECK(r.path == "/x?y");
  // A transparent client speaks to the host itself: the target is a path.
  auto o = parsed("GET /a/b HTTP/1.1\r\nHost: allowed.test\r\n\r\n", true);
  CHECK(o.path == "/a/b");
  CHECK(o.host.empty());
  CHECK(parse_http_request("GET /a HTTP/1.1\r\n\r\n", 65536, false).status == ParseStatus::kError);
  CHECK(parse_http_request("GET http://a.test/ HTTP/1.1\r\n\r\n", 65536, true).status == ParseStatus::kError);
  CHECK(parse_http_request("CONNECT a.test:443 HTTP/1.1\r\n\r\n", 65536, true).status == ParseStatus::kError);
}

TEST_CASE("framing: one length, no transfer-encoding, the decided host") {
  auto ok = parsed("POST /u HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 5\r\n\r\n", true);
  auto f = check_framing(ok, "allowed.test", 80);
  CHECK(f.ok);
  CHECK(f.length == 5);
  // No Host at all (HTTP/1.0): the decided one is sent.
  CHECK(check_framing(parsed("GET / HTTP/1.0\r\n\r\n", true), "allowed.test", 80).ok);
  // Case and an explicit default port are the same host.
  CHECK(check_framing(parsed("GET / HTTP/1.1\r\nHost: ALLOWED.test:80\r\n\r\n", true), "allowed.test", 80).ok);
  // The pool address a client resolved the name to is the same host too.
  CHECK(
      check_framing(parsed("GET / HTTP/1.1\r\nHost: 127.100.0.1\r\n\r\n", true), "allowed.test", 80, "127.100.0.1").ok);

  auto other = check_framing(parsed("GET / HTTP/1.1\r\nHost: other.test\r\n\r\n", true), "allowed.test", 80);
  CHECK_FALSE(other.ok);
  CHECK(other.names_other_host);
  auto port = check_framing(parsed("GET / HTTP/1.1\r\nHost: allowed.test:8080\r\n\r\n", true), "allowed.test", 80);
  CHECK_FALSE(port.ok);
  CHECK(port.names_other_host);
  auto two_hosts = check_framing(parsed("GET / HTTP/1.1\r\nHost: allowed.test\r\nHost: other.test\r\n\r\n", true),
                                 "allowed.test", 80);
  CHECK_FALSE(two_hosts.ok);
  CHECK(two_hosts.names_other_host);

  // Two lengths, equal or not, and a transfer-encoding with or without a length: a server could
  // frame the body differently from the proxy.
  for (const char* head :
       {"POST / HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 7\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 7\r\nContent-Length: 7\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 7\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: +7\r\n\r\n", "POST / HTTP/1.1\r\nContent-Length: 7, 7\r\n\r\n"}) {
    INFO(head);
    auto g = check_framing(parsed(head, true), "allowed.test", 80);
    CHECK_FALSE(g.ok);
    CHECK_FALSE(g.names_other_host);
  }
}

TEST_CASE("the upstream head names the decided host only") {
  auto r = parsed("GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nConnection: keep-alive\r\n\r\n");
  auto head = upstream_head(r);
  CHECK(head == "GET / HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n");
}
