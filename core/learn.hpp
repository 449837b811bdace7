#pragma once
// `wavebox run --learn`: from what a run refused, the smallest settings change that would have
// allowed it (Claude Code's format), never a protected path or a credential location. Pure.
#include <string>
#include <vector>

#include "core/violations.hpp"

namespace wb {

struct Learned {
  std::vector<std::string> allow_write;      // sandbox.filesystem.allowWrite
  std::vector<std::string> allow_read;       // sandbox.filesystem.allowRead (exceptions to denyRead)
  std::vector<std::string> allowed_domains;  // sandbox.network.allowedDomains
  std::vector<std::string> not_suggested;    // "PATH: why", for what stays refused on purpose
  bool empty() const { return allow_write.empty() && allow_read.empty() && allowed_domains.empty(); }
};

struct LearnContext {
  std::string home, workspace;
  std::vector<std::string> never;      // more paths never to suggest (settings files, the state dir)
  std::vector<std::string> deny_read;  // the settings' own: one named exactly is lifted only there
};

Learned learn_from(const std::vector<Violation>& refused, const LearnContext& ctx);
// Whether root holds a path that is guarded whatever the settings say (a protected entry, a
// PATH directory or wavebox's own files, ctx.never): never suggested as a writable root.
bool holds_guarded(const std::string& root, const LearnContext& ctx);
// {"sandbox": {...}} with only the additions: merged after the user's own settings (arrays
// concatenate), it allows what was refused.
std::string learned_settings_json(const Learned& l);

}  // namespace wb
