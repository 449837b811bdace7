#pragma once
// Compiles the seccomp rule list with libseccomp (the only file that includes it) into a BPF
// program in a sealed memfd, for bwrap --seccomp FD.
#include "bwrap/seccomp_rules.hpp"
#include "core/result.hpp"
#include "core/sys/fd.hpp"

namespace wb::lnx {

// Native architecture only: any other (i386 via int 0x80, x32) kills the process.
Result<sys::Fd> compile_seccomp(const std::vector<SeccompRule>& rules);

// The observer filter (installed by wavebox-shim inside the sandbox): user notification for
// write intent (open flags tested in BPF, so plain reads never trap), path-changing calls and
// connect(). Returns the BPF program in a memfd.
Result<sys::Fd> compile_observer();

}  // namespace wb::lnx
