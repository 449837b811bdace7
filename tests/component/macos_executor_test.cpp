// The macOS executor through the engine API, on Linux, against a fake sandbox-exec (runs the rest
// of its command line, recording the profile and parameters) and a fake `log` (prints Seatbelt
// refusals for the tag it was asked about, and another run's). What is checked is wavebox's part:
// exit statuses, stdio, signals, timeout, a refused profile (125, the command did not run), the
// attribution of log lines to the run, and the proxy's per-run credential.
#define CATCH_CONFIG_MAIN
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/base64.hpp"
#include "engine/engine.hpp"
#include "tests/sbpl/sbpl.hpp"
#include "tests/support/files.hpp"

using namespace wb;

using wb::testing::slurp;
using wb::testing::spit;

namespace {

struct Lab {
  std::string dir, home, ws, sbx, refusing, log;
  Lab() {
    char t[] = "/tmp/wavebox-macos-XXXXXX";
    dir = ::mkdtemp(t);
    home = dir + "/home";
    ws = home + "/project";
    ::mkdir(home.c_str(), 0700);
    ::mkdir(ws.c_str(), 0700);
    sbx = dir + "/sandbox-exec";
    spit(sbx,
         "#!/bin/bash\n"
         "# A stand-in for sandbox-exec: records -p and -D, then runs the rest.\n"
         "while [ $# -gt 0 ]; do\n"
         "  case \"$1\" in\n"
         "    -p) printf '%s' \"$2\" > \"" +
             dir +
             "/profile\"; shift 2 ;;\n"
             "    -D*) printf '%s\\n' \"${1#-D}\" >> \"" +
             dir +
             "/params\"; shift ;;\n"
             "    --) shift; break ;;\n"
             "    *) break ;;\n"
             "  esac\n"
             "done\n"
             "exec \"$@\"\n",
         true);
    refusing = dir + "/sandbox-exec-refusing";
    spit(refusing, "#!/bin/sh\necho 'sandbox-exec: unbound variable: x at <input string>, line 2' >&2\nexit 65\n",
         true);
    log = dir + "/log";
    spit(log,
         "#!/bin/sh\n"
         "# A stand-in for `log stream --style ndjson --predicate 'eventMessage CONTAINS \"TAG\"'`.\n"
         "tag=$(printf '%s' \"$5\" | sed 's/.*\"\\(.*\\)\".*/\\1/')\n"
         "echo 'Filtering the log data using \"'\"$5\"'\"'\n"
         "printf '{\"eventMessage\":\"Sandbox: cat(4242) deny(1) file-read-data " +
             home +
             "/.ssh/id_rsa\\\\n%s\"}\\n' \"$tag\"\n"
             "printf '{\"eventMessage\":\"Sandbox: sh(4244) deny(1) file-write-data " +
             home +
             "/.bashrc\\\\n%s\"}\\n' \"$tag\"\n"
             "printf '{\"eventMessage\":\"Sandbox: cat(4243) deny(1) file-write-create "
             "/etc/other\\\\nwavebox_0123456789abcdef\"}\\n'\n"
             "printf 'not json\\n'\n"
             "exec sleep 30\n",
         true);
  }
  ~Lab() { (void)!std::system(("rm -rf '" + dir + "'").c_str()); }
};

engine::RunRequest request(const Lab& lab, std::vector<std::string> argv, int out_fd, const Logger* log) {
  engine::RunRequest r;
  r.argv = std::move(argv);
  for (const auto& a : r.argv) r.command_line += (r.command_line.empty() ? "" : " ") + a;
  r.cwd = lab.ws;
  r.home = lab.home;
  r.env = {"PATH=/usr/bin:/bin", "HOME=" + lab.home, "LANG=C"};
  r.stdio[1] = out_fd;
  r.settings = default_settings();
  r.platform = sys::Platform::kMacos;
  r.macos.sandbox_exec = lab.sbx;
  r.macos.log = lab.log;
  r.macos.helper = WAVEBOX_BINARY;
  r.log = log;
  return r;
}

struct Captured {
  int fds[2];
  Captured() { REQUIRE(::pipe(fds) == 0); }
  std::string take() {
    ::close(fds[1]);
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    ::close(fds[0]);
    return out;
  }
};

Result<engine::Outcome> run_to_end(engine::RunRequest req) {
  auto p = engine::prepare(std::move(req));
  if (!p.ok()) {
    UNSCOPED_INFO("prepare: " << p.error().message);
    return p.error();
  }
  auto r = engine::start(std::move(*p));
  if (!r.ok()) {
    UNSCOPED_INFO("start: " << r.error().message);
    return r.error();
  }
  return (*r)->wait();
}

}  // namespace

