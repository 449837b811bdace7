#include "netproxy/resolver.hpp"

#include <netdb.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>
#include <iterator>
#include <system_error>

namespace wb::netproxy {

Resolver::Resolver() : event_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

void Resolver::submit(std::uint64_t id, std::string host, int port) {
  bool more = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back({id, std::move(host), port});
    more = idle_ < jobs_.size() && threads_.size() < kThreads;
  }
  if (more && !without_thread_) {
    try {
      threads_.emplace_back([this] { run(); });
    } catch (const std::system_error&) {
      if (threads_.empty()) without_thread_ = true;  // a process limit: no lookups, rather than a crash
    }
  }
  if (without_thread_) {
    // Every name waiting is answered as unresolved: its connection is refused.
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& j : jobs_) results_.push_back({j.id, {}});
    jobs_.clear();
    std::uint64_t one = 1;
    (void)!::write(event_.get(), &one, sizeof one);
    return;
  }
  cv_.notify_one();
}

std::deque<Resolved> Resolver::take() {
  std::uint64_t v;
  (void)!::read(event_.get(), &v, sizeof v);
  std::deque<Resolved> got;
  std::lock_guard<std::mutex> lock(mu_);
  got.swap(results_);
  return got;
}

void Resolver::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void Resolver::cancel(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = jobs_.begin(); it != jobs_.end();) it = it->id == id ? jobs_.erase(it) : std::next(it);
}

void Resolver::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++idle_;
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      --idle_;
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    Resolved r{job.id, {}};
    struct addrinfo hints {};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo* res = nullptr;
    if (::getaddrinfo(job.host.c_str(), std::to_string(job.port).c_str(), &hints, &res) == 0) {
      for (auto* a = res; a; a = a->ai_next) {
        Addr x;
        std::memcpy(&x.ss, a->ai_addr, a->ai_addrlen);
        x.len = a->ai_addrlen;
        r.addrs.push_back(x);
      }
      ::freeaddrinfo(res);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      results_.push_back(std::move(r));
    }
    std::uint64_t one = 1;
    (void)!::write(event_.get(), &one, sizeof one);
  }
}

}  // namespace wb::netproxy
