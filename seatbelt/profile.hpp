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

Profile render_profile(const FsPolicy& policy);

}  // namespace wb::seatbelt
