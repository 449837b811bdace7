#pragma once
// The proxy's loop state, shared by its files (netproxy/proxy.cpp: connections, requests,
// relaying; netproxy/tenants.cpp: the runs it serves and their approval questions). Internal to
// netproxy/.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "netproxy/dns.hpp"
#include "netproxy/proxy.hpp"
#include "netproxy/relay.hpp"
#include "netproxy/resolver.hpp"

namespace wb::netproxy {
namespace detail {

using sys::Fd;

constexpr std::uint64_t kStopId = 3, kResolverId = 4, kAnswerId = 5, kControlId = 6, kFirstConn = 16;
// A listener's epoll data: this bit, the tenant's id and which listener (the low three bits).
constexpr std::uint64_t kListenerBit = 1ULL << 63;
constexpr std::uint64_t kListenHttp = 0, kListenSocks = 1, kListenDns = 2, kListenTransparent = 3, kListenDnsTcp = 4;
constexpr std::uint32_t kAllEvents = ~std::uint32_t{0};

inline double now_s() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

// kTransparent: a connection to an address of the run's DNS pool, taken by the transparent
// listeners; the name comes from the address, the port from the listener.
enum class Proto { kHttp, kSocks, kForward, kTransparent, kDnsTcp };
enum class St { kHead, kSocksGreet, kSocksAuth, kSocksReq, kApproval, kResolving, kConnecting, kRelay, kClosing };

// Answers to approval questions, posted from any thread: shared with the callbacks, which may
// outlive the proxy.
struct Answer {
  std::uint64_t tenant;
  std::string key;  // host:port
  bool yes;
};
struct Answers {
  std::mutex mu;
  std::vector<Answer> got;
  Fd efd{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
  void post(std::uint64_t tenant, std::string key, bool yes) {
    {
      std::lock_guard<std::mutex> lock(mu);
      got.push_back({tenant, std::move(key), yes});
    }
    std::uint64_t one = 1;
    (void)!::write(efd.get(), &one, sizeof one);
  }
};

// One run's listeners and policy: a connection belongs to the tenant whose listener, in that
// run's own network namespace, accepted it, so no connection can be taken for another run's.
struct Tenant {
  std::uint64_t id = 0;
  ProxyConfig cfg;
  Fd http, socks, dns, dns_tcp;
  std::vector<Fd> transparent;
  AddressPool pool;                                           // names the resolver answered, by address
  std::map<std::string, bool> answered;                       // host:port -> the client's answer
  std::map<std::string, std::vector<std::uint64_t>> waiting;  // host:port -> connections asking
  size_t conns = 0;                                           // open connections of this run
};

struct Conn {
  std::uint64_t id = 0;
  Tenant* t = nullptr;
  bool approved = false;  // let through by the client's answer (serve's network approval)
  Fd client, upstream;
  Proto proto = Proto::kHttp;
  St st = St::kHead;
  std::string in;
  std::string host;
  int port = 0;
  bool connect_method = false;
  std::string prefix;        // bytes for upstream once connected
  long long body_left = -1;  // plain HTTP: the request body's bytes still to come
  std::vector<Addr> addrs;
  size_t next_addr = 0;
  Relay c2u, u2c;
  std::string reply;  // kClosing: what the client gets before we close
  double deadline = 0;
  std::uint32_t client_mask = 0, upstream_mask = 0;
  bool client_added = false, upstream_added = false;  // in the epoll set (perhaps with no events)
  Conn() = default;
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  ~Conn() {
    if (t && t->conns > 0) --t->conns;  // a connection never outlives its tenant (detach, stop)
  }
};

}  // namespace detail
using namespace detail;

struct Proxy::Impl {
  Limits limits;
  ProxyStats stats;
  Fd epoll, stop_fd, control_fd;
  std::map<std::uint64_t, std::unique_ptr<Tenant>> tenants;
  std::atomic<std::uint64_t> next_tenant{1};
  // attach and detach from other threads: queued, done by the loop, waited for.
  std::mutex control_mu;
  std::condition_variable control_cv;
  std::vector<std::unique_ptr<Tenant>> to_attach;
  std::vector<std::uint64_t> to_detach;
  std::set<std::uint64_t> detached;
  std::atomic<long> loop_tid{0};
  bool stopped = false;  // under control_mu
  void on_control();
  Resolver resolver;
  std::thread loop_thread;
  std::unordered_map<std::uint64_t, std::unique_ptr<Conn>> conns;
  std::uint64_t next_id = kFirstConn;
  std::set<std::string> own_addresses;  // read on first use (most runs resolve nothing)
  std::shared_ptr<Answers> answers = std::make_shared<Answers>();
  void ask_about(Conn& c, const NetDecision& d);
  void on_answers();
  bool own_addresses_read = false;
  const std::set<std::string>& own();

  void run();
  Conn* accept_one(Tenant& t, int lfd, Proto proto, bool* more);
  void accept_all(Tenant& t, bool socks);
  void accept_transparent(Tenant& t, int listener);
  void on_dns(Tenant& t);
  void on_dns_tcp(Conn& c);
  std::string dns_answer(Tenant& t, const DnsQuery& q);
  void on_event(Conn& c, bool upstream, std::uint32_t ev);
  void refuse(Conn& c, RefusalCode code, const std::string& reason, const std::string& rule);
  void start_resolve(Conn& c);
  void decide_then_resolve(Conn& c);
  void on_resolved(Resolved r);
  void try_connect(Conn& c);
  void connected(Conn& c);
  void fail(Conn& c, const std::string& http, int socks_code);
  // ev: the epoll events of one side (upstream or client); kAll: try everything.
  void pump(Conn& c, bool upstream = false, std::uint32_t ev = kAllEvents);
  void update(Conn& c);
  void close_conn(std::uint64_t id);
  void on_head(Conn& c);
  void http_or_decide(Conn& c);
  void on_socks(Conn& c);
};

}  // namespace wb::netproxy
