// `wavebox doctor`: what this machine offers the sandbox, and the effective policy.
#include "cli/doctor.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/options.hpp"
#include "cli/setup.hpp"
#include "engine/report.hpp"

namespace wb::cli {

namespace {

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

}  // namespace

int cmd_doctor(const Options& o) {
  auto env = load_environment(o);
  if (!env.ok()) return report_error(env.error());
  engine::MachineProbe p = engine::probe_machine(env->settings);
  const nlohmann::json j =
      engine::doctor_json(run_request(o, *env), env->read_files, env->project_root, env->trusted, p);
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
