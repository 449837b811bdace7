#include "serve/session.hpp"

#include <fmt/format.h>

#include "core/hash.hpp"
#include "core/paths.hpp"
#include "core/sys/fs.hpp"

namespace wb::serve {

Result<SessionPolicy> load_session_policy(const std::string& cwd, const std::vector<std::string>& paths,
                                          const nlohmann::json* inline_settings, const std::string& home) {
  SessionPolicy out;
  const std::vector<std::string> discoverable = discoverable_settings_files(home, cwd);
  std::vector<std::string> files;
  if (!paths.empty()) {
    for (const auto& p : paths) files.push_back(paths::resolve(p, home, cwd));
  } else if (!inline_settings) {
    for (const auto& f : discoverable) {
      if (sys::exists(f)) files.push_back(f);
    }
  }
  std::vector<SettingsSource> sources;
  std::uint64_t h = fnv1a(cwd);
  for (const auto& f : files) {
    auto text = sys::read_file(f);
    if (!text.ok())
      return make_error(ErrorKind::kSettings, fmt::format("settings file \"{}\": {}", f, text.error().message));
    h = fnv1a(*text, fnv1a(f, h));
    sources.push_back({f, std::move(*text)});
    out.settings_files.push_back(f);
    if (std::string real = sys::real_path_or_empty(f); !real.empty() && real != f) out.settings_files.push_back(real);
  }
  if (inline_settings) {
    std::string text = inline_settings->dump();
    h = fnv1a(text, h);
    sources.push_back({"(session settings)", std::move(text)});
  }
  // Every settings file wavebox would discover there is protected, existing or not.
  out.settings_files.insert(out.settings_files.end(), discoverable.begin(), discoverable.end());
  out.settings = sources.empty() ? default_settings() : WB_TRY(load_settings(sources, home));
  out.policy_id = fmt::format("{:016x}", h);
  return out;
}

}  // namespace wb::serve
