#pragma once
// Refused operations: collected during a run (deduplicated, in order, capped), filtered by
// sandbox.ignoreViolations, printed after the command as the <sandbox_violations> block. Pure.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace wb {

// A target or reason as the block shows it: nothing in it can end a line, forge or close the
// block, or restyle the text (escaped, see violations.cpp).
std::string block_quote(std::string_view s);

struct Violation {
  std::string operation;     // "file-write", "file-read", "network-outbound"
  std::string target;        // a path, or HOST:PORT
  std::string reason;        // optional, shown in parentheses
  std::string line() const;  // "deny file-write /tmp/x" or "deny network-outbound h:443 (why)"
};

class ViolationLog {
 public:
  explicit ViolationLog(size_t cap = 50) : cap_(cap) {}
  void add(Violation v);
  const std::vector<Violation>& items() const { return items_; }
  size_t dropped() const { return dropped_; }  // beyond the cap
  bool empty() const { return items_.empty(); }

 private:
  size_t cap_;
  std::vector<Violation> items_;
  static constexpr size_t kSeenMax = 100000;
  std::unordered_set<std::uint64_t> seen_;
  size_t dropped_ = 0;
};

// Drops the lines that ignoreViolations covers for this command: each key is "*" or a substring
// of the command line; its values are substrings of violation lines.
std::vector<Violation> filter_ignored(const std::vector<Violation>& v,
                                      const std::map<std::string, std::vector<std::string>>& ignore,
                                      const std::string& command_line);

// The block, or "" when nothing was refused.
std::string render_block(const std::vector<Violation>& v, size_t more);

// A URL or request target as it may appear in a report: host and path, never the query string
// or fragment (they often carry credentials).
std::string strip_query(const std::string& target);

}  // namespace wb
