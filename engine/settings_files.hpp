#pragma once
// Which settings files configure a run, and how far each may: the caller's (--settings, serve's
// session files and inline settings) and the user's own files apply as written; a project's files
// (found by walking up from the working directory) only narrow them, unless the user trusts that
// folder (`wavebox trust`). One place for the CLI and serve.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/settings.hpp"

namespace wb::engine {

// The folder a working directory belongs to: the nearest ancestor (itself included, the home
// directory excluded: its .claude/ is the user's) holding a .claude/ or .wave/ directory of this
// user's or root's; else the nearest holding .git; else the directory itself.
std::string find_project_root(const std::string& cwd, const std::string& home);

struct LoadedSettings {
  Settings settings;
  std::string project_root;                // "" when settings were named (--settings, inline)
  bool trusted = false;                    // the user trusts project_root
  std::vector<std::string> read_files;     // every file read, in merge order
  std::vector<std::string> project_files;  // those of them in the project
  // Every file that configures a run here or in a trusted folder, existing or not (and the real
  // path of each one read): write-protected in the sandbox.
  std::vector<std::string> guarded;
  std::string text_digest;  // the files' names and contents, trust included: a policy's identity
};

// named: --settings files (resolved, in order); inline_settings: serve's session settings. With
// neither, the files are discovered from cwd.
Result<LoadedSettings> load_run_settings(const std::string& home, const std::string& cwd,
                                         const std::vector<std::string>& named,
                                         const nlohmann::json* inline_settings = nullptr);

// The user's trusted folders, in a file of theirs that every sandbox write-protects.
std::string trust_file(const std::string& home);
// The folders trusted (real paths). A trust file that is not a private regular file of this
// user's counts as no trust at all (an error says why).
Result<std::vector<std::string>> trusted_folders(const std::string& home);
// Adds (trusted) or removes dir, as its real path. Returns the path recorded.
Result<std::string> set_trusted(const std::string& home, const std::string& dir, bool trusted);

}  // namespace wb::engine
