// The sandbox's own network side: the resolver its namespace has on port 53 (UDP and
// TCP), answering from the policy with the run's pool addresses, and the transparent listeners
// that take connections to those addresses (and to the allowlist's literals) to the proxy's
// decision. Connections, requests and relaying stay in proxy.cpp.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

#include "core/domain.hpp"
#include "netproxy/proxy_impl.hpp"

namespace wb::netproxy {

// The sandbox's resolver: a name the policy allows gets the run's pool address for it (a
// connection there comes back through the transparent listeners, which know the name again);
// every other name is refused and reported. Nothing is forwarded to a real resolver.
void Proxy::Impl::on_dns(Tenant& t) {
  for (int i = 0; i < 64; ++i) {
    char buf[4096];
    sockaddr_storage from{};
    socklen_t flen = sizeof from;
    ssize_t n = ::recvfrom(t.dns.get(), buf, sizeof buf, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &flen);
    if (n < 0) return;
    auto q = parse_dns_query(std::string_view(buf, static_cast<size_t>(n)));
    if (!q) continue;
    std::string answer = dns_answer(t, *q);
    (void)::sendto(t.dns.get(), answer.data(), answer.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), flen);
  }
}

// The answer to one query, from the run's policy and pool.
std::string Proxy::Impl::dns_answer(Tenant& t, const DnsQuery& query) {
  const DnsQuery* q = &query;
  auto host = canonical_host(q->name);
  const auto ends = [&](const char* suffix) {
    std::string s = suffix;
    return q->name.size() >= s.size() && q->name.compare(q->name.size() - s.size(), s.size(), s) == 0;
  };
  if (q->name == "localhost" || ends(".localhost")) {
    // What /etc/hosts says (the sandbox's own loopback), for a client that did not read it.
    return q->qtype == kDnsA ? dns_answer_a(*q, 0x7f000001, 60) : dns_answer_empty(*q, 0);
  }
  if (!host || is_ip_literal(*host) || q->qclass != kDnsIn || ends(".in-addr.arpa") || ends(".ip6.arpa")) {
    // Reverse lookups (of the pool's addresses too): no such name, said quietly.
    return dns_answer_empty(*q, 3);
  }
  NetDecision d = decide_name(t.cfg.policy, *host);
  // On neither list, with a client to ask: answered, and the connection asks.
  if (d.allow || (d.rule.empty() && t.cfg.ask)) {
    if (q->qtype != kDnsA) return dns_answer_empty(*q, 0);
    if (auto addr = t.pool.address_for(*host)) return dns_answer_a(*q, *addr, 60);
    if (t.cfg.on_refusal)
      t.cfg.on_refusal({Refused::kDns, *host, "the run's names are used up (4096)", RefusalCode::kLimit});
    return dns_answer_empty(*q, 5);
  }
  if (t.cfg.on_refusal) {
    t.cfg.on_refusal(
        {Refused::kDns, *host, d.rule.empty() ? "not on the allow list" : d.reason + ": " + d.rule, d.code, d.rule});
  }
  return dns_answer_empty(*q, 5);
}

// DNS over TCP (RFC 7766: what a client falls back to, or uses by choice): one query, its
// two-byte length first; the answer the same way, then the connection is closed.
void Proxy::Impl::on_dns_tcp(Conn& c) {
  if (c.in.size() < 2) return;
  size_t len = (static_cast<unsigned char>(c.in[0]) << 8) | static_cast<unsigned char>(c.in[1]);
  if (c.in.size() < 2 + len) return;
  auto q = parse_dns_query(std::string_view(c.in).substr(2, len));
  c.in.clear();
  std::string reply;
  if (q) {
    std::string answer = dns_answer(*c.t, *q);
    reply += static_cast<char>(answer.size() >> 8);
    reply += static_cast<char>(answer.size() & 0xff);
    reply += answer;
  }
  c.reply = reply;
  c.st = St::kClosing;
  c.deadline = now_s() + 5;
  update(c);
}

// A connection to an address of the pool: the name is the one the resolver gave it, the port
// the listener's. Any other address (127.0.0.1:443, a nameserver's) is a direct connection,
// refused as one.
void Proxy::Impl::accept_transparent(Tenant& t, int lfd) {
  for (bool more = true; more;) {
    Conn* got = accept_one(t, lfd, Proto::kTransparent, &more);
    if (!got) continue;
    Conn& ref = *got;
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    ::getsockname(ref.client.get(), reinterpret_cast<sockaddr*>(&local), &len);
    std::uint32_t addr = 0;
    int port = 0;
    if (local.ss_family == AF_INET) {
      auto* in = reinterpret_cast<sockaddr_in*>(&local);
      addr = ntohl(in->sin_addr.s_addr);
      port = ntohs(in->sin_port);
    } else if (local.ss_family == AF_INET6) {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(&local);
      port = ntohs(in6->sin6_port);
      if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
        std::memcpy(&addr, in6->sin6_addr.s6_addr + 12, 4);
        addr = ntohl(addr);
      }
    }
    ref.port = port;
    auto name = t.pool.name_at(addr);
    if (!name) {
      char text[INET6_ADDRSTRLEN] = "?";
      if (local.ss_family == AF_INET6 && addr == 0) {
        ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr, text, sizeof text);
      } else {
        std::uint32_t be = htonl(addr);
        ::inet_ntop(AF_INET, &be, text, sizeof text);
      }
      ref.host = text;
      // An address the allowlist names as a literal: decided as the proxy decides it.
      if (addr != 0 && decide_host(t.cfg.policy, ref.host, port).allow && (addr >> 24) != 127) {
        http_or_decide(ref);
        continue;
      }
      refuse(ref, RefusalCode::kDirect, "a direct connection to an address; connect to a name on the allow list", "");
      continue;
    }
    ref.host = *name;
    http_or_decide(ref);
  }
}

// Port 80 carries HTTP: its request head is read first and checked as the proxy checks one
// (framing, a Host that is the decided name), so one allowed connection cannot carry a request
// for another host. Every other port is relayed as bytes, decided by the name alone.
void Proxy::Impl::http_or_decide(Conn& c) {
  if (c.port != 80) {
    decide_then_resolve(c);
    return;
  }
  c.st = St::kHead;
  update(c);
}

}  // namespace wb::netproxy
