// pure
#include "core/violations.hpp"

#include <fmt/format.h>

#include "core/hash.hpp"
#include "core/log.hpp"

namespace wb {

namespace {

// A code point that can restyle or reorder what a reader (a terminal, a model) sees: C1
// controls, bidirectional overrides, embeddings, isolates and marks.
bool invisible_control(unsigned cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

// Safe to show inside the block: no byte of a path can end a line, close or forge the block's
// tags, or restyle the text (ASCII controls and backslash as log::quote does, '<' and '>', C1
// controls and bidi controls as \u{...}, bytes that are not UTF-8 as \xNN).
std::string block_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '<' || c == '>' || c < 0x20 || c == 0x7f || c == '\\') {
        out += c == '\\' ? std::string("\\\\") : fmt::format("\\x{:02x}", c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    const size_t len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    unsigned cp = len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
    bool ok = len != 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      ok = (d & 0xc0) == 0x80;
      cp = cp << 6 | (d & 0x3f);
    }
    ok = ok && !(len == 3 && cp < 0x800) && !(len == 4 && (cp < 0x10000 || cp > 0x10ffff)) &&
         !(cp >= 0xd800 && cp <= 0xdfff);
    if (!ok) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    } else if (invisible_control(cp)) {
      out += fmt::format("\\u{{{:04x}}}", cp);
      i += len;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

const char* operation_name(Refused r) {
  switch (r) {
    case Refused::kFileRead:
      return "file-read";
    case Refused::kFileWrite:
      return "file-write";
    case Refused::kConnect:
      return "network-outbound";
    case Refused::kDns:
      return "dns";
    case Refused::kMemory:
      return "memory";
    case Refused::kProcesses:
      return "processes";
    case Refused::kCpu:
      return "cpu";
    case Refused::kOther:
      return "other";
  }
  return "?";
}

const char* code_name(RefusalCode c) {
  switch (c) {
    case RefusalCode::kPolicy:
      return "policy";
    case RefusalCode::kProtected:
      return "protected";
    case RefusalCode::kNotAllowed:
      return "not-allowed";
    case RefusalCode::kDeniedHost:
      return "denied-host";
    case RefusalCode::kLocalAddress:
      return "local-address";
    case RefusalCode::kDirect:
      return "direct";
    case RefusalCode::kHostSocket:
      return "host-socket";
    case RefusalCode::kDeclined:
      return "declined";
    case RefusalCode::kLimit:
      return "limit";
    case RefusalCode::kRequest:
      return "request";
  }
  return "?";
}

std::string Violation::operation() const {
  return kind == Refused::kOther ? other : operation_name(kind);
}

std::string Violation::line() const {
  // The target's "(" as \x28 too: the only parenthesis in a line opens wavebox's own reason, so
  // a file named "x (protected: ...; change it outside the sandbox: ...)" cannot forge one.
  std::string t;
  for (char c : block_quote(target)) t += c == '(' ? std::string("\\x28") : std::string(1, c);
  std::string out = fmt::format("deny {} {}", operation(), t);
  if (!reason.empty()) out += fmt::format(" ({})", block_quote(reason));
  return out;
}

bool ViolationLog::add(Violation v) {
  // Distinct lines are remembered by a 64-bit hash, and at most kSeenMax of them: a command
  // refused millions of distinct paths must not grow wavebox by their size. Past that, lines
  // beyond the cap are counted without deduplication (the "more" count is then a bound).
  const std::uint64_t key = fnv1a(v.line());
  if (seen_.count(key)) return false;
  if (seen_.size() < kSeenMax) seen_.insert(key);
  if (items_.size() >= cap_) {
    ++dropped_;
    return true;
  }
  items_.push_back(std::move(v));
  return true;
}

std::vector<Violation> filter_ignored(const std::vector<Violation>& v,
                                      const std::map<std::string, std::vector<std::string>>& ignore,
                                      const std::string& command_line) {
  std::vector<std::string> patterns;
  for (const auto& [cmd, subs] : ignore) {
    if (cmd == "*" || command_line.find(cmd) != std::string::npos) {
      patterns.insert(patterns.end(), subs.begin(), subs.end());
    }
  }
  std::vector<Violation> out;
  for (const auto& x : v) {
    std::string line = x.line();
    bool ignored = false;
    for (const auto& p : patterns) {
      if (!p.empty() && line.find(p) != std::string::npos) ignored = true;
    }
    if (!ignored) out.push_back(x);
  }
  return out;
}

std::string render_block(const std::vector<Violation>& v, size_t more) {
  if (v.empty() && more == 0) return {};
  std::string out = "<sandbox_violations>\n";
  for (const auto& x : v) out += x.line() + "\n";
  if (more > 0) out += fmt::format("... {} more\n", more);
  out += "</sandbox_violations>\n";
  return out;
}

std::string strip_query(const std::string& target) {
  auto pos = target.find_first_of("?#");
  return pos == std::string::npos ? target : target.substr(0, pos);
}

}  // namespace wb
