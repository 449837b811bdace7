#pragma once
// Linux probes for the planner: each path the policy names, lstat'ed and resolved.
#include <string>

#include "bwrap/plan/plan.hpp"
#include "core/policy.hpp"

namespace wb::lnx {

// The policy with each glob replaced by the paths that match it now, a new value (the given one
// is not changed); notes: what that leaves out, to say.
FsPolicy expand_globs(const FsPolicy& given, std::vector<std::string>& notes);
// Probes every path the policy names that facts.paths does not hold yet (lstat, resolution).
void probe_policy_paths(const FsPolicy& policy, LinuxFacts& facts);

}  // namespace wb::lnx
