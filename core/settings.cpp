// pure: parsing, validation and merging of settings text.
#include "core/settings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/domain.hpp"
#include "core/paths.hpp"

namespace wb {
namespace {

using json = nlohmann::json;

enum class Type {
  kBool,
  kPort,
  kPositiveInt,
  kPositiveNumber,
  kString,
  kPath,
  kStringList,
  kPathList,
  kPlatformList,
  kMode,
  kIgnoreMap,
  kObject,
  kCredentials,    // sandbox.credentials: checked by check_credentials
  kNotApplicable,  // a key Claude Code or srt documents that has no meaning here (note: why)
  kRefused,        // a key Claude Code or srt documents that wavebox cannot honour (note: why)
};

struct Field {
  const char* name;
  Type type;
  const std::vector<Field>* children = nullptr;
  const char* note = nullptr;  // kNotApplicable: why it does nothing here
  // Leaving it out (or misspelling it) weakens what the user meant: a near miss refuses the run.
  bool restricts = false;
};

const std::vector<Field> kNetworkFields = {
    {"allowedDomains", Type::kStringList, nullptr, nullptr, true},
    {"deniedDomains", Type::kStringList, nullptr, nullptr, true},
    {"allowUnixSockets", Type::kPathList},
    {"allowAllUnixSockets", Type::kBool},
    {"allowLocalBinding", Type::kBool},
    {"httpProxyPort", Type::kPort},
    {"socksProxyPort", Type::kPort},
    {"allowMachLookup", Type::kNotApplicable, nullptr,
     "macOS Mach services: wavebox's profile allows the few a command needs and no others"},
    {"allowManagedDomainsOnly", Type::kNotApplicable, nullptr,
     "for Claude Code's managed settings; wavebox has no managed layer"},
    {"tlsTerminate", Type::kNotApplicable, nullptr, "wavebox's proxy does not open TLS; hosts are decided by name"},
    {"mitmProxy", Type::kRefused, nullptr,
     "wavebox's proxy cannot route hosts through another proxy; remove it (those hosts would bypass it)"},
    {"parentProxy", Type::kRefused, nullptr, "wavebox's proxy does not chain to an upstream proxy"},
    {"allowAllDomains", Type::kRefused, nullptr,
     "every host is never allowed from a file; use --dangerously-allow-network for one run"},
};
const std::vector<Field> kFilesystemFields = {
    {"allowWrite", Type::kPathList},
    {"denyWrite", Type::kPathList, nullptr, nullptr, true},
    {"denyRead", Type::kPathList, nullptr, nullptr, true},
    {"allowRead", Type::kPathList},
    {"disabled", Type::kBool},
};
const std::vector<Field> kResourceFields = {
    {"timeoutSeconds", Type::kPositiveNumber, nullptr, nullptr, true},
    {"memoryMB", Type::kPositiveInt, nullptr, nullptr, true},
    {"pids", Type::kPositiveInt, nullptr, nullptr, true},
    {"cpuSeconds", Type::kPositiveInt, nullptr, nullptr, true},
    {"cpus", Type::kPositiveNumber, nullptr, nullptr, true},
};
const std::vector<Field> kSandboxFields = {
    {"enabled", Type::kBool, nullptr, nullptr, true},
    {"failIfUnavailable", Type::kBool, nullptr, nullptr, true},
    {"enabledPlatforms", Type::kPlatformList, nullptr, nullptr, true},
    {"autoAllowBashIfSandboxed", Type::kBool, nullptr, nullptr, true},
    {"allowUnsandboxedCommands", Type::kBool, nullptr, nullptr, true},
    {"excludedCommands", Type::kStringList},
    {"ignoreViolations", Type::kIgnoreMap},
    {"network", Type::kObject, &kNetworkFields, nullptr, true},
    {"filesystem", Type::kObject, &kFilesystemFields, nullptr, true},
    {"enableWeakerNestedSandbox", Type::kBool},
    {"bwrapPath", Type::kPath},
    {"auditLog", Type::kPath},
    {"passEnvironment", Type::kStringList},
    {"mode", Type::kMode, nullptr, nullptr, true},
    {"resources", Type::kObject, &kResourceFields, nullptr, true},
    {"credentials", Type::kCredentials, nullptr, nullptr, true},
    {"allowAppleEvents", Type::kNotApplicable, nullptr,
     "macOS Apple Events: wavebox's profile never allows them (nothing more is refused than asked)"},
    {"enableWeakerNetworkIsolation", Type::kNotApplicable, nullptr,
     "macOS trustd for Go's TLS: not needed by wavebox's proxy; the profile stays as strict"},
    {"allowNestedUserNamespaces", Type::kNotApplicable, nullptr,
     "nested user namespaces stay refused inside wavebox's sandbox (seccomp)"},
    {"ripgrep", Type::kNotApplicable, nullptr, "wavebox does not use ripgrep"},
    {"socatPath", Type::kNotApplicable, nullptr, "wavebox relays the network with its own proxy, not socat"},
};
const std::vector<Field> kPermissionFields = {
    {"allow", Type::kStringList},
    {"deny", Type::kStringList, nullptr, nullptr, true},
    {"ask", Type::kStringList, nullptr, nullptr, true},
};

const char* type_text(Type t) {
  switch (t) {
    case Type::kBool:
      return "a boolean";
    case Type::kPort:
      return "a port number (1-65535)";
    case Type::kPositiveInt:
      return "a positive integer";
    case Type::kPositiveNumber:
      return "a positive number";
    case Type::kString:
      return "a string";
    case Type::kPath:
      return "a path string";
    case Type::kStringList:
    case Type::kPathList:
      return "an array of strings";
    case Type::kPlatformList:
      return "an array of \"macos\", \"linux\", \"wsl\"";
    case Type::kMode:
      return "one of \"strict\", \"compat\", \"permissive\" (or Claude Code's \"auto-allow\", \"regular\")";
    case Type::kCredentials:
      return "an object {files: [{path, mode}], envVars: [{name, mode}]}";
    case Type::kNotApplicable:
    case Type::kRefused:
      return "anything";
    case Type::kIgnoreMap:
      return "an object mapping command patterns to arrays of strings";
    case Type::kObject:
      return "an object";
  }
  return "?";
}

const char* json_kind(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return "a number";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    default:
      return "something else";
  }
}

bool all_strings(const json& v) {
  return v.is_array() && std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_string(); });
}

