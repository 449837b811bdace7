#pragma once
// Compiles the seccomp rule list with libseccomp (the only file that includes it) into a BPF
// program in a sealed memfd, for bwrap --seccomp FD.
#include "bwrap/seccomp_rules.hpp"
#include "core/result.hpp"
#include "core/sys/fd.hpp"

namespace wb::lnx {

// Writes the BPF program into fd. Native architecture only: any other (i386 via int 0x80, x32)
// kills the process.
Status compile_seccomp(const std::vector<SeccompRule>& rules, int fd);

// The observer filter (installed by wavebox-shim inside the sandbox): user notification for
// write intent (open flags tested in BPF, so plain reads never trap), path-changing calls and
// connect(), chdir. Writes the BPF program into fd.
Status compile_observer(int fd);

}  // namespace wb::lnx
