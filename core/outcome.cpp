// pure
#include "core/outcome.hpp"

namespace wb {
namespace {

nlohmann::json or_null(const std::string& s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

}  // namespace

nlohmann::json refusal_json(const Violation& v) {
  return {{"operation", v.operation()}, {"target", v.target},      {"reason", v.reason},
          {"code", code_name(v.code)},  {"rule", or_null(v.rule)}, {"line", v.line()}};
}

nlohmann::json outcome_json(const OutcomeRecord& r) {
  nlohmann::json j;
  j["exitCode"] = r.exit_code ? nlohmann::json(*r.exit_code) : nlohmann::json(nullptr);
  j["sandboxed"] = r.sandboxed;
  j["decision"] = or_null(r.decision);
  j["rule"] = or_null(r.rule);
  j["reason"] = r.reason;
  j["error"] = or_null(r.error);
  j["violations"] = nlohmann::json::array();
  for (const auto& v : r.violations) j["violations"].push_back(refusal_json(v));
  j["violationsNotListed"] = r.more;
  j["elapsedMs"] = r.elapsed_ms;
  return j;
}

std::vector<std::string> refusal_code_names() {
  std::vector<std::string> out;
  for (auto c : {RefusalCode::kPolicy, RefusalCode::kProtected, RefusalCode::kNotAllowed, RefusalCode::kDeniedHost,
                 RefusalCode::kLocalAddress, RefusalCode::kDirect, RefusalCode::kHostSocket, RefusalCode::kDeclined,
                 RefusalCode::kLimit, RefusalCode::kRequest}) {
    out.push_back(code_name(c));
  }
  return out;
}

}  // namespace wb
