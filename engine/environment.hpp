#pragma once
// The sandboxed command's environment, made from the caller's (a value, never `environ`).
#include <string>
#include <vector>

#include "core/log.hpp"
#include "core/result.hpp"
#include "core/settings.hpp"

namespace wb::engine {

// The caller's environment with TMPDIR set to the sandbox's, package managers' caches moved to
// this workspace's own, and credential variables removed except those in pass (all are
// kept when pass_all: mode "permissive"); sandbox.credentials' variables denied or masked
// whatever else says.
std::vector<std::string> sandbox_env(const std::vector<std::string>& caller, const std::string& tmpdir,
                                     const std::string& caches, const std::vector<std::string>& pass, bool pass_all,
                                     const Logger& log, const SandboxSettings* credentials = nullptr);

// Where the command is, on PATH as env has it (a name with a slash: relative to cwd): 126/127
// before anything starts.
Result<std::string> find_command(const std::vector<std::string>& argv, const std::string& cwd,
                                 const std::vector<std::string>& env);

}  // namespace wb::engine
