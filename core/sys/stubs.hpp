#pragma once
// Stubs: empty files or directories placed on the host for the length of a run, so a path that
// does not exist yet can carry a mount (a guard or a read mask). A registry in the state
// directory, with one lock file per stub, makes concurrent runs share a stub and removes it only
// when the last run holding it is gone; a run killed with SIGKILL leaves its stubs for the sweep
// at the next start.
#include <string>
#include <utility>
#include <vector>

#include "core/policy.hpp"
#include "core/result.hpp"
#include "core/sys/fd.hpp"

namespace wb::sys {

class StubRegistry {
 public:
  explicit StubRegistry(std::string dir) : dir_(std::move(dir)) {}
  StubRegistry(const StubRegistry&) = delete;
  StubRegistry& operator=(const StubRegistry&) = delete;
  ~StubRegistry() { release_all(); }

  struct Request {
    std::string path;
    LeafType type;
    std::string content;
  };
  // Creates the stubs (or joins other runs' stubs) and holds them until release_all(). One
  // registry lock for the whole batch.
  Status acquire(const std::vector<Request>& requests);
  // Removes the stubs no other run holds. Idempotent.
  void release_all();
  // Removes stubs left by runs that died. Cheap when there are none.
  void sweep();
  size_t held() const { return held_.size(); }

 private:
  struct Held {
    Fd lock;
    std::string entry;
  };
  Result<Fd> lock_registry();
  Status acquire_one(const Request& r);
  void remove_if_unused(Fd& lock, const std::string& entry);

  std::string dir_;
  std::vector<Held> held_;
};

}  // namespace wb::sys
