#include "bwrap/launch/exec.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "bwrap/launch/netns.hpp"
#include "bwrap/launch/terminal.hpp"
#include "core/log.hpp"
#include "core/sys/fd.hpp"
#include "core/sys/fdpass.hpp"
#include "core/sys/fs.hpp"

namespace wb::lnx {
namespace {

using sys::Fd;

long find_json_number(const std::string& text, const char* key) {
  auto pos = text.find(key);
  if (pos == std::string::npos) return -1;
  pos = text.find(':', pos);
  if (pos == std::string::npos) return -1;
  return std::strtol(text.c_str() + pos + 1, nullptr, 10);
}

// The command runs in its own session (bwrap --new-session), so terminal signals reach only us;
// we pass them to the process group of the sandbox's first process below bwrap's init.
// Returns how many were signalled (none before the command exists).
int forward_signal(pid_t init_pid, int sig) {
  if (init_pid <= 0) return 0;
  auto children = sys::read_file(fmt::format("/proc/{}/task/{}/children", init_pid, init_pid));
  if (!children.ok()) return 0;
  int sent = 0;
  const char* p = children->c_str();
  char* end = nullptr;
  for (long pid = std::strtol(p, &end, 10); end != p; pid = std::strtol(p, &end, 10)) {
    p = end;
    pid_t pgid = ::getpgid(static_cast<pid_t>(pid));
    if (pgid > 0 && pgid != init_pid) {
      sent += ::kill(-pgid, sig) == 0;
    } else {
      sent += ::kill(static_cast<pid_t>(pid), sig) == 0;
    }
  }
  return sent;
}

// The only child of a process, from /proc (the first, if several).
pid_t only_child(pid_t pid) {
  auto c = sys::read_file(fmt::format("/proc/{}/task/{}/children", pid, pid));
  return c.ok() ? static_cast<pid_t>(std::strtol(c->c_str(), nullptr, 10)) : -1;
}

// bwrap's json status names its child by its pid inside bwrap's pid namespace; from bwrap
// (pid 1 of the namespace below us) down: bwrap -> the sandbox's pid 1.
pid_t sandbox_init(pid_t bwrap) {
  return only_child(bwrap);
}

void write_all(int fd, const char* data, size_t len) {
  while (len > 0) {
    ssize_t n = ::write(fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    len -= static_cast<size_t>(n);
  }
}

double now_s() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

}  // namespace

namespace {

// The run after the word to start: one poll loop over the keeper, bwrap's status and stderr, the
// shim's socket, the observer's listener, the proxy's listeners and the caller's signals, until
// the sandbox is empty.
class Supervision {
 public:
  Supervision(Launch& L, const ExecRequest& req)
      : L_(L), req_(req), log_(*req.log), child_(L.child), pid_(L.child.pid), observe_(req.observer != nullptr) {
    err_eof_ = !L.err_rd.valid();
    proxy_started_ = !req.on_listeners || req.network_off;
    late_pending_ = req.late_fd >= 0;
  }
  void set_bwrap(pid_t bwrap_pid) { bwrap_pid_ = bwrap_pid; }
  // A standby's command: the listener came long ago, the command starts now.
  void command_starts() { command_at_ = now_s(); }
  void reap_later() { reap_later_ = true; }
  bool keeper_reaped() const { return exited_; }
  void loop();
  Result<int> result();

 private:
  int next_timeout();
  void start_proxy();
  bool relay_err();
  void on_observer_listener(short revents);
  void on_shim_socket();
  void on_status();
  void on_signals();
  void flush_signals();
  void on_emptied();
  void reap_keeper(int options);
  void stop_with_command(int sig);
  void stop_here();
  Observer& observer() { return *req_.observer; }

