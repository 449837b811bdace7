#include "netproxy/proxy.hpp"

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

#include "core/base64.hpp"
#include "netproxy/http_parse.hpp"
#include "netproxy/proxy_impl.hpp"
#include "netproxy/relay.hpp"
#include "netproxy/resolver.hpp"
#include "netproxy/socks_parse.hpp"

namespace wb::netproxy {
using namespace detail;
namespace {

std::string addr_bytes(const Addr& a) {
  if (a.ss.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&a.ss);
    return std::string(reinterpret_cast<const char*>(&in->sin_addr), 4);
  }
  auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a.ss);
  return std::string(reinterpret_cast<const char*>(&in6->sin6_addr), 16);
}

std::string addr_text(const Addr& a) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (a.ss.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&a.ss)->sin_addr, buf, sizeof buf);
  } else {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&a.ss)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

std::string http_refusal(const std::string& host) {
  std::string body = "Connection blocked by network allowlist: " + host + "\n";
  return fmt::format(
      "HTTP/1.1 403 Forbidden\r\nX-Proxy-Error: blocked-by-allowlist\r\nContent-Type: text/plain\r\n"
      "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
      body.size(), body);
}

std::string http_error(int code, const char* text, const std::string& why) {
  std::string body = why + "\n";
  return fmt::format("HTTP/1.1 {} {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                     code, text, body.size(), body);
}

// In time independent of where the two differ (the credential guards a port other local
// processes can reach).
bool credential_matches(const std::string& want, const std::string& got) {
  if (want.size() != got.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < want.size(); ++i) diff |= static_cast<unsigned char>(want[i] ^ got[i]);
  return diff == 0;
}

}  // namespace

Proxy::Proxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Proxy::~Proxy() {
  stop();
}
const ProxyStats& Proxy::stats() const {
  return impl_->stats;
}

void Proxy::stop() {
  if (!impl_ || !impl_->loop_thread.joinable()) return;
  std::uint64_t one = 1;
  (void)!::write(impl_->stop_fd.get(), &one, sizeof one);
  impl_->loop_thread.join();
  {
    std::lock_guard<std::mutex> lock(impl_->control_mu);
    impl_->stopped = true;
    impl_->control_cv.notify_all();  // a detach waiting: the loop is gone, so are its tenants
  }
  impl_->resolver.stop();
}

// This host's own addresses: a name resolving to one of them is refused like loopback. Read
// once, by the loop thread, when the first name is resolved.
const std::set<std::string>& Proxy::Impl::own() {
  if (own_addresses_read) return own_addresses;
  own_addresses_read = true;
  struct ifaddrs* ifa = nullptr;
  if (::getifaddrs(&ifa) == 0) {
    for (auto* i = ifa; i; i = i->ifa_next) {
      if (!i->ifa_addr) continue;
      if (i->ifa_addr->sa_family == AF_INET) {
        std::string v4(reinterpret_cast<const char*>(&reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr), 4);
        own_addresses.insert(v4);
        // The same address spelled in IPv6: IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible
        // (::a.b.c.d), which a name can resolve to as well (the local-address check).
        own_addresses.insert(std::string(10, '\0') + "\xff\xff" + v4);
        own_addresses.insert(std::string(12, '\0') + v4);
      } else if (i->ifa_addr->sa_family == AF_INET6) {
        own_addresses.insert(
            std::string(reinterpret_cast<const char*>(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr), 16));
      }
    }
    ::freeifaddrs(ifa);
  }
  return own_addresses;
}

