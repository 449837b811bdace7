// pure
#include "core/domain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <vector>

namespace wb {
namespace {

std::optional<std::uint64_t> parse_number(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  if (s.empty()) return base == 16 ? std::nullopt : std::optional<std::uint64_t>(0);
  std::uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return std::nullopt;
    if (d >= base) return std::nullopt;
    v = v * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
    if (v > 0xffffffffULL) return std::nullopt;
  }
  return v;
}

std::string ipv6_text(const std::string& b) {
  // RFC 5952: lower case, longest run of zero groups compressed.
  int best = -1, best_len = 0;
  for (int i = 0; i < 8;) {
    if (b[2 * i] == 0 && b[2 * i + 1] == 0) {
      int j = i;
      while (j < 8 && b[2 * j] == 0 && b[2 * j + 1] == 0) ++j;
      if (j - i > best_len && j - i > 1) {
        best = i;
        best_len = j - i;
      }
      i = j;
    } else {
      ++i;
    }
  }
  std::string out;
  for (int i = 0; i < 8; ++i) {
    if (i == best) {
      out += "::";
      i += best_len - 1;
      continue;
    }
    if (!out.empty() && out.back() != ':') out += ':';
    unsigned v = (static_cast<unsigned char>(b[2 * i]) << 8) | static_cast<unsigned char>(b[2 * i + 1]);
    out += fmt::format("{:x}", v);
  }
  return out;
}

}  // namespace

std::optional<std::uint32_t> parse_ipv4(std::string_view s) {
  std::vector<std::uint64_t> parts;
  size_t i = 0;
  while (true) {
    size_t dot = s.find('.', i);
    auto n = parse_number(s.substr(i, dot == std::string_view::npos ? std::string_view::npos : dot - i));
    if (!n) return std::nullopt;
    parts.push_back(*n);
    if (dot == std::string_view::npos) break;
    i = dot + 1;
    if (parts.size() > 3) return std::nullopt;
  }
  std::uint64_t v = 0;
  switch (parts.size()) {
    case 1:
      v = parts[0];
      break;
    case 2:
      if (parts[0] > 255 || parts[1] > 0xffffff) return std::nullopt;
      v = parts[0] << 24 | parts[1];
      break;
    case 3:
      if (parts[0] > 255 || parts[1] > 255 || parts[2] > 0xffff) return std::nullopt;
      v = parts[0] << 24 | parts[1] << 16 | parts[2];
      break;
    case 4:
      for (auto p : parts)
        if (p > 255) return std::nullopt;
      v = parts[0] << 24 | parts[1] << 16 | parts[2] << 8 | parts[3];
      break;
    default:
      return std::nullopt;
  }
  return static_cast<std::uint32_t>(v);
}

std::optional<std::string> parse_ipv6(std::string_view s) {
  if (s.empty() || s.size() > 45) return std::nullopt;
  std::vector<std::uint16_t> head, tail;
  bool dbl = false;
  std::string str(s);
  // An embedded IPv4 tail ("::ffff:1.2.3.4").
  std::optional<std::uint32_t> v4;
  auto last_colon = str.rfind(':');
  if (last_colon != std::string::npos && str.find('.', last_colon) != std::string::npos) {
    std::string tail4 = str.substr(last_colon + 1);
    // Only the strict dotted-quad form is valid inside IPv6.
    if (std::count(tail4.begin(), tail4.end(), '.') != 3) return std::nullopt;
    v4 = parse_ipv4(tail4);
    if (!v4) return std::nullopt;
    str = str.substr(0, last_colon + 1) + "0:0";
  }
  size_t i = 0;
  if (str.rfind("::", 0) == 0) {
    dbl = true;
    i = 2;
  }
  auto* cur = dbl ? &tail : &head;
  while (i < str.size()) {
    size_t c = str.find(':', i);
    std::string grp = str.substr(i, c == std::string::npos ? std::string::npos : c - i);
    if (grp.empty() || grp.size() > 4) return std::nullopt;
    unsigned v = 0;
    for (char ch : grp) {
      if (!std::isxdigit(static_cast<unsigned char>(ch))) return std::nullopt;
      v = v * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(ch)) ? ch - '0'
                                                                                      : (std::tolower(ch) - 'a' + 10));
    }
    cur->push_back(static_cast<std::uint16_t>(v));
    if (c == std::string::npos) break;
    if (c + 1 < str.size() && str[c + 1] == ':') {
      if (dbl) return std::nullopt;
      dbl = true;
      cur = &tail;
      i = c + 2;
      if (i == str.size()) break;
    } else {
      i = c + 1;
      if (i == str.size()) return std::nullopt;
    }
  }
  size_t total = head.size() + tail.size();
  if ((!dbl && total != 8) || (dbl && total > 7)) return std::nullopt;
  std::vector<std::uint16_t> g = head;
  g.resize(8 - tail.size(), 0);
  g.insert(g.end(), tail.begin(), tail.end());
  std::string out(16, '\0');
  for (int k = 0; k < 8; ++k) {
    out[2 * k] = static_cast<char>(g[k] >> 8);
    out[2 * k + 1] = static_cast<char>(g[k] & 0xff);
  }
  if (v4) {
    for (int k = 0; k < 4; ++k) out[12 + k] = static_cast<char>((*v4 >> (24 - 8 * k)) & 0xff);
  }
  return out;
}

