#pragma once
// Fd: a move-only owner of a file descriptor. close() is never retried on EINTR (the descriptor
// is gone either way on Linux).
#include <unistd.h>

#include <utility>
#include <vector>

namespace wb::sys {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// A sandbox's network, as sockets made in its own network namespace: the proxies' listeners,
// the resolver's UDP socket and TCP listener (port 53 of every address) and the transparent TCP
// listeners (ports 80, 443 and the allowlist's own). Any may be absent (macOS has the first two).
struct NetListeners {
  Fd http, socks, dns, dns_tcp;
  std::vector<Fd> transparent;
};

}  // namespace wb::sys
