#pragma once
// Claude Code's Bash rule grammar: "Bash" (every command), "Bash(npm run build)" exact,
// "Bash(npm run test:*)" prefix, "Bash(git commit *)" wildcard ("*" any text, "\*" a literal
// star, a trailing " *" also matches no arguments). excludedCommands use the same grammar
// without "Bash(...)". Pure.
#include <optional>
#include <string>

namespace wb {

struct CommandPattern {
  enum class Kind { kAny, kExact, kPrefix, kWildcard } kind = Kind::kAny;
  std::string text;  // exact text, prefix, or wildcard pattern
};

// "Bash(...)" or "Bash"; nullopt for rules of other tools (Edit, Read, WebFetch, ...).
std::optional<CommandPattern> parse_bash_rule(const std::string& rule);
// An excludedCommands entry.
CommandPattern parse_command_pattern(const std::string& pattern);
bool pattern_matches(const CommandPattern& p, const std::string& command);

}  // namespace wb
