#include "core/sys/stubs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/hash.hpp"
#include "core/sys/fs.hpp"

namespace wb::sys {
namespace {

std::string entry_name(const std::string& path) {
  return fmt::format("{:016x}", fnv1a(path));
}

// Entry file: path NUL type NUL dev NUL ino NUL size NUL [content-in-hex NUL].
struct Entry {
  std::string path;
  char type = 'f';
  unsigned long long dev = 0, ino = 0, size = 0;
  std::string content;  // a file stub's bytes
};

std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out += static_cast<char>(std::strtoul(h.substr(i, 2).c_str(), nullptr, 16));
  return out;
}

bool parse_entry(const std::string& data, Entry& e) {
  std::vector<std::string> f;
  size_t pos = 0;
  while (pos < data.size()) {
    size_t end = data.find('\0', pos);
    if (end == std::string::npos) return false;
    f.push_back(data.substr(pos, end - pos));
    pos = end + 1;
  }
  if ((f.size() != 5 && f.size() != 6) || f[1].size() != 1) return false;
  e.path = f[0];
  e.type = f[1][0];
  e.dev = std::strtoull(f[2].c_str(), nullptr, 10);
  e.ino = std::strtoull(f[3].c_str(), nullptr, 10);
  e.size = std::strtoull(f[4].c_str(), nullptr, 10);
  e.content = f.size() == 6 ? unhex(f[5]) : std::string();
  return true;
}

// An entry is a path and a few numbers: one read of up to 16 KiB holds it.
std::string read_fd(int fd) {
  char buf[16384];
  ssize_t n;
  do {
    n = ::pread(fd, buf, sizeof buf, 0);
  } while (n < 0 && errno == EINTR);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// Pool entry names: "d-INODE" for a directory, "f-HEXCONTENT-INODE" for a file.
std::string hex(const std::string& s) {
  std::string out;
  for (unsigned char c : s) out += fmt::format("{:02x}", c);
  return out;
}

std::string file_prefix(const std::string& content) {
  return "f-" + hex(content) + "-";
}

bool rename_noreplace(const std::string& from, const std::string& to) {
  return ::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0;
}

// One getdents64 into a small buffer, from the start: an empty directory has "." and "..", and
// any third name fits in the same read.
bool dir_fd_is_empty(int fd, bool rewind) {
  if (rewind && ::lseek(fd, 0, SEEK_SET) != 0) return false;
  alignas(8) char buf[1024];
  for (;;) {
    long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0;
    for (long off = 0; off < n;) {
      auto* e = reinterpret_cast<struct dirent64*>(buf + off);
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) return false;
      off += e->d_reclen;
    }
  }
}

// Whether what an open stub holds is still exactly what wavebox made: a directory with no entry,
// or a file of `content` alone. Read through the descriptor, so it answers for the inode
// wherever its name is now. fresh: the caller has just opened fd and fstat'ed it into *fresh
// (nothing to stat again, no directory offset to rewind).
bool holds_only_ours(int fd, const Entry& e, const std::string& content, const struct stat* fresh = nullptr) {
  struct stat own;
  const struct stat& st = fresh ? *fresh : own;
  if ((!fresh && ::fstat(fd, &own) != 0) || st.st_dev != e.dev || st.st_ino != e.ino) return false;
  if (e.type == 'd') return S_ISDIR(st.st_mode) && dir_fd_is_empty(fd, !fresh);
  if (!S_ISREG(st.st_mode) || static_cast<unsigned long long>(st.st_size) != e.size) return false;
  char buf[256];
  ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  return n >= 0 && static_cast<size_t>(n) == content.size() && std::memcmp(buf, content.data(), content.size()) == 0;
}

// Removes the stub only if it is still the empty thing we made: the same inode, and for a file
// the same size. Anything the host put there since (a real ~/.aws/credentials) stays. With a
// pool on the same filesystem, the stub moves there instead of being deleted. One descriptor on
// the stub serves the checks before and after the move.
void remove_stub(const Entry& e, const std::string& pool) {
  const std::string& content = e.content;
  // O_NONBLOCK: should the name now be a fifo, opening it must not wait.
  Fd f(::open(e.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (e.type == 'd' ? O_DIRECTORY : 0)));
  if (!f.valid()) return;
  struct stat st;
  if (::fstat(f.get(), &st) != 0 || st.st_dev != e.dev || st.st_ino != e.ino) return;
  if (!pool.empty() && holds_only_ours(f.get(), e, content, &st)) {
    std::string name = (e.type == 'd' ? std::string("d-") : file_prefix(content)) + std::to_string(e.ino);
    std::string pooled = pool + "/" + name;
    if (rename_noreplace(e.path, pooled)) {
      // The host may have written into it between the check and the move: then it goes back.
      struct stat now;
      if (::lstat(pooled.c_str(), &now) == 0 && now.st_dev == e.dev && now.st_ino == e.ino &&
          holds_only_ours(f.get(), e, content)) {
        return;
      }
      if (!rename_noreplace(pooled, e.path)) {
        // The name was taken meanwhile: keep the host's data beside it rather than in the pool.
        std::string beside = e.path + ".wavebox-recovered-" + std::to_string(e.ino);
        (void)rename_noreplace(pooled, beside);
      }
      return;
    }
  }
  if (e.type == 'd') {
    ::rmdir(e.path.c_str());  // fails, harmlessly, when not empty
  } else if (S_ISREG(st.st_mode) && static_cast<unsigned long long>(st.st_size) == e.size) {
    ::unlink(e.path.c_str());
  }
}

}  // namespace

