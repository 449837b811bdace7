#pragma once
// The settings schema (Claude Code's `sandbox` and `permissions` sections plus wavebox's
// additions), its validation, and the merge of several files into one value.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace wb {

enum class Mode { kStrict, kCompat, kPermissive };

struct NetworkSettings {
  std::vector<std::string> allowed_domains;
  std::vector<std::string> denied_domains;
  std::vector<std::string> allow_unix_sockets;
  bool allow_all_unix_sockets = false;
  bool allow_local_binding = false;
  std::optional<int> http_proxy_port;
  std::optional<int> socks_proxy_port;
  // --dangerously-allow-network: every host through the proxy, for one run; never from a file.
  bool allow_all_hosts = false;
};

// Paths here are already absolute: resolved against their settings file's directory.
struct FilesystemSettings {
  std::vector<std::string> allow_write;
  std::vector<std::string> deny_write;
  std::vector<std::string> deny_read;
  std::vector<std::string> allow_read;
  bool disabled = false;
};

struct ResourceSettings {
  std::optional<double> timeout_seconds;
  std::optional<long long> memory_mb;
  std::optional<long long> pids;
  std::optional<long long> cpu_seconds;
  std::optional<double> cpus;  // a share of CPU time (cgroup cpu.max), in CPUs
};

struct SandboxSettings {
  bool enabled = false;
  bool fail_if_unavailable = false;
  std::optional<std::vector<std::string>> enabled_platforms;  // absent: every platform
  bool auto_allow_bash_if_sandboxed = true;
  bool allow_unsandboxed_commands = true;
  std::vector<std::string> excluded_commands;
  std::map<std::string, std::vector<std::string>> ignore_violations;
  NetworkSettings network;
  FilesystemSettings filesystem;
  bool enable_weaker_nested_sandbox = false;
  std::optional<std::string> bwrap_path;
  std::optional<std::string> audit_log;  // sandbox.auditLog: one JSON line per run, appended
  // Credential variables (core/secrets.hpp) that reach the command anyway: names or PREFIX*.
  std::vector<std::string> pass_environment;
  // sandbox.credentials envVars: removed from the command's environment, or replaced by a
  // placeholder (whatever passEnvironment or the mode say).
  std::vector<std::string> deny_environment;
  std::vector<std::string> mask_environment;
  Mode mode = Mode::kCompat;
  ResourceSettings resources;
};

struct PermissionRules {
  std::vector<std::string> allow;
  std::vector<std::string> deny;
  std::vector<std::string> ask;
};

struct SettingsSource {
  std::string path;  // absolute path of the file, for messages and its write protection
  std::string text;  // its contents
  std::string cwd;   // the working directory: where an srt file's relative paths resolve (srt's way)
};

struct Settings {
  SandboxSettings sandbox;
  PermissionRules permissions;
  std::vector<std::string> warnings;  // unknown keys etc., to print once
  std::vector<std::string> notes;     // said under -v and by doctor only (the srt format, ...)
  bool builtin_default = false;       // no file was found: the built-in default profile
  bool sandbox_section = false;       // some file had a "sandbox" section (or was srt's format)
};

// Parses, validates and merges the sources in order (later wins). Relative filesystem paths and
// Edit()/Read() rule paths resolve against each file's own directory; "~" against home.
Result<Settings> load_settings(const std::vector<SettingsSource>& sources, const std::string& home);

// Every key the parser knows, as a dotted path ("sandbox.network.allowedDomains") with its JSON
// type ("boolean", "integer", "number", "string", "array", "object"): the schema
// (docs/settings.schema.json) and the man page are checked against it.
struct SettingsKey {
  std::string path;
  std::string type;
};
std::vector<SettingsKey> settings_keys();

// The settings files wavebox reads when none is named, in the order they merge (later wins):
// Claude Code's user file, wavebox's, then the project's Claude Code files and wavebox's.
// Every one of them is write-protected inside the sandbox, existing or not.
std::vector<std::string> discoverable_settings_files(const std::string& home, const std::string& cwd);

// The built-in default profile (wavebox-settings(5)): sandbox on, everything else at its default.
Settings default_settings();

// Credential locations whose reads are denied unless mode is permissive (relative to home).
const std::vector<std::string>& sensitive_home_paths();

const char* mode_name(Mode m);

}  // namespace wb
