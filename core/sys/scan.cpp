#include "core/sys/scan.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <thread>
#include <unordered_set>

#include "core/policy.hpp"
#include "core/sys/fd.hpp"
#include "core/sys/fs.hpp"

namespace wb::sys {
namespace {

// One directory as last read: identity, mtime, and its entries of interest. Names are kept in
// NUL-joined blobs (one allocation each) because a repeat scan of a large tree is dominated by
// allocation, not by system calls.
struct DirRecord {
  std::string rel;  // relative to the root; "" is the root
  unsigned long long ino = 0;
  long long mtime_s = 0;
  long long mtime_ns = 0;
  std::string subdirs;  // "a\0b\0"
  std::string hits;     // "Dname\0Fname\0": D directory, F anything else
  bool stat_ok = false;
  struct stat st {};
};

constexpr char kMagic[] = "wavebox-scan-2";

unsigned long long fnv1a(const std::string& s) {
  unsigned long long h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

template <class F>
void for_each_name(const std::string& blob, F f) {
  size_t pos = 0;
  while (pos < blob.size()) {
    size_t end = blob.find('\0', pos);
    if (end == std::string::npos) break;
    f(std::string_view(blob).substr(pos, end - pos));
    pos = end + 1;
  }
}

void put_field(std::string& out, std::string_view f) {
  out.append(f);
  out += '\0';
}

std::string serialize(const std::string& root, const std::vector<DirRecord>& recs) {
  std::string out;
  out.reserve(recs.size() * 64);
  put_field(out, kMagic);
  put_field(out, root);
  for (const auto& r : recs) {
    put_field(out, r.rel);
    put_field(out, fmt::format("{} {} {} {} {}", r.ino, r.mtime_s, r.mtime_ns, r.subdirs.size(), r.hits.size()));
    out += r.subdirs;
    out += r.hits;
  }
  return out;
}

bool deserialize(const std::string& data, const std::string& root, std::vector<DirRecord>& recs) {
  size_t pos = 0;
  auto next = [&](std::string_view& f) {
    size_t end = data.find('\0', pos);
    if (end == std::string::npos) return false;
    f = std::string_view(data).substr(pos, end - pos);
    pos = end + 1;
    return true;
  };
  std::string_view f;
  if (!next(f) || f != kMagic || !next(f) || f != root) return false;
  while (pos < data.size()) {
    DirRecord r;
    std::string_view rel, nums;
    if (!next(rel) || !next(nums)) return false;
    unsigned long long v[5];
    const char* p = nums.data();
    const char* end = p + nums.size();
    for (int i = 0; i < 5; ++i) {
      bool neg = p < end && *p == '-';
      if (neg) ++p;
      if (p >= end || *p < '0' || *p > '9') return false;
      unsigned long long x = 0;
      while (p < end && *p >= '0' && *p <= '9') x = x * 10 + static_cast<unsigned>(*p++ - '0');
      v[i] = neg ? static_cast<unsigned long long>(-static_cast<long long>(x)) : x;
      if (p < end && *p == ' ') ++p;
    }
    r.ino = v[0];
    r.mtime_s = static_cast<long long>(v[1]);
    r.mtime_ns = static_cast<long long>(v[2]);
    unsigned long long nsub = v[3], nhit = v[4];
    if (nsub > data.size() - pos || nhit > data.size() - pos - nsub) return false;
    r.rel.assign(rel);
    r.subdirs.assign(data, pos, nsub);
    r.hits.assign(data, pos + nsub, nhit);
    pos += nsub + nhit;
    recs.push_back(std::move(r));
  }
  return true;
}

std::string abs_of(const std::string& root, const std::string& rel) { return rel.empty() ? root : root + "/" + rel; }
std::string child_of(const std::string& rel, std::string_view name) {
  return rel.empty() ? std::string(name) : rel + "/" + std::string(name);
}

bool read_dir(const std::string& abs, DirRecord& rec) {
  Fd fd(::open(abs.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return false;
  DIR* d = ::fdopendir(fd.release());
  if (!d) return false;
  rec.subdirs.clear();
  rec.hits.clear();
  while (struct dirent* e = ::readdir(d)) {
    const char* n = e->d_name;
    if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'))) continue;
    unsigned char type = e->d_type;
    if (type == DT_UNKNOWN) {
      struct stat st;
      if (::fstatat(::dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
    }
    bool dir = type == DT_DIR;
    if (n[0] == '.' && is_scanned_name(n)) {
      rec.hits += dir ? 'D' : 'F';
      put_field(rec.hits, n);
    }
    if (dir && std::strcmp(n, ".git") != 0) put_field(rec.subdirs, n);
  }
  ::closedir(d);
  return true;
}

// Directories modified within the last two seconds may change again inside the same mtime tick,
// so they are recorded as never-valid and read again next time (git's "racy" rule).
void stamp(DirRecord& r, const struct stat& st, time_t now) {
  bool racy = st.st_mtim.tv_sec + 2 >= now;
  r.ino = st.st_ino;
  r.mtime_s = racy ? -1 : st.st_mtim.tv_sec;
  r.mtime_ns = st.st_mtim.tv_nsec;
}

}  // namespace

Result<ScanResult> scan_tree(const std::string& root, const std::string& cache_dir) {
  ScanResult result;
  std::string cache_file = fmt::format("{}/{:016x}", cache_dir, fnv1a(root));
  struct timespec t0, t1, t2, t3, now;
  ::clock_gettime(CLOCK_MONOTONIC, &t0);
  ::clock_gettime(CLOCK_REALTIME, &now);
  std::vector<DirRecord> old;
  if (auto data = read_file(cache_file); data.ok()) {
    if (!deserialize(*data, root, old)) old.clear();
  }
  ::clock_gettime(CLOCK_MONOTONIC, &t1);

  // A repeat scan is one lstat per known directory, split over two threads.
  auto stat_range = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) {
      old[i].stat_ok = ::lstat(abs_of(root, old[i].rel).c_str(), &old[i].st) == 0 && S_ISDIR(old[i].st.st_mode);
    }
  };
  if (old.size() > 2000) {
    std::thread helper(stat_range, old.size() / 2, old.size());
    stat_range(0, old.size() / 2);
    helper.join();
  } else {
    stat_range(0, old.size());
  }

  std::vector<DirRecord> fresh;
  fresh.reserve(old.size());
  std::vector<std::string> walk;  // directories not known before: read with all below them
  bool changed = old.empty();
  std::unordered_set<std::string_view> known;
  if (old.empty()) walk.push_back("");
  for (auto& r : old) {
    if (!r.stat_ok) {
      changed = true;  // gone, or no longer a directory
      continue;
    }
    if (r.ino == r.st.st_ino && r.mtime_s == r.st.st_mtim.tv_sec && r.mtime_ns == r.st.st_mtim.tv_nsec) {
      fresh.push_back(std::move(r));
      continue;
    }
    DirRecord n;
    n.rel = r.rel;
    stamp(n, r.st, now.tv_sec);
    ++result.dirs_read;
    if (!read_dir(abs_of(root, r.rel), n)) {
      changed = true;
      continue;
    }
    if (n.subdirs != r.subdirs || n.hits != r.hits || n.ino != r.ino) changed = true;
    if (n.subdirs != r.subdirs) {
      if (known.empty()) {
        for (const auto& o : old) known.insert(o.rel);
      }
      for_each_name(n.subdirs, [&](std::string_view name) {
        std::string c = child_of(n.rel, name);
        if (!known.count(c)) walk.push_back(std::move(c));
      });
    }
    fresh.push_back(std::move(n));
  }
  while (!walk.empty()) {
    std::string rel = std::move(walk.back());
    walk.pop_back();
    struct stat st;
    std::string abs = abs_of(root, rel);
    if (::lstat(abs.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    DirRecord n;
    n.rel = rel;
    stamp(n, st, now.tv_sec);
    ++result.dirs_read;
    changed = true;
    if (!read_dir(abs, n)) continue;
    for_each_name(n.subdirs, [&](std::string_view name) { walk.push_back(child_of(rel, name)); });
    fresh.push_back(std::move(n));
  }
  result.dirs_total = fresh.size();
  for (const auto& r : fresh) {
    std::string dir = abs_of(root, r.rel);
    for_each_name(r.hits, [&](std::string_view h) {
      result.hits.push_back({dir, std::string(h.substr(1)), h[0] == 'D'});
    });
  }
  ::clock_gettime(CLOCK_MONOTONIC, &t2);
  if (changed) {
    // A cache we cannot write only costs time on the next run.
    (void)write_file_atomic(cache_file, serialize(root, fresh));
  }
  ::clock_gettime(CLOCK_MONOTONIC, &t3);
  auto ms = [](const timespec& a, const timespec& b) {
    return (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
  };
  result.timing = fmt::format("load {:.1f} ms, walk {:.1f} ms, save {:.1f} ms", ms(t0, t1), ms(t1, t2), ms(t2, t3));
  return result;
}

}  // namespace wb::sys