Result<Fd> StubRegistry::lock_registry() {
  std::string lock = dir_ + "/.lock";
  Fd fd(::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return sys_error("open", lock, errno);
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return sys_error("flock", lock, errno);
  }
  return fd;
}

Status StubRegistry::acquire(const std::vector<Request>& requests) {
  if (requests.empty()) return ok_status();
  Fd reg = WB_TRY(lock_registry());
  pooled_.clear();
  if (!pool_.empty()) {
    std::vector<std::string> legacy;
    if (DIR* d = ::opendir(pool_.c_str())) {
      while (struct dirent* e = ::readdir(d)) {
        if (e->d_name[0] == 'd' || e->d_name[0] == 'f') pooled_.push_back(e->d_name);
        if (std::strncmp(e->d_name, "unusable-", 9) == 0) legacy.push_back(e->d_name);
      }
      ::closedir(d);
    }
    // Set aside by an older wavebox inside the pool, where every run would list them again.
    for (const auto& n : legacy) set_aside(pool_ + "/" + n, n.substr(9));
  }
  for (const auto& r : requests) WB_TRY(acquire_one(r));
  return ok_status();
}

// A pooled stub found not empty (something was put into it, in the pool) keeps what it holds,
// beside the pool rather than in it: the pool is listed on every run and stays small.
void StubRegistry::set_aside(const std::string& from, const std::string& name) {
  std::string aside = pool_ + "-aside";
  if (::mkdir(aside.c_str(), 0700) != 0 && errno != EEXIST) return;
  (void)rename_noreplace(from, aside + "/" + name);
}