  Launch& L_;
  const ExecRequest& req_;
  const Logger& log_;
  NetnsChild& child_;
  const pid_t pid_;  // the keeper
  const bool observe_;
  pid_t bwrap_pid_ = -1;  // pid 1 of the sandbox's outer pid namespace
  pid_t init_pid_ = -1;
  std::string status_text_, err_line_;
  int wait_status_ = 0, end_status_ = 0;
  bool exited_ = false, timed_out_ = false, status_eof_ = false, err_eof_ = false;
  bool observer_lost_ = false, ended_ = false, observer_hup_ = false, proxy_started_ = false;
  bool late_pending_ = false;  // the plan's check is not done: no notification is answered
  bool late_started_ = false;  // a notification came, so the check runs
  double command_at_ = 0;      // when the command was about to start (the listener came)
  static constexpr double kLateStartAfter = 0.003;
  void start_late_check(const char* why) {
    late_started_ = true;
    log_.timing(std::string("the plan's check starts: ") + why);
    if (req_.late_start) req_.late_start();
  }
  bool emptied_ = false;              // the shim said the sandbox is empty, and the command's status
  bool reap_later_ = false;           // the keeper (killed) is reaped by end_standby
  bool cancelled_ = false;            // ended by the caller (SIGKILL through req.signals)
  unsigned wakeups_ = 0;              // a handful per run (a spin shows in -v)
  std::vector<int> pending_signals_;  // came before the command existed: forwarded once it does
  double start_ = now_s(), exited_at_ = 0;
};

// The proxy starts with the first connection (most commands make none): until then the
// listeners are polled here, and a connection waits in their backlog meanwhile.
void Supervision::start_proxy() {
  proxy_started_ = true;
  log_.timing("a first connection: the proxy starts");
  auto st = req_.on_listeners(std::move(child_.listeners));
  if (!st) {
    // Closed listeners refuse every connection: the sandbox has no network, nothing more.
    log_.error("the proxy could not start, the sandbox has no network: " + st.error().message);
  }
  child_.listeners = sys::NetListeners{};
}

// Relays what comes through the stderr pipe (bwrap's messages, and the command's stderr when it
// is relayed); false at its end (or an error).
bool Supervision::relay_err() {
  char buf[8192];
  ssize_t r = ::read(L_.err_rd.get(), buf, sizeof buf);
  if (r > 0) {
    // Relayed unchanged and at once; lines are only copied for recognition.
    write_all(req_.stdio[2], buf, static_cast<size_t>(r));
    err_line_.append(buf, static_cast<size_t>(r));
    size_t nl;
    while ((nl = err_line_.find('\n')) != std::string::npos) {
      if (req_.stderr_line) req_.stderr_line(err_line_.substr(0, nl));
      err_line_.erase(0, nl + 1);
    }
    if (err_line_.size() > 65536) err_line_.erase(0, err_line_.size() - 4096);
    return true;
  }
  if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
    err_eof_ = true;
    log_.timing("stderr closed");
    if (!err_line_.empty() && req_.stderr_line) req_.stderr_line(err_line_);
    return false;
  }
  return true;
}

// The poll timeout: the time left before the run's timeout, a bound once bwrap is gone, a
// period where the kernel has no pidfds. -1 (none) most of the time; -2: poll no more.
int Supervision::next_timeout() {
  int timeout_ms = -1;
  if (req_.timeout_seconds && !timed_out_ && init_pid_ > 0) {
    double left = *req_.timeout_seconds - (now_s() - start_);
    if (left <= 0) {
      timed_out_ = true;
      // pid 1 of a pid namespace: all of it goes, bwrap's nested namespace included.
      ::kill(bwrap_pid_ > 0 ? bwrap_pid_ : init_pid_, SIGKILL);
      return 0;
    }
    timeout_ms = static_cast<int>(left * 1000) + 1;
  }
  if (exited_) {
    // bwrap is gone; the pipes close as soon as the last sandboxed process does. A process
    // that escaped the pid namespace could hold them open: give up after a while.
    if (now_s() - exited_at_ > 2.0) return -2;
    timeout_ms = 200;
  }
  if (!exited_ && !L_.keeper_pidfd.valid() && (timeout_ms < 0 || timeout_ms > 50)) timeout_ms = 50;
  // A terminal of the sandbox's own not raw yet (wavebox in the background): is it back?
  if (req_.terminal && req_.terminal->waiting_for_foreground() && (timeout_ms < 0 || timeout_ms > 200)) {
    timeout_ms = 200;
  }
  // A signal waiting for the command: looked at again soon.
  if (!pending_signals_.empty() && !exited_ && (timeout_ms < 0 || timeout_ms > 5)) timeout_ms = 5;
  // The plan's check starts once the command has run a few milliseconds without writing (it
  // then costs a short command nothing, and is done before a longer one needs it).
  if (late_pending_ && !late_started_ && command_at_ > 0 && !exited_) {
    double left_ms = (command_at_ + kLateStartAfter - now_s()) * 1000;
    if (left_ms <= 0) {
      start_late_check("the command has run a while");
    } else if (timeout_ms < 0 || timeout_ms > left_ms + 1) {
      timeout_ms = static_cast<int>(left_ms) + 1;
    }
  }
  return timeout_ms;
}

// The observer's thread starts with the first notification (a command that writes nothing
// never needs it): until then its listener is polled here, and the caller waits meanwhile.
void Supervision::on_observer_listener(short revents) {
  if ((revents & POLLIN) && observer().without_thread()) {
    observer().handle_waiting();
    observer_hup_ = observer().finished();
  } else if (revents & POLLIN) {
    log_.timing("a first notification: the observer starts");
    observer().start();
    if (observer().without_thread()) observer().handle_waiting();
  } else if (revents) {
    observer_hup_ = true;  // every task under the filter has ended: nothing will come (no spin)
  }
}

void Supervision::on_shim_socket() {
  if (!observer().ready()) {
    if (observer().receive_listener()) {
      log_.timing("observer listener received");
      command_at_ = now_s();
    } else {
      observer_lost_ = true;
    }
  } else if (int stopped = 0; observer().receive_end(&end_status_, req_.terminal ? &stopped : nullptr)) {
    if (stopped) {
      stop_with_command(stopped);
    } else {
      emptied_ = true;
      log_.timing("the shim: the sandbox is empty");
    }
  }
}

void Supervision::on_status() {
  char buf[512];
  ssize_t r = ::read(L_.status_rd.get(), buf, sizeof buf);
  if (r > 0) {
    status_text_.append(buf, static_cast<size_t>(r));
    if (!ended_ && status_text_.find("exit-code") != std::string::npos) {
      ended_ = true;
      log_.timing("bwrap reported the exit code");
      if (req_.on_sandbox_ended) req_.on_sandbox_ended();
    }
    if (init_pid_ < 0) {
      init_pid_ = static_cast<pid_t>(find_json_number(status_text_, "\"child-pid\""));
      if (init_pid_ > 0) log_.timing("bwrap reported its child");
    }
  } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
    status_eof_ = true;
    log_.timing("bwrap status closed");
  }
}

void Supervision::on_signals() {
  bool stop_requested = false;
  for (int sig : req_.signals->take()) {
    if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) stop_requested = true;
    if (sig == SIGKILL) {
      // The whole sandbox: pid 1 of its namespace, or the keeper before bwrap is known.
      cancelled_ = true;
      ::kill(bwrap_pid_ > 0 ? bwrap_pid_ : pid_, SIGKILL);
    } else if (sig == SIGWINCH && req_.terminal) {
      req_.terminal->resize();  // the sandbox's terminal signals its foreground job itself
    } else {
      if (sig == SIGCONT && req_.terminal) req_.terminal->raw();
      pending_signals_.push_back(sig);
    }
  }
  flush_signals();
  if (stop_requested && req_.signals->whole_process()) {
    // Job control: the command has no terminal of its own, so the Ctrl-Z (SIGTSTP) that stopped
    // nobody but wavebox's process group is passed on, and wavebox stops with it: the shell gets
    // its prompt back, and the SIGCONT of `fg` or `bg` resumes wavebox and reaches the command
    // in turn. Were wavebox to stop alone, the command would hang at its next supervised call.
    log_.info("stopped (SIGTSTP): the command and wavebox");
    stop_here();
  }
}

