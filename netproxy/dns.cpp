// pure
#include "netproxy/dns.hpp"

namespace wb::netproxy {

namespace {

std::uint16_t u16(std::string_view b, size_t i) {
  return static_cast<std::uint16_t>((static_cast<unsigned char>(b[i]) << 8) | static_cast<unsigned char>(b[i + 1]));
}

void put16(std::string& out, std::uint16_t v) {
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v & 0xff);
}

void put32(std::string& out, std::uint32_t v) {
  put16(out, static_cast<std::uint16_t>(v >> 16));
  put16(out, static_cast<std::uint16_t>(v & 0xffff));
}

std::string header(const DnsQuery& q, int rcode, std::uint16_t answers) {
  std::string out;
  put16(out, q.id);
  // QR=1, opcode 0, AA=1, RD as asked, RA=1.
  std::uint16_t flags = static_cast<std::uint16_t>(0x8000 | 0x0400 | (q.flags & 0x0100) | 0x0080 | (rcode & 0xf));
  put16(out, flags);
  put16(out, 1);
  put16(out, answers);
  put16(out, 0);
  put16(out, 0);
  return out + q.question;
}

}  // namespace

std::optional<DnsQuery> parse_dns_query(std::string_view b) {
  if (b.size() < 12 || b.size() > 4096) return std::nullopt;
  DnsQuery q;
  q.id = u16(b, 0);
  q.flags = u16(b, 2);
  // A query (QR=0), standard opcode, exactly one question.
  if ((q.flags & 0x8000) != 0 || ((q.flags >> 11) & 0xf) != 0) return std::nullopt;
  if (u16(b, 4) != 1) return std::nullopt;
  size_t i = 12;
  std::string name;
  while (true) {
    if (i >= b.size()) return std::nullopt;
    size_t len = static_cast<unsigned char>(b[i]);
    if (len == 0) {
      ++i;
      break;
    }
    if (len > 63 || i + 1 + len > b.size()) return std::nullopt;  // no compression in a question
    if (!name.empty()) name += '.';
    for (size_t k = 0; k < len; ++k) {
      char c = b[i + 1 + k];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      name += c;
    }
    if (name.size() > 253) return std::nullopt;
    i += 1 + len;
  }
  if (i + 4 > b.size()) return std::nullopt;
  q.qtype = u16(b, i);
  q.qclass = u16(b, i + 2);
  q.question = std::string(b.substr(12, i + 4 - 12));
  q.name = name;
  return q;
}

std::string dns_answer_a(const DnsQuery& q, std::uint32_t addr, std::uint32_t ttl) {
  std::string out = header(q, 0, 1);
  put16(out, 0xc00c);  // the name: a pointer to the question's
  put16(out, kDnsA);
  put16(out, kDnsIn);
  put32(out, ttl);
  put16(out, 4);
  put32(out, addr);
  return out;
}

std::string dns_answer_empty(const DnsQuery& q, int rcode) {
  return header(q, rcode, 0);
}

std::optional<std::uint32_t> AddressPool::address_for(const std::string& name) {
  if (auto it = by_name_.find(name); it != by_name_.end()) return it->second;
  if (by_name_.size() >= kSize) return std::nullopt;
  std::uint32_t addr = kBase + 1 + static_cast<std::uint32_t>(by_name_.size());
  by_name_[name] = addr;
  by_addr_[addr] = name;
  return addr;
}

std::optional<std::string> AddressPool::name_at(std::uint32_t addr) const {
  auto it = by_addr_.find(addr);
  if (it == by_addr_.end()) return std::nullopt;
  return it->second;
}

}  // namespace wb::netproxy
