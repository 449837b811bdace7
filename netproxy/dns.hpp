#pragma once
// DNS inside the sandbox (pure): the resolver the sandbox's network namespace has answers from the
// policy, never from a real resolver. An allowed name gets an address of a per-run pool (loopback
// inside the namespace, where the transparent listeners take the connection and know the name
// again); every other name is refused. Nothing is forwarded, so nothing leaves by DNS.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace wb::netproxy {

struct DnsQuery {
  std::uint16_t id = 0;
  std::uint16_t flags = 0;  // the query's (RD is echoed)
  std::string name;         // as asked, lower case, no trailing dot
  std::uint16_t qtype = 0, qclass = 0;
  std::string question;  // the question section's bytes, echoed in the answer
};

enum : std::uint16_t { kDnsA = 1, kDnsAAAA = 28, kDnsIn = 1 };

// One query (one question, no compression in it); nullopt when it is not one (no answer).
std::optional<DnsQuery> parse_dns_query(std::string_view packet);

// An answer with one A record (addr: host order), TTL seconds.
std::string dns_answer_a(const DnsQuery& q, std::uint32_t addr, std::uint32_t ttl);
// NOERROR with no record (an allowed name asked for AAAA or another type: the client falls back
// to A), or an error code (3 NXDOMAIN, 5 REFUSED, 1 FORMERR).
std::string dns_answer_empty(const DnsQuery& q, int rcode = 0);

// The per-run pool: 127.100.0.1 onwards, one address per name, for the run's life.
class AddressPool {
 public:
  static constexpr std::uint32_t kBase = (127u << 24) | (100u << 16);
  // Names per run: far more than a build resolves; a command that asks for more (to use the
  // host's resolver as a channel, or to grow wavebox) is refused beyond it.
  static constexpr std::uint32_t kSize = 4096;
  // The name's address (host order), a new one the first time; nullopt when the pool is full.
  std::optional<std::uint32_t> address_for(const std::string& name);
  // The name behind an address of the pool, or nullopt.
  std::optional<std::string> name_at(std::uint32_t addr) const;
  static bool in_pool(std::uint32_t addr) { return addr > kBase && addr <= kBase + kSize; }

 private:
  std::map<std::string, std::uint32_t> by_name_;
  std::map<std::uint32_t, std::string> by_addr_;
};

}  // namespace wb::netproxy
