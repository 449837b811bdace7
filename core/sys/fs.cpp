#include "core/sys/fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <glob.h>
#include <linux/magic.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "core/etc_hosts.hpp"
#include "core/hash.hpp"
#include "core/paths.hpp"
#include "core/secrets.hpp"
#include "core/sys/fd.hpp"
#include "core/sys/fswitness.hpp"

namespace wb::sys {

std::string errno_text(int err) {
  return std::strerror(err);
}

Error sys_error(const std::string& call, const std::string& path, int err) {
  return make_error(ErrorKind::kSystem, fmt::format("{}(\"{}\") failed: {}", call, path, errno_text(err)));
}

namespace {

Result<std::string> read_all(const std::string& path, bool regular_only) {
  if (FsReads* rec = recording()) rec->content(path);
  Fd fd;
  if (regular_only) {
    // Looked at before it is opened: opening is what a FIFO waits in and what a device acts on
    // (a watchdog arms, a terminal can become ours). Then the very file looked at is opened.
    Fd at(::open(path.c_str(), O_PATH | O_CLOEXEC));
    if (!at.valid()) return sys_error("open", path, errno);
    struct stat st;
    if (::fstat(at.get(), &st) != 0) return sys_error("fstat", path, errno);
    if (!S_ISREG(st.st_mode)) return sys_error("open", path, EINVAL);
    fd = Fd(::open(fmt::format("/proc/self/fd/{}", at.get()).c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  } else {
    fd = Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  }
  if (!fd.valid()) return sys_error("open", path, errno);
  std::string out;
  // Small reads first: most files read here are a few bytes, and the kernel allocates (and
  // clears) a buffer of the asked size for each read of a /proc/sys file.
  size_t chunk = 4096;
  for (;;) {
    size_t had = out.size();
    out.resize(had + chunk);
    ssize_t n = ::read(fd.get(), out.data() + had, chunk);
    if (n < 0) {
      out.resize(had);
      if (errno == EINTR) continue;
      return sys_error("read", path, errno);
    }
    out.resize(had + static_cast<size_t>(n));
    if (n == 0) break;
    if (static_cast<size_t>(n) == chunk && chunk < 65536) chunk *= 4;
  }
  return out;
}

}  // namespace

Result<std::string> read_file(const std::string& path) {
  return read_all(path, false);
}

Result<std::string> read_regular_file(const std::string& path) {
  return read_all(path, true);
}

Status replace_contents(int fd, const std::string& data, const std::string& what) {
  if (::ftruncate(fd, 0) != 0) return sys_error("ftruncate", what, errno);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::pwrite(fd, data.data() + off, data.size() - off, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return sys_error("write", what, n < 0 ? errno : EIO);
    off += static_cast<size_t>(n);
  }
  if (::lseek(fd, 0, SEEK_SET) != 0) return sys_error("lseek", what, errno);
  return ok_status();
}

Status write_file_atomic(const std::string& path, const std::string& data) {
  std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
  // O_EXCL: what stands at that name already (a FIFO a command planted beside a report file,
  // which would block the open; a link) is removed, never opened.
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid() && errno == EEXIST && ::unlink(tmp.c_str()) == 0) {
    fd.reset(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  }
  if (!fd.valid()) return sys_error("open", tmp, errno);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd.get(), data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::unlink(tmp.c_str());
      return sys_error("write", tmp, e);
    }
    off += static_cast<size_t>(n);
  }
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return sys_error("rename", path, e);
  }
  return ok_status();
}

bool exists(const std::string& path) {
  if (FsReads* rec = recording()) rec->path(path);
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

bool is_dir(const std::string& path) {
  if (FsReads* rec = recording()) rec->path(path);
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string real_path_or_empty(const std::string& path) {
  if (FsReads* rec = recording()) rec->path(path);
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return {};
  return buf;
}

std::string current_dir() {
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf) == nullptr) return {};
  return buf;
}

std::string home_dir() {
  if (const char* h = std::getenv("HOME"); h && *h == '/') return paths::normalize(h);
  if (struct passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) return paths::normalize(pw->pw_dir);
  return "/";
}

std::string find_in_path(const std::string& name, const std::string& path_env) {
  if (name.find('/') != std::string::npos) return name;
  size_t i = 0;
  std::string env = path_env.empty() ? "/usr/local/bin:/usr/bin:/bin" : path_env;
  while (i <= env.size()) {
    size_t j = env.find(':', i);
    if (j == std::string::npos) j = env.size();
    std::string dir = env.substr(i, j - i);
    if (dir.empty()) dir.assign(1, '.');  // (not = ".": a false -Wrestrict in GCC 12)
    std::string cand = dir + "/" + name;
    struct stat st;
    if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(cand.c_str(), X_OK) == 0) {
      return cand;
    }
    i = j + 1;
  }
  return {};
}

