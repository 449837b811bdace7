// docs/outcome.schema.json and core/outcome.cpp declare the same form: every key the code writes
// is in the schema and required there, and the refusal codes are the same set.
#include "core/outcome.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/support/files.hpp"

using wb::testing::slurp;

namespace {
std::set<std::string> keys(const nlohmann::json& j) {
  std::set<std::string> out;
  for (const auto& [k, v] : j.items()) out.insert(k);
  return out;
}
std::set<std::string> strings(const nlohmann::json& j) {
  std::set<std::string> out;
  for (const auto& e : j) {
    if (e.is_string()) out.insert(e.get<std::string>());
  }
  return out;
}
}  // namespace

TEST_CASE("outcome schema: the keys written are the keys declared, all required") {
  auto schema = nlohmann::json::parse(slurp(std::string(WAVEBOX_SOURCE_DIR) + "/docs/outcome.schema.json"));
  wb::OutcomeRecord r;
  r.exit_code = 3;
  r.violations.push_back({wb::Refused::kDns, "a.test", "not on the allow list", wb::RefusalCode::kNotAllowed});
  const auto j = wb::outcome_json(r);
  CHECK(keys(j) == keys(schema["properties"]));
  CHECK(keys(j) == strings(schema["required"]));
  const auto& refusal = schema["$defs"]["refusal"];
  CHECK(keys(j["violations"][0]) == keys(refusal["properties"]));
  CHECK(keys(j["violations"][0]) == strings(refusal["required"]));
  const auto codes = wb::refusal_code_names();
  CHECK(std::set<std::string>(codes.begin(), codes.end()) == strings(refusal["properties"]["code"]["enum"]));
  CHECK(j["violations"][0]["operation"] == "dns");
  CHECK(j["violations"][0]["code"] == "not-allowed");
  CHECK(j["violations"][0]["line"] == "deny dns a.test (not on the allow list)");
  CHECK(wb::outcome_json({})["exitCode"].is_null());
}