void Proxy::Impl::run() {
  epoll_event evs[256];
  for (;;) {
    int n = ::epoll_wait(epoll.get(), evs, 256, 1000);
    if (n < 0 && errno != EINTR) return;
    for (int i = 0; i < n; ++i) {
      std::uint64_t d = evs[i].data.u64;
      if (d == kStopId) {
        conns.clear();
        tenants.clear();
        return;
      }
      if (d & kListenerBit) {
        auto t = tenants.find((d & ~kListenerBit) >> 3);
        if (t == tenants.end()) continue;
        const std::uint64_t kind = d & 7;
        if (kind == kListenDns) {
          on_dns(*t->second);
        } else if (kind == kListenDnsTcp) {
          for (bool more = true; more;) {
            if (Conn* got = accept_one(*t->second, t->second->dns_tcp.get(), Proto::kDnsTcp, &more)) update(*got);
          }
        } else if (kind == kListenTransparent) {
          for (const auto& l : t->second->transparent) accept_transparent(*t->second, l.get());
        } else {
          accept_all(*t->second, kind == kListenSocks);
        }
      } else if (d == kControlId) {
        on_control();
      } else if (d == kResolverId) {
        for (auto& r : resolver.take()) on_resolved(std::move(r));
      } else if (d == kAnswerId) {
        on_answers();
      } else {
        auto it = conns.find(d >> 1);
        if (it != conns.end()) on_event(*it->second, d & 1, evs[i].events);
      }
    }
    // Request heads that never complete.
    double t = now_s();
    std::vector<std::uint64_t> expired;
    for (auto& [id, c] : conns) {
      if (c->deadline > 0 && t > c->deadline) expired.push_back(id);
    }
    for (auto id : expired) {
      auto it = conns.find(id);
      if (it != conns.end() && it->second->st == St::kApproval) {
        // No answer in time: a no, for this host from now on.
        Conn& c = *it->second;
        std::string key = fmt::format("{}:{}", c.host, c.port);
        c.t->answered[key] = false;
        for (auto w : std::exchange(c.t->waiting[key], {})) {
          auto wt = conns.find(w);
          if (wt != conns.end() && wt->second->st == St::kApproval) {
            refuse(*wt->second, RefusalCode::kDeclined, "no answer to the approval request in time", "");
          }
        }
        continue;
      }
      close_conn(id);
    }
  }
}

// The next accepted client of a listener as a connection of the tenant's, or nullptr when there
// is none (or it was over the run's share and closed: then *more says to go on).
Conn* Proxy::Impl::accept_one(Tenant& t, int lfd, Proto proto, bool* more) {
  *more = false;
  int fd = ::accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) return nullptr;
  *more = true;
  // A run's share: one run's idle connections must not use up the loop for the others (each
  // relayed connection holds six descriptors).
  if (conns.size() >= limits.max_connections || t.conns >= std::max<size_t>(64, limits.max_connections / 4)) {
    ::close(fd);
    return nullptr;
  }
  ++t.conns;
  auto c = std::make_unique<Conn>();
  c->id = next_id++;
  c->t = &t;
  c->client.reset(fd);
  c->proto = proto;
  c->st = proto == Proto::kSocks ? St::kSocksGreet : St::kHead;
  c->deadline = now_s() + limits.head_timeout_s;
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ++stats.connections;
  Conn* ref = c.get();
  conns.emplace(c->id, std::move(c));
  return ref;
}

void Proxy::Impl::accept_all(Tenant& t, bool socks) {
  const int lfd = socks ? t.socks.get() : t.http.get();
  Proto proto = socks ? Proto::kSocks : Proto::kHttp;
  if (socks ? t.cfg.forward_socks_port.has_value() : t.cfg.forward_http_port.has_value()) proto = Proto::kForward;
  for (bool more = true; more;) {
    Conn* got = accept_one(t, lfd, proto, &more);
    if (!got) continue;
    Conn& ref = *got;
    if (proto == Proto::kForward) {
      ref.host = "127.0.0.1";
      ref.port = socks ? *t.cfg.forward_socks_port : *t.cfg.forward_http_port;
      Addr a;
      auto* in = reinterpret_cast<sockaddr_in*>(&a.ss);
      in->sin_family = AF_INET;
      in->sin_port = htons(static_cast<uint16_t>(ref.port));
      in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.len = sizeof(sockaddr_in);
      ref.addrs = {a};
      ref.deadline = 0;
      try_connect(ref);
      continue;
    }
    update(ref);
  }
}

void Proxy::Impl::update(Conn& c) {
  std::uint32_t cm = 0, um = 0;
  switch (c.st) {
    case St::kHead:
    case St::kSocksGreet:
    case St::kSocksAuth:
    case St::kSocksReq:
      cm = EPOLLIN;
      break;
    case St::kApproval:
    case St::kResolving:
      break;
    case St::kConnecting:
      um = EPOLLOUT;
      break;
    case St::kRelay:
      if (c.c2u.wants_src()) cm |= EPOLLIN;
      if (c.u2c.wants_dst()) cm |= EPOLLOUT;
      if (c.u2c.wants_src()) um |= EPOLLIN;
      if (c.c2u.wants_dst()) um |= EPOLLOUT;
      break;
    case St::kClosing:
      if (!c.reply.empty()) cm |= EPOLLOUT;
      break;
  }
  auto set = [&](Fd& fd, std::uint32_t& cur, bool& added, std::uint32_t want, bool up) {
    if (!fd.valid() || (cur == want && (added || want == 0))) return;
    epoll_event ev{};
    ev.events = want;
    ev.data.u64 = (c.id << 1) | (up ? 1 : 0);
    if (!added) {
      if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, fd.get(), &ev) != 0)
        ::epoll_ctl(epoll.get(), EPOLL_CTL_MOD, fd.get(), &ev);
      added = true;
    } else {
      ::epoll_ctl(epoll.get(), EPOLL_CTL_MOD, fd.get(), &ev);
    }
    cur = want;
  };
  set(c.client, c.client_mask, c.client_added, cm, false);
  set(c.upstream, c.upstream_mask, c.upstream_added, um, true);
}

