#include "core/domain.hpp"

#include <catch2/catch.hpp>

using namespace wb;

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

TEST_CASE("hosts are canonicalised; address tricks become the address") {
  CHECK(*canonical_host("API.GitHub.com.") == "api.github.com");
  CHECK(*canonical_host("127.1") == "127.0.0.1");
  CHECK(*canonical_host("2130706433") == "127.0.0.1");
  CHECK(*canonical_host("0x7f.0.0.1") == "127.0.0.1");
  CHECK(*canonical_host("0177.0.0.1") == "127.0.0.1");
  CHECK(*canonical_host("[::1]") == "::1");
  CHECK(*canonical_host("[0:0:0:0:0:0:0:1]") == "::1");
  CHECK(*canonical_host("::ffff:127.0.0.1") == "::ffff:7f00:1");
  CHECK_FALSE(canonical_host("a b"));
  CHECK_FALSE(canonical_host("a\tb"));
  CHECK_FALSE(canonical_host(std::string("x.test\0.evil", 12)));
  CHECK_FALSE(canonical_host("a..b"));
  CHECK(*canonical_host("allowed.test.evil.test") == "allowed.test.evil.test");
  CHECK(is_ip_literal("10.0.0.1"));
  CHECK_FALSE(is_ip_literal("example.com"));
  CHECK(is_ip_literal("::1"));
}

TEST_CASE("local and special addresses are recognised") {
  auto v4 = [](unsigned a, unsigned b, unsigned c, unsigned d) {
    return std::string{static_cast<char>(a), static_cast<char>(b), static_cast<char>(c), static_cast<char>(d)};
  };
  CHECK(is_local_or_special(v4(127, 0, 0, 1)));
  CHECK(is_local_or_special(v4(169, 254, 169, 254)));
  CHECK(is_local_or_special(v4(0, 0, 0, 0)));
  CHECK(is_local_or_special(v4(224, 0, 0, 1)));
  CHECK_FALSE(is_local_or_special(v4(93, 184, 216, 34)));
  CHECK(is_local_or_special(*parse_ipv6("::1")));
  CHECK(is_local_or_special(*parse_ipv6("fe80::1")));
  CHECK(is_local_or_special(*parse_ipv6("::ffff:127.0.0.1")));
  CHECK(is_local_or_special(*parse_ipv6("fd00:ec2::254")));
  CHECK_FALSE(is_local_or_special(*parse_ipv6("2001:db8::1")));
}

TEST_CASE("invalid patterns are refused") {
  CHECK_FALSE(parse_pattern("*"));
  CHECK_FALSE(parse_pattern("*.com"));
  CHECK_FALSE(parse_pattern("a..b"));
  CHECK_FALSE(parse_pattern("x.test:0"));
  CHECK_FALSE(parse_pattern("x.test:99999"));
  CHECK_FALSE(canonical_host(std::string("a\0b", 3)));
  CHECK_FALSE(parse_pattern("*.10.0.0.1"));
  CHECK(parse_pattern("[::1]:8080")->port == 8080);
  CHECK(parse_pattern("127.0.0.1")->host == "127.0.0.1");
}

#include "core/violations.hpp"

TEST_CASE("violations: deduplicated, in order, capped, query strings stripped") {
  wb::ViolationLog log(2);
  log.add({wb::Refused::kFileWrite, "/a", ""});
  log.add({wb::Refused::kFileWrite, "/a", ""});
  log.add({wb::Refused::kFileRead, "/b", ""});
  log.add({wb::Refused::kFileWrite, "/c", ""});
  REQUIRE(log.items().size() == 2);
  CHECK(log.items()[0].line() == "deny file-write /a");
  CHECK(log.dropped() == 1);
  auto block = wb::render_block(log.items(), log.dropped());
  CHECK(block == "<sandbox_violations>\ndeny file-write /a\ndeny file-read /b\n... 1 more\n</sandbox_violations>\n");
  CHECK(wb::render_block({}, 0).empty());
  CHECK(wb::strip_query("example.com/p?token=SECRET#x") == "example.com/p");
  wb::Violation net{wb::Refused::kConnect, "example.com:443", "host is not on the allow list",
                    wb::RefusalCode::kNotAllowed};
  CHECK(net.line() == "deny network-outbound example.com:443 (host is not on the allow list)");
}

TEST_CASE("ignoreViolations: '*' applies to every command, a key only when it is in the command") {
  std::vector<wb::Violation> v = {{wb::Refused::kFileWrite, "/tmp/x", ""}, {wb::Refused::kFileWrite, "/etc/y", ""}};
  std::map<std::string, std::vector<std::string>> ig = {{"*", {"/tmp/"}}, {"npm", {"/etc"}}};
  CHECK(wb::filter_ignored(v, ig, "make all").size() == 1);
  CHECK(wb::filter_ignored(v, ig, "npm test").empty());
}

TEST_CASE("allowlist ports: the entries' own ports besides 80 and 443, each once, in order") {
  CHECK(allowlist_ports({"a.test", "b.test:22", "*.c.test:8080", "d.test:443", "e.test:22", "bad:pattern:x"}) ==
        std::vector<int>{22, 8080});
  CHECK(allowlist_ports({}).empty());
}
