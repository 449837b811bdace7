#pragma once
// `wavebox doctor`'s parts printed from cli/doctor_explain.cpp.
#include <string>
#include <vector>

#include "core/settings.hpp"

namespace wb::cli {

// Each key the settings files set, with what it means (docs/settings.schema.json).
void explain(const std::vector<std::string>& files);
// The protected table and the seccomp rules.
void print_protected(const Settings& s);

}  // namespace wb::cli
