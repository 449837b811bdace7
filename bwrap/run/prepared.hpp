#pragma once
// The Linux run between its plan and its launch (bwrap/run/run.cpp), and the workspace scan's
// part of it (bwrap/run/scan_guards.cpp): what the scan found becomes guards, before the plan or, for
// a large tree planned from its cache, while the command runs (bwrap/plan/late_scan.hpp). Internal to
// bwrap/.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bwrap/plan/late_scan.hpp"
#include "bwrap/plan/plan.hpp"
#include "bwrap/run/run.hpp"
#include "bwrap/supervise/observer.hpp"
#include "core/invocation.hpp"
#include "core/protect.hpp"
#include "core/sys/stubs.hpp"
#include "core/violations.hpp"

namespace wb::lnx {

struct Prepared {
  // What the plan was made from: the run's policy with its globs expanded (a new value; the
  // run's stays as given) and the scan's findings (their own value), joined by with_findings.
  FsPolicy policy;
  Findings findings;
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
  bool kept = false;                  // the session's kept plan (bwrap/warm/kept_plan.hpp), not made now
  std::uint64_t generation = 0;       // which of them: a new one each time a plan is kept
};

double now_ms();  // a monotonic clock, for the -v timings

// bwrap/run/run.cpp's steps, shared with the standby (bwrap/warm/standby.cpp).
// Probes, scans and plans; with a registry, creates the stubs the plan asks for and plans again
// (without, `wrap`'s and a standby's planning: the stubs it would need are listed). late: a
// large tree may be planned from its scan cache and checked while the command starts.
Result<Prepared> prepare_run(const LinuxRun& run, sys::StubRegistry* stubs, bool late);
ExecRequest exec_request(const LinuxRun& run);
RunSpec spec_for(const LinuxRun& run, ShimMounts mode);
ShimMounts mount_mode(const Prepared& p, bool mount_api);
// bwrap's options when the shim places every mount: they do not depend on the plan, so bwrap
// gets them before it is made.
std::string options_before_the_plan(const LinuxRun& run);
// What the run executes (and `wrap` prints).
Invocation invocation_for(const LinuxRun& run, const Prepared& p, ShimMounts mode, const std::vector<std::string>& env);
std::string console_device(int out);
bool stderr_relayable(const int stdio[3]);
bool plan_stays_out_of_dev_and_proc(const FsPolicy& policy, const std::string& cwd);
// The filter compiled into the launch, the mount list written; bwrap's options returned.
Result<std::string> write_plan(const LinuxRun& run, const Prepared& p, Launch& launch, bool mount_api,
                               const std::vector<std::string>& env);
// exact: the masks served by FUSE, whose reads are reported from the kernel (skipped here).
class FuseMasks;
void scan_for_denied_reads(const std::string& line, const Plan& plan, const std::string& cwd, ViolationLog& log,
                           const FuseMasks* exact = nullptr);
std::vector<std::string> missing_unstubbed(const FsPolicy& policy, const LinuxFacts& facts);
void warn_appeared(const Logger& log, const std::vector<std::string>& missing);
// After the command, what only its end can tell: the read masks' names too many to list, and
// what the run's cgroup limits did to it. Fresh runs and standbys alike.
void report_ends(Observer& observer, const sys::RunCgroup* cgroup, const std::function<void(const Violation&)>& sink);
void after_run(const LinuxRun& run, Prepared& p, const Observer& observer, const std::vector<std::string>& missing,
               double started_ms);
// A run's refusals as they come, from the observer, the proxy and the stderr relay at once:
// kept (deduplicated, capped) and passed to the command's listener (RunRequest::on_refusal).
class Refusals {
 public:
  void listen(std::function<void(const Violation&)> on_refusal);
  void add(const Violation& v);
  std::function<void(const Violation&)> sink() {
    return [this](const Violation& v) { add(v); };
  }
  void into(RunOutcome& outcome);

 private:
  std::mutex mu_;
  ViolationLog log_;
  std::function<void(const Violation&)> on_refusal_;
};

// The one wiring of a command's launch, in a fresh sandbox (run_sandboxed) or a standby
// (run_in_standby). Before the launch begins: the refused reads in a relayed stderr, the
// network's listeners (which the keeper may hand over at once).
void wire_reports(ExecRequest& req, const LinuxRun& run, const Prepared& p, Observer& observer, Refusals& refusals,
                  bool relayed_stderr);
// Once planned: the late scan's check of a plan made from the scan cache.
void wire_late_scan(ExecRequest& req, const LinuxRun& run, Prepared& p);
// After the command: the network stopped, the run's cleanup (after_run), what only its end
// tells (report_ends), the refusals collected into outcome.
Status finish_command(const LinuxRun& run, Prepared& p, Observer& observer, const std::vector<std::string>& missing,
                      double started_ms, const sys::RunCgroup* cgroup, Result<int> result, Refusals& refusals,
                      RunOutcome& outcome);

// The run's write observer: p's plan, creation guard and protections' reasons (read when the
// command runs: p may be filled in after this).
std::unique_ptr<Observer> make_observer(const LinuxRun& run, const Prepared& p,
                                        const std::function<void(const Violation&)>& sink);
// The command in a standby when it fits (bwrap/warm/standby.cpp); nullopt (the standby dropped)
// when it does not.
Result<std::optional<RunOutcome>> run_in_standby(const LinuxRun& run, std::shared_ptr<Standby> standby);

// The scan's findings become guards: repositories, protected names, directories it could not
// read (read-only), hard links and depths it cannot handle (refused). late: a large tree may be
// planned from its cache and checked while the command starts (p.late).
Status guard_what_the_scan_found(const LinuxRun& run, const FsPolicy& policy, Prepared& p, bool late);
// What the check of a cached plan found, given to the supervisor before it answers anything.
void apply_late(const LinuxRun& run, Prepared& p, Observer& obs);
// The lists the warnings after the run compare with: the tree as the check saw it.
void adopt_late_findings(Prepared& p);
// After the run: repositories and protected names the command made, directories it hid.
void warn_new_repositories(const Logger& log, const Prepared& before, const std::string& cache, const std::string& home,
                           const Observer* observer);

}  // namespace wb::lnx
