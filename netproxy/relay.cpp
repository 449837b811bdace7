#include "netproxy/relay.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace wb::netproxy {
namespace {
constexpr size_t kPipeCap = 65536;
constexpr int kPipeWant = 512 * 1024;
}  // namespace

bool Relay::open() {
  int p[2];
  if (::pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) return false;
  pr.reset(p[0]);
  pw.reset(p[1]);
  // The kernel may refuse a larger pipe (per-user pipe quota): then the default 64 KiB stays.
  cap = ::fcntl(p[1], F_SETPIPE_SZ, kPipeWant) > 0 ? static_cast<size_t>(::fcntl(p[1], F_GETPIPE_SZ)) : kPipeCap;
  return true;
}

bool Relay::step(int src, int dst, bool src_ready, bool dst_ready, unsigned long long* bytes) {
  for (;;) {
    bool progress = false;
    if (!pre.empty()) {
      if (!dst_ready) break;
      ssize_t n = ::send(dst, pre.data(), pre.size(), MSG_NOSIGNAL);
      if (n > 0) {
        pre.erase(0, static_cast<size_t>(n));
        progress = true;
        if (!pre.empty()) dst_ready = false;
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return false;
      } else {
        dst_ready = false;
      }
    } else {
      if (limit == 0) src_eof = true;
      if (src_ready && wants_src()) {
        size_t want = cap - in_pipe;
        if (limit > 0 && static_cast<unsigned long long>(limit) < want) want = static_cast<size_t>(limit);
        ssize_t n = ::splice(src, nullptr, pw.get(), nullptr, want, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
        if (n > 0) {
          in_pipe += static_cast<size_t>(n);
          if (limit > 0) limit -= n;
          *bytes += static_cast<unsigned long long>(n);
          progress = true;
          if (static_cast<size_t>(n) < want) src_ready = false;
        } else if (n == 0) {
          src_eof = true;
        } else if (errno == EAGAIN || errno == EINTR) {
          src_ready = false;
          if (errno == EAGAIN && in_pipe > 0) pipe_full = true;
        } else {
          src_eof = true;  // reset by peer: treat as end of this direction
        }
      }
      if (dst_ready && in_pipe > 0) {
        ssize_t n = ::splice(pr.get(), nullptr, dst, nullptr, in_pipe, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
        if (n > 0) {
          in_pipe -= static_cast<size_t>(n);
          pipe_full = false;
          progress = true;
          if (in_pipe > 0) dst_ready = false;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
          return false;
        } else {
          dst_ready = false;
        }
      }
    }
    if (!progress) break;
  }
  if (limit == 0) src_eof = true;
  if (src_eof && in_pipe == 0 && pre.empty() && !dst_shut) {
    ::shutdown(dst, SHUT_WR);
    dst_shut = true;
  }
  return true;
}

}  // namespace wb::netproxy
