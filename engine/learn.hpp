#pragma once
// --learn: what would have allowed what was refused (core/learn.hpp), with what only this
// machine knows: wavebox's own places, the directories on PATH, which paths exist.
#include <string>
#include <vector>

#include "core/learn.hpp"
#include "core/violations.hpp"

namespace wb::engine {

// ctx: the run's home, workspace, settings files and denyRead; path_var: the caller's PATH.
Learned learned(const std::vector<Violation>& refused, LearnContext ctx, const std::string& path_var);

}  // namespace wb::engine
