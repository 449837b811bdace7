#pragma once
// Passing descriptors over a Unix socket (SCM_RIGHTS), with a small payload. send_fds is
// async-signal-safe (no allocation): it is used between fork and exec.
#include <cstddef>

namespace wb::sys {

constexpr size_t kMaxPassedFds = 80;  // the seccomp listener and up to 64 FUSE masks at once

// true when the whole payload and the descriptors went out.
bool send_fds(int sock, const int* fds, size_t count, const void* payload, size_t len);
// Receives up to `count` descriptors (close-on-exec; any beyond are closed) and the payload
// (*received: how many bytes of it); returns how many descriptors arrived, or -1 on error or end
// of file.
int recv_fds(int sock, int* fds, size_t count, void* payload, size_t len, size_t* received = nullptr);

}  // namespace wb::sys
