#pragma once
// The permission decision for one command (Claude Code's semantics; wavebox(1)): whether it runs
// sandboxed, then deny (any subcommand) -> ask -> auto-allow when really sandboxed -> allow rules
// -> ask. Pure.
#include <string>
#include <vector>

#include "core/settings.hpp"

namespace wb {

struct DecisionInput {
  std::string command;            // the command string as the shell would see it
  bool disable_sandbox = false;   // --dangerously-disable-sandbox
  bool sandbox_available = true;  // platform, dependencies and enabledPlatforms allow it here
};

struct Decision {
  std::string decision;  // "allow" | "ask" | "deny"
  bool sandboxed = false;
  std::string reason;
  std::string matched_rule;  // empty when none
  std::vector<std::string> subcommands;
  std::vector<std::string> warnings;  // e.g. an ignored --dangerously-disable-sandbox
};

Decision decide(const Settings& s, const DecisionInput& in);

}  // namespace wb
