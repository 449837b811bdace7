#include "core/sys/scan.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_set>

#include "core/hash.hpp"
#include "core/policy.hpp"
#include "core/scan_cache.hpp"
#include "core/sys/fd.hpp"
#include "core/sys/fs.hpp"
#include "core/sys/fswitness.hpp"

namespace wb::sys {
namespace {

// A repeat scan of a large tree is one mapping of the cache (core/scan_cache.hpp), no allocation
// per directory, and one fstatat per directory, relative to the root's descriptor (about 1.4 µs
// each on this VM, mostly the cache misses of the lookup; the old text format cost another 0.5 µs
// per directory to load).
using Fixed = ScanStamp;
using Rec = ScanRecord;

struct Seen {
  std::uint64_t ino = 0;
  std::int64_t mtime_s = 0, mtime_ns = 0;
  bool dir = false;
  int err = 0;  // why it could not be looked at
};

// The change time, not the modification time: a command can set a directory's mtime back
// (touch -d) after making a repository in it, but no caller can set a ctime.
Seen seen_of(const struct stat& st) {
  return {static_cast<std::uint64_t>(st.st_ino), st.st_ctim.tv_sec, st.st_ctim.tv_nsec, S_ISDIR(st.st_mode)};
}

// The entries of the directory at rel (below root_fd, no symbolic link followed on the last step),
// into subdirs and hits; false when it cannot be read.
bool read_dir(int root_fd, const char* rel, std::string& subdirs, std::string& hits, Seen* seen = nullptr,
              bool* unreadable = nullptr) {
  Fd fd(::openat(root_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) {
    if (unreadable) *unreadable = errno == EACCES || errno == EPERM || errno == ENAMETOOLONG;
    return false;
  }
  if (seen) {
    // The directory as opened, before its entries are read: a change while they are read shows
    // as a newer mtime on the next run.
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return false;
    *seen = seen_of(st);
  }
  alignas(8) char buf[32768];
  for (;;) {
    long n = ::syscall(SYS_getdents64, fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    for (long off = 0; off < n;) {
      auto* e = reinterpret_cast<struct dirent64*>(buf + off);
      off += e->d_reclen;
      const char* name = e->d_name;
      if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
      unsigned char type = e->d_type;
      if (type == DT_UNKNOWN) {
        struct stat st;
        // A file system without d_type, in a directory that can be listed but not searched:
        // unknown counts as a directory, which the walk then cannot read and so guards whole.
        if (::fstatat(fd.get(), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
          type = DT_DIR;
        } else {
          type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
        }
      }
      bool dir = type == DT_DIR;
      // HEAD: a repository laid out bare (HEAD, objects/, refs/), which git finds before
      // walking up to the enclosing one.
      if ((name[0] == '.' && is_scanned_name(name)) || ::strcasecmp(name, "HEAD") == 0) {
        hits += dir ? 'D' : 'F';
        append_name(hits, name);
      }
      if (dir && ::strcasecmp(name, ".git") != 0) append_name(subdirs, name);
    }
  }
}

// Directories modified within the last two seconds may change again inside the same mtime tick,
// so they are recorded as never-valid and read again next time (git's "racy" rule).
long long g_racy_ns = 2000000000LL;

void stamp(Fixed& f, const Seen& s, const struct timespec& now) {
  bool racy = s.mtime_s * 1000000000LL + s.mtime_ns + g_racy_ns >= now.tv_sec * 1000000000LL + now.tv_nsec;
  f.ino = s.ino;
  f.mtime_s = racy ? -1 : s.mtime_s;
  f.mtime_ns = s.mtime_ns;
}

Seen look(int root_fd, const char* rel) {
  Seen s;
  struct stat st;
  if (::fstatat(root_fd, *rel ? rel : ".", &st, AT_SYMLINK_NOFOLLOW) == 0) {
    s = seen_of(st);
  } else {
    s.err = errno;
  }
  return s;
}

}  // namespace

void set_scan_racy_window_ns(long long ns) {
  g_racy_ns = ns;
}

namespace {

struct Todo {
  std::string rel;
  std::int32_t parent;
};

// One scan of a tree against its cache, in steps: load the cache, stat what it knows, read the
// directories that changed, walk the ones not known before, collect the hits, save.
class TreeScan {
 public:
  TreeScan(const std::string& root, const std::string& cache_dir, const std::atomic<bool>* cancel = nullptr,
           bool one_thread = false)
      : one_thread_(one_thread),
        root_(root),
        cache_file_(cache_dir.empty() ? "" : fmt::format("{}/{:016x}", cache_dir, fnv1a(root))),
        hits_file_(cache_dir.empty() ? "" : cache_file_ + ".hits"),
        cancel_(cancel) {}
  ~TreeScan() {
    if (cache_ != MAP_FAILED) ::munmap(cache_, cache_len_);
  }
  Result<ScanResult> run();
  std::optional<ScanResult> cached(size_t min_dirs);

 private:
  std::string summary() const;
  const bool one_thread_;
  void load_cache();
  void stat_known();
  void check_known();
  bool reread(Rec& r, const Seen& s, size_t i);
  void keep_unseen(Rec& r, size_t i, bool too_long);
  void walk_new();
  void walk_one(std::unique_lock<std::mutex>& lock, Todo t);
  void collect_hits();
  std::string_view keep(std::string s) { return owned_.emplace_back(std::move(s)); }

  const std::string& root_;
  const std::string cache_file_;
  // What the cache holds that a plan needs (the number of directories and the hits), small
  // enough to read before a plan of a large tree (scan_cached); written with the cache.
  const std::string hits_file_;
  const std::atomic<bool>* cancel_;
  bool cancelled_ = false;
  ScanResult result_;
  struct timespec now_ {};
  Fd root_fd_;
  void* cache_ = MAP_FAILED;  // the cache is mapped, not copied: the records point into it
  size_t cache_len_ = 0;
  std::vector<Rec> old_;
  std::vector<Seen> seen_;
  std::deque<std::string> owned_;  // storage for what is read now (a deque: it never moves)
  std::vector<Rec> fresh_;
  std::vector<std::int32_t> moved_;  // old index -> index in fresh (-1: dropped)
  std::vector<Todo> walk_;           // directories not known before: read with all below them
  bool changed_ = false;
  bool replaced_ = false;  // a directory is another one now (same path, another inode)
  std::unordered_set<std::string_view> present_;
  // The walk's helpers.
  std::mutex mu_;
  std::condition_variable more_;
  size_t busy_ = 0;
  std::vector<std::thread> helpers_;
  bool spawned_ = false;
};

void TreeScan::load_cache() {
  if (Fd cf(::open(cache_file_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)); cf.valid()) {
    struct stat st;
    if (::fstat(cf.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      cache_len_ = static_cast<size_t>(st.st_size);
      cache_ = ::mmap(nullptr, cache_len_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, cf.get(), 0);
    }
  }
  if (cache_ != MAP_FAILED &&
      !parse_scan_cache(std::string_view(static_cast<const char*>(cache_), cache_len_), root_, old_)) {
    old_.clear();
  }
}

// A repeat scan is one fstatat per known directory, over a few threads for a large tree.
void TreeScan::stat_known() {
  seen_.resize(old_.size());
  std::atomic<bool> gave_up{false};
  auto stat_range = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) {
      if (cancel_ && (i & 255) == 0 && cancel_->load(std::memory_order_relaxed)) {
        gave_up = true;
        return;
      }
      seen_[i] = look(root_fd_.get(), old_[i].rel.data());
    }
  };
  const size_t threads =
      old_.size() > 2000 && !one_thread_ ? std::clamp<size_t>(std::thread::hardware_concurrency(), 2, 4) : 1;
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) {
    const size_t from = old_.size() * t / threads, to = old_.size() * (t + 1) / threads;
    try {
      helpers.emplace_back(stat_range, from, to);
    } catch (const std::system_error&) {
      stat_range(from, to);  // no thread to be had (a process limit): here, then
    }
  }
  stat_range(0, old_.size() / threads);
  for (auto& h : helpers) h.join();
  cancelled_ = gave_up;
}

// A known directory that cannot be read: what it holds is unseen, so it is guarded (or the run
// refused, too_deep) and kept in the cache, never trusted (read again on every run): dropped,
// nothing would look at it again while its parent's list of names stays the same.
void TreeScan::keep_unseen(Rec& r, size_t i, bool too_long) {
  std::string d = *r.rel.data() ? fmt::format("{}/{}", root_, r.rel.data()) : root_;
  (too_long || d.size() >= PATH_MAX - 1 ? result_.too_deep : result_.unreadable).push_back(d);
  changed_ = true;
  r.f.mtime_s = -1;
  r.subdirs = {};
  r.hits = {};
  moved_[i] = static_cast<std::int32_t>(fresh_.size());
  fresh_.push_back(r);
}

// A known directory whose stamp changed, read again; false when it is dropped (or kept unseen).
bool TreeScan::reread(Rec& r, const Seen& s, size_t i) {
  std::string subdirs, hits;
  ++result_.dirs_read;
  bool unreadable = false;
  if (!read_dir(root_fd_.get(), *r.rel.data() ? r.rel.data() : ".", subdirs, hits, nullptr, &unreadable)) {
    changed_ = true;
    if (unreadable) {
      r.f.ino = s.ino;
      keep_unseen(r, i, false);
    }
    return false;
  }
  const Fixed before = r.f;
  stamp(r.f, s, now_);
  // Saved when something differs, or when a directory settled (a trustworthy mtime where the
  // cache had none or another): not for one that is only still recent.
  if (subdirs != r.subdirs || hits != r.hits || before.ino != s.ino ||
      (r.f.mtime_s != -1 && (r.f.mtime_s != before.mtime_s || r.f.mtime_ns != before.mtime_ns))) {
    changed_ = true;
  }
  replaced_ = replaced_ || before.ino != s.ino;
  const auto self = static_cast<std::int32_t>(fresh_.size());
  if (subdirs != r.subdirs || before.ino != s.ino) {
    // New subdirectories are walked (all of them when the directory is another one); a set,
    // not a search per name: node_modules holds thousands.
    std::unordered_set<std::string_view> had;
    if (before.ino == s.ino) for_each_name(r.subdirs, [&](std::string_view name) { had.insert(name); });
    for_each_name(subdirs, [&](std::string_view name) {
      if (!had.count(name))
        walk_.push_back({r.rel.empty() ? std::string(name) : fmt::format("{}/{}", r.rel, name), self});
    });
  }
  r.subdirs = keep(std::move(subdirs));
  r.hits = keep(std::move(hits));
  return true;
}

void TreeScan::check_known() {
  fresh_.reserve(old_.size());
  moved_.assign(old_.size(), -1);
  changed_ = old_.empty();
  for (size_t i = 0; i < old_.size(); ++i) {
    Rec r = old_[i];
    const Seen& s = seen_[i];
    // Gone, no longer a directory, or below one that is (a path through a directory that
    // became a symbolic link would be followed): dropped, with everything below it.
    const std::int32_t parent = r.f.parent < 0 ? -1 : moved_[static_cast<size_t>(r.f.parent)];
    if (!s.dir && (s.err == EACCES || s.err == EPERM || s.err == ENAMETOOLONG) && !(r.f.parent >= 0 && parent < 0)) {
      // Not to be looked at any more (its parent made unsearchable, a path grown too long).
      r.f.parent = parent;
      keep_unseen(r, i, s.err == ENAMETOOLONG);
      continue;
    }
    if (!s.dir || (r.f.parent >= 0 && parent < 0)) {
      changed_ = true;
      continue;
    }
    r.f.parent = parent;
    if (r.f.ino != s.ino || r.f.mtime_s != s.mtime_s || r.f.mtime_ns != s.mtime_ns) {
      if (!reread(r, s, i)) continue;
    }
    moved_[i] = static_cast<std::int32_t>(fresh_.size());
    fresh_.push_back(r);
  }
  if (fresh_.empty()) walk_ = {{"", -1}};  // no cache, or the root itself changed kind
  // A replaced directory has every subdirectory walked again, and its old children are kept
  // above when they still stand: not to be recorded twice.
  if (replaced_) {
    for (const auto& r : fresh_) present_.insert(r.rel);
  }
}

// One directory not known before, read (the lock released meanwhile) and recorded.
void TreeScan::walk_one(std::unique_lock<std::mutex>& lock, Todo t) {
  ++busy_;
  lock.unlock();
  Rec r;
  Seen s;
  std::string subdirs, hits;
  bool unreadable = false;
  const bool ok = read_dir(root_fd_.get(), t.rel.empty() ? "." : t.rel.c_str(), subdirs, hits, &s, &unreadable);
  lock.lock();
  --busy_;
  changed_ = true;
  if (unreadable) {
    std::string d = t.rel.empty() ? root_ : fmt::format("{}/{}", root_, t.rel);
    (d.size() >= PATH_MAX - 1 ? result_.too_deep : result_.unreadable).push_back(d);
    // Recorded, never trusted: read again on every run (see keep_unseen).
    r.f.parent = t.parent;
    r.f.ino = 0;
    r.f.mtime_s = -1;
    r.rel = keep(std::move(t.rel));
    fresh_.push_back(r);
  }
  if (ok) {
    ++result_.dirs_read;
    r.f.parent = t.parent;
    stamp(r.f, s, now_);
    const auto self = static_cast<std::int32_t>(fresh_.size());
    for_each_name(subdirs, [&](std::string_view name) {
      walk_.push_back({t.rel.empty() ? std::string(name) : fmt::format("{}/{}", t.rel, name), self});
    });
    r.rel = keep(std::move(t.rel));
    r.subdirs = keep(std::move(subdirs));
    r.hits = keep(std::move(hits));
    fresh_.push_back(r);
  }
  more_.notify_all();
}

// Directories not known before, each read with all below it: over a few threads once many wait
// (the first scan of a large tree; a thread costs more than a few directories). A record goes in
// after its parent's, as before.
void TreeScan::walk_new() {
  std::function<void(bool)> work = [&](bool first) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (first && !spawned_ && !one_thread_ && walk_.size() >= 32) {
        spawned_ = true;
        const size_t n = std::clamp<size_t>(std::thread::hardware_concurrency(), 2, 4) - 1;
        try {
          for (size_t i = 0; i < n; ++i) helpers_.emplace_back(work, false);
        } catch (const std::system_error&) {
          // No more threads to be had (a process limit): the ones there are do it all.
        }
      }
      more_.wait(lock, [&] { return !walk_.empty() || busy_ == 0; });
      if (walk_.empty()) return;  // and nobody reading: nothing more can come
      Todo t = std::move(walk_.back());
      walk_.pop_back();
      if (present_.count(t.rel)) continue;
      walk_one(lock, std::move(t));
    }
  };
  work(true);
  for (auto& h : helpers_) h.join();
}

void TreeScan::collect_hits() {
  result_.dirs_total = fresh_.size();
  for (const auto& r : fresh_) {
    if (r.hits.empty()) continue;
    std::string dir = r.rel.empty() ? root_ : fmt::format("{}/{}", root_, r.rel);
    for_each_name(r.hits, [&](std::string_view h) {
      result_.hits.push_back({dir, std::string(h.substr(1)), h[0] == 'D'});
    });
  }
}

Result<ScanResult> TreeScan::run() {
  struct timespec t0, t1, t2, t3, ts;
  ::clock_gettime(CLOCK_MONOTONIC, &t0);
  ::clock_gettime(CLOCK_REALTIME, &now_);
  root_fd_ = Fd(::open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd_.valid()) return sys_error("open", root_, errno);
  load_cache();
  ::clock_gettime(CLOCK_MONOTONIC, &t1);
  stat_known();
  if (cancelled_) return make_error(ErrorKind::kSystem, "scan of " + root_ + " cancelled");
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  check_known();
  walk_new();
  collect_hits();
  // A plan being recorded depends on every directory the scan looked at (served from the cache
  // or read now): their subdirectories and scanned names.
  if (FsReads* rec = recording()) {
    for (const auto& r : fresh_) rec->scan_dir(r.rel.empty() ? root_ : fmt::format("{}/{}", root_, r.rel));
  }
  ::clock_gettime(CLOCK_MONOTONIC, &t2);
  if (!cache_file_.empty() && (changed_ || ::access(hits_file_.c_str(), F_OK) != 0)) {
    // A cache we cannot write only costs time on the next run.
    if (changed_) (void)write_file_atomic(cache_file_, serialize_scan_cache(root_, fresh_));
    (void)write_file_atomic(hits_file_, summary());
  }
  ::clock_gettime(CLOCK_MONOTONIC, &t3);
  auto ms = [](const timespec& a, const timespec& b) {
    return (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
  };
  result_.timing = fmt::format("load {:.1f} ms, walk {:.1f} ms ({:.1f} of it checking the known), save {:.1f} ms",
                               ms(t0, t1), ms(t1, t2), ms(t1, ts), ms(t2, t3));
  return std::move(result_);
}

// "wbhits1" NUL root NUL count NUL, then kind NUL dir NUL name NUL per hit (names may hold any
// byte but NUL).
std::string TreeScan::summary() const {
  std::string out = "wbhits1";
  out += '\0';
  out += root_;
  out += '\0';
  out += std::to_string(result_.dirs_total);
  out += '\0';
  auto add = [&](const char* kind, const std::string& dir, const std::string& name) {
    for (const std::string& f : {std::string(kind), dir, name}) {
      out += f;
      out += '\0';
    }
  };
  for (const auto& h : result_.hits) add(h.is_dir ? "D" : "F", h.dir, h.name);
  // What could not be looked into: guarded whole (U), or refused (T), by the plan itself.
  for (const auto& u : result_.unreadable) add("U", u, "");
  for (const auto& t : result_.too_deep) add("T", t, "");
  return out;
}

std::optional<ScanResult> TreeScan::cached(size_t min_dirs) {
  Fd fd(::open(hits_file_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st;
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (64 << 20)) {
    return std::nullopt;
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  if (::read(fd.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size())) return std::nullopt;
  std::vector<std::string_view> f;
  for_each_name(std::string_view(data), [&](std::string_view v) { f.push_back(v); });
  if (f.size() < 3 || f[0] != "wbhits1" || f[1] != root_ || (f.size() - 3) % 3 != 0) return std::nullopt;
  char* end = nullptr;
  std::string count(f[2]);
  unsigned long long n = std::strtoull(count.c_str(), &end, 10);
  if (count.empty() || *end || n < min_dirs) return std::nullopt;
  result_.dirs_total = static_cast<size_t>(n);
  for (size_t i = 3; i + 2 < f.size(); i += 3) {
    if (f[i] == "U") {
      result_.unreadable.emplace_back(f[i + 1]);
    } else if (f[i] == "T") {
      result_.too_deep.emplace_back(f[i + 1]);
    } else if (f[i] == "D" || f[i] == "F") {
      result_.hits.push_back({std::string(f[i + 1]), std::string(f[i + 2]), f[i] == "D"});
    } else {
      return std::nullopt;
    }
  }
  result_.timing = "from the cache";
  return std::move(result_);
}

}  // namespace

Result<ScanResult> scan_tree(const std::string& root, const std::string& cache_dir, const std::atomic<bool>* cancel,
                             bool one_thread) {
  TreeScan scan(root, cache_dir, cancel, one_thread);
  return scan.run();
}

std::optional<ScanResult> scan_cached(const std::string& root, const std::string& cache_dir, size_t min_dirs) {
  TreeScan scan(root, cache_dir);
  return scan.cached(min_dirs);
}

}  // namespace wb::sys
