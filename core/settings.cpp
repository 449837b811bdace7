// pure: parsing, validation and merging of settings text.
#include "core/settings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/domain.hpp"
#include "core/paths.hpp"
#include "core/settings_schema.hpp"

namespace wb {
namespace {

using json = nlohmann::json;

using namespace settings_detail;

// "dir/**" (Claude Code's usual form in write rules) is the directory itself, all below it.
std::string without_tree_glob(std::string p) {
  while (p.size() > 3 && p.compare(p.size() - 3, 3, "/**") == 0) p.erase(p.size() - 3);
  return p;
}

void resolve_list(json& arr, const std::string& home, const std::string& dir) {
  for (auto& e : arr) e = without_tree_glob(paths::resolve(e.get<std::string>(), home, dir));
}

// A permission rule's path (Read(...), Edit(...)) as Claude Code reads it: "//x" from the root,
// "~/x" from home, "/x" from the settings' project (not the root), "./x" and "x" from there too.
std::string resolve_rule_path(const std::string& raw, const std::string& home, const std::string& project) {
  if (raw.rfind("//", 0) == 0) return paths::normalize(raw.substr(1));
  if (raw == "~" || raw.rfind("~/", 0) == 0) return paths::resolve(raw, home, project);
  if (!raw.empty() && raw[0] == '/') return paths::normalize(project + raw);
  return paths::resolve(raw, home, project);
}

// Edit(path) and Read(path) carry a path that resolves like a filesystem setting.
void resolve_rules(json& arr, const std::string& home, const std::string& dir, bool claude) {
  for (auto& e : arr) {
    std::string s = e.get<std::string>();
    for (const char* tool : {"Edit(", "Read(", "Write("}) {
      std::string t = tool;
      if (s.size() > t.size() + 1 && s.compare(0, t.size(), t) == 0 && s.back() == ')') {
        std::string inner = s.substr(t.size(), s.size() - t.size() - 1);
        e = t + without_tree_glob(claude ? resolve_rule_path(inner, home, dir) : paths::resolve(inner, home, dir)) +
            ")";
        break;
      }
    }
  }
}

// Claude Code merge semantics: objects merge deeply, arrays concatenate without duplicates,
// scalars take the later value.
void merge_into(json& base, const json& over) {
  if (!base.is_object() || !over.is_object()) {
    base = over;
    return;
  }
  for (auto it = over.begin(); it != over.end(); ++it) {
    auto found = base.find(it.key());
    if (found == base.end()) {
      base[it.key()] = it.value();
    } else if (found->is_object() && it->is_object()) {
      merge_into(*found, *it);
    } else if (found->is_array() && it->is_array()) {
      for (const auto& e : *it) {
        if (std::find(found->begin(), found->end(), e) == found->end()) found->push_back(e);
      }
    } else {
      *found = *it;
    }
  }
}

std::pair<size_t, size_t> line_col(const std::string& text, size_t byte) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < text.size() && i + 1 < byte; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

std::vector<std::string> strings(const json& obj, const char* key) {
  std::vector<std::string> out;
  auto it = obj.find(key);
  if (it != obj.end()) {
    for (const auto& e : *it) out.push_back(e.get<std::string>());
  }
  return out;
}

template <class T>
void get_if(const json& obj, const char* key, T& out) {
  auto it = obj.find(key);
  if (it != obj.end()) out = it->get<T>();
}

template <class T>
void get_opt(const json& obj, const char* key, std::optional<T>& out) {
  auto it = obj.find(key);
  if (it != obj.end()) out = it->get<T>();
}

Settings convert(const json& merged) {
  Settings s;
  static const json kEmpty = json::object();
  const json& sb = merged.contains("sandbox") ? merged["sandbox"] : kEmpty;
  auto& o = s.sandbox;
  // Settings that do not speak of the sandbox (a Claude Code file with only permissions, say)
  // do not turn it off: the built-in default applies. Only "enabled": false does.
  o.enabled = !merged.contains("sandbox");
  get_if(sb, "enabled", o.enabled);
  if (!sb.contains("enabled") && sb.is_object() && !sb.empty()) {
    // A user who wrote rules meant them; say the sandbox is off, and how to turn it on.
    s.warnings.push_back(
        "the sandbox is OFF: the settings have a \"sandbox\" section without \"enabled\"; add "
        "\"enabled\": true to it to run commands sandboxed (or \"enabled\": false to silence this)");
  }
  get_if(sb, "failIfUnavailable", o.fail_if_unavailable);
  if (sb.contains("enabledPlatforms")) o.enabled_platforms = strings(sb, "enabledPlatforms");
  get_if(sb, "autoAllowBashIfSandboxed", o.auto_allow_bash_if_sandboxed);
  get_if(sb, "allowUnsandboxedCommands", o.allow_unsandboxed_commands);
  o.excluded_commands = strings(sb, "excludedCommands");
  if (sb.contains("ignoreViolations")) {
    for (auto it = sb["ignoreViolations"].begin(); it != sb["ignoreViolations"].end(); ++it) {
      o.ignore_violations[it.key()] = it->get<std::vector<std::string>>();
    }
  }
  const json& net = sb.contains("network") ? sb["network"] : kEmpty;
  o.network.allowed_domains = strings(net, "allowedDomains");
  o.network.denied_domains = strings(net, "deniedDomains");
  o.network.allow_unix_sockets = strings(net, "allowUnixSockets");
  get_if(net, "allowAllUnixSockets", o.network.allow_all_unix_sockets);
  get_if(net, "allowLocalBinding", o.network.allow_local_binding);
  get_opt(net, "httpProxyPort", o.network.http_proxy_port);
  get_opt(net, "socksProxyPort", o.network.socks_proxy_port);
  const json& fs = sb.contains("filesystem") ? sb["filesystem"] : kEmpty;
  o.filesystem.allow_write = strings(fs, "allowWrite");
  o.filesystem.deny_write = strings(fs, "denyWrite");
  o.filesystem.deny_read = strings(fs, "denyRead");
  o.filesystem.allow_read = strings(fs, "allowRead");
  get_if(fs, "disabled", o.filesystem.disabled);
  get_if(sb, "enableWeakerNestedSandbox", o.enable_weaker_nested_sandbox);
  get_opt(sb, "bwrapPath", o.bwrap_path);
  get_opt(sb, "auditLog", o.audit_log);
  o.pass_environment = strings(sb, "passEnvironment");
  if (sb.contains("mode")) {
    auto m = sb["mode"].get<std::string>();
    o.mode = m == "strict" ? Mode::kStrict : m == "permissive" ? Mode::kPermissive : Mode::kCompat;
    // Claude Code's /sandbox panel writes its approval mode here: auto-allow runs sandboxed
    // commands without asking, regular asks as without a sandbox. The boundary is the same.
    if ((m == "auto-allow" || m == "regular") && !sb.contains("autoAllowBashIfSandboxed")) {
      o.auto_allow_bash_if_sandboxed = m == "auto-allow";
    }
  }
  s.sandbox_section = merged.contains("sandbox");
  if (sb.contains("credentials")) {
    const json& c = sb["credentials"];
    if (c.contains("files")) {
      for (const auto& f : c["files"]) {
        const std::string p = f["path"].get<std::string>();
        if (std::find(o.filesystem.deny_read.begin(), o.filesystem.deny_read.end(), p) ==
            o.filesystem.deny_read.end()) {
          o.filesystem.deny_read.push_back(p);
        }
        if (f["mode"] == "mask") {
          s.notes.push_back(fmt::format(
              "sandbox.credentials: {} is masked by being unreadable (wavebox makes no placeholder copy of a file)",
              p));
        }
      }
    }
    if (c.contains("envVars")) {
      for (const auto& e : c["envVars"]) {
        (e["mode"] == "mask" ? o.mask_environment : o.deny_environment).push_back(e["name"].get<std::string>());
      }
    }
  }
  const json& res = sb.contains("resources") ? sb["resources"] : kEmpty;
  get_opt(res, "timeoutSeconds", o.resources.timeout_seconds);
  get_opt(res, "memoryMB", o.resources.memory_mb);
  get_opt(res, "pids", o.resources.pids);
  get_opt(res, "cpuSeconds", o.resources.cpu_seconds);
  get_opt(res, "cpus", o.resources.cpus);

  const json& perm = merged.contains("permissions") ? merged["permissions"] : kEmpty;
  s.permissions.allow = strings(perm, "allow");
  s.permissions.deny = strings(perm, "deny");
  s.permissions.ask = strings(perm, "ask");

  // Edit()/Read() rules feed the filesystem policy (wavebox-settings(5)).
  auto rule_path = [](const std::string& rule, const char* tool) -> std::optional<std::string> {
    std::string t = tool;
    if (rule.size() > t.size() + 1 && rule.compare(0, t.size(), t) == 0 && rule.back() == ')') {
      return rule.substr(t.size(), rule.size() - t.size() - 1);
    }
    return std::nullopt;
  };
  auto add_unique = [](std::vector<std::string>& v, const std::string& x) {
    if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
  };
  auto webfetch = [](const std::string& rule) -> std::optional<std::string> {
    const std::string t = "WebFetch(domain:";
    if (rule.size() > t.size() + 1 && rule.compare(0, t.size(), t) == 0 && rule.back() == ')') {
      return rule.substr(t.size(), rule.size() - t.size() - 1);
    }
    return std::nullopt;
  };
  for (const auto& r : s.permissions.allow) {
    if (auto d = webfetch(r); d && parse_pattern(*d)) add_unique(o.network.allowed_domains, *d);
  }
  for (const auto& r : s.permissions.deny) {
    if (auto d = webfetch(r); d && parse_pattern(*d)) add_unique(o.network.denied_domains, *d);
  }
  for (const auto& r : s.permissions.allow) {
    if (auto p = rule_path(r, "Edit(")) add_unique(o.filesystem.allow_write, *p);
    if (auto p = rule_path(r, "Write(")) add_unique(o.filesystem.allow_write, *p);
  }
  for (const auto& r : s.permissions.deny) {
    if (auto p = rule_path(r, "Edit(")) add_unique(o.filesystem.deny_write, *p);
    if (auto p = rule_path(r, "Write(")) add_unique(o.filesystem.deny_write, *p);
    if (auto p = rule_path(r, "Read(")) add_unique(o.filesystem.deny_read, *p);
  }
  return s;
}

}  // namespace

Result<Settings> load_settings(const std::vector<SettingsSource>& sources, const std::string& home) {
  json merged = json::object();
  std::vector<std::string> warnings, notes;
  for (const auto& src : sources) {
    const std::string& file = src.path;
    bool blank = std::all_of(src.text.begin(), src.text.end(),
                             [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; });
    if (blank) {
      return make_error(ErrorKind::kSettings, fmt::format("{}: the file is empty (expected a JSON object)", file));
    }
    json doc;
    try {
      doc = json::parse(src.text);
    } catch (const json::parse_error& e) {
      auto [line, col] = line_col(src.text, e.byte);
      std::string what = e.what();
      // Never the text around the error ("last read: ..."): a settings path a project made a link
      // could name a secret, and the message goes to a terminal, a log, an agent's model.
      if (auto lr = what.find("; last read:"); lr != std::string::npos) what.erase(lr);
      auto pos = what.find("parse error");
      return make_error(ErrorKind::kSettings, fmt::format("{}:{}:{}: not valid JSON: {}", file, line, col,
                                                          pos == std::string::npos ? what : what.substr(pos)));
    } catch (const json::exception& e) {
      // Not a syntax error but still unreadable (a number out of range, ...): found by fuzzing.
      return make_error(ErrorKind::kSettings, fmt::format("{}: not valid JSON: {}", file, e.what()));
    }
    if (!doc.is_object()) {
      return make_error(ErrorKind::kSettings,
                        fmt::format("{}: the top level must be a JSON object, got {}", file, json_kind(doc)));
    }
    // A "sandbox" or "permissions" key spelled otherwise would read as no sandbox, or no rules,
    // at all: refused, with the fix.
    for (const auto& [key, value] : doc.items()) {
      for (const char* section : {"sandbox", "permissions"}) {
        if (key != section && (near(key, section, false) || lowered(key) == "sand_box" || lowered(key) == "sand-box")) {
          return make_error(ErrorKind::kSettings,
                            fmt::format("{}: unknown key \"{}\": the section is spelled \"{}\"", file, key, section));
        }
      }
    }
    for (const char* section : {"sandbox", "permissions"}) {
      if (doc.contains(section)) strip_nulls(doc[section]);
    }
    // srt's own format (what users migrate from): its keys at the top level, the sandbox on, its
    // relative paths against the working directory (as srt resolves them). Read as
    // {"sandbox": {"enabled": true, ...}}.
    bool srt = false;
    if (!doc.contains("sandbox") && (doc.contains("filesystem") || doc.contains("network"))) {
      srt = true;
      json sb = json::object();
      sb["enabled"] = true;
      for (const char* k : {"filesystem", "network", "credentials", "ignoreViolations", "enableWeakerNestedSandbox",
                            "enableWeakerNetworkIsolation", "allowAppleEvents", "ripgrep", "bwrapPath", "socatPath"}) {
        if (doc.contains(k)) {
          sb[k] = doc[k];
          doc.erase(k);
        }
      }
      strip_nulls(sb);
      doc["sandbox"] = std::move(sb);
      notes.push_back(fmt::format("{}: read as sandbox-runtime (srt) settings: the sandbox is on", file));
    }
    if (doc.contains("sandbox")) {
      if (!doc["sandbox"].is_object()) {
        return make_error(ErrorKind::kSettings,
                          fmt::format("{}: \"sandbox\" must be an object, got {}", file, json_kind(doc["sandbox"])));
      }
      auto st = validate(doc["sandbox"], kSandboxFields, "sandbox", file, warnings);
      if (!st) return st.error();
    }
    if (doc.contains("permissions")) {
      if (!doc["permissions"].is_object()) {
        return make_error(ErrorKind::kSettings, fmt::format("{}: \"permissions\" must be an object, got {}", file,
                                                            json_kind(doc["permissions"])));
      }
      json only;
      for (const char* k : {"allow", "deny", "ask"}) {
        if (doc["permissions"].contains(k)) only[k] = doc["permissions"][k];
      }
      // Other permissions keys are the host agent's (defaultMode, additionalDirectories, ...);
      // one that is a misspelled rule list is not.
      for (const auto& [k, v] : doc["permissions"].items()) {
        if (only.contains(k)) continue;
        for (const char* list : {"allow", "deny", "ask"}) {
          if (lowered(k) == list || (k.size() <= 6 && distance(k, list) <= 1)) {
            return make_error(
                ErrorKind::kSettings,
                fmt::format("{}: unknown key \"permissions.{}\": did you mean \"permissions.{}\"?", file, k, list));
          }
        }
      }
      std::vector<std::string> ignored;  // other permissions keys belong to the host agent
      auto st = validate(only, kPermissionFields, "permissions", file, ignored);
      if (!st) return st.error();
    }
    // Relative paths: against the file's directory, but a project's .claude/ and .wave/ files resolve against the
    // project (the folder holding them); the user's own files against their own folder, as Claude Code does for
    // ~/.claude.
    std::string dir = paths::parent(file);
    const bool claude = paths::basename(dir) == ".claude";
    const bool project_file = (claude || paths::basename(dir) == ".wave") && dir != paths::join(home, ".claude") &&
                              dir != paths::join(home, ".wave");
    if (project_file) dir = paths::parent(dir);
    if (srt && !src.cwd.empty()) dir = src.cwd;
    json kept = json::object();
    if (doc.contains("sandbox")) {
      kept["sandbox"] = doc["sandbox"];
      json& sb = kept["sandbox"];
      if (sb.contains("filesystem")) {
        for (const char* k : {"allowWrite", "denyWrite", "denyRead", "allowRead"}) {
          if (sb["filesystem"].contains(k)) resolve_list(sb["filesystem"][k], home, dir);
        }
      }
      if (sb.contains("network") && sb["network"].contains("allowUnixSockets")) {
        resolve_list(sb["network"]["allowUnixSockets"], home, dir);
      }
      for (const char* k : {"bwrapPath", "auditLog"}) {
        if (sb.contains(k) && sb[k].is_string()) sb[k] = paths::resolve(sb[k].get<std::string>(), home, dir);
      }
      if (sb.contains("credentials") && sb["credentials"].contains("files")) {
        for (auto& f : sb["credentials"]["files"]) {
          f["path"] = without_tree_glob(paths::resolve(f["path"].get<std::string>(), home, dir));
        }
      }
    }
    if (doc.contains("permissions")) {
      for (const char* k : {"allow", "deny", "ask"}) {
        if (doc["permissions"].contains(k)) {
          kept["permissions"][k] = doc["permissions"][k];
          resolve_rules(kept["permissions"][k], home, dir, claude);
        }
      }
    }
    merge_into(merged, kept);
  }
  Settings s = convert(merged);
  warnings.insert(warnings.end(), s.warnings.begin(), s.warnings.end());
  s.warnings = std::move(warnings);
  s.notes.insert(s.notes.end(), notes.begin(), notes.end());
  return s;
}

std::vector<SettingsKey> settings_keys() {
  std::vector<SettingsKey> out;
  auto kind = [](Type t) -> const char* {
    switch (t) {
      case Type::kBool:
        return "boolean";
      case Type::kPort:
      case Type::kPositiveInt:
        return "integer";
      case Type::kPositiveNumber:
        return "number";
      case Type::kString:
      case Type::kPath:
      case Type::kMode:
        return "string";
      case Type::kStringList:
      case Type::kPathList:
      case Type::kPlatformList:
        return "array";
      case Type::kIgnoreMap:
      case Type::kObject:
      case Type::kCredentials:
        return "object";
      case Type::kNotApplicable:
      case Type::kRefused:
        return "";
    }
    return "?";
  };
  std::function<void(const std::string&, const std::vector<Field>&)> walk = [&](const std::string& prefix,
                                                                                const std::vector<Field>& fields) {
    for (const auto& f : fields) {
      // Keys of other platforms or tools that do nothing here, or are refused, are in the man
      // page's table of such keys, not in the schema.
      if (f.type == Type::kNotApplicable || f.type == Type::kRefused) continue;
      out.push_back({prefix + f.name, kind(f.type)});
      if (f.children) walk(prefix + f.name + ".", *f.children);
    }
  };
  walk("sandbox.", kSandboxFields);
  walk("permissions.", kPermissionFields);
  return out;
}

std::vector<std::string> discoverable_settings_files(const std::string& home, const std::string& cwd) {
  return {paths::join(home, ".claude/settings.json"), paths::join(home, ".wave/settings.json"),
          paths::join(cwd, ".claude/settings.json"),  paths::join(cwd, ".claude/settings.local.json"),
          paths::join(cwd, ".wave/settings.json"),    paths::join(cwd, ".wave/settings.local.json")};
}

Settings default_settings() {
  Settings s;
  s.sandbox.enabled = true;
  s.builtin_default = true;
  return s;
}

const std::vector<std::string>& sensitive_home_paths() {
  static const std::vector<std::string> k = {
      ".ssh",
      ".aws",
      ".gnupg",
      ".config/gh",
      ".docker/config.json",
      ".kube",
      ".netrc",
      ".git-credentials",
      // Agents' and clouds' credential stores, password managers, keyrings, shell histories
      // (commands typed with secrets in them). npm, pip and git need none of these.
      ".claude/.credentials.json",
      ".codex/auth.json",
      ".config/gcloud",
      "Library/Keychains",  // macOS
      ".azure",
      ".pgpass",
      ".vault-token",
      ".config/git/credentials",
      ".cargo/credentials",
      ".cargo/credentials.toml",
      ".gem/credentials",
      ".terraform.d/credentials.tfrc.json",
      ".config/hub",
      ".config/op",
      ".password-store",
      ".local/share/keyrings",
      ".pypirc",
      ".bash_history",
      ".zsh_history",
      ".python_history",
      ".psql_history",
      ".mysql_history",
      ".node_repl_history",
      ".lesshst",
      // Cloud and storage tools' keys, build tools' server passwords, editors' and browsers' tokens
      // and cookies, more shells' histories.
      ".s3cfg",
      ".boto",
      ".config/rclone",
      ".m2/settings.xml",
      ".m2/settings-security.xml",
      ".gradle/gradle.properties",
      ".config/github-copilot",
      ".mozilla",
      ".config/google-chrome",
      ".config/chromium",
      ".config/BraveSoftware",
      "Library/Application Support/Google/Chrome",  // macOS
      "Library/Application Support/Firefox",        // macOS
      ".local/share/fish/fish_history",
      ".local/share/atuin",
      ".histfile",
      ".sh_history",
  };
  return k;
}

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kStrict:
      return "strict";
    case Mode::kCompat:
      return "compat";
    case Mode::kPermissive:
      return "permissive";
  }
  return "?";
}

}  // namespace wb