// wavebox stops (the caller's terminal as it was), and goes on at SIGCONT (raw again).
void Supervision::stop_here() {
  if (req_.terminal) req_.terminal->restore();
  ::kill(::getpid(), SIGSTOP);
  if (req_.terminal) req_.terminal->raw();
}

// The command stopped on its own terminal (Ctrl-Z there, with no shell inside to take it):
// wavebox stops with it, so the caller's shell gets its prompt back; `fg` resumes both.
// Only under a shell that does job control (wavebox a job of its own, not its session's leader or
// its parent's group: `fg` can resume it), and never past a timeout (a stopped wavebox would not
// end the sandbox on time): else the command stays stopped, and the timeout or the caller ends it.
void Supervision::stop_with_command(int sig) {
  const bool job = ::getpgrp() != ::getsid(0) && req_.terminal->foreground();
  if (!req_.signals || !req_.signals->whole_process() || !job || req_.timeout_seconds) {
    log_.info(fmt::format("the command stopped (signal {}); wavebox runs on (no job control here, or a timeout)", sig));
    return;
  }
  log_.info(fmt::format("the command stopped (signal {}): wavebox stops with it", sig));
  stop_here();
  const pid_t init = bwrap_pid_ > 0 ? sandbox_init(bwrap_pid_) : init_pid_;
  forward_signal(init, SIGCONT);
}

