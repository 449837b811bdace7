// pure
#include "seatbelt/denials.hpp"

#include <nlohmann/json.hpp>

namespace wb::seatbelt {

Violation violation_of(std::string_view op, std::string target) {
  Violation v;
  v.target = std::move(target);
  if (op.rfind("file-read", 0) == 0) {
    v.kind = Refused::kFileRead;
  } else if (op.rfind("file-write", 0) == 0) {
    v.kind = Refused::kFileWrite;
  } else if (op.rfind("network-outbound", 0) == 0) {
    v.kind = Refused::kConnect;
    v.code = RefusalCode::kDirect;
  } else {
    v.kind = Refused::kOther;
    v.other = std::string(op);
  }
  return v;
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
  return violation_of(op, target);
}

}  // namespace wb::seatbelt