Status StubRegistry::acquire_one(const Request& r) {
  const std::string& path = r.path;
  LeafType type = r.type;
  const std::string& content = r.content;
  std::string entry = dir_ + "/" + entry_name(path);
  Fd fd(::open(entry.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return sys_error("open", entry, errno);
  if (::flock(fd.get(), LOCK_SH) != 0) return sys_error("flock", entry, errno);
  Entry e;
  struct stat st;
  std::string old = read_fd(fd.get());
  if (parse_entry(old, e) && e.path == path && ::lstat(path.c_str(), &st) == 0 && st.st_ino == e.ino &&
      st.st_dev == e.dev) {
    held_.push_back({std::move(fd), entry, old});  // another live run's stub: share it
    return ok_status();
  }
  e = Entry{path, type == LeafType::kDir ? 'd' : 'f'};
  e.content = type == LeafType::kDir ? std::string() : content;
  // From the pool when one of the right kind waits there (same filesystem, or the rename fails
  // with EXDEV and we create it after all).
  bool placed = false;
  std::string prefix = type == LeafType::kDir ? std::string("d-") : file_prefix(content);
  for (auto it = pooled_.begin(); it != pooled_.end(); ++it) {
    if (it->compare(0, prefix.size(), prefix) != 0) continue;
    std::string from = pool_ + "/" + *it;
    std::string name = *it;
    pooled_.erase(it);
    if (!rename_noreplace(from, path)) {
      if (errno == EEXIST) {
        (void)::ftruncate(fd.get(), 0);
        return ok_status();  // appeared meanwhile: guarded as an existing path
      }
      break;  // another filesystem (EXDEV): a new stub below
    }
    // Checked again where it now is: exactly what a new stub would be. Something else (the
    // pool is the user's to write in) goes back, aside, and a new stub is made instead.
    Fd got(::open(path.c_str(),
                  O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (type == LeafType::kDir ? O_DIRECTORY : 0)));
    struct stat now;
    if (got.valid() && ::fstat(got.get(), &now) == 0) {
      Entry check = e;
      check.dev = now.st_dev;
      check.ino = now.st_ino;
      check.size = type == LeafType::kDir ? 0 : content.size();
      placed = holds_only_ours(got.get(), check, e.content, &now);
      if (placed) st = now;
    }
    if (!placed) set_aside(path, name);
    break;
  }
  if (!placed && type == LeafType::kDir) {
    if (::mkdir(path.c_str(), 0700) != 0) {
      int err = errno;
      (void)::ftruncate(fd.get(), 0);
      if (err == EEXIST) return ok_status();  // appeared meanwhile: guarded as an existing path
      return sys_error("mkdir", path, err);
    }
  } else if (!placed) {  // a new file
    Fd f(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!f.valid()) {
      int err = errno;
      (void)::ftruncate(fd.get(), 0);
      if (err == EEXIST) return ok_status();
      return sys_error("create", path, err);
    }
    if (!content.empty() && ::write(f.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
      int err = errno;
      ::unlink(path.c_str());
      (void)::ftruncate(fd.get(), 0);
      return sys_error("write", path, err);
    }
  }
  if (!placed && ::lstat(path.c_str(), &st) != 0) return sys_error("lstat", path, errno);
  e.dev = st.st_dev;
  e.ino = st.st_ino;
  e.size = type == LeafType::kDir ? 0 : content.size();
  std::string data = fmt::format("{}{}{}{}{}{}{}{}{}{}{}{}", e.path, '\0', e.type, '\0', e.dev, '\0', e.ino, '\0',
                                 e.size, '\0', hex(e.content), '\0');
  if ((!old.empty() && ::ftruncate(fd.get(), 0) != 0) ||
      ::pwrite(fd.get(), data.data(), data.size(), 0) != static_cast<ssize_t>(data.size())) {
    int err = errno;
    remove_stub(e, "");
    (void)::ftruncate(fd.get(), 0);
    return sys_error("write", entry, err);
  }
  held_.push_back({std::move(fd), entry, data});
  return ok_status();
}

void StubRegistry::remove_if_unused(Fd& lock, const std::string& entry, const std::string* data) {
  // Holding the registry lock, nobody can join this stub meanwhile; an exclusive lock succeeds
  // only when no other run holds its shared one.
  if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) return;
  Entry e;
  if (parse_entry(data && !data->empty() ? *data : read_fd(lock.get()), e)) remove_stub(e, pool_);
  ::unlink(entry.c_str());
}

void StubRegistry::release_all() {
  if (held_.empty()) return;
  auto reg = lock_registry();
  if (!reg.ok()) return;
  // Newest first: a stub made inside another stub goes before its parent.
  for (auto it = held_.rbegin(); it != held_.rend(); ++it) remove_if_unused(it->lock, it->entry, &it->data);
  held_.clear();
}

std::vector<std::string> StubRegistry::join_registered(const std::function<bool(const std::string&)>& relevant) {
  std::vector<std::string> joined;
  auto list = [&]() {
    std::vector<std::string> names;
    if (DIR* d = ::opendir(dir_.c_str())) {
      while (struct dirent* e = ::readdir(d)) {
        if (e->d_name[0] != '.') names.push_back(e->d_name);
      }
      ::closedir(d);
    }
    return names;
  };
  // Unlocked first: no entry now means no stub of another run was there when we probed (one
  // made since was made after the probe, which then saw the path missing and planned a stub).
  if (list().empty()) return joined;
  auto reg = lock_registry();
  if (!reg.ok()) return joined;
  for (const auto& name : list()) {
    std::string entry = dir_ + "/" + name;
    bool ours = std::any_of(held_.begin(), held_.end(), [&](const Held& h) { return h.entry == entry; });
    if (ours) continue;
    Fd fd(::open(entry.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid()) continue;
    std::string data = read_fd(fd.get());
    Entry e;
    struct stat st;
    if (!parse_entry(data, e) || !relevant(e.path) || ::lstat(e.path.c_str(), &st) != 0 || st.st_ino != e.ino ||
        st.st_dev != e.dev) {
      continue;  // not a live stub, or none of ours to care about
    }
    if (::flock(fd.get(), LOCK_SH) != 0) continue;
    joined.push_back(e.path);
    held_.push_back({std::move(fd), entry, data});
  }
  return joined;
}

void StubRegistry::sweep() {
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return;
  std::vector<std::string> entries;
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') entries.push_back(dir_ + "/" + e->d_name);
  }
  ::closedir(d);
  if (entries.empty()) return;
  auto reg = lock_registry();
  if (!reg.ok()) return;
  for (const auto& entry : entries) {
    Fd fd(::open(entry.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (fd.valid()) remove_if_unused(fd, entry);
  }
}

}  // namespace wb::sys
