#pragma once
// Shared by the subcommands: settings discovery and loading, the policy context, error exits.
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "core/policy.hpp"
#include "core/result.hpp"
#include "core/settings.hpp"
#include "core/sys/fs.hpp"
#include "core/violations.hpp"

namespace wb::cli {

struct Environment {
  Settings settings;
  std::string cwd;   // the workspace, absolute
  std::string home;
  std::vector<std::string> read_files;     // settings files read
  std::vector<std::string> guarded_files;  // read or discoverable: write-protected
};

Result<Environment> load_environment(const Options& o);
PolicyContext policy_context(const Environment& env, const sys::StateDir& state, const Options& o);
// Writes the --report-json document to FILE or fd:N.
Status write_report(const std::string& target, int exit_code, bool sandboxed, const std::vector<Violation>& v,
                    size_t more);
// Prints "wavebox: error: ..." and returns the exit status for the error's kind.
int report_error(const Error& e);

}  // namespace wb::cli
