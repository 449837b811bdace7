#include "engine/unsandboxed.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace wb::engine {

Error exec_unsandboxed(const std::string& cwd, const std::vector<std::string>& argv) {
  if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
    return make_error(ErrorKind::kUsage, fmt::format("cannot change to \"{}\": {}", cwd, std::strerror(errno)));
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  int err = errno;
  std::string msg = fmt::format("{}: {}", argv[0], err == ENOENT ? "command not found" : std::strerror(err));
  return make_error(err == ENOENT ? ErrorKind::kNotFound : ErrorKind::kNotExecutable, msg);
}

}  // namespace wb::engine
