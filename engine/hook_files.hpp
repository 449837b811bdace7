#pragma once
// `wavebox hooks install|uninstall|status`: wavebox's entry in agent hosts' hook files
// (core/hooks.hpp makes the edits), and the record that lets uninstall put a file back exactly.
// `wavebox hook`: how the hook names wavebox, and whether it already runs in a sandbox.
#include <string>
#include <vector>

#include "core/hooks.hpp"

namespace wb::engine {

// What install or uninstall did to one host's hook file.
struct HookFileChange {
  hooks::Host host;
  std::string file;
  std::string error;  // not empty: the file was left as it is, for this reason
  bool done = false;  // installed, removed; false: already installed, not installed
};
struct HookChanges {
  std::vector<HookFileChange> files;
  std::string record_error;  // the record of the install could not be written
};
HookChanges install_hooks(const std::vector<hooks::Host>& hosts, bool project, const std::string& dir,
                          const std::string& wavebox, const std::string& home);
HookChanges uninstall_hooks(const std::vector<hooks::Host>& hosts, bool project, const std::string& dir,
                            const std::string& home);

// One hook file as it is: state "absent", "unreadable", "not installed", "installed" or "stale"
// (names another wavebox); command: the hook command of ours it holds.
struct HookFileState {
  hooks::Host host;
  bool project = false;
  std::string file, state, command;
};
std::vector<HookFileState> hook_states(const std::vector<hooks::Host>& hosts, const std::string& dir,
                                       const std::string& wavebox, const std::string& home);

// This program's path as the host will run it (argv0 found on path_var, relative to cwd).
std::string program_path(const char* argv0, const std::string& path_var, const std::string& cwd);
// Inside a wavebox sandbox already; sandbox_var: WAVEBOX_SANDBOX's value (null: unset).
bool inside_sandbox(const char* sandbox_var);

}  // namespace wb::engine
