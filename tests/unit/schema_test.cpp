// docs/settings.schema.json, the parser (core/settings.cpp) and man/wavebox-settings.5 name the
// same keys with the same types.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/settings.hpp"
#include "tests/support/files.hpp"

using wb::testing::slurp;
using wb::testing::spit;

namespace {

void schema_keys(const nlohmann::json& node, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (!node.contains("properties")) return;
  for (const auto& [k, v] : node["properties"].items()) {
    out[prefix + k] = v.value("type", "?");
    schema_keys(v, prefix + k + ".", out);
  }
}

}  // namespace

TEST_CASE("settings schema: the same keys and types as the parser, each described") {
  auto schema = nlohmann::json::parse(slurp(std::string(WAVEBOX_SOURCE_DIR) + "/docs/settings.schema.json"));
  std::map<std::string, std::string> in_schema;
  schema_keys(schema, "", in_schema);
  std::map<std::string, std::string> in_parser;
  for (const auto& k : wb::settings_keys()) in_parser[k.path] = k.type;
  for (const auto& [k, t] : in_parser) {
    INFO(k);
    REQUIRE(in_schema.count(k) == 1);
    CHECK(in_schema[k] == t);
  }
  for (const auto& [k, t] : in_schema) {
    if (k == "sandbox" || k == "permissions") continue;
    INFO(k);
    CHECK(in_parser.count(k) == 1);
  }
  std::function<void(const nlohmann::json&)> described = [&](const nlohmann::json& node) {
    if (!node.contains("properties")) return;
    for (const auto& [k, v] : node["properties"].items()) {
      INFO(k);
      CHECK(!v.value("description", "").empty());
      described(v);
    }
  };
  described(schema);
}

TEST_CASE("settings schema: every sandbox key is in the man page") {
  const std::string man = slurp(std::string(WAVEBOX_SOURCE_DIR) + "/man/wavebox-settings.5");
  // ".B a.b, c, d.e \fR(...)": the names before the type; a bare name after a dotted one shares
  // its prefix ("filesystem.allowWrite, denyWrite").
  std::set<std::string> documented;
  std::istringstream in(man);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(".B ", 0) != 0) continue;
    std::string names =
        line.substr(3, line.find("\\f") == std::string::npos ? std::string::npos : line.find("\\f") - 3);
    std::string prefix;
    std::stringstream ss(names);
    std::string item;
    while (std::getline(ss, item, ',')) {
      item.erase(0, item.find_first_not_of(' '));
      item.erase(item.find_last_not_of(' ') + 1);
      if (item.empty()) continue;
      auto dot = item.rfind('.');
      if (dot != std::string::npos) {
        prefix = item.substr(0, dot + 1);
      } else {
        item = prefix + item;
      }
      documented.insert("sandbox." + item);
    }
  }
  for (const auto& k : wb::settings_keys()) {
    if (k.path.rfind("sandbox.", 0) != 0 || k.type == "object") continue;
    INFO(k.path);
    CHECK(documented.count(k.path) == 1);
  }
}