void Proxy::Impl::close_conn(std::uint64_t id) {
  auto it = conns.find(id);
  if (it == conns.end()) return;
  if (it->second->st == St::kResolving) resolver.cancel(id);
  conns.erase(it);
}

void Proxy::Impl::refuse(Conn& c, RefusalCode code, const std::string& reason, const std::string& rule) {
  ++stats.refused;
  bool v6 = c.host.find(':') != std::string::npos;
  std::string target = fmt::format("{}:{}", v6 ? "[" + c.host + "]" : c.host, c.port);
  if (c.t->cfg.on_refusal) {
    c.t->cfg.on_refusal({Refused::kConnect, target, rule.empty() ? reason : reason + ": " + rule, code, rule});
  }
  if (c.proto == Proto::kSocks) {
    fail(c, "", 0x02);
  } else {
    fail(c, http_refusal(c.host), 0);
  }
}

void Proxy::Impl::fail(Conn& c, const std::string& http, int socks_code) {
  // A transparent connection gets no words: it is reset at once (the client fails fast).
  if (c.proto == Proto::kTransparent) {
    struct linger lg = {1, 0};
    ::setsockopt(c.client.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    ::shutdown(c.client.get(), SHUT_RDWR);
  } else {
    c.reply += c.proto == Proto::kSocks ? socks_reply(socks_code) : http;
  }
  c.st = St::kClosing;
  c.upstream.reset();
  c.upstream_mask = 0;
  c.upstream_added = false;
  c.deadline = now_s() + 5;
  update(c);
}

void Proxy::Impl::on_head(Conn& c) {
  const bool transparent = c.proto == Proto::kTransparent;
  auto p = parse_http_request(c.in, limits.max_head, transparent);
  if (p.status == ParseStatus::kNeedMore) return;
  if (p.status == ParseStatus::kError) {
    fail(c, http_error(p.error_code, p.error_code == 431 ? "Request Header Fields Too Large" : "Bad Request", p.error),
         0);
    return;
  }
  if (!transparent && !c.t->cfg.credential.empty()) {
    std::string given;
    for (const auto& [name, value] : p.req.headers) {
      std::string n = name;
      for (auto& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (n == "proxy-authorization" && value.size() > 6 &&
          (value.compare(0, 6, "Basic ") == 0 || value.compare(0, 6, "basic ") == 0)) {
        given = base64_decode(value.substr(6)).value_or("");
      }
    }
    if (!credential_matches(c.t->cfg.credential, given)) {
      fail(c,
           "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"wavebox\"\r\n"
           "Content-Length: 0\r\nConnection: close\r\n\r\n",
           0);
      return;
    }
  }
  if (transparent) {
    // The host is the connection's (the name behind the pool address it reached), the port 80.
    p.req.host = c.host;
    p.req.port = c.port;
  } else {
    c.host = p.req.host;
    c.port = p.req.port;
  }
  c.connect_method = p.req.connect;
  std::string rest = c.in.substr(p.req.header_bytes);
  c.in.clear();
  if (!c.connect_method) {
    // One request per connection, framed by its one Content-Length, to the host decided: a
    // second request behind it, or a Host of its own, would reach a host undecided.
    std::string name;  // a pool address's name: the host decided for it
    if (auto v4 = parse_ipv4(c.host); v4 && AddressPool::in_pool(*v4)) name = c.t->pool.name_at(*v4).value_or("");
    Framing f = check_framing(p.req, name.empty() ? c.host : name, c.port, name.empty() ? "" : c.host);
    if (!f.ok && f.names_other_host) {
      refuse(c, RefusalCode::kRequest, f.error, "");
      return;
    }
    if (!f.ok) {
      fail(c, http_error(f.code, f.code == 411 ? "Length Required" : "Bad Request", f.error), 0);
      return;
    }
    if (static_cast<long long>(rest.size()) > f.length) rest.resize(static_cast<size_t>(f.length));
    c.body_left = f.length - static_cast<long long>(rest.size());
  }
  c.prefix = c.connect_method ? rest : upstream_head(p.req) + rest;
  decide_then_resolve(c);
}

void Proxy::Impl::on_socks(Conn& c) {
  if (c.st == St::kSocksGreet) {
    auto g = parse_socks_greeting(c.in);
    if (g.status == ParseStatus::kNeedMore) return;
    const bool need_auth = !c.t->cfg.credential.empty();
    if (g.status == ParseStatus::kError || (need_auth ? !g.user_pass : !g.no_auth)) {
      c.reply = std::string{5, static_cast<char>(0xff)};
      c.st = St::kClosing;
      update(c);
      return;
    }
    c.in.erase(0, g.consumed);
    c.st = need_auth ? St::kSocksAuth : St::kSocksReq;
    // Answer the greeting now (two bytes into an empty socket buffer); the request may follow in
    // the same segment.
    const char method[2] = {5, static_cast<char>(need_auth ? 2 : 0)};
    if (::send(c.client.get(), method, 2, MSG_NOSIGNAL) != 2) {
      close_conn(c.id);
      return;
    }
  }
  if (c.st == St::kSocksAuth) {
    auto a = parse_socks_auth(c.in);
    if (a.status == ParseStatus::kNeedMore) return;
    const bool good =
        a.status == ParseStatus::kDone && credential_matches(c.t->cfg.credential, a.user + ":" + a.password);
    const char answer[2] = {1, static_cast<char>(good ? 0 : 1)};
    if (!good) {
      c.reply = std::string(answer, 2);
      c.st = St::kClosing;
      update(c);
      return;
    }
    c.in.erase(0, a.consumed);
    c.st = St::kSocksReq;
    if (::send(c.client.get(), answer, 2, MSG_NOSIGNAL) != 2) {
      close_conn(c.id);
      return;
    }
  }
  auto r = parse_socks_request(c.in);
  if (r.status == ParseStatus::kNeedMore) return;
  if (r.status == ParseStatus::kError) {
    fail(c, "", r.reply);
    return;
  }
  c.host = r.host;
  c.port = r.port;
  c.prefix = c.in.substr(r.consumed);
  c.in.clear();
  decide_then_resolve(c);
}

// The allowlist first (deny list, allow list, default deny); only an allowed name is resolved.
void Proxy::Impl::decide_then_resolve(Conn& c) {
  // A client that resolved the name itself (the sandbox's resolver gave a pool address) and then
  // asked a proxy for that address: the name behind it is what is decided.
  if (auto v4 = parse_ipv4(c.host); v4 && AddressPool::in_pool(*v4)) {
    if (auto name = c.t->pool.name_at(*v4)) c.host = *name;
  }
  NetDecision d = decide_host(c.t->cfg.policy, c.host, c.port);
  if (!d.allow && d.rule.empty() && c.t->cfg.ask) {
    ask_about(c, d);  // on neither list: the client decides
    return;
  }
  if (!d.allow) {
    refuse(c, d.code, d.reason, d.rule);
    return;
  }
  start_resolve(c);
}

void Proxy::Impl::start_resolve(Conn& c) {
  c.st = St::kResolving;
  c.deadline = 0;
  update(c);
  // An address literal needs no lookup.
  Addr a;
  auto* in = reinterpret_cast<sockaddr_in*>(&a.ss);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&a.ss);
  if (::inet_pton(AF_INET, c.host.c_str(), &in->sin_addr) == 1) {
    in->sin_family = AF_INET;
    in->sin_port = htons(static_cast<uint16_t>(c.port));
    a.len = sizeof(sockaddr_in);
    on_resolved({c.id, {a}});
    return;
  }
  if (::inet_pton(AF_INET6, c.host.c_str(), &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(static_cast<uint16_t>(c.port));
    a.len = sizeof(sockaddr_in6);
    on_resolved({c.id, {a}});
    return;
  }
  resolver.submit(c.id, c.host, c.port);
}

void Proxy::Impl::on_resolved(Resolved r) {
  auto it = conns.find(r.id);
  if (it == conns.end()) return;
  Conn& c = *it->second;
  if (r.addrs.empty()) {
    fail(c, http_error(502, "Bad Gateway", "cannot resolve " + c.host), 0x04);
    return;
  }
  // The local-address check: every address must pass the guard; one local address refuses the name (a name that
  // resolves to both a public and a local address is a rebinding attempt).
  for (const auto& a : r.addrs) {
    std::string bytes = addr_bytes(a);
    NetDecision d =
        check_resolved(c.t->cfg.policy, c.host, addr_text(a), bytes, own().count(bytes) > 0, c.port, c.approved);
    if (!d.allow) {
      refuse(c, d.code, d.reason, "");
      return;
    }
  }
  c.addrs = std::move(r.addrs);
  c.next_addr = 0;
  try_connect(c);
}

void Proxy::Impl::try_connect(Conn& c) {
  while (c.next_addr < c.addrs.size()) {
    const Addr& a = c.addrs[c.next_addr++];
    Fd fd(::socket(a.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) continue;
    int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a.ss), a.len);
    if (rc == 0 || errno == EINPROGRESS) {
      c.upstream = std::move(fd);
      c.upstream_mask = 0;
      c.upstream_added = false;
      c.st = St::kConnecting;
      update(c);
      return;
    }
  }
  fail(c, http_error(502, "Bad Gateway", "cannot connect to " + c.host), 0x05);
}

void Proxy::Impl::connected(Conn& c) {
  if (!c.c2u.open() || !c.u2c.open()) {
    fail(c, http_error(502, "Bad Gateway", "out of resources"), 0x01);
    return;
  }
  c.st = St::kRelay;
  if (c.proto == Proto::kSocks) {
    c.u2c.pre = socks_reply(0);
  } else if (c.proto == Proto::kHttp && c.connect_method) {
    c.u2c.pre = "HTTP/1.1 200 Connection established\r\n\r\n";
  }
  c.c2u.pre = std::move(c.prefix);
  c.c2u.limit = c.body_left;
  c.prefix.clear();
  c.in.clear();
  update(c);
}

void Proxy::Impl::pump(Conn& c, bool upstream, std::uint32_t ev) {
  // Only the directions this event concerns: the source that became readable (then its
  // destination is tried at once, it usually has room), or the destination that became
  // writable. Level-triggered epoll reports the other side in its own event; trying every
  // direction on every event made four of five splice calls fail with EAGAIN on a download.
  const bool in = ev & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP);
  const bool out = ev & (EPOLLOUT | EPOLLHUP | EPOLLERR);
  const bool all = ev == kAllEvents;
  bool c2u_src = all || (!upstream && in), c2u_dst = all || (upstream && out) || c2u_src;
  bool u2c_src = all || (upstream && in), u2c_dst = all || (!upstream && out) || u2c_src;
  unsigned long long moved = 0;
  bool ok1 = c.c2u.step(c.client.get(), c.upstream.get(), c2u_src, c2u_dst, &moved);
  bool ok2 = c.u2c.step(c.upstream.get(), c.client.get(), u2c_src, u2c_dst, &moved);
  stats.bytes += moved;
  if (!ok1 || !ok2 || (c.c2u.dst_shut && c.u2c.dst_shut)) {
    close_conn(c.id);
    return;
  }
  update(c);
}

