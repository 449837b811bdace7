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

#include "core/violations.hpp"

TEST_CASE("violations: deduplicated, in order, capped, query strings stripped") {
  wb::ViolationLog log(2);
  log.add({"file-write", "/a", ""});
  log.add({"file-write", "/a", ""});
  log.add({"file-read", "/b", ""});
  log.add({"file-write", "/c", ""});
  REQUIRE(log.items().size() == 2);
  CHECK(log.items()[0].line() == "deny file-write /a");
  CHECK(log.dropped() == 1);
  auto block = wb::render_block(log.items(), log.dropped());
  CHECK(block == "<sandbox_violations>\ndeny file-write /a\ndeny file-read /b\n... 1 more\n</sandbox_violations>\n");
  CHECK(wb::render_block({}, 0).empty());
  CHECK(wb::strip_query("example.com/p?token=SECRET#x") == "example.com/p");
  wb::Violation net{"network-outbound", "example.com:443", "host is not on the allow list"};
  CHECK(net.line() == "deny network-outbound example.com:443 (host is not on the allow list)");
}

TEST_CASE("ignoreViolations: '*' applies to every command, a key only when it is in the command") {
  std::vector<wb::Violation> v = {{"file-write", "/tmp/x", ""}, {"file-write", "/etc/y", ""}};
  std::map<std::string, std::vector<std::string>> ig = {{"*", {"/tmp/"}}, {"npm", {"/etc"}}};
  CHECK(wb::filter_ignored(v, ig, "make all").size() == 1);
  CHECK(wb::filter_ignored(v, ig, "npm test").empty());
}
