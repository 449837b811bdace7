// Whether a command may run here and whether the sandbox can: the platform and its
// dependencies (availability), the permission decision as `wavebox decide` and hooks see it.
#include <fmt/format.h>
#include <unistd.h>

#include "core/sys/fs.hpp"
#include "core/sys/platform.hpp"
#include "engine/engine.hpp"

namespace wb::engine {

Availability check_availability(const Settings& s, const sys::PlatformInfo& plat, const sys::BwrapInfo& bwrap,
                                const std::string& state_root) {
  Availability a;
  if (!s.sandbox.enabled) return a;
  if (s.sandbox.enabled_platforms) {
    const auto& v = *s.sandbox.enabled_platforms;
    std::string name = sys::platform_name(plat.platform);
    if (std::find(v.begin(), v.end(), name) == v.end()) return a;
  }
  a.enabled_here = true;
  switch (plat.platform) {
    case sys::Platform::kLinux:
    case sys::Platform::kWsl2:
      break;
    case sys::Platform::kWsl1:
      a.unavailable = "WSL1 has no user namespaces; upgrade this distribution to WSL2 (wsl --set-version <distro> 2)";
      return a;
    case sys::Platform::kMacos:
      if (::access("/usr/bin/sandbox-exec", X_OK) != 0) a.unavailable = "/usr/bin/sandbox-exec is missing";
      return a;
    case sys::Platform::kOther:
      a.unavailable = "this platform is not supported (Linux, WSL2 and macOS are)";
      return a;
  }
  if (bwrap.path.empty() && !s.sandbox.bwrap_path) {
    if (std::string found = sys::installed_program("bwrap"); !found.empty()) {
      // Installed, but not root's as seen from here: the sandbox cannot start, which is no
      // missing dependency to run unsandboxed for.
      a.cannot_start = fmt::format(
          "bubblewrap at \"{}\" is not owned by root as seen here (a user namespace or container that does not map "
          "root?), so wavebox will not run it",
          found);
      return a;
    }
  }
  if (bwrap.path.empty()) {
    a.unavailable = s.sandbox.bwrap_path
                        ? fmt::format("bubblewrap not found at \"{}\" (sandbox.bwrapPath)", *s.sandbox.bwrap_path)
                        : "bubblewrap (bwrap) is not installed; install it: apt-get install bubblewrap "
                          "(Debian/Ubuntu) or dnf install bubblewrap (Fedora)";
    return a;
  }
  std::string cache = state_root.empty() ? "" : state_root + "/userns-ok";
  if (std::string why = sys::probe_userns_cached(cache); !why.empty()) a.cannot_start = why;
  return a;
}

Availability availability_here(const Settings& s) {
  auto state = sys::ensure_state_dir();
  auto plat = sys::probe_platform();
  auto bwrap = sys::probe_bwrap(s.sandbox.bwrap_path.value_or(""), state.ok() ? state->root + "/bwrap-version" : "");
  return check_availability(s, plat, bwrap, state.ok() ? state->root : "");
}

std::string wont_run_here(const Settings& s, const Decision& d) {
  if (d.decision == "deny") return "";
  Availability avail = availability_here(s);
  if (d.sandboxed && !avail.cannot_start.empty()) return "the sandbox cannot start: " + avail.cannot_start;
  if (avail.enabled_here && !avail.unavailable.empty() && s.sandbox.fail_if_unavailable) {
    return "the sandbox is unavailable: " + avail.unavailable + " (sandbox.failIfUnavailable is set)";
  }
  return "";
}

Decision decide_here(const Settings& s, const std::string& command, bool disable_sandbox, const Logger& log) {
  Availability avail = availability_here(s);
  Decision d = decide(s, {command, disable_sandbox, avail.enabled_here && avail.unavailable.empty()});
  for (const auto& w : d.warnings) log.warn(w);
  return d;
}

nlohmann::json decision_json(const Decision& d, const std::vector<std::string>& adds_hosts) {
  nlohmann::json j;
  j["decision"] = d.decision;
  j["sandboxed"] = d.sandboxed;
  j["reason"] = d.reason;
  j["matchedRule"] = d.matched_rule.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.matched_rule);
  j["subcommands"] = d.subcommands;
  // A call that reaches more hosts than the settings say (a per-call widening is never read-only).
  j["addsHosts"] = adds_hosts;
  return j;
}

}  // namespace wb::engine
