#pragma once
// macOS: the Seatbelt (SBPL) profile for a filesystem policy. Pure text; paths travel as
// parameters (-D KEY=VALUE), never spliced into the profile.
#include <string>
#include <utility>
#include <vector>

#include "core/policy.hpp"

namespace wb::seatbelt {

struct Profile {
  std::string text;
  std::vector<std::pair<std::string, std::string>> params;  // -D KEY=VALUE
};

// command: the program the run executes (its absolute path); in mode strict the only one that
// may be executed.
Profile render_profile(const FsPolicy& policy, const std::string& command = "");

// Mode strict on macOS: the system trees a command reads to run at all (dyld's shared cache
// lives under /System), read-only; nothing of home.
const std::vector<std::string>& strict_system_paths();

}  // namespace wb::seatbelt