std::vector<std::string> expand_glob(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(paths::normalize(g.gl_pathv[i]));
  }
  ::globfree(&g);
  return out;
}

Status ensure_private_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return sys_error("mkdir", path, errno);
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return sys_error("lstat", path, errno);
  // Ours, but opened up (a sandboxed command can chmod its TMPDIR): closed again, rather than
  // every later run refused.
  if (S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) != 0) {
    Fd d(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (d.valid() && ::fchmod(d.get(), 0700) == 0) st.st_mode &= ~077;
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return make_error(ErrorKind::kSandboxFailed,
                      fmt::format("\"{}\" is not a private directory owned by this user (uid {}); "
                                  "remove it and run again",
                                  path, ::geteuid()));
  }
  return ok_status();
}

Result<StateDir> ensure_state_dir() {
  StateDir s;
  s.base = fmt::format("/tmp/wavebox-{}", ::geteuid());
  struct stat squat;
  if (::lstat(s.base.c_str(), &squat) == 0 && (squat.st_uid != ::geteuid() || !S_ISDIR(squat.st_mode))) {
    // Made first by another user (or a link): every run would be refused. A place no other
    // user can make instead: in this user's home, which the sandbox cannot write (the policy
    // guards base wherever it is).
    const char* home = std::getenv("HOME");
    struct stat hs;
    if (!home || home[0] != '/' || ::stat(home, &hs) != 0 || hs.st_uid != ::geteuid()) {
      return make_error(ErrorKind::kSandboxFailed,
                        fmt::format("\"{}\" is not a private directory owned by this user (uid {}), and there is no "
                                    "home of this user's to use instead; remove it and run again",
                                    s.base, ::geteuid()));
    }
    const std::string cache = paths::join(paths::normalize(home), ".cache");
    if (::mkdir(cache.c_str(), 0700) != 0 && errno != EEXIST) return sys_error("mkdir", cache, errno);
    WB_TRY(ensure_private_dir(cache + "/wavebox"));
    s.relocated = fmt::format(
        "\"{}\" belongs to another user (uid {}), who made it first: wavebox's files are in {} instead (remove "
        "it, or set XDG_RUNTIME_DIR, to have them in /tmp again)",
        s.base, squat.st_uid, cache + "/wavebox/run");
    s.base = cache + "/wavebox/run";
  }
  s.root = s.base;
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && xdg[0] == '/') {
    struct stat st;
    if (::lstat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0) {
      s.root = paths::join(paths::normalize(xdg), "wavebox");
    }
  }
  s.tmp = s.base + "/tmp";
  s.stubs = s.root + "/stubs";
  s.scan = s.root + "/scan";
  s.seccomp = s.root + "/seccomp";
  s.pool = s.base + "/stubpool";
  s.placeholder = s.base + "/unreadable";
  for (const auto& d : {s.base, s.root, s.tmp, s.scan, s.seccomp, s.pool}) WB_TRY(ensure_private_dir(d));
  // The stub registry sees a create and an unlink per stub per run: on tmpfs that costs nothing,
  // on a journaling file system it is most of a run's set-up time. The sandbox has a /dev/shm
  // of its own, so it cannot reach this one.
  struct statfs fs;
  std::string shm = fmt::format("/dev/shm/wavebox-{}-stubs", ::geteuid());
  if (::statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC && ensure_private_dir(shm).ok()) {
    s.stubs = shm;
  } else {
    WB_TRY(ensure_private_dir(s.stubs));
  }
  struct stat st;
  if (::lstat(s.placeholder.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 07777) != 0 ||
      st.st_size != 0) {
    ::unlink(s.placeholder.c_str());
    Fd fd(::open(s.placeholder.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0000));
    if (!fd.valid()) return sys_error("open", s.placeholder, errno);
    ::fchmod(fd.get(), 0000);
  }
  return s;
}

