#include "core/sys/platform.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/sys/fd.hpp"
#include "core/sys/fs.hpp"

namespace wb::sys {

PlatformInfo probe_platform() {
  PlatformInfo info;
  struct utsname u;
  if (::uname(&u) == 0) info.kernel = fmt::format("{} {}", u.sysname, u.release);
#if defined(__APPLE__)
  info.platform = Platform::kMacos;
#elif defined(__linux__)
  info.platform = Platform::kLinux;
  if (auto v = read_file("/proc/version"); v.ok()) {
    // WSL2 kernels say "microsoft-standard-WSL2"; WSL1 says "Microsoft" without WSL2.
    if (v->find("WSL2") != std::string::npos || v->find("microsoft-standard") != std::string::npos) {
      info.platform = Platform::kWsl2;
    } else if (v->find("Microsoft") != std::string::npos) {
      info.platform = Platform::kWsl1;
    }
  }
#endif
  return info;
}

const char* platform_name(Platform p) {
  switch (p) {
    case Platform::kLinux:
      return "linux";
    case Platform::kWsl1:
      return "wsl1";
    case Platform::kWsl2:
      return "wsl";
    case Platform::kMacos:
      return "macos";
    case Platform::kOther:
      return "other";
  }
  return "other";
}

std::string probe_userns() {
  // The real test: a child tries to create a user namespace (AppArmor's
  // apparmor_restrict_unprivileged_userns and container seccomp profiles only show this way).
  pid_t pid = ::fork();
  if (pid < 0) return fmt::format("fork failed: {}", errno_text(errno));
  if (pid == 0) {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) ::_exit(errno & 0xff);
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  int err = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  std::string why = fmt::format("creating a user namespace failed ({})", err ? errno_text(err) : "killed");
  if (auto r = read_file("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); r.ok() && r->rfind("1", 0) == 0) {
    why +=
        "; AppArmor restricts unprivileged user namespaces "
        "(kernel.apparmor_restrict_unprivileged_userns=1): allow bwrap with an AppArmor profile "
        "or set the sysctl to 0";
  } else if (auto m = read_file("/proc/sys/user/max_user_namespaces"); m.ok() && m->rfind("0", 0) == 0) {
    why += "; user.max_user_namespaces is 0: set it to a positive number";
  } else {
    why +=
        "; if this is a container, run it with user namespaces allowed (where only a new /proc is "
        "refused, sandbox.enableWeakerNestedSandbox uses the host's)";
  }
  return why;
}

std::string probe_userns_cached(const std::string& cache_file) {
  std::string key;
  for (const char* f :
       {"/proc/sys/kernel/random/boot_id", "/proc/sys/user/max_user_namespaces",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "/proc/sys/kernel/unprivileged_userns_clone"}) {
    auto v = read_file(f);
    key += v.ok() ? *v : std::string("-\n");
  }
  if (!cache_file.empty()) {
    if (auto c = read_file(cache_file); c.ok() && *c == key) return {};
  }
  std::string why = probe_userns();
  if (why.empty() && !cache_file.empty()) (void)write_file_atomic(cache_file, key);
  return why;
}

std::string probe_seccomp() {
  auto status = read_file("/proc/self/status");
  if (!status.ok()) return "cannot read /proc/self/status";
  if (status->find("\nSeccomp:") == std::string::npos) return "the kernel has no seccomp support";
  return {};
}

namespace {
void parse_version(const std::string& text, int out[3]) {
  const char* p = text.c_str();
  while (*p && (*p < '0' || *p > '9')) ++p;
  std::sscanf(p, "%d.%d.%d", &out[0], &out[1], &out[2]);
}

std::string run_version(const std::string& bwrap) {
  int pfd[2];
  if (::pipe2(pfd, O_CLOEXEC) != 0) return {};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pfd[1], 1);
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, 2);
    ::execl(bwrap.c_str(), bwrap.c_str(), "--version", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(pfd[1]);
  Fd rd(pfd[0]);
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = ::read(rd.get(), buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) out.append(buf, static_cast<size_t>(n));
  }
  int st;
  if (pid > 0) ::waitpid(pid, &st, 0);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}
}  // namespace

// wavebox never runs a program from a place a sandbox may write: PATH can name the workspace,
// node_modules/.bin or ~/.local/bin. Only the system's own directories, owned by root and
// writable by nobody else, file included (sandbox.bwrapPath names any other on purpose).
std::string trusted_program(const std::string& name) {
  for (const char* dir : {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
    std::string cand = std::string(dir) + "/" + name;
    struct stat d, f;
    if (::stat(dir, &d) != 0 || d.st_uid != 0 || (d.st_mode & 022) != 0) continue;
    if (::stat(cand.c_str(), &f) != 0 || !S_ISREG(f.st_mode) || f.st_uid != 0 || (f.st_mode & 022) != 0) continue;
    if (::access(cand.c_str(), X_OK) == 0) return cand;
  }
  return {};
}

std::string installed_program(const std::string& name) {
  for (const char* dir : {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
    std::string cand = std::string(dir) + "/" + name;
    struct stat f;
    if (::stat(cand.c_str(), &f) == 0 && S_ISREG(f.st_mode) && ::access(cand.c_str(), X_OK) == 0) return cand;
  }
  return {};
}

constexpr size_t kBwrapCacheEntries = 8, kBwrapCacheBytes = 16384;

BwrapInfo probe_bwrap(const std::string& explicit_path, const std::string& cache_file) {
  BwrapInfo info;
  std::string path = explicit_path;
  if (path.empty()) path = trusted_program("bwrap");
  struct stat st;
  if (path.empty() || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || ::access(path.c_str(), X_OK) != 0) {
    return info;
  }
  info.path = path;
  std::string key = fmt::format("{}\n{}\n{}\n{}\n", path, st.st_ino, st.st_mtim.tv_sec, st.st_size);
  // One entry per bwrap, NUL-separated (a run started before its settings probes the system's,
  // and its settings may name another: each keeps its own, and neither runs `--version` again).
  std::vector<std::string> entries;
  if (!cache_file.empty()) {
    // (Ours and small: a file grown past that is ignored, probed again and rewritten.)
    if (auto c = read_file(cache_file); c.ok() && c->size() <= kBwrapCacheBytes) {
      size_t at = 0;
      while (at < c->size() && entries.size() < kBwrapCacheEntries) {
        size_t end = c->find('\0', at);
        if (end == std::string::npos) end = c->size();
        entries.push_back(c->substr(at, end - at));
        at = end + 1;
      }
    }
    for (const auto& e : entries) {
      if (e.rfind(key, 0) == 0) info.version_text = e.substr(key.size());
    }
    // An entry that names no version is no answer: bwrap is asked again.
    int v[3] = {0, 0, 0};
    parse_version(info.version_text, v);
    if (v[0] == 0 && v[1] == 0 && v[2] == 0) info.version_text.clear();
  }
  if (info.version_text.empty()) {
    info.version_text = run_version(path);
    if (!cache_file.empty() && !info.version_text.empty()) {
      std::string out = key + info.version_text;
      const std::string same_path = path + "\n";
      size_t kept = 1;
      for (const auto& e : entries) {
        if (e.rfind(same_path, 0) == 0 || kept == kBwrapCacheEntries) continue;
        out += '\0' + e;
        ++kept;
      }
      (void)write_file_atomic(cache_file, out);
    }
  }
  parse_version(info.version_text, info.version);
  return info;
}

}  // namespace wb::sys
