#pragma once
// Shared by the subcommands: settings discovery and loading, the policy context, error exits.
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "cli/report.hpp"
#include "core/policy.hpp"
#include "core/result.hpp"
#include "core/settings.hpp"
#include "core/sys/fs.hpp"
#include "core/violations.hpp"
#include "engine/engine.hpp"

namespace wb::cli {

struct Environment {
  Settings settings;
  std::string cwd;        // where the command starts, absolute
  std::string workspace;  // the project (writable): cwd or the root above it that discovery finds
  std::string home;
  std::vector<std::string> read_files;      // settings files read
  std::vector<std::string> guarded_files;   // what configures runs here: write-protected
  std::string project_root;                 // where the project's settings were looked for
  bool trusted = false;                     // the user trusts project_root
  std::vector<std::string> extra_writable;  // --allow-write, absolute
};

Result<Environment> load_environment(const Options& o);
// The run as the engine takes it: the command, this process's environment and descriptors.
engine::RunRequest run_request(const Options& o, Environment env);

// Prints "wavebox: error: ..." and returns the exit status for the error's kind.
int report_error(const Error& e);

}  // namespace wb::cli
