// pure
#include "core/violations.hpp"

#include <fmt/format.h>

#include "core/hash.hpp"
#include "core/log.hpp"

namespace wb {

std::string Violation::line() const {
  std::string out = fmt::format("deny {} {}", operation, log::quote(target));
  if (!reason.empty()) out += fmt::format(" ({})", reason);
  return out;
}

void ViolationLog::add(Violation v) {
  // Distinct lines are remembered by a 64-bit hash, and at most kSeenMax of them: a command
  // refused millions of distinct paths must not grow wavebox by their size. Past that, lines
  // beyond the cap are counted without deduplication (the "more" count is then a bound).
  const std::uint64_t key = fnv1a(v.line());
  if (seen_.count(key)) return;
  if (seen_.size() < kSeenMax) seen_.insert(key);
  if (items_.size() >= cap_) {
    ++dropped_;
    return;
  }
  items_.push_back(std::move(v));
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