bool type_ok(const json& v, Type t) {
  switch (t) {
    case Type::kBool:
      return v.is_boolean();
    case Type::kPort:
      return v.is_number_integer() && v.get<long long>() >= 1 && v.get<long long>() <= 65535;
    case Type::kPositiveInt:
      return v.is_number_integer() && v.get<long long>() > 0;
    case Type::kPositiveNumber:
      return v.is_number() && v.get<double>() > 0;
    case Type::kString:
    case Type::kPath:
      return v.is_string() && !v.get<std::string>().empty();
    case Type::kStringList:
    case Type::kPathList:
      return all_strings(v);
    case Type::kPlatformList:
      return all_strings(v) && std::all_of(v.begin(), v.end(), [](const json& e) {
               auto s = e.get<std::string>();
               return s == "macos" || s == "linux" || s == "wsl";
             });
    case Type::kMode:
      return v.is_string() &&
             (v == "strict" || v == "compat" || v == "permissive" || v == "auto-allow" || v == "regular");
    case Type::kCredentials:
      return v.is_object();
    case Type::kNotApplicable:
    case Type::kRefused:
      return true;
    case Type::kIgnoreMap:
      return v.is_object() && std::all_of(v.begin(), v.end(), [](const json& e) { return all_strings(e); });
    case Type::kObject:
      return v.is_object();
  }
  return false;
}

