#pragma once
// `wavebox run` when the command runs unsandboxed and nothing waits for its status.
#include <string>
#include <vector>

#include "core/result.hpp"

namespace wb::engine {

// Runs the command exactly as without wavebox: same argv, environment, descriptors; our process
// is replaced, so its exit status is the command's. Returns only when it could not: the
// directory (cwd, "" for this one) or the command (kNotFound, kNotExecutable).
Error exec_unsandboxed(const std::string& cwd, const std::vector<std::string>& argv);

}  // namespace wb::engine
