// The runs one proxy loop serves (attach, detach, the loop's control events) and the questions
// it asks about hosts on neither list (serve's network approval).
#include <fcntl.h>
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

#include "netproxy/proxy_impl.hpp"

namespace wb::netproxy {

Result<std::unique_ptr<Proxy>> Proxy::start_shared(Limits limits) {
  auto impl = std::make_unique<Impl>();
  impl->limits = limits;
  impl->epoll = Fd(::epoll_create1(EPOLL_CLOEXEC));
  impl->stop_fd = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  impl->control_fd = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!impl->epoll.valid() || !impl->stop_fd.valid() || !impl->control_fd.valid() || impl->resolver.fd() < 0 ||
      !impl->answers->efd.valid()) {
    return make_error(ErrorKind::kSandboxFailed, fmt::format("proxy: epoll/eventfd failed: {}", std::strerror(errno)));
  }
  for (auto [fd, id] :
       {std::pair{impl->stop_fd.get(), kStopId}, std::pair{impl->resolver.fd(), kResolverId},
        std::pair{impl->answers->efd.get(), kAnswerId}, std::pair{impl->control_fd.get(), kControlId}}) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = id;
    if (::epoll_ctl(impl->epoll.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      return make_error(ErrorKind::kSandboxFailed, fmt::format("proxy: epoll_ctl failed: {}", std::strerror(errno)));
    }
  }
  Impl* raw = impl.get();
  // The resolver thread starts with the first name to resolve (most runs have none).
  try {
    impl->loop_thread = std::thread([raw] {
      // splice into a client that reset its end raises SIGPIPE at the writer: this thread's to
      // ignore (a sandboxed client must not be able to kill wavebox and with it its own report).
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
      raw->loop_tid = static_cast<long>(::gettid());
      raw->run();
    });
  } catch (const std::system_error& e) {
    return make_error(ErrorKind::kSandboxFailed, fmt::format("proxy: no thread for its loop: {}", e.what()));
  }
  return std::unique_ptr<Proxy>(new Proxy(std::move(impl)));
}

Result<std::unique_ptr<Proxy>> Proxy::start(ProxyConfig config, sys::NetListeners listeners) {
  Limits limits;
  limits.max_connections = config.max_connections;
  limits.max_head = config.max_head;
  limits.head_timeout_s = config.head_timeout_s;
  auto proxy = WB_TRY(start_shared(limits));
  WB_TRY(proxy->attach(std::move(config), std::move(listeners)));
  return proxy;
}

