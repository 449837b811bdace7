#include "serve/standby.hpp"

#include <chrono>
#include <utility>
#include <vector>

namespace wb::serve {

constexpr unsigned kMaxFailures = 3;

Standbys::Standbys(bool enabled) : enabled_(enabled) {
  if (enabled_) thread_ = std::thread([this] { work(); });
}

Standbys::~Standbys() {
  stop();
}

std::shared_ptr<lnx::Standby> Standbys::take(const std::string& session, const void* policy) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(session);
  if (it == slots_.end() || it->second.policy.get() != policy || !it->second.ready) return nullptr;
  return std::exchange(it->second.ready, nullptr);
}

void Standbys::refill(const std::string& session, std::shared_ptr<const void> policy, engine::RunRequest req,
                      bool wait) {
  if (!enabled_) return;
  std::shared_ptr<lnx::Standby> old;  // ended outside the lock
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_) return;
    Slot& slot = slots_[session];
    for (const auto& r : slot.retired) {
      if (!r.owner_before(policy) && !policy.owner_before(r)) return;
    }
    if (slot.policy == policy && (slot.ready || slot.making || slot.failures >= kMaxFailures)) return;
    if (slot.policy != policy) {
      old = std::move(slot.ready);
      ++slot.generation;
      slot.failures = 0;
    }
    slot.policy = policy;
    slot.making = true;
    jobs_.push_back({session, policy, slot.generation, std::move(req)});
    cv_.notify_one();
    if (wait) {
      made_cv_.wait_for(lock, std::chrono::seconds(5), [&] {
        auto it = slots_.find(session);
        return stop_ || it == slots_.end() || it->second.policy != policy || !it->second.making;
      });
    }
  }
}

void Standbys::drop(const std::string& session, const std::shared_ptr<const void>& retire, bool retire_current) {
  std::shared_ptr<lnx::Standby> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = slots_[session];
    old = std::move(slot.ready);
    // A standby being made for it is not kept (its job sees another generation).
    if (retire) slot.retired.emplace_back(retire);
    ++slot.generation;
    slot.making = false;
    slot.failures = 0;
    if (retire_current) {
      if (slot.policy) slot.retired.emplace_back(slot.policy);
      slot.policy.reset();
    }
    if (slot.retired.size() > 8) slot.retired.erase(slot.retired.begin());
  }
  made_cv_.notify_all();
}

void Standbys::stop() {
  std::map<std::string, Slot> ending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    ending.swap(slots_);
    jobs_.clear();
  }
  cv_.notify_all();
  made_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // The standbys end here, after the thread that made them is gone: their keepers got their
  // parent-death signal with it already, and are reaped now; so are those ending in the
  // background.
  ending.clear();
  engine::finish_standby_ends();
}

void Standbys::work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    const Logger& log = *job.req.log;
    auto made = engine::make_standby(std::move(job.req));
    if (!made.ok()) log.info("no sandbox prepared ahead: " + made.error().message);
    std::shared_ptr<lnx::Standby> unused;
    lock.lock();
    auto it = slots_.find(job.session);
    if (it != slots_.end() && it->second.generation == job.generation && it->second.policy == job.policy) {
      it->second.making = false;
      if (made.ok()) {
        it->second.ready = std::move(*made);
      } else {
        ++it->second.failures;
      }
      made_cv_.notify_all();
    } else if (made.ok()) {
      unused = std::move(*made);
    }
    made_cv_.notify_all();
    if (unused) {
      lock.unlock();
      unused.reset();
      lock.lock();
    }
  }
}

}  // namespace wb::serve
