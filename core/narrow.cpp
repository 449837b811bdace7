// pure: what a project's settings may change (narrow) and what they may not (widen).
#include "core/narrow.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace wb {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// A list whose entries grant something: only base's entries stay.
void keep_base_entries(const std::vector<std::string>& base, std::vector<std::string>& full, const char* key,
                       std::vector<Widening>& undone) {
  std::vector<std::string> kept;
  for (const auto& e : full) {
    if (contains(base, e)) {
      kept.push_back(e);
    } else {
      undone.push_back({key, e});
    }
  }
  for (const auto& e : base) {
    if (!contains(kept, e)) kept.push_back(e);
  }
  full = std::move(kept);
}

// A list whose entries take something away: base's entries and the project's.
void keep_all_entries(const std::vector<std::string>& base, std::vector<std::string>& full) {
  for (const auto& e : base) {
    if (!contains(full, e)) full.push_back(e);
  }
}

// A switch that grants when true.
void keep_off(bool base, bool& full, const char* key, std::vector<Widening>& undone) {
  if (!base && full) {
    full = false;
    undone.push_back({key, "true"});
  }
}

// A switch that restricts when true.
void keep_on(bool base, bool& full, const char* key, std::vector<Widening>& undone) {
  if (base && !full) {
    full = true;
    undone.push_back({key, "false"});
  }
}

template <class T>
std::string text(const T& v) {
  return fmt::format("{}", v);
}

// A value whose any change may grant something (a program to run, a proxy, a log to append to).
template <class T>
void keep_same(const std::optional<T>& base, std::optional<T>& full, const char* key, std::vector<Widening>& undone) {
  if (base != full) {
    undone.push_back({key, full ? text(*full) : std::string("(unset)")});
    full = base;
  }
}

// A limit: lower is narrower, unset is no limit.
template <class T>
void keep_limit(const std::optional<T>& base, std::optional<T>& full, const char* key, std::vector<Widening>& undone) {
  if (base && (!full || *full > *base)) {
    undone.push_back({key, full ? text(*full) : std::string("(unset)")});
    full = base;
  }
}

int strictness(Mode m) {
  switch (m) {
    case Mode::kStrict:
      return 2;
    case Mode::kCompat:
      return 1;
    case Mode::kPermissive:
      return 0;
  }
  return 0;
}

std::set<std::string> platforms(const std::optional<std::vector<std::string>>& p) {
  if (!p) return {"linux", "macos", "wsl"};
  return {p->begin(), p->end()};
}

}  // namespace

Settings narrow_to(const Settings& base, const Settings& full_in, std::vector<Widening>& undone) {
  Settings out = full_in;
  const SandboxSettings& b = base.sandbox;
  SandboxSettings& f = out.sandbox;

  keep_on(b.enabled, f.enabled, "sandbox.enabled", undone);
  keep_on(b.fail_if_unavailable, f.fail_if_unavailable, "sandbox.failIfUnavailable", undone);
  // Every platform the sandbox is on for stays on.
  const auto bp = platforms(b.enabled_platforms), fp = platforms(f.enabled_platforms);
  if (!std::includes(fp.begin(), fp.end(), bp.begin(), bp.end())) {
    std::string list;
    for (const auto& p : fp) list += (list.empty() ? "" : ",") + p;
    undone.push_back({"sandbox.enabledPlatforms", "[" + list + "]"});
    f.enabled_platforms = b.enabled_platforms;
  }
  keep_off(b.auto_allow_bash_if_sandboxed, f.auto_allow_bash_if_sandboxed, "sandbox.autoAllowBashIfSandboxed", undone);
  keep_off(b.allow_unsandboxed_commands, f.allow_unsandboxed_commands, "sandbox.allowUnsandboxedCommands", undone);
  keep_base_entries(b.excluded_commands, f.excluded_commands, "sandbox.excludedCommands", undone);
  // Hiding refusals from the user is not the project's to decide.
  for (auto it = f.ignore_violations.begin(); it != f.ignore_violations.end();) {
    auto in_base = b.ignore_violations.find(it->first);
    const std::vector<std::string> none;
    keep_base_entries(in_base == b.ignore_violations.end() ? none : in_base->second, it->second,
                      "sandbox.ignoreViolations", undone);
    it = it->second.empty() ? f.ignore_violations.erase(it) : std::next(it);
  }

  keep_base_entries(b.network.allowed_domains, f.network.allowed_domains, "sandbox.network.allowedDomains", undone);
  keep_all_entries(b.network.denied_domains, f.network.denied_domains);
  keep_base_entries(b.network.allow_unix_sockets, f.network.allow_unix_sockets, "sandbox.network.allowUnixSockets",
                    undone);
  keep_off(b.network.allow_all_unix_sockets, f.network.allow_all_unix_sockets, "sandbox.network.allowAllUnixSockets",
           undone);
  keep_off(b.network.allow_local_binding, f.network.allow_local_binding, "sandbox.network.allowLocalBinding", undone);
  keep_same(b.network.http_proxy_port, f.network.http_proxy_port, "sandbox.network.httpProxyPort", undone);
  keep_same(b.network.socks_proxy_port, f.network.socks_proxy_port, "sandbox.network.socksProxyPort", undone);

  keep_base_entries(b.filesystem.allow_write, f.filesystem.allow_write, "sandbox.filesystem.allowWrite", undone);
  keep_base_entries(b.filesystem.allow_read, f.filesystem.allow_read, "sandbox.filesystem.allowRead", undone);
  keep_all_entries(b.filesystem.deny_write, f.filesystem.deny_write);
  keep_all_entries(b.filesystem.deny_read, f.filesystem.deny_read);
  keep_off(b.filesystem.disabled, f.filesystem.disabled, "sandbox.filesystem.disabled", undone);

  keep_off(b.enable_weaker_nested_sandbox, f.enable_weaker_nested_sandbox, "sandbox.enableWeakerNestedSandbox", undone);
  keep_same(b.bwrap_path, f.bwrap_path, "sandbox.bwrapPath", undone);
  keep_same(b.audit_log, f.audit_log, "sandbox.auditLog", undone);
  keep_base_entries(b.pass_environment, f.pass_environment, "sandbox.passEnvironment", undone);
  keep_all_entries(b.deny_environment, f.deny_environment);
  keep_all_entries(b.mask_environment, f.mask_environment);
  if (strictness(f.mode) < strictness(b.mode)) {
    undone.push_back({"sandbox.mode", mode_name(f.mode)});
    f.mode = b.mode;
  }
  keep_limit(b.resources.timeout_seconds, f.resources.timeout_seconds, "sandbox.resources.timeoutSeconds", undone);
  keep_limit(b.resources.memory_mb, f.resources.memory_mb, "sandbox.resources.memoryMB", undone);
  keep_limit(b.resources.pids, f.resources.pids, "sandbox.resources.pids", undone);
  keep_limit(b.resources.cpu_seconds, f.resources.cpu_seconds, "sandbox.resources.cpuSeconds", undone);
  keep_limit(b.resources.cpus, f.resources.cpus, "sandbox.resources.cpus", undone);

  // Allow rules grant (Bash(...) without asking, Edit(...) writable, WebFetch(...) hosts); deny and
  // ask rules only take away.
  keep_base_entries(base.permissions.allow, out.permissions.allow, "permissions.allow", undone);
  keep_all_entries(base.permissions.deny, out.permissions.deny);
  keep_all_entries(base.permissions.ask, out.permissions.ask);
  return out;
}

}  // namespace wb