namespace {

// A file holding exactly want, named by its content (state.root/PREFIX-HASH): once there it is
// never replaced, since a sandbox being set up may be binding it (a bind of a file renamed over
// meanwhile fails). Written beside it under a name of this call's own and linked into place:
// link() never replaces, so of two runs writing it at once one places it and the other uses
// it. Empty when it cannot be made.
std::string content_copy(const StateDir& state, const std::string& prefix, const std::string& want) {
  const std::string path = fmt::format("{}/{}-{:016x}", state.root, prefix, fnv1a(want));
  if (auto have = read_regular_file(path); have.ok() && *have == want) {
    // In use: its time says so, for the clean-up below (which removes copies unused for 10 min).
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && st.st_mtime + 60 < ::time(nullptr))
      ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
    return path;
  }
  static std::atomic<unsigned> n{0};
  const std::string tmp = fmt::format("{}.{}.{}", path, ::getpid(), n++);
  ::unlink(tmp.c_str());  // left by a process of this pid that died mid-write
  {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444));
    if (!fd.valid() || ::write(fd.get(), want.data(), want.size()) != static_cast<ssize_t>(want.size())) {
      ::unlink(tmp.c_str());
      return "";
    }
  }
  int rc = ::link(tmp.c_str(), path.c_str());
  int err = errno;
  ::unlink(tmp.c_str());
  if (rc == 0) {
    // A new content: the copies of older ones go once unused for 10 minutes (no run can still be
    // setting up with them).
    if (DIR* d = ::opendir(state.root.c_str())) {
      const time_t now = ::time(nullptr);
      while (dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        struct stat st;
        if (name.rfind(prefix + "-", 0) != 0 || state.root + "/" + name == path) continue;
        if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_mtime + 600 < now) {
          ::unlinkat(::dirfd(d), e->d_name, 0);
        }
      }
      ::closedir(d);
    }
    return path;
  }
  if (err != EEXIST) return "";
  // Placed by a concurrent run (the same text), or a file of another content under this name.
  auto have = read_regular_file(path);
  return have.ok() && *have == want ? path : "";
}

}  // namespace

std::map<std::string, std::string> sandbox_copies(const StateDir& state, const std::vector<std::string>& masked) {
  std::map<std::string, std::string> out;
  struct stat st;
  // /etc/hosts: a link is left alone (its target may be anywhere, and rewritten at any time).
  if (::lstat("/etc/hosts", &st) == 0 && S_ISREG(st.st_mode)) {
    if (auto host_file = read_regular_file("/etc/hosts"); host_file.ok()) {
      char name[256] = "";
      if (::gethostname(name, sizeof name - 1) != 0) name[0] = 0;
      if (auto copy = content_copy(state, "hosts", sandbox_hosts(*host_file, name)); !copy.empty()) {
        out["/etc/hosts"] = copy;
      }
    }
  }
  // Credentials in tools' files: the file where it really is (dotfiles are often links), only
  // when there is something to take out (no mount otherwise).
  for (const auto& path : masked) {
    std::string real = real_path_or_empty(path);
    if (real.empty() || ::stat(real.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    auto content = read_regular_file(real);
    if (!content.ok()) {
      // Unreadable to us: unreadable inside too. Anything else (too large, changing): masked whole.
      if (::access(real.c_str(), R_OK) != 0) continue;
      out[real] = state.placeholder;
      continue;
    }
    std::string shown = without_credential_lines(*content, paths::basename(path));
    if (shown == *content) continue;
    std::string copy = content_copy(state, fmt::format("masked-{:016x}", fnv1a(real)), shown);
    out[real] = copy.empty() ? state.placeholder : copy;
  }
  return out;
}

Result<WorkspaceDirs> ensure_cache_dir(const StateDir& state, const std::string& workspace) {
  std::string caches = state.base + "/caches";
  WB_TRY(ensure_private_dir(caches));
  WorkspaceDirs d;
  d.dir = fmt::format("{}/{:016x}", caches, fnv1a(workspace));
  d.tmp = d.dir + "/tmp";
  WB_TRY(ensure_private_dir(d.dir));
  WB_TRY(ensure_private_dir(d.tmp));
  return d;
}

namespace {
struct rlimit g_original_nofile;
bool g_raised = false;
}  // namespace

void raise_fd_limit() {
  struct rlimit r;
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return;
  g_original_nofile = r;
  if (r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &r) == 0) g_raised = true;
  }
}

const struct rlimit* original_fd_limit() {
  return g_raised ? &g_original_nofile : nullptr;
}

namespace {
bool g_std_closed[3] = {false, false, false};
}  // namespace

void hold_standard_fds() {
  for (int fd = 0; fd < 3; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    int got = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (got < 0) return;  // nothing to hold the numbers with: then they stay as they were
    if (got != fd) {      // (the lowest free number is fd: the lower ones are open or held)
      ::dup3(got, fd, O_CLOEXEC);
      ::close(got);
    }
    g_std_closed[fd] = true;
  }
}

bool standard_fd_given(int fd) {
  return fd >= 0 && fd < 3 && !g_std_closed[fd];
}

}  // namespace wb::sys
