#pragma once
// A reader, checker and evaluator for the subset of Seatbelt's profile language (SBPL) that
// wavebox writes, so its macOS profiles are checked on any machine. Not Apple's implementation:
// an independent model of it, written from the public profiles (Apple's own, the peers'), that
// answers "allowed or refused" for one request under each plausible rule-precedence model.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace wb::sbpl {

struct Node {
  enum Kind { kList, kSymbol, kString, kRegex, kNumber } kind = kList;
  std::string text;  // symbol, string contents, regex source, number
  std::vector<Node> items;
  bool is_list() const { return kind == kList; }
  std::string head() const { return items.empty() || items[0].kind != kSymbol ? "" : items[0].text; }
};

// Parses the whole profile: its top-level forms. Throws std::runtime_error with the offset.
std::vector<Node> parse(const std::string& text);

// What the checker finds wrong (empty: nothing).
struct CheckInput {
  std::string text;
  std::map<std::string, std::string> params;  // -D KEY=VALUE
  std::vector<std::string> paths;             // the policy's paths: none may appear in the text
};
std::vector<std::string> check(const CheckInput& in);

// The operation and filter names known from public profiles (tests/sbpl/names.cpp says where).
bool known_operation(const std::string& name);
bool known_filter(const std::string& name);

struct Request {
  std::string op;      // "file-read-data", "file-write-create", "network-outbound", ...
  std::string path;    // file operations, unix sockets
  std::string remote;  // network: "localhost:8080", "93.184.216.34:443"
  std::string local;   // network-bind / -inbound: "*:8080"
  bool unix_socket = false;
  std::string name;                     // mach-lookup global name, sysctl name, iokit class, ipc name
  std::string target;                   // signal / process-info: "same-sandbox" or "other"
  std::vector<std::string> extensions;  // sandbox extensions the process holds
};

enum class Model {
  kLastMatch,   // the last rule that matches decides (how Apple's own profiles are written)
  kFirstMatch,  // the first rule that matches decides
  kDenyWins,    // any matching deny refuses; else any matching allow allows
};

struct Verdict {
  bool allow = false;
  std::string message;  // a deny's (with message ...), when it has one
};

class Profile {
 public:
  Profile(const std::string& text, std::map<std::string, std::string> params);
  Verdict evaluate(const Request& r, Model m) const;

 private:
  struct Rule {
    bool allow;
    std::vector<std::string> ops;
    std::vector<const Node*> filters;  // any of them; none: every request
    std::string message;
  };
  std::vector<Node> forms_;
  std::map<std::string, std::string> params_;
  std::vector<Rule> rules_;
  std::optional<Rule> default_;
  bool matches(const Node& f, const Request& r) const;
  std::string value(const Node& n) const;
};

}  // namespace wb::sbpl
