#pragma once
// Hosts and domain patterns for the network allowlist. Pure.
//  - canonical_host: lower case, trailing dot removed, IPv4 in any inet_aton form ("127.1",
//    "2130706433", "0x7f.0.0.1", "0177.0.0.1") rewritten dotted-quad, IPv6 brackets removed and
//    the address compressed; NUL, control bytes, spaces and empty labels rejected.
//  - patterns: "example.com" exact, "*.example.com" subdomains only (not the apex), optional
//    ":port"; "*", "*.com" and malformed entries are invalid.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wb {

struct DomainPattern {
  std::string host;  // canonical; for a wildcard, the suffix without "*."
  bool wildcard = false;
  std::optional<int> port;
};

std::optional<DomainPattern> parse_pattern(std::string_view text);
std::optional<std::string> canonical_host(std::string_view host);
bool matches(const DomainPattern& p, std::string_view canonical_host, int port);
// The ports allowlist entries name besides 80 and 443 (github.com:22), each once, in order.
std::vector<int> allowlist_ports(const std::vector<std::string>& patterns);

// IPv4 in any form inet_aton accepts, as a host-order number.
std::optional<std::uint32_t> parse_ipv4(std::string_view s);
// IPv6 text (no brackets) to 16 bytes.
std::optional<std::string> parse_ipv6(std::string_view s);
bool is_ip_literal(std::string_view canonical);

// Addresses a name must not resolve to unless the literal is allowed (the local-address check): loopback,
// unspecified, link-local (cloud metadata 169.254.169.254 among them), multicast, broadcast,
// IPv4-mapped forms of those, and fd00:ec2::254 (AWS metadata over IPv6).
bool is_local_or_special(const std::string& address_bytes);  // 4 or 16 bytes

}  // namespace wb
