#pragma once
// What a plan read of the filesystem, and a witness that tells, later and in no time, whether
// any of it changed since (inotify, and the mount table's change counter). serve keeps a
// session's plan while its witness says nothing it depends on changed (bwrap/warm/kept_plan.hpp).
//
// The rule: every read a plan makes is recorded (the probes, the scan, the repositories' files)
// while a recording is active on the calling thread; the witness watches every directory in
// which those paths were looked up (each component, each symbolic link's hops), the paths
// themselves, the listings and the scanned directories, and counts a change of any of them as
// a change. Anything it cannot watch, or an event it cannot place (a full queue), is a change.
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/result.hpp"
#include "core/sys/fd.hpp"

namespace wb::sys {

class FsReads {
 public:
  // The plan depends on what p is: whether it exists, its kind, where it leads, its mode.
  void path(std::string_view p);
  // ... and on what p holds (a git config, a gitlink file).
  void content(std::string_view p);
  // ... and on its link count (a protected file with other names is refused).
  void links(std::string_view p);
  // ... and on every name in the directory d.
  void listing(std::string_view d);
  // ... and on d's subdirectories and the names the workspace scan looks for in it.
  void scan_dir(std::string_view d);

  const std::set<std::string>& paths() const { return paths_; }
  const std::set<std::string>& contents() const { return contents_; }
  const std::set<std::string>& links() const { return links_; }
  const std::set<std::string>& listings() const { return listings_; }
  const std::set<std::string>& scan_dirs() const { return scan_dirs_; }
  bool includes(const FsReads& other) const;

 private:
  std::set<std::string> paths_, contents_, links_, listings_, scan_dirs_;
};

// The recording of the calling thread, null when none is active (then nothing is recorded).
FsReads* recording();
// Records the calling thread's reads into *into while it lives.
class Recording {
 public:
  explicit Recording(FsReads* into);
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

 private:
  FsReads* previous_;
};

class FsWitness {
 public:
  // Watches what reads depend on; an error when something cannot be watched (no inotify, the
  // user's watch limit reached, a path that changes while it is watched).
  static Result<std::unique_ptr<FsWitness>> watch(const FsReads& reads);
  ~FsWitness();
  // Whether nothing the reads depend on changed since watch(). Once false, false for good.
  bool unchanged();
  // The reads it was made from (a later plan's reads must be among them to be vouched for).
  const FsReads& reads() const { return reads_; }
  size_t watches() const { return dirs_.size(); }

 private:
  FsWitness() = default;
  struct Watched {
    std::string path;
    bool listing = false, scan = false, content = false;
    bool must_watch = false;  // the file itself must be watched (its contents, its link count)
  };
  Status add(const std::string& path, bool dir_only, Watched role);
  Status resolve(const std::string& path);
  bool relevant(const Watched& w, std::string_view name, unsigned mask) const;

  FsReads reads_;
  Fd inotify_, mounts_;
  // By watch descriptor: one inode may be watched under several paths (links, bind mounts).
  std::unordered_map<int, std::vector<Watched>> dirs_;
  std::unordered_set<std::string> lookups_;  // "dir/name" looked up while resolving the paths
  std::unordered_set<std::string> checked_;  // paths whose filesystem was found fit
  bool changed_ = false;
};

}  // namespace wb::sys
