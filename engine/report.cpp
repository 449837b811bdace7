// What this machine offers the sandbox and the policy settings make here, as JSON: `wavebox
// doctor` and serve's doctor and session/policy methods say the same.
#include "engine/report.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "bwrap/plan/plan.hpp"
#include "bwrap/plan/seccomp_rules.hpp"
#include "bwrap/run/run.hpp"
#include "bwrap/shim/wire.h"
#include "core/domain.hpp"
#include "core/policy.hpp"
#include "core/protect.hpp"
#include "core/sys/cgroup.hpp"
#include "engine/settings_files.hpp"

namespace wb::engine {

MachineProbe probe_machine(const Settings& s) {
  MachineProbe p;
  p.state = sys::ensure_state_dir();
  p.plat = sys::probe_platform();
  p.bwrap = sys::probe_bwrap(s.sandbox.bwrap_path.value_or(""), "");
  p.userns = sys::probe_userns();
  p.seccomp = sys::probe_seccomp();
  bool linux_like = p.plat.platform == sys::Platform::kLinux || p.plat.platform == sys::Platform::kWsl2;
  p.usable = linux_like && !p.bwrap.path.empty() && p.userns.empty() && p.seccomp.empty() && p.state.ok();
  return p;
}

// The platform: bwrap, namespaces, seccomp, who places the mounts, how reads are reported, limits.
nlohmann::json platform_json(MachineProbe& p) {
  auto& state = p.state;
  const auto& bwrap = p.bwrap;
  nlohmann::json j;
  j["platform"] = sys::platform_name(p.plat.platform);
  j["kernel"] = p.plat.kernel;
  j["bwrap"] = {
      {"path", bwrap.path},
      {"version", bwrap.version_text},
      {"found", !bwrap.path.empty()},
      {"hint",
       bwrap.path.empty() ? "apt-get install bubblewrap (Debian/Ubuntu), dnf install bubblewrap (Fedora)" : ""}};
  j["userNamespaces"] = {{"ok", p.userns.empty()}, {"reason", p.userns}};
  j["seccomp"] = {{"ok", p.seccomp.empty()}, {"reason", p.seccomp}};
  j["stateDir"] = state.ok() ? state->root : state.error().message;
  j["sandboxUsable"] = p.usable;
  // Who places the sandbox's mounts (the key kept its first name: only read-only ones moved then).
  j["readOnlyMounts"] = lnx::shim_mounts_available() ? "wavebox-shim (mount API)" : "bwrap";
  j["mountsPlacedBy"] = j["readOnlyMounts"];
  // How a refused read reaches the report: from the kernel (a FUSE mask), or from stderr only.
  std::string no_fuse;
  const bool exact = lnx::fuse_masks_available(&no_fuse) && lnx::shim_mounts_available();
  if (!exact && no_fuse.empty()) no_fuse = "bwrap places the mounts";
  // sandbox.resources: the kernel's limits on the whole sandbox (a cgroup), or rlimits.
  std::string no_cgroup;
  const std::string cgroup = sys::cgroup_support(&no_cgroup);
  j["resourceLimits"] = {
      {"cgroup", !cgroup.empty()},
      {"how", !cgroup.empty() ? cgroup + ": memoryMB (swap off), pids and cpus hold for the whole sandbox"
                              : "rlimits: memoryMB is each process's address space, pids is RLIMIT_NPROC (not for "
                                "root), cpus is not enforced; no cgroup can be made: " +
                                    no_cgroup}};
  j["readReports"] = {{"exact", exact},
                      {"how", exact ? "each read mask is a FUSE filesystem: every lookup and open in it is reported"
                                    : "recognised in the command's stderr, when it is a pipe of its own: " + no_fuse}};
  return j;
}

namespace {

// The policy the settings make here: the filesystem's paths and the network's allowlist.
void policy_facts(nlohmann::json& j, const RunRequest& req, MachineProbe& p) {
  const Settings& s = req.settings;
  auto& state = p.state;
  auto ctx = state.ok() ? policy_context(req, *state) : Result<PolicyContext>(state.error());
  if (!ctx.ok()) return;
  auto pol = make_fs_policy(s.sandbox, *ctx, req.network_only);
  nlohmann::json w = nlohmann::json::array(), dw = nlohmann::json::array(), dr = nlohmann::json::array();
  for (const auto& x : pol.writable) w.push_back(x.path);
  for (const auto& x : pol.deny_write) dw.push_back(x.path);
  for (const auto& x : pol.deny_read) dr.push_back(x.path);
  j["policy"]["filesystem"] = {
      {"enabled", pol.enabled}, {"writable", w}, {"denyWrite", dw}, {"denyRead", dr}, {"allowRead", pol.allow_read}};
  if (pol.strict) {
    // Mode strict: all that exists inside (the command found on PATH and wavebox-shim are
    // added per run).
    nlohmann::json v = nlohmann::json::array();
    for (const auto& x : lnx::strict_system_paths()) {
      if (::access(x.c_str(), F_OK) == 0) v.push_back(x);
    }
    for (const auto& x : pol.allow_read) v.push_back(x);
    j["policy"]["filesystem"]["visible"] = v;
    j["mountsPlacedBy"] = "bwrap (mode strict: an empty root)";
    j["readReports"] = {{"exact", false},
                        {"how", "recognised in the command's stderr, when it is a pipe of its own: mode strict"}};
  }
  // What a client inside has: the proxies, and for the others the sandbox's own resolver and
  // the transparent ports (80, 443 and the allowlist's own).
  std::vector<int> ports = {80, 443};
  const std::vector<int> own = allowlist_ports(s.sandbox.network.allowed_domains);
  ports.insert(ports.end(), own.begin(), own.begin() + std::min<size_t>(own.size(), WB_MAX_EXTRA_PORTS));
  j["policy"]["network"] = {{"allowedDomains", s.sandbox.network.allowed_domains},
                            {"deniedDomains", s.sandbox.network.denied_domains},
                            {"proxies", {"http://127.0.0.1:3128", "socks5h://127.0.0.1:1080"}},
                            {"resolver", "port 53 (UDP, TCP) of every address inside; answers allowed names only"},
                            {"transparentPorts", ports},
                            {"allowUnixSockets", s.sandbox.network.allow_unix_sockets}};
}

}  // namespace

nlohmann::json policy_json(const RunRequest& req, MachineProbe& p) {
  const Settings& s = req.settings;
  nlohmann::json j;
  j["policy"] = {{"enabled", s.sandbox.enabled},
                 {"mode", mode_name(s.sandbox.mode)},
                 {"failIfUnavailable", s.sandbox.fail_if_unavailable},
                 {"proc", s.sandbox.enable_weaker_nested_sandbox ? "host (enableWeakerNestedSandbox)" : "own"},
                 {"autoAllowBashIfSandboxed", s.sandbox.auto_allow_bash_if_sandboxed},
                 {"allowUnsandboxedCommands", s.sandbox.allow_unsandboxed_commands},
                 {"excludedCommands", s.sandbox.excluded_commands},
                 {"environment", {{"denied", s.sandbox.deny_environment}, {"masked", s.sandbox.mask_environment}}}};
  policy_facts(j, req, p);
  return j;
}

nlohmann::json doctor_json(const RunRequest& req, const std::vector<std::string>& read_files,
                           const std::string& project_root, bool trusted, MachineProbe& p) {
  const Settings& s = req.settings;
  nlohmann::json j = platform_json(p);
  j["settingsFiles"] = read_files;
  j["builtinDefaultProfile"] = s.builtin_default;
  j["project"] = {{"root", project_root.empty() ? nlohmann::json(nullptr) : nlohmann::json(project_root)},
                  {"trusted", trusted},
                  {"trustFile", trust_file(req.home)}};
  auto folders = trusted_folders(req.home);
  j["project"]["trustedFolders"] = folders.ok() ? nlohmann::json(*folders) : nlohmann::json::array();
  if (!folders.ok()) j["project"]["trustError"] = folders.error().message;
  j.update(policy_json(req, p));
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

SeccompRulesText seccomp_rules_text(const Settings& s) {
  auto rules = lnx::seccomp_rules({s.sandbox.network.allow_all_unix_sockets});
  return {rules.size(), lnx::describe_rules(rules)};
}

}  // namespace wb::engine
