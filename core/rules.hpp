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
// A pattern in the rule grammar ("npm run build", "git:*", "git *").
CommandPattern parse_command_pattern(const std::string& pattern);
// An excludedCommands entry: the rule grammar, except that a bare program name ("git", the form
// Claude Code's docs and most settings use) is that program with any arguments.
CommandPattern parse_excluded_command(const std::string& pattern);
bool pattern_matches(const CommandPattern& p, const std::string& command);

}  // namespace wb
