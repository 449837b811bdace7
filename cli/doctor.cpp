// `wavebox doctor`: what this machine offers the sandbox, and the effective policy.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "bwrap/plan/plan.hpp"
#include "bwrap/plan/seccomp_rules.hpp"
#include "bwrap/run/run.hpp"
#include "bwrap/shim/wire.h"
#include "cli/options.hpp"
#include "cli/settings_schema.hpp"
#include "cli/setup.hpp"
#include "core/domain.hpp"
#include "core/log.hpp"
#include "core/protect.hpp"
#include "core/sys/cgroup.hpp"
#include "core/sys/platform.hpp"
#include "engine/report.hpp"
#include "engine/settings_files.hpp"

namespace wb::cli {

namespace {

nlohmann::json facts(const Options& o, const Environment& env, engine::MachineProbe& p) {
  const Settings& s = env.settings;
  nlohmann::json j = engine::platform_json(p);
  j["settingsFiles"] = env.read_files;
  j["builtinDefaultProfile"] = s.builtin_default;
  j["project"] = {{"root", env.project_root.empty() ? nlohmann::json(nullptr) : nlohmann::json(env.project_root)},
                  {"trusted", env.trusted},
                  {"trustFile", engine::trust_file(env.home)}};
  auto trusted = engine::trusted_folders(env.home);
  j["project"]["trustedFolders"] = trusted.ok() ? nlohmann::json(*trusted) : nlohmann::json::array();
  if (!trusted.ok()) j["project"]["trustError"] = trusted.error().message;
  j.update(engine::policy_json(run_request(o, env), p));
  j["warnings"] = s.warnings;
  j["notes"] = s.notes;
  nlohmann::json table = nlohmann::json::array();
  for (const auto& e : protected_table()) {
    table.push_back({{"path", e.rel},
                     {"where", scope_name(e.scope)},
                     {"runsIt", e.runs_it},
                     {"type", e.type == LeafType::kDir ? "directory" : "file"}});
  }
  j["protected"] = table;
  return j;
}

void print_facts(const nlohmann::json& j, const Environment& env, const engine::MachineProbe& p) {
  const Settings& s = env.settings;
  const auto& bwrap = p.bwrap;
  const auto& plat = p.plat;
  const auto& userns = p.userns;
  const auto& seccomp = p.seccomp;
  const auto& state = p.state;
  const bool usable = p.usable;
  auto mark = [](bool ok) { return ok ? "ok  " : "FAIL"; };
  std::printf("wavebox doctor\n");
  std::printf("  platform        %s (%s)\n", j["platform"].get<std::string>().c_str(), plat.kernel.c_str());
  std::printf("  [%s] bubblewrap  %s\n", mark(!bwrap.path.empty()),
              bwrap.path.empty()
                  ? "not found: apt-get install bubblewrap (Debian/Ubuntu), dnf install bubblewrap (Fedora)"
                  : fmt::format("{} ({})", bwrap.path, bwrap.version_text).c_str());
  std::printf("  [%s] user namespaces %s\n", mark(userns.empty()), userns.empty() ? "usable" : userns.c_str());
  std::printf("  [%s] seccomp     %s\n", mark(seccomp.empty()), seccomp.empty() ? "supported" : seccomp.c_str());
  std::printf("  [%s] state dir   %s\n", mark(state.ok()), j["stateDir"].get<std::string>().c_str());
  std::printf("  sandbox usable  %s\n", usable ? "yes" : "no");
  std::printf("  mounts placed by %s\n", j["mountsPlacedBy"].get<std::string>().c_str());
  std::printf("  resource limits %s\n", j["resourceLimits"]["how"].get<std::string>().c_str());
  std::printf("  refused reads   %s%s\n", j["readReports"]["exact"].get<bool>() ? "exact: " : "",
              j["readReports"]["how"].get<std::string>().c_str());
  std::printf("  settings        %s\n", s.builtin_default ? "built-in default profile" : "");
  for (const auto& f : env.read_files) std::printf("                  %s\n", f.c_str());
  if (!env.project_root.empty()) {
    std::printf("  project         %s (%s)\n", env.project_root.c_str(),
                env.trusted ? "trusted: its settings apply as written; wavebox trust --revoke to undo"
                            : "not trusted: its settings may only narrow the sandbox; wavebox trust to change");
  }
  std::printf("  trusted folders %s\n", j["project"]["trustFile"].get<std::string>().c_str());
  if (j["project"].contains("trustError"))
    std::printf("    %s\n", j["project"]["trustError"].get<std::string>().c_str());
  for (const auto& d : j["project"]["trustedFolders"]) std::printf("    %s\n", d.get<std::string>().c_str());
  std::printf("  sandbox.enabled %s, mode %s\n", s.sandbox.enabled ? "true" : "false", mode_name(s.sandbox.mode));
  if (s.sandbox.enable_weaker_nested_sandbox) {
    std::printf("  /proc           the host's, read-only (enableWeakerNestedSandbox: weaker)\n");
  }
  if (j["policy"].contains("filesystem")) {
    std::printf("  writable:\n");
    for (const auto& x : j["policy"]["filesystem"]["writable"]) std::printf("    %s\n", x.get<std::string>().c_str());
    if (j["policy"]["filesystem"].contains("visible")) {
      std::printf(
          "  visible (mode strict: only these, read-only, the writable paths above, the command and\n"
          "  wavebox-shim exist inside; the rest of the host, home included, is not there):\n");
      for (const auto& x : j["policy"]["filesystem"]["visible"]) std::printf("    %s\n", x.get<std::string>().c_str());
    }
    std::printf("  unreadable:\n");
    for (const auto& x : j["policy"]["filesystem"]["denyRead"]) std::printf("    %s\n", x.get<std::string>().c_str());
    std::string tports;
    for (const auto& p : j["policy"]["network"]["transparentPorts"]) {
      tports += (tports.empty() ? "" : ", ") + std::to_string(p.get<int>());
    }
    std::printf(
        "  network: only through wavebox's proxy (the proxy variables, or the sandbox's own resolver and "
        "ports %s for clients without them); allowed:%s\n",
        tports.c_str(), s.sandbox.network.allowed_domains.empty() ? " nothing" : "");
    for (const auto& d : s.sandbox.network.allowed_domains) std::printf("    %s\n", d.c_str());
    for (const auto& d : s.sandbox.network.denied_domains) std::printf("    denied: %s\n", d.c_str());
  }
}

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
  auto rules = lnx::seccomp_rules({s.sandbox.network.allow_all_unix_sockets});
  std::printf("  seccomp rules (%zu):\n%s", rules.size(), lnx::describe_rules(rules).c_str());
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

}  // namespace

int cmd_doctor(const Options& o) {
  auto env = load_environment(o);
  if (!env.ok()) return report_error(env.error());
  engine::MachineProbe p = engine::probe_machine(env->settings);
  const nlohmann::json j = facts(o, *env, p);
  // Exit 1 when no sandbox can run here, so that CI can gate on it.
  if (o.json) {
    std::printf("%s\n", j.dump(2).c_str());
    return p.usable ? 0 : 1;
  }
  print_facts(j, *env, p);
  if (!o.settings_files.empty()) {
    std::printf("  settings explained:\n");
    explain(env->read_files);
  }
  if (o.verbose) print_protected(env->settings);
  return p.usable ? 0 : 1;
}

}  // namespace wb::cli
