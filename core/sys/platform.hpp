#pragma once
// Probes of the machine: OS, WSL, user namespaces, seccomp, the bubblewrap binary.
#include <string>

#include "core/result.hpp"

namespace wb::sys {

enum class Platform { kLinux, kWsl1, kWsl2, kMacos, kOther };

struct PlatformInfo {
  Platform platform = Platform::kOther;
  std::string kernel;  // uname -sr
};

PlatformInfo probe_platform();
const char* platform_name(Platform p);  // "linux", "wsl", "wsl1", "macos", "other"

// Empty when an unprivileged process can create a user namespace here; else the reason.
std::string probe_userns();
// The same, answered from cache_file when a probe on this boot with the same sysctls succeeded
// (a failure is never cached: it is probed again each time).
std::string probe_userns_cached(const std::string& cache_file);
// Empty when the kernel supports seccomp filters; else the reason.
std::string probe_seccomp();

struct BwrapInfo {
  std::string path;  // empty: not found
  std::string version_text;
  int version[3] = {0, 0, 0};
};
// Finds bwrap (explicit path, else PATH) and reads its version, cached by path/inode/mtime in
// cache_file so a run does not spawn `bwrap --version` each time.
// The program in the system's own directories (root-owned, writable by nobody else), never in
// another PATH entry; "" when there is none.
std::string trusted_program(const std::string& name);
// The first of those directories holding an executable NAME, whoever owns it ("" when none): a
// program installed but not trusted (in a user namespace that does not map root, root's files
// belong to nobody).
std::string installed_program(const std::string& name);
BwrapInfo probe_bwrap(const std::string& explicit_path, const std::string& cache_file);

}  // namespace wb::sys
