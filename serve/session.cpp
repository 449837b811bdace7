#include "serve/session.hpp"

#include "core/paths.hpp"
#include "engine/settings_files.hpp"

namespace wb::serve {

Result<SessionPolicy> load_session_policy(const std::string& cwd, const std::vector<std::string>& paths,
                                          const nlohmann::json* inline_settings, const std::string& home) {
  std::vector<std::string> named;
  for (const auto& p : paths) named.push_back(paths::resolve(p, home, cwd));
  auto loaded = WB_TRY(engine::load_run_settings(home, cwd, named, inline_settings));
  SessionPolicy out;
  out.settings = std::move(loaded.settings);
  out.settings_files = std::move(loaded.guarded);
  out.policy_id = loaded.text_digest;
  return out;
}

}  // namespace wb::serve