// A signal that came while the sandbox was starting (Ctrl-C at once, a harness's early SIGTERM)
// waits for the command, and reaches it as soon as it exists.
void Supervision::flush_signals() {
  if (pending_signals_.empty()) return;
  const pid_t init = bwrap_pid_ > 0 ? sandbox_init(bwrap_pid_) : init_pid_;
  while (!pending_signals_.empty() && forward_signal(init, pending_signals_.front()) > 0) {
    pending_signals_.erase(pending_signals_.begin());
  }
}

void Supervision::reap_keeper(int options) {
  if (exited_) return;
  pid_t got;
  while ((got = ::waitpid(pid_, &wait_status_, options)) < 0 && errno == EINTR) {
  }
  if (got == pid_) {
    exited_ = true;
    exited_at_ = now_s();
    log_.timing("bwrap reaped");
  }
}

// No process of the sandbox is left: what it wrote to stderr is all in the pipe, and the host
// is ours to put back in order. The keeper, our child, is ended (it only waits for bwrap; it
// dies while the stubs go) and reaped, here or (leave_keeper) once the run's other work is done;
// bwrap, in its exit already, tears the namespaces down after we return and is reaped by the
// system (as bwrap leaves its own pid 1 when run alone).
void Supervision::on_emptied() {
  if (!exited_) ::kill(pid_, SIGKILL);
  if (req_.terminal) req_.terminal->drain();
  while (!err_eof_) {
    struct pollfd e = {L_.err_rd.get(), POLLIN, 0};
    if (::poll(&e, 1, 0) <= 0 || !relay_err()) break;
  }
  if (!ended_ && req_.on_sandbox_ended) req_.on_sandbox_ended();
  // A standby's keeper is reaped by whoever drops the standby, after the answer (end_standby);
  // a one-command process's by the system, after it exits.
  if (!reap_later_ && !req_.leave_keeper) reap_keeper(0);
}

