#pragma once
// A plan made from the scan cache, checked while the command starts (start-up must
// not grow with the workspace). The scan of a large tree is one fstatat per known directory
// (17 ms for 20,000); the cache says what the tree held when it was last looked at. The plan is
// made from that, the sandbox starts, and this thread checks the tree meanwhile. Until it is
// done, no supervised call of the command is answered (every creation, rename, write-intent
// open, removal, chmod: bwrap/launch/exec.cpp holds the listener), so nothing the check could still
// find can have been written. What it finds that the plan lacked (a repository the host cloned
// since, a directory made unreadable) is then refused by the supervisor (bwrap/supervise/supervise.hpp,
// add_late_read_only), by path, like the mounts the plan would have placed.
#include <sys/eventfd.h>

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/sys/fd.hpp"
#include "core/sys/guards.hpp"
#include "core/sys/scan.hpp"

namespace wb::lnx {

class LateScan {
 public:
  struct Found {
    bool ok = false;
    std::string error;
    std::vector<sys::ScanHit> hits;
    std::vector<std::string> unreadable, too_deep;
    sys::HitGuards guards;
    size_t dirs = 0;
    double ms = 0;
  };

  // Fewer known directories than this: the scan is checked before the plan, as always.
  static constexpr size_t kMinDirs = 2000;

  LateScan(std::vector<std::string> roots, std::string cache, std::string workspace, std::string home);
  ~LateScan();
  LateScan(const LateScan&) = delete;
  LateScan& operator=(const LateScan&) = delete;

  void start();  // idempotent
  bool usable() const { return done_.valid(); }
  // Readable once the check is done (found() is then set).
  int done_fd() const { return done_.get(); }
  // Waits for the check; a check still looking at the known directories gives up (nothing was
  // answered meanwhile, so nothing depends on it). Idempotent.
  void finish(bool cancel);
  // What the check found; nullptr while it runs.
  const Found* found() const { return ready_.load(std::memory_order_acquire) ? &found_ : nullptr; }

 private:
  void work();
  const std::vector<std::string> roots_;
  const std::string cache_, workspace_, home_;
  std::atomic<bool> cancel_{false};
  sys::Fd done_;
  std::thread thread_;
  Found found_;
  std::atomic<bool> ready_{false};
  bool finished_ = false;
  bool started_ = false;
};

}  // namespace wb::lnx
