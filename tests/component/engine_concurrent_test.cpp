// Two runs at once in one process through the engine API, each with its own working directory,
// settings, allowlist, descriptors and logger: each is confined by its own policy only (checked
// on the host: files, what a loopback server received), and nothing process-wide changes while
// they run (signal mask, SIGPIPE's handling, cwd, environment, fds 0-2).
#define CATCH_CONFIG_MAIN
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "engine/engine.hpp"
#include "tests/support/files.hpp"

extern char** environ;

using wb::testing::slurp;
using wb::testing::spit;

namespace {

// A loopback server that keeps what its connections send (bounded in time and size).
struct Collector {
  int fd = -1;
  int port = 0;
  std::string got;
  std::mutex mu;
  std::atomic<bool> stop{false};
  std::thread th;
  Collector() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    ::listen(fd, 8);
    th = std::thread([this] {
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!stop && std::chrono::steady_clock::now() < until) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) continue;
        char buf[4096];
        for (int i = 0; i < 50; ++i) {
          pollfd q{c, POLLIN, 0};
          if (::poll(&q, 1, 100) <= 0) continue;
          ssize_t n = ::read(c, buf, sizeof buf);
          if (n <= 0) break;
          std::lock_guard<std::mutex> lock(mu);
          if (got.size() < 65536) got.append(buf, static_cast<size_t>(n));
        }
        ::close(c);
      }
    });
  }
  ~Collector() {
    stop = true;
    th.join();
    ::close(fd);
  }
  std::string text() {
    std::lock_guard<std::mutex> lock(mu);
    return got;
  }
};

struct Pipe {
  int rd = -1, wr = -1;
  Pipe() { REQUIRE(::pipe2(&rd, O_CLOEXEC) == 0); }
  ~Pipe() {
    if (rd >= 0) ::close(rd);
    if (wr >= 0) ::close(wr);
  }
  std::string drain() {
    ::close(wr);
    wr = -1;
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(rd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
  }
};

struct Side {
  std::string name, ws, secret_seen, secret_hidden, other_ws, allowed, refused;
  Collector socks;
  Pipe out, err;
  std::vector<std::string> log_lines;
  std::mutex log_mu;
  wb::Logger logger{true, [this](std::string_view line) {
                      std::lock_guard<std::mutex> lock(log_mu);
                      log_lines.emplace_back(line);
                    }};
};

wb::engine::RunRequest request_for(Side& s, const std::string& home) {
  std::string json = R"({"sandbox": {"enabled": true, "filesystem": {"denyRead": [")" + s.secret_hidden +
                     R"("]}, "network": {"allowedDomains": [")" + s.allowed + R"("], "socksProxyPort": )" +
                     std::to_string(s.socks.port) + "}}}";
  auto settings = wb::load_settings({{s.ws + "/settings.json", json}}, home);
  REQUIRE(settings.ok());
  wb::engine::RunRequest req;
  // Reads, writes and connections of its own and of the other side's, with a pause in the
  // middle so the two runs overlap.
  std::string script = "cat " + s.secret_seen + "; cat " + s.secret_hidden + " 2>/dev/null && echo LEAK; " + "echo " +
                       s.name + " > " + s.ws + "/mine; echo " + s.name + " > " + s.other_ws +
                       "/theirs 2>/dev/null; sleep 0.4; " + "exec 3<>/dev/tcp/127.0.0.1/1080 && printf 'hello-" +
                       s.name + "' >&3; exec 3>&-; " + "exec 4<>/dev/tcp/127.0.0.1/3128 && printf 'CONNECT " +
                       s.refused + ":443 HTTP/1.1\\r\\nHost: " + s.refused +
                       ":443\\r\\n\\r\\n' >&4 && read -t 5 line <&4; echo \"proxy: $line\"; pwd; exit 7";
  req.argv = {"/bin/bash", "-c", script};
  req.command_line = "bash -c ...";
  req.cwd = s.ws;
  req.home = home;
  for (char** e = environ; *e; ++e) req.env.emplace_back(*e);
  req.stdio[0] = -1;
  req.stdio[1] = s.out.wr;
  req.stdio[2] = s.err.wr;
  req.settings = std::move(*settings);
  req.log = &s.logger;
  return req;
}

}  // namespace

