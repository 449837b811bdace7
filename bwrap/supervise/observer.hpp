#pragma once
// The notification loop of a run: receives the seccomp user-notification listener from
// wavebox-shim and answers every notified call. Creating calls (open with O_CREAT or write intent,
// mkdir, mknod, symlink, link, rename, bind), truncation and resizing of a descriptor are handed
// to the Supervisor (supervise.hpp), which performs or refuses them; the rest (unlink, chmod, a
// connect to an address) the kernel carries out after a check of their targets. Every refusal
// becomes a Violation (core/violations.hpp).
#include <linux/seccomp.h>
#include <sys/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bwrap/supervise/fuse_masks.hpp"
#include "bwrap/supervise/supervise.hpp"
#include "core/log.hpp"
#include "core/sys/fd.hpp"
#include "core/violations.hpp"

namespace wb::lnx {

class Observer {
 public:
  // writable: whether the sandbox may write at an absolute path.
  // sink: where refusals go (called on the observer's thread).
  // refuses: why a creation at a path is refused (empty: allowed); the observer performs every
  // creating call itself (bwrap/supervise/supervise.hpp).
  Observer(std::function<bool(const std::string&)> writable, std::function<void(const Violation&)> sink,
           Supervisor::Refuses refuses, std::function<std::string(const std::string&)> moving = nullptr);
  ~Observer();
  Observer(const Observer&) = delete;
  Observer& operator=(const Observer&) = delete;

  // Our end of the socket whose other end the shim holds (bwrap/launch/exec.hpp, Launch).
  void adopt_socket(sys::Fd ours) { ours_ = std::move(ours); }
  void set_host_proc(bool v) { supervisor_.set_host_proc(v); }
  // Why a refused write of a path was refused when a guard covers it (protection_reason): the
  // block then says what the protection is and what to do, not only that the path is read-only.
  void set_explainer(std::function<std::string(const std::string&)> f) { explain_ = std::move(f); }
  void set_logger(const Logger* log) { log_ = log; }
  void set_unix_sockets_open(bool v) { supervisor_.set_unix_sockets_open(v); }
  void set_allowed_unix_sockets(std::vector<std::string> p) { supervisor_.set_allowed_unix_sockets(std::move(p)); }
  void set_unix_diag(sys::Fd fd) { supervisor_.set_unix_diag(std::move(fd)); }
  // Before the first notification is handled (bwrap/plan/late_scan.hpp).
  void add_late_read_only(const std::vector<std::string>& paths, const std::string& why) {
    supervisor_.add_late_read_only(paths, why);
  }
  void add_write_patterns(const std::vector<std::string>& globs) { supervisor_.add_write_patterns(globs); }
  // The read masks the shim was asked to serve by FUSE; their connections come with the listener.
  void set_fuse_masks(std::vector<FuseMask> masks) { fuse_.expect(std::move(masks)); }
  FuseMasks& fuse() { return fuse_; }
  const FuseMasks& fuse() const { return fuse_; }
  // When fuse().fd(i) is readable (the supervision loop polls them): refusals go to the sink.
  void serve_fuse(size_t i) { fuse_.serve(i, sink_); }
  int socket_fd() const { return ours_.get(); }        // poll: the listener, then the end, arrive here
  int listener_fd() const { return listener_.get(); }  // poll: notifications arrive here
  bool ready() const { return listener_.valid(); }
  // Call when socket_fd() is readable; false when the shim closed without sending a listener.
  // The socket stays open for receive_end().
  bool receive_listener();
  // Call when socket_fd() is readable again, after the listener: true, with the command's exit
  // status, when the shim says the sandbox is empty (every process in it ended and reaped, the
  // host no longer reachable from it); false when the shim ended without saying so. Closes the
  // socket either way.
  // stopped: where a command with a terminal of its own stopping is said (WB_WORD_STOPPED):
  // true with *stopped its signal, the socket kept; else 0.
  bool receive_end(int* status, int* stopped = nullptr);
  // Handles notifications on a thread of its own, blocked in the receive call, so the kernel's
  // synchronous wake-up can hand the CPU straight over (each notification is a round trip).
  // When no thread can be made (a process limit), the caller's loop handles them instead:
  // handle_waiting() whenever listener_fd() is readable.
  void start();
  bool running() const { return thread_.joinable(); }
  bool without_thread() const { return without_thread_; }
  void handle_waiting() { handle_one(); }
  bool finished() const { return stopping_; }  // nothing more will come (or it failed)
  // Stops the thread (after the sandbox is gone). Idempotent.
  void stop();
  size_t handled() const { return handled_; }
  // Receives that found nothing (a caller gone meanwhile, or the end): a handful per run.
  size_t empty_receives() const { return empty_receives_; }
  // Paths named ".git", and directories where "HEAD", "objects" or "refs" appeared (a bare
  // repository's layout), that the command created or renamed into place: new repositories,
  // without rescanning the workspace.
  std::vector<std::string> created_git() const;
  long long busy_ns() const { return busy_ns_; }
  // Protected names the command made in directories new in this run (allowed there).
  const std::vector<std::string>& allowed_in_new_dirs() const { return supervisor_.allowed_in_new_dirs(); }
  bool hid_something() const { return supervisor_.hid_something(); }
  bool moved_across_deps() const { return supervisor_.moved_across_deps(); }

 private:
  std::function<bool(const std::string&)> writable_;
  std::function<void(const Violation&)> sink_;
  std::function<std::string(const std::string&)> explain_;
  void write_refused(const std::string& path, const std::string& reason, bool guarded);
  const Logger* log_ = &log::process();
  Supervisor supervisor_;
  FuseMasks fuse_;
  sys::Fd ours_, listener_;
  void handle_one();
  struct Observed {
    std::vector<std::string> targets;  // paths the call writes
    bool create_only = false;          // O_CREAT without write access: harmless when the file exists
    std::string network;               // a direct connection's address
  };
  bool receive(struct seccomp_notif* req);
  Observed observe(pid_t pid, int nr, const unsigned long long* a);
  void after_continue(pid_t pid, int nr, const Observed& o);
  void answer_performed(unsigned long long id, int nr, Performed& done, const struct timespec& tb);
  void run();
  bool without_thread_ = false;
  std::string absolute(pid_t pid, long long dirfd, const std::string& p);
  std::unordered_map<pid_t, std::string> cwd_cache_;  // thread id -> cwd (observer thread only)
  bool parent_via_symlink(const std::string& path);
  std::map<std::string, bool> symlink_cache_;  // parent directory -> reached through a symlink
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  void* req_ = nullptr;
  void* resp_ = nullptr;
  size_t req_size_ = 0, resp_size_ = 0;
  std::atomic<size_t> handled_{0};
  std::atomic<size_t> empty_receives_{0};
  mutable std::mutex created_mu_;
  std::vector<std::string> created_git_;
  long long busy_ns_ = 0;
};

}  // namespace wb::lnx
