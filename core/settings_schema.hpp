#pragma once
// pure. Inside core/settings: the field table of the settings schema (each key's type, whether it
// restricts, what a key of another platform means here) and its checks (types, unknown keys and
// their nearest known key, credentials, nulls). core/settings.cpp reads, merges and converts.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace wb::settings_detail {

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

extern const std::vector<Field> kNetworkFields, kFilesystemFields, kResourceFields, kSandboxFields, kPermissionFields;

const char* type_text(Type t);
const char* json_kind(const nlohmann::json& v);
std::string lowered(std::string_view s);
// Levenshtein distance, case folded.
size_t distance(std::string_view a, std::string_view b);
// A key a user most likely meant when they wrote `unknown` (prefixes: a long shared start counts).
bool near(std::string_view unknown, std::string_view known, bool prefixes);
// JSON null for an optional value means "not set".
void strip_nulls(nlohmann::json& j);
// Checks one object against its field table (types; unknown keys said, or refused when they look
// like a restriction; credentials).
Status validate(const nlohmann::json& obj, const std::vector<Field>& fields, const std::string& where,
                const std::string& file, std::vector<std::string>& warnings);

}  // namespace wb::settings_detail
