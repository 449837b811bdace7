// pure
#include "core/decision.hpp"

#include <fmt/format.h>

#include "core/rules.hpp"
#include "core/shell_split.hpp"

namespace wb {
namespace {

// The first rule of `rules` (Bash rules only) that matches any candidate form of sub.
std::string first_match(const std::vector<std::string>& rules, const std::vector<std::string>& candidates) {
  for (const auto& r : rules) {
    auto p = parse_bash_rule(r);
    if (!p) continue;
    for (const auto& c : candidates) {
      if (pattern_matches(*p, c)) return r;
    }
  }
  return {};
}

// The forms a rule that grants may match where nothing confines the command: the subcommand as
// written, when it names its program plainly. A path (./evil/git), a quote or escape, or an
// assignment before it (GIT_CONFIG_PARAMETERS=..., PATH=...) runs something else than the name
// says, so no such rule covers it.
std::vector<std::string> literal_forms(const std::string& sub) {
  const std::string first = sub.substr(0, sub.find(' '));
  if (first.empty() || first.find_first_of("/='\"\\$`") != std::string::npos) return {};
  return {sub};
}

}  // namespace

Decision decide(const Settings& s, const DecisionInput& in) {
  Decision d;
  auto split = split_command(in.command);
  d.subcommands = split.subcommands;
  std::vector<std::vector<std::string>> cands;
  for (const auto& sub : d.subcommands) cands.push_back(match_candidates(sub));
  // The whole string is a candidate too, so an exact rule for a compound command still applies.
  std::vector<std::string> whole = {in.command};

  // Sandboxed or not.
  std::string why_unsandboxed;
  std::string excluded_by;
  for (size_t i = 0; i < cands.size() && excluded_by.empty(); ++i) {
    for (const auto& pat : s.sandbox.excluded_commands) {
      auto p = parse_excluded_command(pat);
      for (const auto& c : literal_forms(d.subcommands[i])) {
        if (pattern_matches(p, c)) {
          excluded_by = pat;
          break;
        }
      }
      if (!excluded_by.empty()) break;
    }
  }
  if (!s.sandbox.enabled) {
    why_unsandboxed = "the sandbox is not enabled";
  } else if (!in.sandbox_available) {
    why_unsandboxed = "the sandbox is not available on this platform";
  } else if (!excluded_by.empty()) {
    why_unsandboxed = fmt::format("a subcommand matches excludedCommands \"{}\"", excluded_by);
  } else if (in.disable_sandbox && s.sandbox.allow_unsandboxed_commands) {
    why_unsandboxed = "--dangerously-disable-sandbox was requested and allowUnsandboxedCommands is true";
  }
  if (in.disable_sandbox && !s.sandbox.allow_unsandboxed_commands) {
    d.warnings.push_back("--dangerously-disable-sandbox is ignored: sandbox.allowUnsandboxedCommands is false");
  }
  d.sandboxed = why_unsandboxed.empty();

  // Deny wins, on the whole command or on any subcommand.
  std::string rule = first_match(s.permissions.deny, whole);
  for (size_t i = 0; i < cands.size() && rule.empty(); ++i) rule = first_match(s.permissions.deny, cands[i]);
  if (!rule.empty()) {
    d.decision = "deny";
    d.matched_rule = rule;
    d.reason = fmt::format("denied by rule {}", rule);
    return d;
  }
  rule = first_match(s.permissions.ask, whole);
  for (size_t i = 0; i < cands.size() && rule.empty(); ++i) rule = first_match(s.permissions.ask, cands[i]);
  if (!rule.empty()) {
    d.decision = "ask";
    d.matched_rule = rule;
    d.reason = fmt::format("rule {} asks for approval", rule);
    return d;
  }
  if (d.sandboxed && s.sandbox.auto_allow_bash_if_sandboxed) {
    d.decision = "allow";
    d.reason = "runs sandboxed and autoAllowBashIfSandboxed is on";
    return d;
  }
  // Allow rules: every subcommand by some rule, or the whole string by a rule that names it
  // exactly ("Bash(a && b)"). A prefix or wildcard rule never covers the whole string, since
  // "git status:*" would then allow "git status | anything".
  rule.clear();
  for (const auto& r : s.permissions.allow) {
    auto p = parse_bash_rule(r);
    if (p && (p->kind == CommandPattern::Kind::kExact || p->kind == CommandPattern::Kind::kAny) &&
        pattern_matches(*p, in.command)) {
      rule = r;
      break;
    }
  }
  // What the subcommands' words do not show (a redirection into a file, a string that could not
  // be parsed) is no rule's to allow where nothing confines it.
  const bool hidden = !split.parsed || (split.writes_file && !d.sandboxed);
  if (rule.empty() && !cands.empty() && !hidden) {
    std::string first;
    bool all = true;
    for (size_t i = 0; i < cands.size(); ++i) {
      // Unconfined, only the plain spelling counts (literal_forms); sandboxed, every spelling.
      std::string m = first_match(s.permissions.allow, d.sandboxed ? cands[i] : literal_forms(d.subcommands[i]));
      if (m.empty()) {
        all = false;
        break;
      }
      if (first.empty()) first = m;
    }
    if (all) rule = first;
  }
  if (!rule.empty()) {
    d.decision = "allow";
    d.matched_rule = rule;
    d.reason = fmt::format("allowed by rule {}", rule);
    return d;
  }
  d.decision = "ask";
  d.reason = d.sandboxed ? "no allow rule matched and autoAllowBashIfSandboxed is off"
                         : fmt::format("no allow rule matched and it runs unsandboxed ({}){}", why_unsandboxed,
                                       hidden ? "; a redirection into a file or a string that could not be "
                                                "parsed is no allow rule's to cover"
                                              : "");
  return d;
}

}  // namespace wb
