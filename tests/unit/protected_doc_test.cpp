// docs/protected.md and the protected table agree: every documented file is guarded, every
// guarded entry is documented, and every row says where its tool documents it.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/protect.hpp"

namespace {

struct DocRow {
  std::string path, scope, source;
  bool pending;  // in "Not in the table yet": documented, not guarded
  int line;
};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool code = false;  // a '|' inside `...` is text, not a column break
  for (size_t i = 1; i < line.size(); ++i) {
    char c = line[i];
    if (c == '`') code = !code;
    if (c == '|' && !code) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

std::vector<DocRow> read_rows() {
  std::ifstream in(WAVEBOX_SOURCE_DIR "/docs/protected.md");
  REQUIRE(in.good());
  std::vector<DocRow> rows;
  std::string line;
  bool pending = false;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.rfind("## ", 0) == 0) {
      pending = line.find("Not in the table yet") != std::string::npos ||
                line.find("not guarded on purpose") != std::string::npos;
    }
    if (line.rfind("| `", 0) != 0) continue;
    auto c = cells(line);
    INFO("docs/protected.md:" << n << ": " << line);
    REQUIRE(c.size() == 5);  // path | scope | runs or trusts it | when | source
    REQUIRE(c[0].size() > 2);
    rows.push_back({c[0].substr(1, c[0].size() - 2), c[1], c[4], pending, n});
  }
  return rows;
}

using Key = std::pair<std::string, std::string>;  // rel, scope name

std::set<Key> table_keys() {
  std::set<Key> keys;
  for (const auto& e : wb::protected_table()) keys.insert({e.rel, wb::scope_name(e.scope)});
  return keys;
}

}  // namespace

TEST_CASE("every documented protected file is guarded, and only those", "[protected-doc]") {
  const auto table = table_keys();
  std::set<Key> seen;
  for (const auto& r : read_rows()) {
    INFO("docs/protected.md:" << r.line << ": `" << r.path << "` (" << r.scope << ")");
    const bool guarded = table.count({r.path, r.scope}) > 0;
    // A row of "Not in the table yet" moves up once the table has it.
    CHECK(guarded != r.pending);
    if (!r.pending) CHECK(seen.insert({r.path, r.scope}).second);  // one row per entry
  }
  for (const auto& [rel, scope] : table) {
    INFO("protected_table() entry not in docs/protected.md: `" << rel << "` (" << scope << ")");
    CHECK(seen.count({rel, scope}) == 1);
  }
}

TEST_CASE("every row of docs/protected.md cites its source", "[protected-doc]") {
  for (const auto& r : read_rows()) {
    INFO("docs/protected.md:" << r.line << ": `" << r.path << "` cites \"" << r.source << "\"");
    // The tool's documentation online, or (wavebox's own files) a page in this repository.
    const bool web = r.source.rfind("http", 0) == 0;
    const bool here = !r.source.empty() && std::filesystem::is_regular_file(WAVEBOX_SOURCE_DIR "/" + r.source);
    CHECK((web || here));
  }
}