TEST_CASE("two runs at once in one process, each confined by its own policy") {
  char tmpl[] = "/tmp/wavebox-engine-test-XXXXXX";
  REQUIRE(::mkdtemp(tmpl));
  const std::string base = tmpl;
  const std::string home = base + "/home";
  ::mkdir(home.c_str(), 0700);
  Side a, b;
  a.name = "A";
  b.name = "B";
  a.ws = base + "/wsA";
  b.ws = base + "/wsB";
  a.other_ws = b.ws;
  b.other_ws = a.ws;
  a.allowed = b.refused = "a.test";
  b.allowed = a.refused = "b.test";
  ::mkdir(a.ws.c_str(), 0755);
  ::mkdir(b.ws.c_str(), 0755);
  // Each side hides one file and may read the other's hidden file.
  spit(base + "/x", "secret-x\n");
  spit(base + "/y", "secret-y\n");
  a.secret_hidden = b.secret_seen = base + "/x";
  b.secret_hidden = a.secret_seen = base + "/y";

  sigset_t mask_before, mask_during, mask_after;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &mask_before);
  struct sigaction pipe_before {
  }, pipe_during{};
  ::sigaction(SIGPIPE, nullptr, &pipe_before);
  char cwd_before[4096], cwd_during[4096];
  REQUIRE(::getcwd(cwd_before, sizeof cwd_before));
  size_t env_before = 0;
  for (char** e = environ; *e; ++e) ++env_before;
  struct stat fd_before[3];
  for (int i = 0; i < 3; ++i) ::fstat(i, &fd_before[i]);

  auto pa = wb::engine::prepare(request_for(a, home));
  REQUIRE(pa.ok());
  auto pb = wb::engine::prepare(request_for(b, home));
  REQUIRE(pb.ok());
  REQUIRE(pa->sandboxed);
  REQUIRE(pb->sandboxed);
  auto ra = wb::engine::start(std::move(*pa));
  REQUIRE(ra.ok());
  auto rb = wb::engine::start(std::move(*pb));
  REQUIRE(rb.ok());

  // While both run.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::pthread_sigmask(SIG_SETMASK, nullptr, &mask_during);
  ::sigaction(SIGPIPE, nullptr, &pipe_during);
  REQUIRE(::getcwd(cwd_during, sizeof cwd_during));
  size_t env_during = 0;
  for (char** e = environ; *e; ++e) ++env_during;

  auto oa = (*ra)->wait();
  auto ob = (*rb)->wait();
  REQUIRE(oa.ok());
  REQUIRE(ob.ok());
  ::pthread_sigmask(SIG_SETMASK, nullptr, &mask_after);

  for (Side* s : {&a, &b}) {
    auto& o = s == &a ? *oa : *ob;
    INFO("side " << s->name);
    const std::string out = s->out.drain();
    INFO("stdout: " << out);
    CHECK(o.exit_code == 7);
    CHECK(o.sandboxed);
    // Reads: the other side's hidden file is readable here, its own is not.
    CHECK(out.find(s == &a ? "secret-y" : "secret-x") != std::string::npos);
    CHECK(out.find("LEAK") == std::string::npos);
    CHECK(out.find("pwd") == std::string::npos);
    CHECK(out.find(s->ws + "\n") != std::string::npos);  // its own working directory
    // Writes: in its own workspace only.
    CHECK(slurp(s->ws + "/mine") == s->name + "\n");
    CHECK(!wb::sys::exists(s->other_ws + "/theirs"));
    // Connections: its own proxy forwarded to its own server; its own allowlist refused the
    // other side's host, and the refusal is in its own outcome only.
    const std::string got = s->socks.text();
    CHECK(got == "hello-" + s->name);
    CHECK(out.find("proxy: HTTP/1.1 403") != std::string::npos);
    bool refused_listed = false, allowed_listed = false, other_write = false;
    for (const auto& v : o.violations) {
      if (v.target.find(s->refused) != std::string::npos) refused_listed = true;
      if (v.target.find(s->allowed) != std::string::npos) allowed_listed = true;
      if (v.target.find(s->other_ws) == 0) other_write = true;
    }
    CHECK(refused_listed);
    CHECK(!allowed_listed);
    CHECK(other_write);
    // Its logger got its own run's lines (the scan of its workspace), not the other's.
    bool own = false, other = false;
    for (const auto& l : s->log_lines) {
      if (l.find("scanned " + s->ws) != std::string::npos) own = true;
      if (l.find("scanned " + s->other_ws) != std::string::npos) other = true;
    }
    CHECK(own);
    CHECK(!other);
  }
  // Nothing of the process changed.
  for (int sig = 1; sig < 32; ++sig) {
    CHECK(sigismember(&mask_during, sig) == sigismember(&mask_before, sig));
    CHECK(sigismember(&mask_after, sig) == sigismember(&mask_before, sig));
  }
  CHECK(pipe_during.sa_handler == pipe_before.sa_handler);
  CHECK(std::string(cwd_during) == cwd_before);
  CHECK(env_during == env_before);
  for (int i = 0; i < 3; ++i) {
    struct stat now;
    ::fstat(i, &now);
    CHECK(now.st_ino == fd_before[i].st_ino);
  }
  std::string rm = "rm -rf '" + base + "'";
  CHECK(std::system(rm.c_str()) == 0);
}

TEST_CASE("a run can be ended from another thread, and the others go on") {
  char tmpl[] = "/tmp/wavebox-engine-test-XXXXXX";
  REQUIRE(::mkdtemp(tmpl));
  const std::string base = tmpl;
  auto req = [&](const std::string& script) {
    wb::engine::RunRequest r;
    r.argv = {"/bin/sh", "-c", script};
    r.command_line = script;
    r.cwd = base;
    r.home = base;
    for (char** e = environ; *e; ++e) r.env.emplace_back(*e);
    r.stdio[0] = -1;
    r.settings = wb::default_settings();
    return r;
  };
  auto p1 = wb::engine::prepare(req("sleep 30"));
  auto p2 = wb::engine::prepare(req("sleep 0.3; exit 4"));
  REQUIRE(p1.ok());
  REQUIRE(p2.ok());
  auto r1 = wb::engine::start(std::move(*p1));
  auto r2 = wb::engine::start(std::move(*p2));
  REQUIRE(r1.ok());
  REQUIRE(r2.ok());
  auto t0 = std::chrono::steady_clock::now();
  std::thread([&] { (*r1)->cancel(); }).join();
  auto o1 = (*r1)->wait();
  auto o2 = (*r2)->wait();
  REQUIRE(o1.ok());
  REQUIRE(o2.ok());
  CHECK(o1->exit_code == 137);
  CHECK(o2->exit_code == 4);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  std::string rm = "rm -rf '" + base + "'";
  CHECK(std::system(rm.c_str()) == 0);
}