void Proxy::Impl::on_event(Conn& c, bool upstream, std::uint32_t ev) {
  switch (c.st) {
    case St::kHead:
    case St::kSocksGreet:
    case St::kSocksAuth:
    case St::kSocksReq: {
      char buf[8192];
      ssize_t n = ::recv(c.client.get(), buf, sizeof buf, 0);
      if (n <= 0) {
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) close_conn(c.id);
        return;
      }
      c.in.append(buf, static_cast<size_t>(n));
      if (c.in.size() > limits.max_head + 8192) {
        fail(c, http_error(431, "Request Header Fields Too Large", "request head too large"), 0x01);
        return;
      }
      if (c.proto == Proto::kHttp || c.proto == Proto::kTransparent)
        on_head(c);
      else if (c.proto == Proto::kDnsTcp)
        on_dns_tcp(c);
      else
        on_socks(c);
      return;
    }
    case St::kApproval:
    case St::kResolving:
      if (!upstream && (ev & (EPOLLHUP | EPOLLERR))) close_conn(c.id);
      return;
    case St::kConnecting: {
      if (!upstream) return;
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(c.upstream.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        ::epoll_ctl(epoll.get(), EPOLL_CTL_DEL, c.upstream.get(), nullptr);
        c.upstream.reset();
        c.upstream_mask = 0;
        c.upstream_added = false;
        try_connect(c);
        return;
      }
      connected(c);
      pump(c);
      return;
    }
    case St::kRelay:
      pump(c, upstream, ev);
      return;
    case St::kClosing: {
      if (!c.reply.empty()) {
        ssize_t n = ::send(c.client.get(), c.reply.data(), c.reply.size(), MSG_NOSIGNAL);
        if (n > 0) {
          c.reply.erase(0, static_cast<size_t>(n));
        } else if (errno != EAGAIN) {
          close_conn(c.id);
          return;
        }
      }
      if (c.reply.empty()) {
        close_conn(c.id);
        return;
      }
      update(c);
      return;
    }
  }
}

}  // namespace wb::netproxy
