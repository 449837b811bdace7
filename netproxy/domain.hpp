#pragma once
// Domain allowlist patterns: "example.com" exact, "*.example.com" subdomains only, optional
// ":port". Pure.
#include <optional>
#include <string>
#include <string_view>

namespace wb::netproxy {

struct DomainPattern {
  std::string host;  // lower case, no trailing dot; for a wildcard, the suffix without "*."
  bool wildcard = false;
  std::optional<int> port;
};

// Parses a settings entry; nullopt for an invalid pattern ("*", "*.com", empty labels, ...).
std::optional<DomainPattern> parse_pattern(std::string_view text);
// Canonical host: lower case, trailing dot removed; nullopt when it holds control bytes.
std::optional<std::string> canonical_host(std::string_view host);
bool matches(const DomainPattern& p, std::string_view canonical, int port);

}  // namespace wb::netproxy
