#pragma once
// Linux probes for the planner: each path the policy names, lstat'ed and resolved.
#include <string>

#include "bwrap/plan.hpp"
#include "core/policy.hpp"

namespace wb::lnx {

PathFact probe_path(const std::string& path);
// Replaces glob entries of denyRead/allowRead by the paths they match now (FS-7).
void expand_read_globs(FsPolicy& policy);
// Probes every path the policy names into facts.paths.
void probe_policy_paths(const FsPolicy& policy, LinuxFacts& facts);

}  // namespace wb::lnx
