#pragma once
// Compiles the seccomp rule list with libseccomp (the only file that includes its header; the
// library itself is loaded only when a program is not in the cache) into a BPF program in a
// memory file, which wavebox-shim loads (compile_sandbox_filter).
#include "bwrap/plan/seccomp_rules.hpp"
#include "core/result.hpp"
#include "core/sys/fd.hpp"

namespace wb::lnx {

// Writes the BPF program into fd. Native architecture only: any other (i386 via int 0x80, x32)
// kills the process.
// cache_dir (empty: none): programs compiled before, one file per exact recipe (every rule,
// action and comparison, the libseccomp header's version and the machine name it), its first
// line naming the library file that compiled it (path, device, inode, size, change time): a
// file whose library changed, or that is not a plausible program, is compiled and written again.
// Compiling takes about half a millisecond, reading the file microseconds.
Status compile_seccomp(const std::vector<SeccompRule>& rules, int fd, const std::string& cache_dir = "");

// The observer's part alone: user notification for write intent (open flags tested in BPF, so
// plain reads never trap), path-changing calls and connect(), chdir. Writes the BPF program into
// fd (the sandbox uses compile_sandbox_filter, which holds it).
Status compile_observer(int fd, const std::string& cache_dir = "");

// What wavebox-shim loads (with a notification listener) before the command: one program that
// refuses what compile_seccomp refuses and notifies what compile_observer observes; one program
// instead of two is one less walk per system call of the command.
// descriptors: fchmod, fchown and futimens are reported to the supervisor too (a run with guards
// that have no mount: late guards, denyWrite globs).
Status compile_sandbox_filter(const std::vector<SeccompRule>& rules, int fd, const std::string& cache_dir = "",
                              bool descriptors = false);

}  // namespace wb::lnx
