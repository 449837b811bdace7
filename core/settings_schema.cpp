// pure: the settings schema's field table and its checks (core/settings_schema.hpp).
#include "core/settings_schema.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>

#include "core/domain.hpp"

namespace wb::settings_detail {

using json = nlohmann::json;

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

}  // namespace wb::settings_detail
