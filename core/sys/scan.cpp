#include "core/sys/scan.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "core/paths.hpp"
#include "core/policy.hpp"
#include "core/sys/fd.hpp"
#include "core/sys/fs.hpp"

namespace wb::sys {
namespace {

// One cached directory: its identity and mtime when read, its subdirectories and its hits.
struct DirRecord {
  unsigned long long ino = 0;
  long long mtime_s = 0;
  long long mtime_ns = 0;
  std::vector<std::string> subdirs;
  std::vector<std::pair<std::string, bool>> hits;  // name, is_dir
};

using Cache = std::unordered_map<std::string, DirRecord>;  // key: path relative to root ("" = root)

constexpr char kMagic[] = "wavebox-scan-1";

unsigned long long fnv1a(const std::string& s) {
  unsigned long long h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

// Format: NUL-separated fields. "D" rel ino s ns nsub nhit, then nsub names, then nhit
// (name, "0"/"1") pairs. Names cannot hold NUL, so any byte string survives.
std::string serialize(const std::string& root, const Cache& cache) {
  std::string out;
  auto field = [&](const std::string& f) {
    out += f;
    out += '\0';
  };
  field(kMagic);
  field(root);
  for (const auto& [rel, r] : cache) {
    field("D");
    field(rel);
    field(std::to_string(r.ino));
    field(std::to_string(r.mtime_s));
    field(std::to_string(r.mtime_ns));
    field(std::to_string(r.subdirs.size()));
    field(std::to_string(r.hits.size()));
    for (const auto& s : r.subdirs) field(s);
    for (const auto& [n, d] : r.hits) {
      field(n);
      field(d ? "1" : "0");
    }
  }
  return out;
}

bool deserialize(const std::string& data, const std::string& root, Cache& cache) {
  size_t pos = 0;
  auto next = [&](std::string& f) {
    size_t end = data.find('\0', pos);
    if (end == std::string::npos) return false;
    f.assign(data, pos, end - pos);
    pos = end + 1;
    return true;
  };
  auto num = [&](unsigned long long& v) {
    std::string f;
    if (!next(f) || f.empty()) return false;
    char* e = nullptr;
    v = std::strtoull(f.c_str(), &e, 10);
    return *e == '\0';
  };
  std::string f;
  if (!next(f) || f != kMagic || !next(f) || f != root) return false;
  while (pos < data.size()) {
    if (!next(f) || f != "D") return false;
    std::string rel;
    DirRecord r;
    unsigned long long s, ns, nsub, nhit;
    if (!next(rel) || !num(r.ino) || !num(s) || !num(ns) || !num(nsub) || !num(nhit)) return false;
    if (nsub > data.size() || nhit > data.size()) return false;
    r.mtime_s = static_cast<long long>(s);
    r.mtime_ns = static_cast<long long>(ns);
    for (unsigned long long i = 0; i < nsub; ++i) {
      if (!next(f)) return false;
      r.subdirs.push_back(f);
    }
    for (unsigned long long i = 0; i < nhit; ++i) {
      std::string d;
      if (!next(f) || !next(d)) return false;
      r.hits.emplace_back(f, d == "1");
    }
    cache.emplace(std::move(rel), std::move(r));
  }
  return true;
}

bool read_dir(const std::string& abs, DirRecord& rec) {
  Fd fd(::open(abs.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return false;
  DIR* d = ::fdopendir(fd.release());
  if (!d) return false;
  while (struct dirent* e = ::readdir(d)) {
    const char* n = e->d_name;
    if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'))) continue;
    unsigned char type = e->d_type;
    if (type == DT_UNKNOWN) {
      struct stat st;
      if (::fstatat(::dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
    }
    std::string name = n;
    bool dir = type == DT_DIR;
    if (is_scanned_name(name)) rec.hits.emplace_back(name, dir);
    if (dir && name != ".git") rec.subdirs.push_back(std::move(name));
  }
  ::closedir(d);
  return true;
}

}  // namespace

Result<ScanResult> scan_tree(const std::string& root, const std::string& cache_dir) {
  ScanResult result;
  std::string cache_file = fmt::format("{}/{:016x}", cache_dir, fnv1a(root));
  Cache old, fresh;
  if (auto data = read_file(cache_file); data.ok()) {
    if (!deserialize(*data, root, old)) old.clear();
  }
  struct timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  bool changed = false;

  std::vector<std::string> stack = {""};
  while (!stack.empty()) {
    std::string rel = std::move(stack.back());
    stack.pop_back();
    std::string abs = rel.empty() ? root : root + "/" + rel;
    struct stat st;
    if (::lstat(abs.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    ++result.dirs_total;
    DirRecord rec;
    auto it = old.find(rel);
    // A directory modified within the last two seconds may change again inside the same mtime
    // tick, so its listing is never trusted from the cache (git's "racy" rule).
    bool racy = st.st_mtim.tv_sec + 2 >= now.tv_sec;
    if (it != old.end() && !racy && it->second.ino == st.st_ino &&
        it->second.mtime_s == st.st_mtim.tv_sec && it->second.mtime_ns == st.st_mtim.tv_nsec) {
      rec = std::move(it->second);
    } else {
      changed = true;
      ++result.dirs_read;
      rec.ino = st.st_ino;
      rec.mtime_s = racy ? -1 : st.st_mtim.tv_sec;  // racy: recorded so it is read next time
      rec.mtime_ns = st.st_mtim.tv_nsec;
      if (!read_dir(abs, rec)) continue;
    }
    for (const auto& [name, dir] : rec.hits) result.hits.push_back({abs, name, dir});
    for (const auto& s : rec.subdirs) stack.push_back(rel.empty() ? s : rel + "/" + s);
    fresh.emplace(rel, std::move(rec));
  }
  if (changed || fresh.size() != old.size()) {
    // A cache we cannot write only costs time on the next run.
    (void)write_file_atomic(cache_file, serialize(root, fresh));
  }
  return result;
}

}  // namespace wb::sys
