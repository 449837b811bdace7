#pragma once
// The outcome of one run and its refusals as JSON: one form, declared here and in
// docs/outcome.schema.json, written by every face (--report-json, the audit log, serve's
// command/exec answer), each adding only what is its own. Pure.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/violations.hpp"

namespace wb {

struct OutcomeRecord {
  std::optional<int> exit_code;  // none: the command did not run, or replaced wavebox
  bool sandboxed = false;
  std::string decision;  // allow | ask | deny ("" when none was made)
  std::string rule;      // the permission rule that decided ("" when none)
  std::string reason;
  std::string error;  // why the command did not run ("" when it ran)
  std::vector<Violation> violations;
  size_t more = 0;  // refusals beyond the list
  double elapsed_ms = 0;
};

// {"operation", "target", "reason", "code", "rule", "line"}
nlohmann::json refusal_json(const Violation& v);
// {"exitCode", "sandboxed", "decision", "rule", "reason", "error", "violations",
//  "violationsNotListed", "elapsedMs"}
nlohmann::json outcome_json(const OutcomeRecord& r);
// Every RefusalCode's name, for the schema's check.
std::vector<std::string> refusal_code_names();

}  // namespace wb
