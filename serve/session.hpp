#pragma once
// A serve session: its workspace and its settings, loaded once per open or update.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/settings.hpp"
#include "engine/engine.hpp"

namespace wb::serve {

struct SessionPolicy {
  Settings settings;
  std::vector<std::string> settings_files;  // what configures its runs: write-protected in them
  std::string policy_id;                    // the same settings and workspace, the same id
  // The plan its commands and standbys share while nothing it read changed (new settings, a
  // new one).
  std::shared_ptr<engine::PlanCache> plan_cache = engine::new_plan_cache();
};

// Settings as for `wavebox run` in cwd: the paths in order, then the inline object (the client's
// choice, applied as written); with neither, the files `run` would discover from there, a
// project's only narrowing unless the user trusts it (engine/settings_files.hpp).
Result<SessionPolicy> load_session_policy(const std::string& cwd, const std::vector<std::string>& paths,
                                          const nlohmann::json* inline_settings, const std::string& home);

}  // namespace wb::serve
