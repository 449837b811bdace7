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
#include "engine/settings_files.hpp"

namespace wb::cli {

namespace {

struct Probed {
  sys::PlatformInfo plat;
  sys::BwrapInfo bwrap;
  std::string userns, seccomp;
  Result<sys::StateDir> state = sys::StateDir{};
  bool usable = false;
};

Probed probe(const Settings& s) {
  Probed p;
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
nlohmann::json platform_facts(Probed& p) {
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

// The policy the settings make here: the filesystem's paths and the network's allowlist.
void policy_facts(nlohmann::json& j, const Options& o, const Environment& env, Probed& p) {
  const Settings& s = env.settings;
  auto& state = p.state;
  auto ctx = state.ok() ? engine::policy_context(run_request(o, env), *state) : Result<PolicyContext>(state.error());
  if (!ctx.ok()) return;
  auto pol = make_fs_policy(s.sandbox, *ctx, o.network_only);
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

nlohmann::json facts(const Options& o, const Environment& env, Probed& p) {
  const Settings& s = env.settings;
  nlohmann::json j = platform_facts(p);
  j["settingsFiles"] = env.read_files;
  j["builtinDefaultProfile"] = s.builtin_default;
  j["project"] = {{"root", env.project_root.empty() ? nlohmann::json(nullptr) : nlohmann::json(env.project_root)},
                  {"trusted", env.trusted},
                  {"trustFile", engine::trust_file(env.home)}};
  auto trusted = engine::trusted_folders(env.home);
  j["project"]["trustedFolders"] = trusted.ok() ? nlohmann::json(*trusted) : nlohmann::json::array();
  if (!trusted.ok()) j["project"]["trustError"] = trusted.error().message;
  j["policy"] = {{"enabled", s.sandbox.enabled},
                 {"mode", mode_name(s.sandbox.mode)},
                 {"failIfUnavailable", s.sandbox.fail_if_unavailable},
                 {"proc", s.sandbox.enable_weaker_nested_sandbox ? "host (enableWeakerNestedSandbox)" : "own"},
                 {"autoAllowBashIfSandboxed", s.sandbox.auto_allow_bash_if_sandboxed},
                 {"allowUnsandboxedCommands", s.sandbox.allow_unsandboxed_commands},
                 {"excludedCommands", s.sandbox.excluded_commands},
                 {"environment", {{"denied", s.sandbox.deny_environment}, {"masked", s.sandbox.mask_environment}}}};
  j["warnings"] = s.warnings;
  j["notes"] = s.notes;
  policy_facts(j, o, env, p);
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

void print_facts(const nlohmann::json& j, const Environment& env, const Probed& p) {
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
  Probed p = probe(env->settings);
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
