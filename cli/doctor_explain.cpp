// `wavebox doctor`'s longer parts: the settings files explained key by key, and (-v) what no
// sandboxed command may change.
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>

#include "cli/doctor.hpp"
#include "cli/settings_schema.hpp"
#include "core/protect.hpp"
#include "core/sys/fs.hpp"
#include "engine/report.hpp"

namespace wb::cli {

// What no sandboxed command may create or change, whatever the policy makes writable
// (core/protect.hpp); besides these: every repository's hooks, config, commondir,
// config.worktree, the files its config includes or names as core.hooksPath, and new
// submodule git directories. And the seccomp rules.
void print_protected(const Settings& s) {
  std::printf("  protected (%zu; never created or changed by a sandboxed command):\n", protected_table().size());
  for (const auto& e : protected_table()) {
    std::string where = e.scope == ProtectScope::kAnyDepth ? "any depth"
                        : e.scope == ProtectScope::kHome   ? "~/"
                                                           : "<ws>/";
    std::printf("    %-26s %-10s %s\n", e.rel, where.c_str(), e.runs_it);
  }
  const engine::SeccompRulesText rules = engine::seccomp_rules_text(s);
  std::printf("  seccomp rules (%zu):\n%s", rules.count, rules.text.c_str());
}

// Each key a settings file sets, with what it means (docs/settings.schema.json), or that it is
// not one wavebox knows.
void explain(const std::vector<std::string>& files) {
  const nlohmann::json schema = nlohmann::json::parse(kSettingsSchema);
  std::function<void(const nlohmann::json&, const nlohmann::json*, const std::string&)> walk =
      [&](const nlohmann::json& value, const nlohmann::json* node, const std::string& path) {
        const nlohmann::json* props = node && node->contains("properties") ? &(*node)["properties"] : nullptr;
        if (value.is_object() && props) {
          for (const auto& [k, v] : value.items()) {
            const nlohmann::json* child = props->contains(k) ? &(*props)[k] : nullptr;
            walk(v, child, path.empty() ? k : path + "." + k);
          }
          return;
        }
        std::string shown = value.dump();
        if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
        std::string what = node ? node->value("description", "") : "not a key wavebox knows (ignored or an error)";
        std::printf("    %s = %s\n        %s\n", path.c_str(), shown.c_str(), what.c_str());
      };
  for (const auto& f : files) {
    std::printf("  %s:\n", f.c_str());
    auto text = sys::read_file(f);
    nlohmann::json doc = text.ok() ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
    if (!doc.is_object()) continue;  // load_environment said what is wrong with it already
    for (const char* section : {"sandbox", "permissions"}) {
      if (doc.contains(section)) walk(doc[section], &schema["properties"][section], section);
    }
  }
}

}  // namespace wb::cli
