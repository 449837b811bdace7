#include <catch2/catch.hpp>

#include "netproxy/domain.hpp"

using namespace wb::netproxy;

TEST_CASE("domain patterns: exact, subdomain wildcard, port") {
  auto exact = parse_pattern("API.github.com.");
  REQUIRE(exact);
  CHECK(matches(*exact, "api.github.com", 443));
  CHECK_FALSE(matches(*exact, "x.api.github.com", 443));
  auto wild = parse_pattern("*.example.com");
  REQUIRE(wild);
  CHECK(matches(*wild, "a.example.com", 80));
  CHECK_FALSE(matches(*wild, "example.com", 80));
  CHECK_FALSE(matches(*wild, "badexample.com", 80));
  auto port = parse_pattern("x.test:8443");
  REQUIRE(port);
  CHECK(matches(*port, "x.test", 8443));
  CHECK_FALSE(matches(*port, "x.test", 443));
}

TEST_CASE("invalid patterns are refused") {
  CHECK_FALSE(parse_pattern("*"));
  CHECK_FALSE(parse_pattern("*.com"));
  CHECK_FALSE(parse_pattern("a..b"));
  CHECK_FALSE(parse_pattern("x.test:0"));
  CHECK_FALSE(parse_pattern("x.test:99999"));
  CHECK_FALSE(canonical_host(std::string("a\0b", 3)));
}
