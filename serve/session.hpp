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
  std::vector<std::string> settings_files;  // read or discoverable: write-protected in its runs
  std::string policy_id;                    // the same settings and workspace, the same id
  // The plan its commands and standbys share while nothing it read changed (new settings, a
  // new one).
  std::shared_ptr<engine::PlanCache> plan_cache = engine::new_plan_cache();
};

// Settings as for `wavebox run` in cwd: the paths in order, then the inline object; with
// neither, the files `run` would discover there (~/.wave/settings.json, .wave/settings.json,
// .wave/settings.local.json).
Result<SessionPolicy> load_session_policy(const std::string& cwd, const std::vector<std::string>& paths,
                                          const nlohmann::json* inline_settings, const std::string& home);

}  // namespace wb::serve
