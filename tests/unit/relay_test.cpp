// netproxy/relay: one direction of a tunnel between two real socket pairs.
#include "netproxy/relay.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

using wb::netproxy::Relay;

namespace {
std::string drain(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}
}  // namespace

TEST_CASE("relay: what comes first, then the source's bytes, then the end of the source") {
  int a[2], b[2];  // a[0]: the source's peer, a[1]: source; b[0]: destination, b[1]: its peer
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, a) == 0);
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, b) == 0);
  Relay r;
  REQUIRE(r.open());
  CHECK(r.cap >= 65536);
  r.pre = "HEAD ";
  CHECK(r.wants_dst());

  REQUIRE(::send(a[0], "body", 4, 0) == 4);
  unsigned long long bytes = 0;
  REQUIRE(r.step(a[1], b[0], true, true, &bytes));
  CHECK(drain(b[1]) == "HEAD body");
  CHECK(bytes == 4);
  CHECK_FALSE(r.wants_dst());
  CHECK(r.wants_src());

  ::shutdown(a[0], SHUT_WR);
  REQUIRE(r.step(a[1], b[0], true, true, &bytes));
  CHECK(r.src_eof);
  CHECK(r.dst_shut);
  char c;
  CHECK(::recv(b[1], &c, 1, 0) == 0);  // the destination's peer sees the end too
  for (int fd : {a[0], a[1], b[0], b[1]}) ::close(fd);
}

TEST_CASE("relay: a destination not ready keeps the bytes in the pipe") {
  int a[2], b[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, a) == 0);
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, b) == 0);
  Relay r;
  REQUIRE(r.open());
  REQUIRE(::send(a[0], "abc", 3, 0) == 3);
  unsigned long long bytes = 0;
  REQUIRE(r.step(a[1], b[0], true, false, &bytes));
  CHECK(r.in_pipe == 3);
  CHECK(r.wants_dst());
  CHECK(drain(b[1]).empty());
  REQUIRE(r.step(a[1], b[0], false, true, &bytes));
  CHECK(r.in_pipe == 0);
  CHECK(drain(b[1]) == "abc");
  for (int fd : {a[0], a[1], b[0], b[1]}) ::close(fd);
}
