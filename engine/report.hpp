#pragma once
// What this machine offers the sandbox and the policy settings make here, as JSON (`wavebox
// doctor`, serve's doctor and session/policy).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/settings.hpp"
#include "core/sys/fs.hpp"
#include "core/sys/platform.hpp"
#include "engine/engine.hpp"

namespace wb::engine {

struct MachineProbe {
  sys::PlatformInfo plat;
  sys::BwrapInfo bwrap;
  std::string userns, seccomp;
  Result<sys::StateDir> state = sys::StateDir{};
  bool usable = false;
};

MachineProbe probe_machine(const Settings& s);
// The platform: bwrap, namespaces, seccomp, who places the mounts, how reads are reported, limits.
nlohmann::json platform_json(MachineProbe& p);
// {"policy": {...}} for this run request: the decision's settings, the filesystem's paths (as
// planned here), the network's allowlist. May set "mountsPlacedBy" and "readReports" (mode strict).
nlohmann::json policy_json(const RunRequest& req, MachineProbe& p);
// `wavebox doctor --json`: the platform, the settings files read, the project (project_root:
// where its settings were looked for) and the folders the user trusts, the policy for req, the
// settings' warnings and notes, the protected table.
nlohmann::json doctor_json(const RunRequest& req, const std::vector<std::string>& read_files,
                           const std::string& project_root, bool trusted, MachineProbe& p);

// The seccomp rules a sandbox here loads, described one a line.
struct SeccompRulesText {
  size_t count = 0;
  std::string text;
};
SeccompRulesText seccomp_rules_text(const Settings& s);

}  // namespace wb::engine
