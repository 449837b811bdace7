#pragma once
// A session's plan, kept while nothing it read of the filesystem changed (serve). A command
// that comes to an unchanged tree with unchanged settings starts from the kept plan instead of
// probing, scanning and planning again: what it would have found is what the witness
// (core/sys/fswitness.hpp) vouches for. A plan is only kept when a witness was already watching
// before it was made and saw nothing change until it was done; any change, or any doubt, and
// the next plan is made afresh (and watched). Internal to bwrap/.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "bwrap/run/prepared.hpp"
#include "core/sys/fswitness.hpp"

namespace wb::lnx {

class PlanCache {
 public:
  // check: every kept plan is also made afresh and compared, a difference ending the process
  // (tests: WAVEBOX_PLAN_CACHE_CHECK=1); off: nothing is kept (WAVEBOX_PLAN_CACHE=0). Read by
  // the caller once, where the cache is made.
  PlanCache(bool check, bool off) : check_(check), off_(off) {}
  bool checking() const { return check_; }
  // run's plan, as prepare_run(run, nullptr, late) would make it now.
  Result<Prepared> plan(const LinuxRun& run, bool late);
  // Whether the plan kept as generation is still the one run would make (nothing it read
  // changed): a standby made from it can be used as it is.
  bool vouches(const LinuxRun& run, std::uint64_t generation);

 private:
  std::mutex mu_;
  std::string input_;  // what the witness's plan (and the kept one) was made from
  std::unique_ptr<sys::FsWitness> witness_;
  std::optional<Prepared> kept_;
  std::uint64_t generation_ = 0;
  const bool check_, off_;
};

// What a plan is made from besides the filesystem: the policy as given, the run's directories.
std::string plan_input(const LinuxRun& run);
// Whether planning policy reads more than the witness sees (globs are expanded by listing).
bool plan_keepable(const FsPolicy& policy);

}  // namespace wb::lnx
