#pragma once
// File-system helpers with errors as values: reading files, probing paths, the per-user state
// directory.
#include <sys/resource.h>

#include <map>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace wb::sys {

std::string errno_text(int err);
// "open(\"/x\") failed: Permission denied"
Error sys_error(const std::string& call, const std::string& path, int err);

Result<std::string> read_file(const std::string& path);
// Only a regular file (an error for anything else, a FIFO included, without waiting for it):
// for files a sandboxed command may have made (a repository's commondir, a gitlink).
Result<std::string> read_regular_file(const std::string& path);
Status write_file_atomic(const std::string& path, const std::string& data);
// Makes an open file (a memory file handed to another process) hold exactly data, and leaves
// its offset at the start for the reader. what: named in the error.
Status replace_contents(int fd, const std::string& data, const std::string& what);
bool exists(const std::string& path);
bool is_dir(const std::string& path);
std::string real_path_or_empty(const std::string& path);
std::string current_dir();
std::string home_dir();
// Searches PATH like execvp; empty when not found.
std::string find_in_path(const std::string& name, const std::string& path_env);
// Expands a glob pattern to the existing paths it matches (no "**").
std::vector<std::string> expand_glob(const std::string& pattern);

// wavebox's per-user directory, /tmp/wavebox-UID, created 0700 and checked to be ours and not a
// symlink (another user could have planted it). Holds tmp/ (the sandbox's TMPDIR), stubs/,
// stubpool/, scan/, and an unreadable placeholder file.
// wavebox's own files. root holds what later runs trust (caches of the scan, the seccomp
// programs, bwrap's version, the stub registry): $XDG_RUNTIME_DIR/wavebox when that is this
// user's private directory (no other local user can make it first), else /tmp/wavebox-UID.
// base (/tmp/wavebox-UID) holds the sandbox's TMPDIR and what must share /tmp's filesystem.
// Every directory is checked to be this user's own, mode 0700, not a link.
struct StateDir {
  std::string root;
  std::string base;
  std::string seccomp;
  std::string tmp;
  std::string stubs;
  std::string pool;  // empty stubs kept between runs (same filesystem as /tmp), see stubs.hpp
  std::string scan;
  std::string placeholder;
  // Said once per run when base is not /tmp/wavebox-UID: another local user made that first
  // (where no XDG_RUNTIME_DIR is: cron, su, containers), so base is in this user's home instead.
  std::string relocated;
};
Result<StateDir> ensure_state_dir();
// Makes the directory (mode 0700) or checks it: a directory of this user's, private (modes
// opened by a sandboxed command are closed again), not a symbolic link.
Status ensure_private_dir(const std::string& path);
// The package caches and the TMPDIR of one workspace's sandboxed runs: base/caches/HASH and
// base/caches/HASH/tmp, made private (a mode opened up by an earlier run is closed again).
struct WorkspaceDirs {
  std::string dir, tmp;
};
Result<WorkspaceDirs> ensure_cache_dir(const StateDir& state, const std::string& workspace);

// The copies a sandbox sees in place of host files (lnx::LinuxFacts::replaced): real path -> a
// file in state.root named by its content (never replaced: a sandbox may be binding it).
// /etc/hosts as core/etc_hosts.hpp makes it (when the host's is a regular file), and each file
// of masked that has credentials in it without them (core/secrets.hpp); one that cannot be
// copied is shown as the unreadable placeholder, never as itself.
std::map<std::string, std::string> sandbox_copies(const StateDir& state, const std::vector<std::string>& masked);

// Raises this process's soft RLIMIT_NOFILE to the hard limit (the proxy holds two sockets per
// tunnel) and remembers the original, which children get back before exec.
void raise_fd_limit();
// The limit before raise_fd_limit(); async-signal-safe to read.
const struct rlimit* original_fd_limit();

// Call first thing in main: a standard descriptor (0, 1, 2) the caller left closed gets a
// close-on-exec /dev/null as a placeholder, so no descriptor of ours takes its number (and
// reaches a child as its stdin or stdout), while programs we exec still find it closed.
void hold_standard_fds();
// Whether standard descriptor fd (0, 1, 2) was open when wavebox started.
bool standard_fd_given(int fd);

}  // namespace wb::sys
