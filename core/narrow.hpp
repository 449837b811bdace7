#pragma once
// Settings found in a project (a cloned repository's .claude/ or .wave/) may only narrow what the
// user's own files, or the built-in profile, set: a folder must not configure its own sandbox
// (wavebox-settings(5), trust). Pure.
#include <string>
#include <vector>

#include "core/settings.hpp"

namespace wb {

// One value the project asked for and did not get: the key ("sandbox.filesystem.allowWrite")
// and what it held ("/home/u", "false").
struct Widening {
  std::string key;
  std::string value;
};

// `full` is `base` with the project's files merged on top. Returns `full` with every widening
// undone: a list that widens keeps only base's entries, a list that narrows keeps them all, a
// scalar that would widen keeps base's value. What was undone is appended to `undone`.
Settings narrow_to(const Settings& base, const Settings& full, std::vector<Widening>& undone);

}  // namespace wb