std::optional<std::string> canonical_host(std::string_view host) {
  if (host.empty() || host.size() > 255) return std::nullopt;
  for (unsigned char c : host) {
    if (c <= 0x20 || c == 0x7f) return std::nullopt;
  }
  if (host.front() == '[') {
    if (host.back() != ']') return std::nullopt;
    auto b = parse_ipv6(host.substr(1, host.size() - 2));
    if (!b) return std::nullopt;
    return ipv6_text(*b);
  }
  if (host.find(':') != std::string_view::npos) {
    auto b = parse_ipv6(host);
    if (!b) return std::nullopt;
    return ipv6_text(*b);
  }
  std::string out;
  for (unsigned char c : host) out += static_cast<char>(std::tolower(c));
  while (!out.empty() && out.back() == '.') out.pop_back();
  if (out.empty() || out.front() == '.' || out.find("..") != std::string::npos) return std::nullopt;
  // Anything that inet_aton would take as an address is one ("127.1", "2130706433").
  bool numeric = std::all_of(out.begin(), out.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'x';
  });
  if (numeric) {
    if (auto v = parse_ipv4(out)) {
      return fmt::format("{}.{}.{}.{}", *v >> 24, (*v >> 16) & 255, (*v >> 8) & 255, *v & 255);
    }
  }
  for (char c : out) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) return std::nullopt;
  }
  return out;
}

bool is_ip_literal(std::string_view canonical) {
  return parse_ipv6(canonical).has_value() ||
         (std::count(canonical.begin(), canonical.end(), '.') == 3 && parse_ipv4(canonical).has_value() &&
          std::all_of(canonical.begin(), canonical.end(),
                      [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; }));
}

std::optional<DomainPattern> parse_pattern(std::string_view text) {
  DomainPattern p;
  std::string_view host = text;
  // A port: "host:443" or "[v6]:443"; a bare IPv6 literal has several colons and no port.
  auto colon = text.rfind(':');
  bool bracketed = !text.empty() && text.front() == '[';
  if (colon != std::string_view::npos && (bracketed ? text[colon - 1] == ']' : text.find(':') == colon)) {
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
  if (p.wildcard && (canon->find('.') == std::string::npos || is_ip_literal(*canon))) return std::nullopt;
  p.host = *canon;
  return p;
}

bool matches(const DomainPattern& p, std::string_view host, int port) {
  if (p.port && *p.port != port) return false;
  if (!p.wildcard) return host == p.host;
  return host.size() > p.host.size() + 1 && host.substr(host.size() - p.host.size()) == p.host &&
         host[host.size() - p.host.size() - 1] == '.';
}

bool is_local_or_special(const std::string& b) {
  if (b.size() == 4) {
    auto o = [&](int i) { return static_cast<unsigned char>(b[i]); };
    if (o(0) == 127 || o(0) == 0) return true;                                  // loopback, "this network"
    if (o(0) == 169 && o(1) == 254) return true;                                // link-local, cloud metadata
    if (o(0) >= 224) return true;                                               // multicast, reserved, broadcast
    if (o(0) == 100 && o(1) == 100 && o(2) == 100 && o(3) == 200) return true;  // Alibaba metadata
    return false;
  }
  if (b.size() != 16) return true;
  auto o = [&](int i) { return static_cast<unsigned char>(b[i]); };
  bool zero10 = true;
  for (int i = 0; i < 10; ++i) zero10 = zero10 && o(i) == 0;
  if (zero10 && o(10) == 0xff && o(11) == 0xff) return is_local_or_special(b.substr(12));  // v4-mapped
  bool all_zero_but_last = zero10 && o(10) == 0 && o(11) == 0 && o(12) == 0 && o(13) == 0 && o(14) == 0;
  if (all_zero_but_last && (o(15) == 0 || o(15) == 1)) return true;  // :: and ::1
  if (o(0) == 0xfe && (o(1) & 0xc0) == 0x80) return true;            // fe80::/10 link-local
  if (o(0) == 0xff) return true;                                     // multicast
  // fd00:ec2::254, the AWS metadata service over IPv6.
  static const unsigned char aws[16] = {0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54};
  if (std::equal(b.begin(), b.end(), reinterpret_cast<const char*>(aws))) return true;
  return false;
}

std::vector<int> allowlist_ports(const std::vector<std::string>& patterns) {
  std::vector<int> out;
  for (const auto& e : patterns) {
    auto pat = parse_pattern(e);
    if (!pat || !pat->port || *pat->port == 80 || *pat->port == 443) continue;
    if (std::find(out.begin(), out.end(), *pat->port) == out.end()) out.push_back(*pat->port);
  }
  return out;
}

}  // namespace wb
