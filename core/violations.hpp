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

// What was refused: the block's operation word (operation_name).
enum class Refused : std::uint8_t {
  kFileRead,   // "file-read"
  kFileWrite,  // "file-write"
  kConnect,    // "network-outbound": a connection, through the proxy or past it
  kDns,        // "dns": a name the sandbox's resolver would not answer
  kMemory,     // "memory": sandbox.resources.memoryMB was reached (the kernel killed)
  kProcesses,  // "processes": sandbox.resources.pids was reached
  kCpu,        // "cpu": sandbox.resources.cpus throttled the command
  kOther,      // another platform's operation, named by Violation::other (Seatbelt's mach-lookup)
};
// Why, as a code a program acts on (--learn, serve's clients, the report); `reason` says it for
// people. Every backend and the proxy set it where they refuse.
enum class RefusalCode : std::uint8_t {
  kPolicy,        // outside the writable set, under denyRead: the settings could allow it
  kProtected,     // a protected file or name, a guard of a repository: no setting allows it
  kNotAllowed,    // a host on neither list
  kDeniedHost,    // a host on the deny list (rule: the entry)
  kLocalAddress,  // an allowed name that resolves to a local or special address
  kDirect,        // a connection past the proxy, to an address
  kHostSocket,    // a Unix socket of the host
  kDeclined,      // the client declined, or did not answer in time (serve's approval)
  kLimit,         // a bound of the run (names used up)
  kRequest,       // an HTTP request naming another host than the decided one (its Host header)
};

struct Violation {
  Refused kind = Refused::kFileWrite;
  std::string target;  // a path, HOST:PORT, a name, unix:PATH
  std::string reason;  // optional, shown in parentheses
  RefusalCode code = RefusalCode::kPolicy;
  std::string rule;   // the settings entry that decided, when one did
  std::string other;  // kOther: the operation's own name
  std::string operation() const;
  std::string line() const;  // "deny file-write /tmp/x" or "deny network-outbound h:443 (why)"
};
const char* operation_name(Refused r);
const char* code_name(RefusalCode c);

class ViolationLog {
 public:
  explicit ViolationLog(size_t cap = 50) : cap_(cap) {}
  // True when the line is new (kept, or counted past the cap); false for a repeat.
  bool add(Violation v);
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
