// pure
#include "seatbelt/denials.hpp"

#include <nlohmann/json.hpp>

namespace wb::seatbelt {

std::string violation_operation(std::string_view op) {
  if (op.rfind("file-read", 0) == 0) return "file-read";
  if (op.rfind("file-write", 0) == 0) return "file-write";
  return std::string(op);
}

std::optional<Violation> parse_denial(std::string_view line, const std::string& tag) {
  if (tag.empty()) return std::nullopt;
  auto j = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto it = j.find("eventMessage");
  if (it == j.end() || !it->is_string()) return std::nullopt;
  const std::string msg = it->get<std::string>();
  if (msg.find(tag) == std::string::npos) return std::nullopt;
  size_t s = msg.find("Sandbox: ");
  if (s == std::string::npos) return std::nullopt;
  std::string rest = msg.substr(s + 9);
  if (size_t nl = rest.find('\n'); nl != std::string::npos) rest.resize(nl);
  // The tag may follow on the same line.
  if (size_t t = rest.find(tag); t != std::string::npos) rest.resize(t);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t' || rest.back() == '\r')) rest.pop_back();
  // "NAME(PID) deny(N) OP TARGET": the name is the command's choice (at most 32 bytes: p_name),
  // and so is the target. The real "(PID) deny(" is the last one that starts within the name's
  // reach; one inside the name comes before it, one inside the target after it.
  size_t d = std::string::npos;
  for (size_t at = rest.find('('); at != std::string::npos && at <= 32; at = rest.find('(', at + 1)) {
    size_t digits = at + 1;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
    if (digits > at + 1 && rest.compare(digits, 7, ") deny(") == 0) d = digits;
  }
  if (d == std::string::npos) return std::nullopt;
  size_t close = rest.find(')', d + 7);
  if (close == std::string::npos || close + 1 >= rest.size() || rest[close + 1] != ' ') return std::nullopt;
  std::string tail = rest.substr(close + 2);
  size_t sp = tail.find(' ');
  std::string op = tail.substr(0, sp);
  std::string target = sp == std::string::npos ? "" : tail.substr(sp + 1);
  if (op.empty()) return std::nullopt;
  return Violation{violation_operation(op), target, ""};
}

}  // namespace wb::seatbelt