void Supervision::loop() {
  if (req_.terminal) req_.terminal->raw();
  while (!exited_ || !status_eof_ || !err_eof_ || (observe_ && observer().socket_fd() >= 0)) {
    int timeout_ms = next_timeout();
    if (timeout_ms == -2) break;
    const bool observer_idle =
        observe_ && observer().ready() && !observer().running() && !observer_hup_ && !late_pending_;
    // A plan from the scan cache: the first notification starts its check, and waits for it.
    const bool waits_for_check = late_pending_ && !late_started_ && observe_ && observer().ready() && !observer_hup_;
    // 0-8 fixed; 9: the resolver; 10 on: the transparent listeners (a name looked up, or a
    // connection to one, starts the proxy as a proxied connection does).
    struct pollfd p[10 + WB_KEEPER_FDS + WB_MAX_EXTRA_PORTS + WB_MAX_FUSE_MASKS + 3] = {
        {exited_ ? -1 : L_.keeper_pidfd.get(), POLLIN, 0},
        {status_eof_ ? -1 : L_.status_rd.get(), POLLIN, 0},
        {err_eof_ ? -1 : L_.err_rd.get(), POLLIN, 0},
        {observe_ && observer().socket_fd() >= 0 ? observer().socket_fd() : -1, POLLIN, 0},
        {proxy_started_ ? -1 : child_.listeners.http.get(), POLLIN, 0},
        {proxy_started_ ? -1 : child_.listeners.socks.get(), POLLIN, 0},
        {observer_idle || waits_for_check ? observer().listener_fd() : -1, POLLIN, 0},
        {req_.signals ? req_.signals->fd() : -1, POLLIN, 0},
        {late_pending_ ? req_.late_fd : -1, POLLIN, 0},
        {proxy_started_ ? -1 : child_.listeners.dns.get(), POLLIN, 0},
    };
    nfds_t np = 10;
    p[np++] = {proxy_started_ ? -1 : child_.listeners.dns_tcp.get(), POLLIN, 0};
    for (const auto& t : child_.listeners.transparent) {
      if (np < 10 + WB_KEEPER_FDS + WB_MAX_EXTRA_PORTS) p[np++] = {proxy_started_ ? -1 : t.get(), POLLIN, 0};
    }
    // Then the read masks served by FUSE: a request is a read the command tried.
    const nfds_t net_end = np;
    const size_t masks = observe_ ? observer().fuse().size() : 0;
    for (size_t i = 0; i < masks; ++i) p[np++] = {observer().fuse().fd(i), POLLIN, 0};
    // Then the terminal of the sandbox's own: the caller's typing in, the command's output out
    // (typing waits while the sandbox's terminal has not taken the last of it).
    Terminal* term = req_.terminal;
    const nfds_t term_at = np;
    if (term) {
      term->raw();  // (again in the foreground after `bg`, `fg`: no signal says so)
      p[np++] = {term->in(), POLLIN, 0};
      p[np++] = {term->master(),
                 static_cast<short>((term->wants_output() ? POLLIN : 0) | (term->pending_input() ? POLLOUT : 0)), 0};
      p[np++] = {term->out_waiting(), POLLOUT, 0};
    }
    int n = ::poll(p, np, timeout_ms);
    if (n < 0 && errno != EINTR) break;
    ++wakeups_;
    bool first_connection = false;
    for (nfds_t i : {4, 5}) first_connection |= p[i].revents != 0;
    for (nfds_t i = 9; i < net_end; ++i) first_connection |= p[i].revents != 0;
    for (size_t i = 0; i < masks; ++i) {
      if (p[net_end + i].revents) observer().serve_fuse(i);
    }
    if (term) {
      if (p[term_at].revents) term->from_caller();
      if (p[term_at + 1].revents & POLLOUT) term->flush_input();
      if (p[term_at + 1].revents & POLLIN) term->from_master();
      if (p[term_at + 2].revents) term->to_caller();
    }
    if (!proxy_started_ && first_connection) start_proxy();
    if (p[8].revents) {
      // The plan's check is done: what it found goes to the observer before it answers anything.
      late_pending_ = false;
      if (observe_ && req_.late_ready) req_.late_ready(observer());
      log_.timing("the scan that checks the plan is done");
    }
    if (p[6].revents && late_pending_) {
      if (p[6].revents & POLLIN) {
        start_late_check("a first notification");
      } else {
        observer_hup_ = true;  // every task under the filter has ended: nothing will come
      }
    } else if (p[6].revents) {
      on_observer_listener(p[6].revents);
    }
    if (p[3].revents) on_shim_socket();
    if (p[2].revents) relay_err();
    if (p[1].revents) on_status();
    if (p[7].revents) on_signals();
    flush_signals();
    if (p[0].revents || !L_.keeper_pidfd.valid()) reap_keeper(WNOHANG);
    if (emptied_) {
      on_emptied();
      break;
    }
  }
  if (!(emptied_ && (reap_later_ || req_.leave_keeper))) reap_keeper(0);
  if (observe_) observer().stop();
  if (req_.terminal) {
    req_.terminal->drain();
    req_.terminal->restore();
  }
  log_.info(fmt::format("supervision loop woke {} times", wakeups_));
}

