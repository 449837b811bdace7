#pragma once
// Read masks that report (the shim's WB_MOUNT_FUSE_* records): each is a FUSE filesystem of one
// node, the masked directory or file, whose connection wavebox holds. Every lookup in a
// directory mask and every open of either is answered EACCES and recorded as a refused read of
// what the command reached (the mask, or the name it looked up in it), whatever its output is
// plumbed into; its attributes are answered as the old mask's (mode 0000, empty), nothing else
// is served. Only the sandbox's processes reach a mask (allow_other in its user namespace: the
// host's get EACCES from the kernel), so every request is the command's. Nothing outside the
// masks costs anything.
#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "bwrap/plan/plan.hpp"
#include "core/sys/fd.hpp"
#include "core/violations.hpp"

namespace wb::lnx {

class FuseMasks {
 public:
  // The masks the shim was asked to serve (fuse_masks(), in order), before its word comes.
  void expect(std::vector<FuseMask> masks) { expected_ = std::move(masks); }
  size_t expected() const { return expected_.size(); }
  // The shim's word: a byte per expected mask (WB_FUSE_SERVED or WB_FUSE_NOT) and, in order, the
  // served masks' connections. False when they do not agree (the descriptors are closed).
  bool adopt(const char* flags, size_t nflags, const int* fds, size_t nfds);
  size_t size() const { return served_.size(); }
  int fd(size_t i) const { return served_[i].dev.get(); }
  // Call when fd(i) is readable: answers what waits. False once the connection is gone (the
  // sandbox's mount namespace ended); then fd(i) is -1.
  bool serve(size_t i, const std::function<void(const Violation&)>& sink);
  // After the run: a line per directory mask whose names were too many to list one by one.
  void finish(const std::function<void(const Violation&)>& sink);
  // Whether path lies in (or is) a mask served here: its reads are reported exactly.
  bool covers(const std::string& path) const;
  size_t refused() const { return refused_; }

 private:
  struct Served {
    std::string path;
    bool is_dir = false;
    sys::Fd dev;
    std::set<std::string> names;  // listed so far (at most kNamesListed)
    size_t more = 0;              // looked up beyond those
  };
  std::vector<FuseMask> expected_;
  std::vector<Served> served_;
  std::vector<char> buf_;
  size_t refused_ = 0;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  long long started_ = 0;
};

}  // namespace wb::lnx
