// pure
#include "netproxy/decision.hpp"

#include <fmt/format.h>

namespace wb::netproxy {

Result<NetPolicy> make_net_policy(const NetworkSettings& s) {
  NetPolicy p;
  for (const auto& [list, key, out] : {std::tuple{&s.allowed_domains, "allowedDomains", &p.allowed},
                                       std::tuple{&s.denied_domains, "deniedDomains", &p.denied}}) {
    for (const auto& e : *list) {
      auto pat = parse_pattern(e);
      if (!pat) {
        return make_error(ErrorKind::kSettings,
                          fmt::format("sandbox.network.{}: \"{}\" is not a valid domain pattern", key, e));
      }
      out->emplace_back(*pat, e);
    }
  }
  p.allow_all = s.allow_all_hosts;
  return p;
}

NetDecision decide_host(const NetPolicy& p, const std::string& host, int port) {
  for (const auto& [pat, text] : p.denied) {
    if (matches(pat, host, port)) return {false, "host is on the deny list", text, RefusalCode::kDeniedHost};
  }
  for (const auto& [pat, text] : p.allowed) {
    if (matches(pat, host, port)) return {true, "allowed", text};
  }
  if (p.allow_all) return {true, "allowed (--dangerously-allow-network)", "*"};
  return {false, "host is not on the allow list", ""};
}

NetDecision decide_name(const NetPolicy& p, const std::string& host) {
  std::vector<int> ports = {443, 80};
  for (const auto& [pat, text] : p.allowed) {
    if (pat.port) ports.push_back(*pat.port);
  }
  NetDecision first;
  for (size_t i = 0; i < ports.size(); ++i) {
    NetDecision d = decide_host(p, host, ports[i]);
    if (d.allow) return d;
    if (i == 0) first = d;
  }
  return first;
}

NetDecision check_resolved(const NetPolicy& p, const std::string& host, const std::string& address,
                           const std::string& address_bytes, bool is_own_address, int port, bool literal_approved) {
  if (!is_own_address && !is_local_or_special(address_bytes)) return {true, "allowed", ""};
  if (address == host && literal_approved) return {true, "allowed", "approved"};
  // A local address only where the lists name that very literal: "every host"
  // (--dangerously-allow-network) never covers this machine's or a private network's addresses.
  NetPolicy named = p;
  named.allow_all = false;
  NetDecision literal = decide_host(named, address, port);
  if (literal.allow) return literal;
  return {false, fmt::format("resolves to a local address ({})", address), "", RefusalCode::kLocalAddress};
}

}  // namespace wb::netproxy
