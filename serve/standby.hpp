#pragma once
// Sandboxes prepared ahead, one per session (serve's prepareAhead): made on a thread
// of their own that lives as long as the server (the keeper's parent-death signal follows the
// thread that started it), taken by the session's next command, made again after it. A standby
// is for one policy: a session's update, or its close, drops it.
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.hpp"

namespace wb::serve {

class Standbys {
 public:
  // enabled false (WAVEBOX_STANDBY=0): nothing is prepared, every command starts its sandbox.
  explicit Standbys(bool enabled);
  ~Standbys();  // stop()
  Standbys(const Standbys&) = delete;
  Standbys& operator=(const Standbys&) = delete;

  bool enabled() const { return enabled_; }
  // The session's standby when one is ready for this policy (the pointer the session holds);
  // nullptr otherwise. Taken: the next is made by refill.
  std::shared_ptr<lnx::Standby> take(const std::string& session, const void* policy);
  // A standby for the session's next command, made from req (a command's request in the
  // session's workspace, with its policy), unless one is ready or being made for this policy.
  // wait: until it is made (or could not be), at most a few seconds (session/open: the session's
  // descriptors and processes are then the same before and after its commands).
  // policy: the session's, held so that its address names it while the slot exists. A policy
  // the session had before a drop is never made again (a late refill of a command that ran
  // under it, after session/update or session/close).
  void refill(const std::string& session, std::shared_ptr<const void> policy, engine::RunRequest req,
              bool wait = false);
  // The session's standby ends. Closed, or its settings changed (retire_current): its policy,
  // and retire (the session's, when it may have none made yet), are retired. Otherwise (another
  // session opened or closed: its plan changed, not its policy) it is made again by refill.
  void drop(const std::string& session, const std::shared_ptr<const void>& retire = nullptr,
            bool retire_current = true);
  // Every standby ends; nothing more is made.
  void stop();

 private:
  struct Slot {
    std::shared_ptr<const void> policy;
    // Dropped: never made again (the last few; a weak reference keeps its identity unique
    // without keeping the settings).
    std::vector<std::weak_ptr<const void>> retired;
    std::shared_ptr<lnx::Standby> ready;
    bool making = false;
    unsigned failures = 0;         // for this policy: after a few, none is made (stubs, a plan bwrap places)
    unsigned long generation = 0;  // a drop while one was made: it is not kept
  };
  struct Job {
    std::string session;
    std::shared_ptr<const void> policy;
    unsigned long generation;
    engine::RunRequest req;
  };
  void work();

  const bool enabled_;
  std::mutex mu_;
  std::condition_variable cv_, made_cv_;
  std::map<std::string, Slot> slots_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace wb::serve
