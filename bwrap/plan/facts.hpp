#pragma once
// Linux probes for the planner: each path the policy names, lstat'ed and resolved.
#include <string>

#include "bwrap/plan/plan.hpp"
#include "core/policy.hpp"

namespace wb::lnx {

// Replaces glob entries of denyRead/allowRead by the paths they match now (FS-7).
// Globs in the policy become the paths that match them now; returns what that leaves out, to say.
std::vector<std::string> expand_globs(FsPolicy& policy);
// Probes every path the policy names that facts.paths does not hold yet (lstat, resolution).
void probe_policy_paths(const FsPolicy& policy, LinuxFacts& facts);

}  // namespace wb::lnx