// A run's listeners and policy, taken over by the loop before it can see one of their events.
Result<std::uint64_t> Proxy::attach(ProxyConfig config, sys::NetListeners listeners) {
  if (!impl_->loop_thread.joinable()) return make_error(ErrorKind::kSandboxFailed, "proxy: stopped");
  auto t = std::make_unique<Tenant>();
  t->id = impl_->next_tenant++;
  t->cfg = std::move(config);
  t->http = std::move(listeners.http);
  t->socks = std::move(listeners.socks);
  t->dns = std::move(listeners.dns);
  t->dns_tcp = std::move(listeners.dns_tcp);
  t->transparent = std::move(listeners.transparent);
  const std::uint64_t id = t->id;
  std::vector<int> fds = {t->http.get(), t->socks.get(), t->dns.get(), t->dns_tcp.get()};
  for (const auto& x : t->transparent) fds.push_back(x.get());
  for (int fd : fds) {
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  {
    std::lock_guard<std::mutex> lock(impl_->control_mu);
    impl_->to_attach.push_back(std::move(t));
  }
  std::uint64_t one = 1;
  (void)!::write(impl_->control_fd.get(), &one, sizeof one);
  return id;
}

// Returns once the loop closed the tenant's listeners and connections: nothing of the run's is
// called after it (its refusal sink, its approval callback).
void Proxy::detach(std::uint64_t tenant) {
  if (!impl_->loop_thread.joinable()) return;
  std::unique_lock<std::mutex> lock(impl_->control_mu);
  impl_->to_detach.push_back(tenant);
  std::uint64_t one = 1;
  (void)!::write(impl_->control_fd.get(), &one, sizeof one);
  impl_->control_cv.wait(lock, [&] { return impl_->detached.count(tenant) > 0 || impl_->stopped; });
  impl_->detached.erase(tenant);
}

long Proxy::loop_thread_id() const {
  return impl_->loop_tid;
}

void Proxy::Impl::on_control() {
  std::uint64_t n;
  (void)!::read(control_fd.get(), &n, sizeof n);
  std::vector<std::unique_ptr<Tenant>> add;
  std::vector<std::uint64_t> drop;
  {
    std::lock_guard<std::mutex> lock(control_mu);
    add.swap(to_attach);
    drop.swap(to_detach);
  }
  // Attachments first: a detach queued with its own attach (a run that ended at once) finds it.
  for (auto& t : add) {
    std::vector<std::pair<int, std::uint64_t>> fds = {{t->http.get(), kListenHttp},
                                                      {t->socks.get(), kListenSocks},
                                                      {t->dns.get(), kListenDns},
                                                      {t->dns_tcp.get(), kListenDnsTcp}};
    for (const auto& x : t->transparent) fds.push_back({x.get(), kListenTransparent});
    for (auto [fd, kind] : fds) {
      if (fd < 0) continue;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = kListenerBit | (t->id << 3) | kind;
      (void)::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, fd, &ev);
    }
    tenants[t->id] = std::move(t);
    own_addresses_read = false;  // this host's addresses, read again for each run (a VPN came up)
  }
  for (auto id : drop) {
    for (auto it = conns.begin(); it != conns.end();) {
      it = it->second->t && it->second->t->id == id ? conns.erase(it) : std::next(it);
    }
    tenants.erase(id);  // closes its listeners (epoll forgets them)
  }
  if (!drop.empty()) {
    std::lock_guard<std::mutex> lock(control_mu);
    for (auto id : drop) detached.insert(id);
    control_cv.notify_all();
  }
}

// Asked once per host and port; the connection waits (no head timeout, the approval's own).
void Proxy::Impl::ask_about(Conn& c, const NetDecision& d) {
  std::string key = fmt::format("{}:{}", c.host, c.port);
  Tenant& t = *c.t;
  if (auto it = t.answered.find(key); it != t.answered.end()) {
    if (it->second) {
      c.approved = true;
      start_resolve(c);
    } else {
      refuse(c, RefusalCode::kDeclined, "declined through the approval request", "");
    }
    return;
  }
  (void)d;
  c.st = St::kApproval;
  c.deadline = now_s() + t.cfg.approval_timeout_s;
  update(c);
  auto& w = t.waiting[key];
  w.push_back(c.id);
  if (w.size() > 1) return;  // asked already
  std::weak_ptr<Answers> box = answers;
  t.cfg.ask(c.host, c.port, [box, key, tenant = t.id](bool yes) {
    if (auto b = box.lock()) b->post(tenant, key, yes);
  });
}

void Proxy::Impl::on_answers() {
  std::uint64_t n;
  (void)!::read(answers->efd.get(), &n, sizeof n);
  std::vector<Answer> got;
  {
    std::lock_guard<std::mutex> lock(answers->mu);
    got.swap(answers->got);
  }
  for (auto& [tenant, key, yes] : got) {
    auto tt = tenants.find(tenant);
    if (tt == tenants.end()) continue;  // that run is over
    Tenant& t = *tt->second;
    if (t.answered.count(key)) continue;  // the first answer (or the timeout) stands
    t.answered[key] = yes;
    for (auto id : std::exchange(t.waiting[key], {})) {
      auto it = conns.find(id);
      if (it == conns.end() || it->second->st != St::kApproval) continue;
      if (yes) {
        it->second->approved = true;
        start_resolve(*it->second);
      } else {
        refuse(*it->second, RefusalCode::kDeclined, "declined through the approval request", "");
      }
    }
  }
}

}  // namespace wb::netproxy
