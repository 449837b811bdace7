#pragma once
// `wavebox hooks`' output.
#include <vector>

#include "engine/hook_files.hpp"

namespace wb::cli {

// install (or uninstall): each host's line, errors on stderr; 125 when a file could not be changed.
int say_changes(const engine::HookChanges& changes, bool install);
// status: each hook file's state, as a table or (json) an array.
int say_states(const std::vector<engine::HookFileState>& states, bool json);

}  // namespace wb::cli
