#pragma once
// One direction of a proxied connection: bytes go socket -> pipe -> socket with splice(2),
// never through our memory. The event loop (proxy.cpp) decides when a side is worth trying;
// this moves what it can and says what it is waiting for.
#include <cstddef>
#include <string>

#include "core/sys/fd.hpp"

namespace wb::netproxy {

struct Relay {
  sys::Fd pr, pw;
  size_t cap = 65536;  // the pipe's capacity
  size_t in_pipe = 0;
  // The pipe refused more although it holds less than its capacity in bytes (socket data
  // arrives in pieces; the pipe counts slots): the source is not read again until some of it
  // has gone out, or a slow reader would make us spin on a readable source.
  bool pipe_full = false;
  bool src_eof = false, dst_shut = false;
  std::string pre;  // sent first: a rewritten request head, a CONNECT or SOCKS reply
  // Bytes still to take from the source; -1: no limit. A plain HTTP request's body: what the
  // client sends after it (a pipelined request, decided by nobody) never reaches upstream.
  long long limit = -1;

  // The pipe, as large as the kernel lets us (fewer splice calls per megabyte); false when no
  // pipe could be made.
  bool open();
  // Moves what it can; false on a hard error. A short read means the source is drained and a
  // short write that the destination is full: neither is tried again until the caller says it
  // is ready. Bytes read from the source are added to *bytes. Shuts the destination's write
  // side once the source ended and everything went out.
  bool step(int src, int dst, bool src_ready, bool dst_ready, unsigned long long* bytes);
  bool wants_src() const { return !src_eof && limit != 0 && in_pipe < cap && !pipe_full; }
  bool wants_dst() const { return in_pipe > 0 || !pre.empty(); }
};

}  // namespace wb::netproxy
