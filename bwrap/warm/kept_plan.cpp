#include "bwrap/warm/kept_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>  // std::abort, for check_

#include "core/paths.hpp"

namespace wb::lnx {

namespace {

void add(std::string& k, const std::string& s) {
  k += s;
  k += '\0';
}

void add_list(std::string& k, const std::vector<std::string>& list) {
  add(k, std::to_string(list.size()));
  for (const auto& s : list) add(k, s);
}

// Everything a plan's user sees of it: the mounts, the guards, the facts they came from.
std::string digest(const Prepared& p) {
  std::string k = render_shim_mounts(p.plan, p.facts, "");
  add(k, policy_key(p.policy));
  for (const auto& d : p.guard.describe()) add(k, d);
  for (const auto& [path, f] : p.facts.paths) {
    add(k, path);
    add(k, fmt::format("{}{}{}", static_cast<int>(f.kind), f.is_symlink ? 1 : 0, f.creatable ? 1 : 0));
    add(k, f.real);
    add(k, f.first_missing);
    add(k, f.unreachable_at);
  }
  add_list(k, p.plan.warnings);
  add_list(k, p.repo_dirs);
  add_list(k, p.git_dirs);
  add_list(k, p.protected_hits);
  add_list(k, p.scan_roots);
  for (const auto& s : p.scan_guards) add(k, s);
  add(k, p.facts.fuse ? "fuse" : "-");
  return k;
}

}  // namespace

std::string plan_input(const LinuxRun& run) {
  std::string k = policy_key(run.policy);
  add(k, run.cwd);
  add(k, run.home);
  add(k, run.state.root);
  add(k, run.state.scan);
  add(k, run.state.placeholder);
  add(k, run.bwrap);
  add(k, fmt::format("{}.{}.{}", run.bwrap_version[0], run.bwrap_version[1], run.bwrap_version[2]));
  return k;
}

bool plan_keepable(const FsPolicy& policy) {
  auto glob = [](const std::string& s) { return paths::has_glob(s); };
  auto glob_g = [](const GuardedPath& g) { return paths::has_glob(g.path); };
  auto glob_w = [](const WritableRoot& w) { return paths::has_glob(w.path); };
  return policy.enabled && std::none_of(policy.deny_write.begin(), policy.deny_write.end(), glob_g) &&
         std::none_of(policy.deny_read.begin(), policy.deny_read.end(), glob_g) &&
         std::none_of(policy.writable.begin(), policy.writable.end(), glob_w) &&
         std::none_of(policy.allow_read.begin(), policy.allow_read.end(), glob);
}

bool PlanCache::vouches(const LinuxRun& run, std::uint64_t generation) {
  if (off_) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (!kept_ || generation == 0 || generation != generation_ || !witness_ || !witness_->unchanged()) return false;
  if (plan_input(run) != input_) return false;
  run.log->info(fmt::format("the kept plan fits: nothing it read changed ({} watches)", witness_->watches()));
  return true;
}

Result<Prepared> PlanCache::plan(const LinuxRun& run, bool late) {
  if (off_ || !plan_keepable(run.policy)) return prepare_run(run, nullptr, late);
  const Logger& log = *run.log;
  const std::string input = plan_input(run);
  std::lock_guard<std::mutex> lock(mu_);
  const bool same = witness_ && input == input_;
  if (same && kept_ && witness_->unchanged()) {
    Prepared p = *kept_;
    if (check_) {
      // Tests: planned again as well, and compared; a difference is what the witness missed.
      auto fresh = prepare_run(run, nullptr, false);
      if (!fresh.ok() || digest(*fresh) != digest(p)) {
        // A test must not miss it: the server ends here, loudly.
        log.warn("internal: the kept plan differs from the one made now (WAVEBOX_PLAN_CACHE_CHECK)");
        std::abort();
      }
    }
    p.kept = true;
    log.info(fmt::format("the kept plan fits: nothing it read changed ({} watches)", witness_->watches()));
    return p;
  }
  kept_.reset();
  // A plan made now is kept only when the witness watched from before it started until after
  // it was done, and the plan read nothing it does not watch.
  const bool watching = same && witness_->unchanged();
  sys::FsReads reads;
  Result<Prepared> fresh = make_error(ErrorKind::kSystem, "internal: not planned");
  {
    sys::Recording recording(&reads);
    fresh = prepare_run(run, nullptr, late);
  }
  if (!fresh.ok()) {
    witness_.reset();
    return fresh;
  }
  // A large tree planned from its scan cache (checked while the command starts) read too little
  // to vouch for anything, or against the witness: the next full plan (a standby's) is kept.
  if (fresh->late) return fresh;
  const bool complete = fresh->stub_list.empty() && !fresh->late && fresh->unreadable.empty();
  if (watching && complete && witness_->reads().includes(reads) && witness_->unchanged()) {
    fresh->kept = false;
    fresh->generation = ++generation_;
    kept_ = *fresh;
    kept_->kept = true;
    log.info("the plan is kept while nothing it read changes");
    return fresh;
  }
  witness_.reset();
  if (!complete) return fresh;
  auto w = sys::FsWitness::watch(reads);
  if (!w.ok()) {
    log.info("the plan cannot be kept: " + w.error().message);
    return fresh;
  }
  witness_ = std::move(*w);
  input_ = input;
  return fresh;
}

}  // namespace wb::lnx