TEST_CASE("macOS executor: exit status, stdout, environment, the profile handed to sandbox-exec") {
  Lab lab;
  Logger log;
  Captured out;
  auto o = run_to_end(
      request(lab, {"sh", "-c", "echo hello; echo \"$HTTP_PROXY\"; echo \"$TMPDIR\"; exit 3"}, out.fds[1], &log));
  REQUIRE(o.ok());
  CHECK(o->exit_code == 3);
  CHECK(o->sandboxed);
  std::string text = out.take();
  CHECK(text.rfind("hello\nhttp://wavebox:", 0) == 0);  // the proxy's URL carries the credential
  CHECK(text.find("@127.0.0.1:") != std::string::npos);
  CHECK(text.find(lab.home + "/Library/Caches/wavebox/caches/") != std::string::npos);
  // What sandbox-exec got: a profile the checker accepts, with every parameter it names.
  std::string profile = slurp(lab.dir + "/profile");
  std::map<std::string, std::string> params;
  std::istringstream ps(slurp(lab.dir + "/params"));
  for (std::string l; std::getline(ps, l);) params[l.substr(0, l.find('='))] = l.substr(l.find('=') + 1);
  auto problems = sbpl::check({profile, params, {lab.home, lab.ws}});
  for (const auto& pr : problems) UNSCOPED_INFO(pr);
  CHECK(problems.empty());
  CHECK(profile.find("(remote ip \"localhost:") != std::string::npos);
  sbpl::Profile eval(profile, params);
  sbpl::Request w{"file-write-create", "/private" + lab.ws + "/.mcp.json"};
  CHECK_FALSE(eval.evaluate(w, sbpl::Model::kLastMatch).allow);
  w.path = "/private" + lab.ws + "/src.c";  // as Seatbelt sees /tmp
  CHECK(eval.evaluate(w, sbpl::Model::kLastMatch).allow);
}

TEST_CASE("macOS executor: the log's refusals that carry this run's tag, and only those") {
  Lab lab;
  Logger log;
  auto o = run_to_end(request(lab, {"true"}, 1, &log));
  REQUIRE(o.ok());
  REQUIRE(o->violations.size() == 2);
  CHECK(o->violations[0].line() == "deny file-read " + lab.home + "/.ssh/id_rsa");
  // A refused write of a protected file says what protects it, as on Linux.
  CHECK(o->violations[1].line() ==
        "deny file-write " + lab.home + "/.bashrc (protected: bash; change it outside the sandbox)");
}

TEST_CASE("macOS executor: a log that cannot start is a warning, and the run goes on") {
  Lab lab;
  std::mutex mu;
  std::string said;
  Logger log(false, [&](std::string_view l) {
    std::lock_guard<std::mutex> lk(mu);
    said += l;
  });
  auto req = request(lab, {"sh", "-c", "exit 7"}, 1, &log);
  req.macos.log = lab.dir + "/no-such-log";
  auto o = run_to_end(std::move(req));
  REQUIRE(o.ok());
  CHECK(o->exit_code == 7);
  CHECK(o->violations.empty());
  CHECK(said.find("Seatbelt's refusals") != std::string::npos);
}

