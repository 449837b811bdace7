#pragma once
// The Linux run between its plan and its launch (bwrap/sandbox.cpp), and the workspace scan's
// part of it (bwrap/scan_guards.cpp): what the scan found becomes guards, before the plan or, for
// a large tree planned from its cache, while the command runs (bwrap/late_scan.hpp). Internal to
// bwrap/.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "bwrap/late_scan.hpp"
#include "bwrap/observer.hpp"
#include "bwrap/plan.hpp"
#include "bwrap/sandbox.hpp"
#include "core/protect.hpp"

namespace wb::lnx {

struct Prepared {
  std::vector<StubRequest> stub_list;  // for `wrap`: the stubs a run would create
  LinuxFacts facts;
  Plan plan;
  CreationGuard guard;                      // what the supervisor refuses to create
  std::vector<std::string> protected_hits;  // protected names found by the scan before the run
  std::vector<std::string> repo_dirs;       // every git directory guarded
  std::vector<std::string> unreadable;      // directories the scan could not read before the run
  std::vector<std::string> git_dirs;
  std::vector<std::string> scan_roots;
  // The plan was made from the scan cache; this checks it while the command starts.
  std::shared_ptr<LateScan> late;
  std::set<std::string> scan_guards;  // the paths the scan's findings guard in the plan
};

double now_ms();  // a monotonic clock, for the -v timings

// The scan's findings become guards: repositories, protected names, directories it could not
// read (read-only), hard links and depths it cannot handle (refused). late: a large tree may be
// planned from its cache and checked while the command starts (p.late).
Status guard_what_the_scan_found(LinuxRun& run, Prepared& p, bool late);
// What the check of a cached plan found, given to the supervisor before it answers anything.
void apply_late(const LinuxRun& run, Prepared& p, Observer& obs);
// The lists the warnings after the run compare with: the tree as the check saw it.
void adopt_late_findings(Prepared& p);
// After the run: repositories and protected names the command made, directories it hid.
void warn_new_repositories(const Logger& log, const Prepared& before, const std::string& cache, const std::string& home,
                           const Observer* observer);

}  // namespace wb::lnx
