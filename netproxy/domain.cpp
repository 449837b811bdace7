// pure
#include "netproxy/domain.hpp"

#include <algorithm>
#include <cctype>

namespace wb::netproxy {

std::optional<std::string> canonical_host(std::string_view host) {
  std::string out;
  for (unsigned char c : host) {
    if (c <= 0x20 || c == 0x7f) return std::nullopt;
    out += static_cast<char>(std::tolower(c));
  }
  while (!out.empty() && out.back() == '.') out.pop_back();
  if (out.empty()) return std::nullopt;
  return out;
}

std::optional<DomainPattern> parse_pattern(std::string_view text) {
  DomainPattern p;
  std::string_view host = text;
  auto colon = text.rfind(':');
  if (colon != std::string_view::npos && text.find(':') == colon) {
    std::string_view port = text.substr(colon + 1);
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit)) return std::nullopt;
    int v = std::stoi(std::string(port));
    if (v < 1 || v > 65535) return std::nullopt;
    p.port = v;
    host = text.substr(0, colon);
  }
  if (host.substr(0, 2) == "*.") {
    p.wildcard = true;
    host = host.substr(2);
  }
  auto canon = canonical_host(host);
  if (!canon || canon->find('*') != std::string::npos) return std::nullopt;
  // "*.com" would allow a whole top-level domain: refused.
  if (p.wildcard && canon->find('.') == std::string::npos) return std::nullopt;
  if (canon->find("..") != std::string::npos || canon->front() == '.') return std::nullopt;
  p.host = *canon;
  return p;
}

bool matches(const DomainPattern& p, std::string_view host, int port) {
  if (p.port && *p.port != port) return false;
  if (!p.wildcard) return host == p.host;
  return host.size() > p.host.size() + 1 && host.substr(host.size() - p.host.size()) == p.host &&
         host[host.size() - p.host.size() - 1] == '.';
}

}  // namespace wb::netproxy