Result<int> Supervision::result() {
  if (timed_out_ && req_.timed_out) *req_.timed_out = true;
  if (timed_out_) return 124;
  if (emptied_) return end_status_;
  if (cancelled_) return 128 + SIGKILL;
  if (init_pid_ <= 0) {
    int code = WIFEXITED(wait_status_) ? WEXITSTATUS(wait_status_) : 128 + WTERMSIG(wait_status_);
    return make_error(ErrorKind::kSandboxFailed,
                      fmt::format("bubblewrap could not set up the sandbox (status {}); its message is above", code));
  }
  if (observe_ && (observer_lost_ || !observer().ready())) {
    return make_error(ErrorKind::kSandboxFailed, "the observer did not start inside the sandbox; its message is above");
  }
  long code = find_json_number(status_text_, "\"exit-code\"");
  if (code >= 0) return static_cast<int>(code);
  if (WIFSIGNALED(wait_status_)) return 128 + WTERMSIG(wait_status_);
  return WEXITSTATUS(wait_status_);
}

constexpr char kStandbyStart = 1;  // send_start_word: WB_WORD_START with WB_START_STANDBY

// The filter and the mount list are written: the shim, waiting for this byte, places the
// mounts. (It cannot have gone ahead: without the byte it places nothing and runs nothing.)
// With it, the command's standard descriptors: the caller's, or the relay pipe for stderr. One
// closed here stays closed there (the second byte says which came).
// A standby's start word carries none (they come with its command, WB_WORD_GO, after the spec's
// descriptor).
Status send_start_word(Launch& L, const ExecRequest& req, char what = WB_WORD_START, int spec = -1) {
  const int shim_sock = req.observer ? req.observer->socket_fd() : L.obs_ours.get();
  int stdio[4];
  char word[2] = {what, 0};
  size_t passed = 0;
  if (spec >= 0) stdio[passed++] = spec;
  for (int i = 0; i < 3 && what != kStandbyStart; ++i) {
    if (req.stdio[i] < 0) continue;
    int fd = i == 2 && L.relay_command_stderr ? L.err_wr.get() : req.stdio[i];
    stdio[passed++] = fd;
    word[1] = static_cast<char>(word[1] | (1 << i));
  }
  if (what == kStandbyStart) word[0] = WB_WORD_START, word[1] = WB_START_STANDBY;
  // (The sandbox's terminal as the command's controlling terminal when it is its stdin.)
  if (req.terminal && req.terminal->in_too() && what == WB_WORD_START) {
    word[1] = static_cast<char>(word[1] | WB_START_TTY);
  }
  if (!sys::send_fds(shim_sock, stdio, passed, word, sizeof word) && errno != EPIPE && errno != ECONNRESET) {
    return sys::sys_error("send", "the shim's socket", errno);
  }
  return ok_status();
}

}  // namespace

Result<int> exec_bwrap(Launch& L, const ExecRequest& req, const std::string& options) {
  L.consumed = true;
  NetnsChild& child = L.child;
  if (req.observer) req.observer->adopt_socket(std::move(L.obs_ours));
  auto abort_child = [&](Error e) -> Result<int> {
    // The keeper's death ends bwrap (waiting for its options, or its shim for the mount list)
    // and its namespace: nothing of the sandbox ran, and nothing is printed.
    ::kill(child.pid, SIGKILL);
    int ws;
    ::waitpid(child.pid, &ws, 0);
    return e;
  };
  if (L.options_sent && !options.empty()) {
    return abort_child(make_error(ErrorKind::kSandboxFailed, "internal: the plan needs bwrap's mounts after all"));
  }
  if (!L.options_sent) {
    if (auto st = send_options(L.env_options + options, L.args_wr.get()); !st) return abort_child(st.error());
    L.args_wr.reset();
    L.options_sent = true;
  }
  // The namespace's sockets first (the keeper makes them while bwrap starts, before anything of
  // the sandbox can run): the observer has the socket-diagnostics one before the command can
  // connect anywhere.
  if (auto st = receive_listeners(child); !st) return st.error();
  if (req.observer) req.observer->set_unix_diag(std::move(child.unix_diag));
  if (auto st = send_start_word(L, req); !st) return abort_child(st.error());
  if (req.network_off) {
    // shutdown reaches every copy of a listening socket: none is left listening.
    ::shutdown(child.listeners.http.get(), SHUT_RDWR);
    ::shutdown(child.listeners.socks.get(), SHUT_RDWR);
    ::shutdown(child.listeners.dns_tcp.get(), SHUT_RDWR);
    for (auto& t : child.listeners.transparent) ::shutdown(t.get(), SHUT_RDWR);
    child.listeners = sys::NetListeners{};
  }
  if (auto st = await_bwrap(child); !st) return abort_child(st.error());
  L.status_wr.reset();
  L.err_wr.reset();
  Supervision sup(L, req);
  sup.set_bwrap(child.bwrap_pid);
  sup.loop();
  return sup.result();
}

