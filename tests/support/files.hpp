#pragma once
// Small file helpers the tests share.
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>

namespace wb::testing {

inline std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void spit(const std::string& path, const std::string& text, bool executable = false) {
  std::ofstream(path) << text;
  if (executable) ::chmod(path.c_str(), 0755);
}

}  // namespace wb::testing
