#include "core/sys/fdpass.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace wb::sys {

bool send_fds(int sock, const int* fds, size_t count, const void* payload, size_t len) {
  if (count > kMaxPassedFds || len == 0) return false;
  union {
    char buf[CMSG_SPACE(sizeof(int) * kMaxPassedFds)];
    struct cmsghdr align;
  } ctl;
  std::memset(&ctl, 0, sizeof ctl);
  struct iovec iov = {const_cast<void*>(payload), len};
  struct msghdr msg {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (count > 0) {
    msg.msg_control = ctl.buf;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * count);
    struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * count);
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * count);
  }
  ssize_t n;
  do {
    n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(len);
}

int recv_fds(int sock, int* fds, size_t count, void* payload, size_t len, size_t* received) {
  if (count > kMaxPassedFds) return -1;
  union {
    char buf[CMSG_SPACE(sizeof(int) * kMaxPassedFds)];
    struct cmsghdr align;
  } ctl;
  struct iovec iov = {payload, len};
  struct msghdr msg {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctl.buf;
  msg.msg_controllen = sizeof ctl.buf;
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return -1;
  if (received) *received = static_cast<size_t>(n);
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) return 0;
  size_t got = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
  std::memcpy(fds, CMSG_DATA(c), sizeof(int) * std::min(got, count));
  for (size_t i = count; i < got; ++i) {
    int extra;
    std::memcpy(&extra, CMSG_DATA(c) + i * sizeof(int), sizeof extra);
    ::close(extra);
  }
  return static_cast<int>(std::min(got, count));
}

}  // namespace wb::sys
