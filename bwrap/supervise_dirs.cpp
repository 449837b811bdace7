// The supervisor's directories: their identities (for "made in this run") and the cache of
// recently resolved ones (bwrap/supervise.hpp, DirCache).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>

#include "bwrap/supervise.hpp"

namespace wb::lnx {

bool dir_identity(int fd, const char* name, DirId* out) {
  struct statx sx {};
  const bool at_fd = name == nullptr || *name == '\0';
  if (::statx(fd, at_fd ? "" : name, (at_fd ? AT_EMPTY_PATH : 0) | AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
              STATX_INO | STATX_TYPE | STATX_BTIME, &sx) != 0) {
    return false;
  }
  out->dev = (static_cast<unsigned long long>(sx.stx_dev_major) << 32) | sx.stx_dev_minor;
  out->ino = sx.stx_ino;
  // Without a birth time (a file system that keeps none), device and inode alone.
  out->birth_s = (sx.stx_mask & STATX_BTIME) ? sx.stx_btime.tv_sec : 0;
  out->birth_ns = (sx.stx_mask & STATX_BTIME) ? sx.stx_btime.tv_nsec : 0;
  return S_ISDIR(sx.stx_mode);
}

namespace {

// Whether the kernel names a descriptor of ours by exactly this path now.
bool names_now(int fd, const std::string& path) {
  char link[32];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char buf[PATH_MAX];
  ssize_t n = ::readlink(link, buf, sizeof buf);
  return n > 0 && static_cast<size_t>(n) == path.size() && std::memcmp(buf, path.data(), path.size()) == 0;
}

}  // namespace

int DirCache::find(const std::string& path) {
  for (auto& e : entries_) {
    if (e.path != path) continue;
    // Moved, removed ("... (deleted)") or replaced since: the kernel names it otherwise now.
    if (!names_now(e.fd.get(), path)) {
      evicted_.push_back(std::move(e.fd));
      e = std::move(entries_.back());
      entries_.pop_back();
      return -1;
    }
    e.used = ++tick_;
    return e.fd.get();
  }
  return -1;
}

int DirCache::keep(sys::Fd fd, const std::string& path) {
  for (auto& e : entries_) {
    if (e.path == path) {  // (one that no longer named its path: replaced)
      evicted_.push_back(std::move(e.fd));
      e.fd = std::move(fd);
      e.id_known = false;
      e.used = ++tick_;
      return e.fd.get();
    }
  }
  if (entries_.size() >= kEntries) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](const Entry& a, const Entry& b) { return a.used < b.used; });
    evicted_.push_back(std::move(oldest->fd));
    *oldest = std::move(entries_.back());
    entries_.pop_back();
  }
  entries_.push_back(Entry{std::move(fd), path, {}, false, ++tick_});
  return entries_.back().fd.get();
}

bool DirCache::identity(int fd, DirId* out) {
  for (auto& e : entries_) {
    if (e.fd.get() != fd) continue;
    if (!e.id_known) e.id_known = dir_identity(fd, nullptr, &e.id);
    if (e.id_known) *out = e.id;
    return e.id_known;
  }
  return false;
}

void DirCache::clear() {
  for (auto& e : entries_) evicted_.push_back(std::move(e.fd));
  entries_.clear();
}

}  // namespace wb::lnx
