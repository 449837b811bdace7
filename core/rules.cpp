// pure
#include "core/rules.hpp"

#include <vector>

namespace wb {
namespace {

// Wildcard match with backtracking; '*' matches any text, "\*" a literal star.
bool glob_match(const std::string& pat, const std::string& s) {
  struct Tok {
    bool star;
    char c;
  };
  std::vector<Tok> toks;
  for (size_t i = 0; i < pat.size(); ++i) {
    if (pat[i] == '\\' && i + 1 < pat.size() && pat[i + 1] == '*') {
      toks.push_back({false, '*'});
      ++i;
    } else if (pat[i] == '*') {
      toks.push_back({true, 0});
    } else {
      toks.push_back({false, pat[i]});
    }
  }
  size_t p = 0, i = 0, star = std::string::npos, mark = 0;
  while (i < s.size()) {
    if (p < toks.size() && !toks[p].star && toks[p].c == s[i]) {
      ++p;
      ++i;
    } else if (p < toks.size() && toks[p].star) {
      star = p++;
      mark = i;
    } else if (star != std::string::npos) {
      p = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (p < toks.size() && toks[p].star) ++p;
  return p == toks.size();
}

}  // namespace

CommandPattern parse_command_pattern(const std::string& raw) {
  CommandPattern p;
  std::string t = raw;
  while (!t.empty() && t.back() == ' ') t.pop_back();
  while (!t.empty() && t.front() == ' ') t.erase(t.begin());
  if (t.empty() || t == "*") return p;  // kAny
  if (t.size() >= 2 && t.compare(t.size() - 2, 2, ":*") == 0) {
    p.kind = CommandPattern::Kind::kPrefix;
    p.text = t.substr(0, t.size() - 2);
    return p;
  }
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '\\' && i + 1 < t.size()) {
      ++i;
      continue;
    }
    if (t[i] == '*') {
      p.kind = CommandPattern::Kind::kWildcard;
      p.text = t;
      return p;
    }
  }
  p.kind = CommandPattern::Kind::kExact;
  // "\*" in an exact pattern is a literal star.
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '\\' && i + 1 < t.size() && t[i + 1] == '*') continue;
    p.text += t[i];
  }
  return p;
}

std::optional<CommandPattern> parse_bash_rule(const std::string& rule) {
  if (rule == "Bash" || rule == "Bash()") return CommandPattern{};
  if (rule.size() >= 6 && rule.compare(0, 5, "Bash(") == 0 && rule.back() == ')') {
    return parse_command_pattern(rule.substr(5, rule.size() - 6));
  }
  return std::nullopt;
}

CommandPattern parse_excluded_command(const std::string& raw) {
  CommandPattern p = parse_command_pattern(raw);
  if (p.kind == CommandPattern::Kind::kExact && p.text.find(' ') == std::string::npos) {
    p.kind = CommandPattern::Kind::kPrefix;
  }
  return p;
}

bool pattern_matches(const CommandPattern& p, const std::string& command) {
  switch (p.kind) {
    case CommandPattern::Kind::kAny:
      return true;
    case CommandPattern::Kind::kExact:
      return command == p.text;
    case CommandPattern::Kind::kPrefix:
      return command == p.text || (command.size() > p.text.size() && command.compare(0, p.text.size(), p.text) == 0 &&
                                   command[p.text.size()] == ' ');
    case CommandPattern::Kind::kWildcard: {
      if (glob_match(p.text, command)) return true;
      // A trailing " *" also matches the command without arguments.
      if (p.text.size() >= 2 && p.text.compare(p.text.size() - 2, 2, " *") == 0) {
        return glob_match(p.text.substr(0, p.text.size() - 2), command);
      }
      return false;
    }
  }
  return false;
}

}  // namespace wb