Status standby_begin(Launch& L, const ExecRequest& req, const std::string& options) {
  L.consumed = true;  // from here on the standby ends the keeper itself (end_standby)
  NetnsChild& child = L.child;
  if (!req.observer) return make_error(ErrorKind::kSandboxFailed, "internal: a standby without its observer");
  req.observer->adopt_socket(std::move(L.obs_ours));
  if (L.options_sent && !options.empty()) {
    return make_error(ErrorKind::kSandboxFailed, "internal: the plan needs bwrap's mounts after all");
  }
  if (!L.options_sent) {
    WB_TRY(send_options(L.env_options + options, L.args_wr.get()));
    L.args_wr.reset();
    L.options_sent = true;
  }
  WB_TRY(receive_listeners(child));
  req.observer->set_unix_diag(std::move(child.unix_diag));
  WB_TRY(send_start_word(L, req, kStandbyStart));
  WB_TRY(await_bwrap(child));
  L.status_wr.reset();
  // The shim places the mounts, loads the filter and hands its listener over: then the standby
  // is ready. bwrap's messages, if it failed, wait in the stderr pipe for the log.
  struct pollfd pf = {req.observer->socket_fd(), POLLIN, 0};
  int n;
  do {
    n = ::poll(&pf, 1, 10000);
  } while (n < 0 && errno == EINTR);
  if (n <= 0 || !req.observer->receive_listener()) {
    std::string msg;
    char buf[4096];
    struct pollfd e = {L.err_rd.get(), POLLIN, 0};
    while (msg.size() < 16384 && ::poll(&e, 1, 0) > 0 && (e.revents & POLLIN)) {
      ssize_t r = ::read(L.err_rd.get(), buf, sizeof buf);
      if (r <= 0) break;
      msg.append(buf, static_cast<size_t>(r));
    }
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return make_error(ErrorKind::kSandboxFailed,
                      "the prepared sandbox did not start" + (msg.empty() ? std::string() : ": " + msg));
  }
  // The shim has read them: a standby waits with as few descriptors as it can.
  L.filter.reset();
  L.spec.reset();
  L.mounts.reset();
  return ok_status();
}

Result<int> standby_go(Launch& L, const ExecRequest& req, const std::string& cwd) {
  sys::Fd spec = WB_TRY(new_memfd("wavebox-go"));
  WB_TRY(sys::replace_contents(spec.get(), encode_go_spec(req.limits, req.exe, cwd, req.env, req.command),
                               "the command for the shim"));
  WB_TRY(send_start_word(L, req, WB_WORD_GO, spec.get()));
  spec.reset();
  L.err_wr.reset();
  Supervision sup(L, req);
  sup.set_bwrap(L.child.bwrap_pid);
  sup.command_starts();
  sup.reap_later();
  sup.loop();
  if (sup.keeper_reaped()) L.child.pid = -1;  // end_standby must not signal the pid again
  return sup.result();
}

pid_t standby_init(const Launch& L) {
  return L.child.bwrap_pid > 0 ? sandbox_init(L.child.bwrap_pid) : -1;
}

bool standby_alive(const Launch& L, const Observer& observer) {
  // The keeper's pidfd is readable once it ended; the shim's socket once it said or closed
  // anything (it says nothing before the word to go).
  struct pollfd p[2] = {{L.keeper_pidfd.get(), POLLIN, 0}, {observer.socket_fd(), POLLIN, 0}};
  return L.child.pid > 0 && observer.socket_fd() >= 0 && ::poll(p, 2, 0) == 0;
}

void end_standby(Launch& L) {
  if (L.child.pid <= 0) return;
  ::kill(L.child.pid, SIGKILL);
  int ws;
  while (::waitpid(L.child.pid, &ws, 0) < 0 && errno == EINTR) {
  }
  L.child.pid = -1;
}

}  // namespace wb::lnx
