// `wavebox connect HOST PORT`: a ProxyCommand for ssh inside the sandbox. Opens a SOCKS5 tunnel
// through the sandbox's proxy and relays stdin/stdout over it (no nc or socat needed).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cli/options.hpp"

namespace wb::cli {
namespace {

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_exact(int fd, unsigned char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

int cmd_connect(const std::string& host, int port) {
  const char* proxy_port = std::getenv("WAVEBOX_SOCKS_PORT");
  int sp = proxy_port ? std::atoi(proxy_port) : 1080;
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(sp));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (s < 0 || ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::fprintf(stderr, "wavebox connect: the sandbox's proxy is not reachable: %s\n", std::strerror(errno));
    return 1;
  }
  if (host.empty() || host.size() > 255 || port < 1 || port > 65535) {
    std::fprintf(stderr, "wavebox connect: usage: wavebox connect HOST PORT\n");
    return 2;
  }
  std::string req = {5, 1, 0};
  req += {5, 1, 0, 3, static_cast<char>(host.size())};
  req += host;
  req += {static_cast<char>(port >> 8), static_cast<char>(port & 0xff)};
  unsigned char reply[10];
  if (!write_all(s, req.data(), req.size()) || !read_exact(s, reply, 2) || reply[1] != 0 || !read_exact(s, reply, 10)) {
    std::fprintf(stderr, "wavebox connect: no SOCKS5 answer from the proxy\n");
    return 1;
  }
  if (reply[1] != 0) {
    std::fprintf(stderr, "wavebox connect: %s:%d refused by the sandbox's network allowlist (SOCKS5 reply %d)\n",
                 host.c_str(), port, reply[1]);
    return 1;
  }
  struct pollfd p[2] = {{0, POLLIN, 0}, {s, POLLIN, 0}};
  char buf[65536];
  bool in_open = true;
  for (;;) {
    p[0].fd = in_open ? 0 : -1;
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    if (p[0].revents) {
      ssize_t n = ::read(0, buf, sizeof buf);
      if (n <= 0) {
        in_open = false;
        ::shutdown(s, SHUT_WR);
      } else if (!write_all(s, buf, static_cast<size_t>(n))) {
        return 1;
      }
    }
    if (p[1].revents) {
      ssize_t n = ::read(s, buf, sizeof buf);
      if (n <= 0) return 0;
      if (!write_all(1, buf, static_cast<size_t>(n))) return 1;
    }
  }
}

}  // namespace wb::cli
