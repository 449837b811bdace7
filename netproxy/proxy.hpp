#pragma once
// The proxy: one epoll loop on a thread of wavebox, accepting on listeners that live in the
// sandbox's network namespace (passed over SCM_RIGHTS), deciding each connection against the
// allowlist, resolving on a helper thread, dialling out from the host's namespace, and moving
// bytes with bounded buffers. No thread per connection.
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/result.hpp"
#include "core/sys/fd.hpp"
#include "core/violations.hpp"
#include "netproxy/decision.hpp"

namespace wb::netproxy {

struct ProxyConfig {
  NetPolicy policy;
  std::function<void(const Violation&)> on_refusal;  // called on the proxy thread
  // The caller's own proxies (sandbox.network.httpProxyPort/socksProxyPort): connections are
  // forwarded to 127.0.0.1:PORT on the host, unfiltered by us.
  std::optional<int> forward_http_port;
  std::optional<int> forward_socks_port;
  // A host neither allowed nor denied is asked about when this is set (serve's network
  // approval): called on the proxy's thread; answer(true | false) once, from any thread, maybe
  // after the proxy is gone. One question per host and port for the proxy's life (the run); no
  // answer within approval_timeout_s is a no.
  std::function<void(const std::string& host, int port, std::function<void(bool)> answer)> ask;
  double approval_timeout_s = 30;
  // "user:password" every client must present (HTTP Proxy-Authorization Basic, SOCKS5
  // username/password): on macOS the listeners are on the host's loopback, open to every local
  // process. Empty: none (Linux: the listeners live in the sandbox's own network namespace).
  std::string credential;
  size_t max_connections = 4096;
  size_t max_head = 65536;
  double head_timeout_s = 30;
};

struct ProxyStats {
  std::atomic<size_t> connections{0};
  std::atomic<size_t> refused{0};
  std::atomic<unsigned long long> bytes{0};
};

// What the loop bounds for every run it serves.
struct Limits {
  size_t max_connections = 4096;
  size_t max_head = 65536;
  double head_timeout_s = 30;
};

class Proxy {
 public:
  // One run's proxy: its listeners and policy (what `wavebox run` uses).
  static Result<std::unique_ptr<Proxy>> start(ProxyConfig config, sys::NetListeners listeners);
  // One loop for many runs (serve): each run attaches its own listeners, from its own network
  // namespace, with its own policy; what a listener accepts is that run's, whatever the client
  // inside says. Started once, never restarted.
  static Result<std::unique_ptr<Proxy>> start_shared(Limits limits = {});
  // From any thread. The config's limits are the loop's (start_shared's).
  Result<std::uint64_t> attach(ProxyConfig config, sys::NetListeners listeners);
  // Closes that run's listeners and connections; returns once nothing of the run is called any
  // more (its refusal sink, its approval callback).
  void detach(std::uint64_t tenant);
  long loop_thread_id() const;  // the loop's thread (the same for every run it serves)
  ~Proxy();
  void stop();
  const ProxyStats& stats() const;

  struct Impl;

 private:
  explicit Proxy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace wb::netproxy