std::string lowered(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Levenshtein distance, case folded.
size_t distance(std::string_view a_in, std::string_view b_in) {
  const std::string a = lowered(a_in), b = lowered(b_in);
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// A key a user most likely meant when they wrote `unknown`: the same name in another case, a
// near spelling (alowedDomains), or a long shared start (allowedHosts).
bool near(std::string_view unknown, std::string_view known, bool prefixes) {
  if (lowered(unknown) == lowered(known)) return true;
  if (std::min(unknown.size(), known.size()) >= 4 && distance(unknown, known) <= 2) return true;
  if (!prefixes) return false;
  size_t common = 0;
  while (common < unknown.size() && common < known.size() &&
         std::tolower(static_cast<unsigned char>(unknown[common])) ==
             std::tolower(static_cast<unsigned char>(known[common]))) {
    ++common;
  }
  return common >= 6;
}

struct KnownKey {
  std::string path;  // "sandbox.network.allowedDomains"
  std::string leaf;
  std::string parent;
  bool restricts = false;
};

std::vector<KnownKey> known_keys() {
  std::vector<KnownKey> out;
  std::function<void(const std::string&, const std::vector<Field>&, bool)> walk =
      [&](const std::string& parent, const std::vector<Field>& fields, bool restricts) {
        for (const auto& f : fields) {
          out.push_back({parent + "." + f.name, f.name, parent, restricts || f.restricts});
          if (f.children) walk(parent + "." + f.name, *f.children, restricts && f.restricts);
        }
      };
  walk("sandbox", kSandboxFields, false);
  walk("permissions", kPermissionFields, false);
  return out;
}

// An unknown key: said with the key it is closest to; refused when that key restricts (a
// misspelled denyRead, allowedDomains at the wrong level), since the run would go on without
// the restriction the user wrote.
Status unknown_key(const std::string& where, const std::string& key, const std::string& file,
                   std::vector<std::string>& warnings) {
  const std::string key_path = where + "." + key;
  const KnownKey* best = nullptr;
  const auto keys = known_keys();
  for (const auto& k : keys) {  // the same name at another level
    if (k.leaf == key) best = &k;
  }
  for (size_t pass = 0; !best && pass < 2; ++pass) {
    for (const auto& k : keys) {
      if ((pass == 0) != (k.parent == where)) continue;  // the same level first
      if (near(key, k.leaf, pass == 0)) {
        best = &k;
        break;
      }
    }
  }
  if (!best) {
    warnings.push_back(fmt::format("{}: unknown key \"{}\" is ignored", file, key_path));
    return ok_status();
  }
  if (best->restricts) {
    return make_error(ErrorKind::kSettings,
                      fmt::format("{}: unknown key \"{}\": did you mean \"{}\"? (refused: the run would go on "
                                  "without the restriction it looks like)",
                                  file, key_path, best->path));
  }
  warnings.push_back(
      fmt::format("{}: unknown key \"{}\" is ignored; did you mean \"{}\"?", file, key_path, best->path));
  return ok_status();
}

// sandbox.credentials (Claude Code): files and variables denied or masked. What wavebox cannot
// honour (injecting the real value into requests to named hosts, AWS signing) is refused, never
// dropped: the user's secret would reach the command or the request would fail unexplained.
Status check_credentials(const json& c, const std::string& file) {
  const std::string where = "sandbox.credentials";
  auto bad = [&](const std::string& what) {
    return make_error(ErrorKind::kSettings, fmt::format("{}: \"{}\" {}", file, where, what));
  };
  auto cannot_inject = [&](const std::string& key) {
    return make_error(ErrorKind::kSettings,
                      fmt::format("{}: \"{}.{}\": wavebox cannot put a secret into requests (its proxy does not "
                                  "open TLS); remove it, and pass the variable or file to the command if it must "
                                  "have it",
                                  file, where, key));
  };
  for (auto it = c.begin(); it != c.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if (k == "files" || k == "envVars") {
      if (!v.is_array()) return bad("." + k + " must be an array of objects");
      for (size_t i = 0; i < v.size(); ++i) {
        const json& e = v[i];
        const std::string at = fmt::format(".{}[{}]", k, i);
        if (!e.is_object()) return bad(at + " must be an object");
        const char* id = k == "files" ? "path" : "name";
        if (!e.contains(id) || !e[id].is_string() || e[id].get<std::string>().empty()) {
          return bad(fmt::format("{} needs \"{}\" (a string)", at, id));
        }
        if (k == "envVars") {
          const std::string n = e["name"].get<std::string>();
          const bool ident = (std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_') &&
                             std::all_of(n.begin(), n.end(), [](char ch) {
                               return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
                             });
          if (!ident) return bad(fmt::format("{}.name: \"{}\" is not a variable name", at, n));
        }
        if (!e.contains("mode") || !(e["mode"] == "deny" || e["mode"] == "mask")) {
          return bad(at + ".mode must be \"deny\" or \"mask\"");
        }
        if (e.contains("injectHosts") && !(e["injectHosts"].is_array() && e["injectHosts"].empty())) {
          return cannot_inject(at.substr(1) + ".injectHosts");
        }
      }
    } else if (k == "allowPlaintextInject") {
      if (!v.is_boolean()) return bad(".allowPlaintextInject must be a boolean");
    } else if (k == "awsPairs" || k == "sigv4") {
      if (!(v.is_array() && v.empty())) return cannot_inject(k);
    } else {
      return bad(fmt::format("has an unknown key \"{}\" (files, envVars)", k));
    }
  }
  return ok_status();
}

// JSON null for an optional value means "not set" (Anthropic's examples write
// "httpProxyPort": null).
void strip_nulls(json& j) {
  if (!j.is_object()) return;
  for (auto it = j.begin(); it != j.end();) {
    if (it->is_null()) {
      it = j.erase(it);
    } else {
      strip_nulls(*it);
      ++it;
    }
  }
}

// Checks one object against its field table. Unknown keys are warnings, or errors when they look
// like a restriction; wrong types are errors naming the file and the key path.
Status validate(const json& obj, const std::vector<Field>& fields, const std::string& where, const std::string& file,
                std::vector<std::string>& warnings) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    std::string key_path = where + "." + it.key();
    auto f = std::find_if(fields.begin(), fields.end(), [&](const Field& x) { return it.key() == x.name; });
    if (f == fields.end()) {
      auto st = unknown_key(where, it.key(), file, warnings);
      if (!st) return st;
      continue;
    }
    if (f->type == Type::kNotApplicable) continue;  // known, and said in the man page's table
    if (f->type == Type::kRefused) {
      return make_error(ErrorKind::kSettings, fmt::format("{}: \"{}\": {}", file, key_path, f->note));
    }
    if (f->type == Type::kCredentials) {
      if (!it.value().is_object()) {
        return make_error(ErrorKind::kSettings, fmt::format("{}: \"{}\" must be {}, got {}", file, key_path,
                                                            type_text(f->type), json_kind(it.value())));
      }
      auto st = check_credentials(it.value(), file);
      if (!st) return st;
      continue;
    }
    if (!type_ok(it.value(), f->type)) {
      return make_error(ErrorKind::kSettings, fmt::format("{}: \"{}\" must be {}, got {}", file, key_path,
                                                          type_text(f->type), json_kind(it.value())));
    }
    if (f->type == Type::kObject) {
      auto st = validate(it.value(), *f->children, key_path, file, warnings);
      if (!st) return st;
    }
    if (key_path == "sandbox.network.allowedDomains" || key_path == "sandbox.network.deniedDomains") {
      for (size_t i = 0; i < it.value().size(); ++i) {
        const auto& e = it.value()[i].get_ref<const std::string&>();
        if (!parse_pattern(e)) {
          return make_error(ErrorKind::kSettings,
                            fmt::format("{}: \"{}[{}]\": \"{}\" is not a valid domain pattern (use "
                                        "\"example.com\", \"*.example.com\", optionally with \":PORT\")",
                                        file, key_path, i, e));
        }
      }
    }
  }
  return ok_status();
}

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
    // SPEC §2: a user who wrote rules meant them; say the sandbox is off, and how to turn it on.
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

  // Edit()/Read() rules feed the filesystem policy (SPEC §2).
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
