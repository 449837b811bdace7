#include "bwrap/plan/late_scan.hpp"

#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <system_error>
#include <utility>

namespace wb::lnx {

LateScan::LateScan(std::vector<std::string> roots, std::string cache, std::string workspace, std::string home)
    : roots_(std::move(roots)),
      cache_(std::move(cache)),
      workspace_(std::move(workspace)),
      home_(std::move(home)),
      done_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

LateScan::~LateScan() {
  finish(true);
}

void LateScan::start() {
  if (started_) return;
  started_ = true;
  if (!done_.valid()) {
    found_.error = "no eventfd";
    ready_.store(true, std::memory_order_release);
    return;
  }
  try {
    thread_ = std::thread([this] { work(); });
  } catch (const std::system_error&) {
    work();  // no thread to be had (a process limit): checked here, before the command starts
  }
}

void LateScan::work() {
  struct timespec a, b;
  ::clock_gettime(CLOCK_MONOTONIC, &a);
  Found f;
  f.ok = true;
  for (const auto& r : roots_) {
    auto res = sys::scan_tree(r, cache_, &cancel_, true);
    if (!res.ok()) {
      f.ok = false;
      f.error = res.error().message;
      break;
    }
    f.dirs += res->dirs_total;
    f.hits.insert(f.hits.end(), res->hits.begin(), res->hits.end());
    f.unreadable.insert(f.unreadable.end(), res->unreadable.begin(), res->unreadable.end());
    f.too_deep.insert(f.too_deep.end(), res->too_deep.begin(), res->too_deep.end());
  }
  if (f.ok) f.guards = sys::guards_for_hits(f.hits, workspace_, home_);
  ::clock_gettime(CLOCK_MONOTONIC, &b);
  f.ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
  found_ = std::move(f);
  ready_.store(true, std::memory_order_release);
  std::uint64_t one = 1;
  (void)!::write(done_.get(), &one, sizeof one);
}

void LateScan::finish(bool cancel) {
  if (finished_) return;
  if (cancel) cancel_ = true;
  if (thread_.joinable()) thread_.join();
  finished_ = true;
}

}  // namespace wb::lnx
