#pragma once
// A cgroup of its own for one run, where the kernel lets wavebox make one: sandbox.resources
// then become the kernel's limits on the whole sandbox (resident memory with swap off, a count
// of processes, a share of CPU time), and what a limit did to the command can be told after it.
// cgroup v2 where the caller's own cgroup delegates the controllers (a systemd unit or user
// slice with Delegate=), or, for root, a "wavebox" cgroup at the hierarchy's root; else the v1
// memory, pids and cpu hierarchies where they are writable (root on a hybrid system). Nothing
// otherwise: the caller keeps its rlimits.
#include <memory>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/sys/fd.hpp"
#include "core/violations.hpp"

namespace wb::sys {

struct CgroupLimits {
  long long memory_mb = 0;  // memory.max (and no swap)
  long long pids = 0;       // the command's processes (the sandbox's own few are added)
  double cpus = 0;          // CPUs' worth of time in each 100 ms period
  bool any() const { return memory_mb > 0 || pids > 0 || cpus > 0; }
};

// The sandbox's own processes in the cgroup besides the command's (the keeper, bwrap, the shim
// as init): pids.max is the setting plus these.
constexpr long long kSandboxOwnProcesses = 3;

// Where a run's cgroup would be made, for doctor: "cgroup v2 (DIR)", "cgroup v1 (DIR, ...)";
// "" with *why when none can be.
std::string cgroup_support(std::string* why);

class RunCgroup {
 public:
  // Made, with the limits written. An error says why none could be (the caller falls back).
  static Result<std::unique_ptr<RunCgroup>> create(const CgroupLimits& limits);
  ~RunCgroup();
  RunCgroup(const RunCgroup&) = delete;
  RunCgroup& operator=(const RunCgroup&) = delete;
  // cgroup.procs of each of its directories, open for writing: the process that starts the
  // sandbox writes "0" to each before anything else, so every process of the sandbox is inside.
  std::vector<int> join_fds() const;
  // What the limits did to the command ("deny memory 512 MiB (sandbox.resources.memoryMB)").
  std::vector<Violation> effects() const;
  const CgroupLimits& limits() const { return limits_; }
  bool v2() const { return v2_; }
  const std::vector<std::string>& dirs() const { return dirs_; }

 private:
  RunCgroup() = default;
  CgroupLimits limits_;
  bool v2_ = false;
  std::vector<std::string> dirs_;  // v2: one; v1: one per hierarchy
  std::vector<Fd> procs_;
  std::string dir_of(const char* file) const;  // the directory holding the controller's file
};

}  // namespace wb::sys