TEST_CASE("macOS executor: a profile sandbox-exec refuses is 125, and the command never ran") {
  Lab lab;
  Logger log;
  auto req = request(lab, {"sh", "-c", "touch " + lab.ws + "/ran"}, 1, &log);
  req.macos.sandbox_exec = lab.refusing;
  auto o = run_to_end(std::move(req));
  REQUIRE_FALSE(o.ok());
  CHECK(o.error().kind == ErrorKind::kSandboxFailed);
  CHECK(::access((lab.ws + "/ran").c_str(), F_OK) != 0);
  // And a sandbox-exec that is not there at all.
  auto req2 = request(lab, {"true"}, 1, &log);
  req2.macos.sandbox_exec = lab.dir + "/missing";
  auto p = engine::prepare(std::move(req2));
  // Not there: the sandbox is unavailable; settings decide whether that refuses (failIfUnavailable)
  // or runs unsandboxed with a warning, as on every platform.
  if (p.ok()) CHECK_FALSE(p->sandboxed);
}

TEST_CASE("macOS executor: signals reach the command's group; the timeout ends it") {
  Lab lab;
  Logger log;
  auto p = engine::prepare(request(lab, {"sleep", "30"}, 1, &log));
  REQUIRE(p.ok());
  auto r = engine::start(std::move(*p));
  REQUIRE(r.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  (*r)->signal(SIGTERM);
  auto o = (*r)->wait();
  REQUIRE(o.ok());
  CHECK(o->exit_code == 128 + SIGTERM);

  auto req = request(lab, {"sh", "-c", "sleep 30 & sleep 30"}, 1, &log);
  req.settings.sandbox.resources.timeout_seconds = 0.5;
  auto t0 = std::chrono::steady_clock::now();
  auto o2 = run_to_end(std::move(req));
  REQUIRE(o2.ok());
  CHECK(o2->exit_code == 124);
  CHECK(o2->timed_out);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
}

TEST_CASE("macOS executor: the proxy answers only a client with the run's credential") {
  Lab lab;
  Logger log;
  Captured out;
  auto p = engine::prepare(request(lab, {"sh", "-c", "echo \"$HTTP_PROXY\"; exec sleep 30"}, out.fds[1], &log));
  REQUIRE(p.ok());
  auto r = engine::start(std::move(*p));
  REQUIRE(r.ok());
  // Its URL, as the command sees it: http://wavebox:SECRET@127.0.0.1:PORT
  std::string url;
  for (int i = 0; i < 100 && url.find('\n') == std::string::npos; ++i) {
    char buf[256];
    ssize_t n = ::read(out.fds[0], buf, sizeof buf);
    if (n > 0) url.append(buf, static_cast<size_t>(n));
  }
  url = url.substr(0, url.find('\n'));
  size_t at = url.find('@'), colon = url.rfind(':');
  REQUIRE(at != std::string::npos);
  std::string cred = url.substr(7, at - 7);
  int port = std::stoi(url.substr(colon + 1));
  auto ask = [&](const std::string& extra) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string req = "GET http://not-allowed.example/ HTTP/1.1\r\nHost: not-allowed.example\r\n" + extra + "\r\n";
    (void)!::write(fd, req.data(), req.size());
    char buf[512];
    ssize_t n = ::read(fd, buf, sizeof buf);
    ::close(fd);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  };
  CHECK(ask("").rfind("HTTP/1.1 407", 0) == 0);
  CHECK(ask("Proxy-Authorization: Basic " + base64_encode("wavebox:wrong") + "\r\n").rfind("HTTP/1.1 407", 0) == 0);
  // With it: past the door, and then refused by the allowlist (the host is on no list).
  CHECK(ask("Proxy-Authorization: Basic " + base64_encode(cred) + "\r\n").rfind("HTTP/1.1 403", 0) == 0);
  (*r)->signal(SIGKILL);
  auto o = (*r)->wait();
  REQUIRE(o.ok());
  ::close(out.fds[0]);
  ::close(out.fds[1]);
  bool refused = false;
  for (const auto& v : o->violations) refused |= v.target.find("not-allowed.example") != std::string::npos;
  CHECK(refused);
}

TEST_CASE("macOS executor: the command inherits its three descriptors and nothing of wavebox's") {
  Lab lab;
  Logger log;
  Captured out;
  // ls's own: 0-2 and the directory it reads (3).
  auto o = run_to_end(request(lab, {"ls", "/proc/self/fd"}, out.fds[1], &log));
  REQUIRE(o.ok());
  CHECK(out.take() == "0\n1\n2\n3\n");
}
