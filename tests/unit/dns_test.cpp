// The sandbox's resolver: queries read, answers made, the pool (netproxy/dns.hpp).
#include "netproxy/dns.hpp"

#include <catch2/catch.hpp>

#include "netproxy/decision.hpp"

using namespace wb;
using namespace wb::netproxy;

namespace {

std::string query(const std::string& name, std::uint16_t type, std::uint16_t id = 0x1234) {
  std::string q = {static_cast<char>(id >> 8), static_cast<char>(id & 0xff), 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  size_t start = 0;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    q += static_cast<char>(dot - start);
    q += name.substr(start, dot - start);
    start = dot + 1;
  }
  q += '\0';
  q += static_cast<char>(type >> 8);
  q += static_cast<char>(type & 0xff);
  q += '\0';
  q += '\1';
  return q;
}

}  // namespace

TEST_CASE("dns: a query is read, names lower-cased; what is not one query is not") {
  auto q = parse_dns_query(query("Registry.NPMJS.org", kDnsA));
  REQUIRE(q);
  CHECK(q->name == "registry.npmjs.org");
  CHECK(q->qtype == kDnsA);
  CHECK(q->id == 0x1234);
  std::string bad = query("x.test", kDnsA);
  bad[2] = static_cast<char>(0x80);  // a response, not a query
  CHECK_FALSE(parse_dns_query(bad));
  std::string two = query("x.test", kDnsA);
  two[5] = 2;  // two questions
  CHECK_FALSE(parse_dns_query(two));
  std::string ptr = query("x.test", kDnsA);
  ptr[12] = static_cast<char>(0xc0);  // a compression pointer in the question
  CHECK_FALSE(parse_dns_query(ptr));
  CHECK_FALSE(parse_dns_query(query("x.test", kDnsA).substr(0, 20)));
  CHECK_FALSE(parse_dns_query(""));
}

TEST_CASE("dns: an A answer carries the question and the pool address; refusals carry their code") {
  auto q = parse_dns_query(query("allowed.test", kDnsA, 0xbeef));
  REQUIRE(q);
  std::string a = dns_answer_a(*q, 0x7f640001, 60);
  CHECK(static_cast<unsigned char>(a[0]) == 0xbe);
  CHECK((static_cast<unsigned char>(a[2]) & 0x80) != 0);  // a response
  CHECK(a[7] == 1);                                       // one answer
  CHECK(a.substr(12, q->question.size()) == q->question);
  CHECK(a.substr(a.size() - 4) == std::string("\x7f\x64\x00\x01", 4));
  std::string r = dns_answer_empty(*q, 5);
  CHECK((static_cast<unsigned char>(r[3]) & 0xf) == 5);
  CHECK(r[7] == 0);
}

TEST_CASE("dns: the pool gives each name one address, and knows the name again") {
  AddressPool pool;
  auto a = pool.address_for("a.test");
  auto b = pool.address_for("b.test");
  REQUIRE(a);
  REQUIRE(b);
  CHECK(*a != *b);
  CHECK(*pool.address_for("a.test") == *a);
  CHECK(AddressPool::in_pool(*a));
  CHECK(*pool.name_at(*b) == "b.test");
  CHECK_FALSE(pool.name_at(0x7f000001));
  CHECK_FALSE(AddressPool::in_pool(0x7f000001));
}

TEST_CASE("dns: a name is answered when some port of it could be allowed") {
  NetworkSettings s;
  s.allowed_domains = {"a.test", "*.b.test", "c.test:8080"};
  s.denied_domains = {"x.b.test"};
  auto p = make_net_policy(s);
  REQUIRE(p.ok());
  CHECK(decide_name(*p, "a.test").allow);
  CHECK(decide_name(*p, "y.b.test").allow);
  CHECK(decide_name(*p, "c.test").allow);  // on its own port
  CHECK_FALSE(decide_name(*p, "x.b.test").allow);
  CHECK(decide_name(*p, "x.b.test").rule == "x.b.test");
  CHECK_FALSE(decide_name(*p, "other.test").allow);
  CHECK(decide_name(*p, "other.test").rule.empty());
}
