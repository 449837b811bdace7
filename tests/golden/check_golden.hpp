#pragma once
// Compares generated text with tests/golden/NAME.txt; WAVEBOX_UPDATE_GOLDEN=1 rewrites the file
// instead (scripts/update-golden).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace wb::testing {

inline void check_golden(const std::string& name, const std::string& actual) {
  std::string path = std::string(WAVEBOX_GOLDEN_DIR) + "/" + name + ".txt";
  if (std::getenv("WAVEBOX_UPDATE_GOLDEN")) {
    std::ofstream(path) << actual;
    return;
  }
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string expected = ss.str();
  if (expected != actual) {
    std::istringstream e(expected), a(actual);
    std::string le, la;
    int line = 1;
    while (true) {
      bool ge = static_cast<bool>(std::getline(e, le)), ga = static_cast<bool>(std::getline(a, la));
      if (!ge && !ga) break;
      if (le != la) {
        UNSCOPED_INFO("first difference at line " << line << ": expected '" << le << "' got '" << la << "'");
        break;
      }
      ++line;
    }
    UNSCOPED_INFO("whole generated text:\n" << actual);
  }
  CHECK(expected == actual);
}

}  // namespace wb::testing
