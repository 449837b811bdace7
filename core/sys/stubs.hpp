#pragma once
// Stubs: empty files or directories placed on the host for the length of a run, so a path that
// does not exist yet can carry a mount (a guard or a read mask). A registry in the state
// directory, with one lock file per stub, makes concurrent runs share a stub and removes it only
// when the last run holding it is gone; a run killed with SIGKILL leaves its stubs for the sweep
// at the next start.
//
// The pool: creating and deleting inodes costs (on ext4 about 0.1 ms each, more when many were
// deleted recently), so a released stub that is still empty (a directory) or still holds
// exactly what wavebox wrote (a file) is moved into the pool directory, and the next stub on
// the same filesystem is moved out of it: two renames instead of a create and a delete. A
// stub is checked again after it reached the pool; if the host wrote into it meanwhile it is
// moved back, so nothing the host wrote is ever kept away from it. The pool is read-only in
// the sandbox (a guard like the rest of the state directory). A pooled stub found holding
// something when taken is set aside in `stubpool-aside/`, kept, and never used.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/policy.hpp"
#include "core/result.hpp"
#include "core/sys/fd.hpp"

namespace wb::sys {

class StubRegistry {
 public:
  // dir: the registry; pool: where empty stubs wait between runs ("" for none).
  explicit StubRegistry(std::string dir, std::string pool = "") : dir_(std::move(dir)), pool_(std::move(pool)) {}
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
  // Joins the stubs other live runs hold at paths `relevant` accepts (a concurrent run in the
  // same workspace: what this run probed as existing may be one, and must not be removed under
  // it): shares them as acquire() would, and returns their paths. Call after probing; one
  // directory listing when the registry is empty.
  std::vector<std::string> join_registered(const std::function<bool(const std::string&)>& relevant);
  // Removes the stubs no other run holds. Idempotent.
  void release_all();
  // Removes stubs left by runs that died. Cheap when there are none.
  void sweep();
  size_t held() const { return held_.size(); }

 private:
  struct Held {
    Fd lock;
    std::string entry;
    std::string data;  // what the entry file holds (written once, by the run that made the stub)
  };
  Result<Fd> lock_registry();
  Status acquire_one(const Request& r);
  // data: the entry's content when known (else read from lock).
  void remove_if_unused(Fd& lock, const std::string& entry, const std::string* data = nullptr);
  void set_aside(const std::string& from, const std::string& name);

  std::string dir_;
  std::string pool_;
  std::vector<Held> held_;
  std::vector<std::string> pooled_;  // pool entry names, read once per acquire batch
};

}  // namespace wb::sys
