#pragma once
// Name lookups off the proxy's event loop: getaddrinfo blocks, so it runs on a thread of its own,
// started with the first name (most runs resolve none); each answer is announced on an eventfd
// the loop polls.
#include <sys/socket.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/sys/fd.hpp"

namespace wb::netproxy {

struct Addr {
  sockaddr_storage ss{};
  socklen_t len = 0;
};

struct Resolved {
  std::uint64_t id;
  std::vector<Addr> addrs;  // empty: the name did not resolve
};

class Resolver {
 public:
  Resolver();
  ~Resolver() { stop(); }
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  int fd() const { return event_.get(); }  // readable when answers wait; -1 if none could be made
  // Looks up host:port (TCP) for the request `id`.
  void submit(std::uint64_t id, std::string host, int port);
  // The answers so far (call when fd() is readable).
  std::deque<Resolved> take();
  // A lookup nobody waits for any more (its connection closed) leaves the queue.
  void cancel(std::uint64_t id);
  // Ends the thread (a lookup under way is waited for). Idempotent.
  void stop();

 private:
  struct Job {
    std::uint64_t id;
    std::string host;
    int port;
  };
  void run();

  sys::Fd event_;
  // A few threads: one lookup that never answers must not hold every other run's (a proxy
  // shared by many runs resolves for all of them).
  static constexpr size_t kThreads = 4;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::deque<Resolved> results_;
  bool stopping_ = false;
  bool without_thread_ = false;
};

}  // namespace wb::netproxy
