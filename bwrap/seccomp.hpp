#pragma once
// Compiles the seccomp rule list with libseccomp (the only file that includes it) into a BPF
// program in a sealed memfd, for bwrap --seccomp FD.
#include "bwrap/seccomp_rules.hpp"
#include "core/result.hpp"
#include "core/sys/fd.hpp"

namespace wb::lnx {

// Writes the BPF program into fd. Native architecture only: any other (i386 via int 0x80, x32)
// kills the process.
// cache_dir (empty: none): programs compiled before, one file per exact recipe (every rule,
// action and comparison, the libseccomp version and the machine name it) — compiling takes about
// half a millisecond, reading the file microseconds. A file that is not a plausible program is
// ignored and written again.
Status compile_seccomp(const std::vector<SeccompRule>& rules, int fd, const std::string& cache_dir = "");

// The observer filter (installed by wavebox-shim inside the sandbox): user notification for
// write intent (open flags tested in BPF, so plain reads never trap), path-changing calls and
// connect(), chdir. Writes the BPF program into fd.
Status compile_observer(int fd, const std::string& cache_dir = "");

// What wavebox-shim loads (with a notification listener) before the command: one program that
// refuses what compile_seccomp refuses and notifies what compile_observer observes; one program
// instead of two is one less walk per system call of the command.
Status compile_sandbox_filter(const std::vector<SeccompRule>& rules, int fd, const std::string& cache_dir = "");

}  // namespace wb::lnx
