#pragma once
// The supervisor's half of every creating call: wavebox performs open(O_CREAT), mkdir, mknod,
// symlink, link and rename for the sandboxed process itself, so that a protected name is never
// made and the path it checked is the path it used. The path is read once from the caller's
// memory; every step after that works on descriptors of the sandbox's own tree
// (/proc/PID/root, openat2 with RESOLVE_IN_ROOT), so a path rewritten by another thread after
// the check is never looked at, and symbolic links resolve as they would inside.
#include <sys/types.h>
#include <time.h>

#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/sys/fd.hpp"

namespace wb::lnx {

// Reads len bytes at addr of task pid into buf; *got: how many came.
bool read_caller_memory(pid_t pid, unsigned long long addr, void* buf, size_t len, size_t* got);

struct Performed {
  bool handled = false;   // false: not a creating call; the kernel carries it out
  long long value = 0;    // the call's result when error == 0
  int error = 0;          // errno to return
  int fd = -1;            // a descriptor of ours to install in the caller (open)
  bool cloexec = false;   // for fd
  std::string path;       // the absolute path created (or refused), for reports
  std::string refused;    // why a protected name was refused
  bool deferred = false;  // answered later from another thread (a FIFO waiting for its reader)
  bool network = false;   // the refusal is a connection (a host Unix socket), not a write
  std::string direct;     // an inet connect performed here that had nowhere to go: "IP:PORT"
};

class Supervisor {
 public:
  // writable: whether the plan lets the sandbox write at a path (only there are names refused;
  // elsewhere the mounts refuse every creation anyway).
  // refuses(path, in_new_dir, tree): the reason a creation at a path is refused (empty:
  // allowed); see CreationGuard::refuses.
  using Refuses = std::function<std::string(const std::string&, bool, bool)>;
  // moving: why renaming a path away is refused (empty: allowed).
  Supervisor(std::function<bool(const std::string&)> writable, Refuses refuses,
             std::function<std::string(const std::string&)> moving = nullptr);
  // Protected names created in directories new in this run (allowed there), for the warning
  // after the run.
  const std::vector<std::string>& allowed_in_new_dirs() const { return allowed_new_; }
  // A chmod took the owner's read or search permission away (something may be hidden now).
  bool hid_something() const { return hid_something_; }
  ~Supervisor();
  // The call nr with args, from task pid; listener and id for answers that come later.
  Performed perform(pid_t pid, int nr, const unsigned long long* args, int listener, unsigned long long id);
  void forget_umasks() { umask_.clear(); }
  // Drops the effective capabilities of the calling thread for good (the observer's thread),
  // so that what it performs is checked as for the sandboxed process (no DAC override).
  static void drop_thread_privileges();
  // network.allowAllUnixSockets: AF_UNIX connect and bind go to the kernel unchecked.
  void set_unix_sockets_open(bool v) { unix_sockets_open_ = v; }
  // network.allowUnixSockets: these host sockets (their real paths) may be connected to; every
  // other one the sandbox did not bind itself stays refused.
  void set_allowed_unix_sockets(std::vector<std::string> paths) { allowed_sockets_ = std::move(paths); }
  // NETLINK_SOCK_DIAG of the sandbox's network namespace: a Unix socket the sandbox may connect
  // to is one bound there (given before the command can start).
  void set_unix_diag(sys::Fd fd) { unix_diag_ = std::move(fd); }
  // The sandbox keeps the host's /proc (enableWeakerNestedSandbox).
  void set_host_proc(bool v) { host_proc_ = v; }
  // Paths found to guard after the plan was made (bwrap/late_scan.hpp): read-only as a mount
  // would make them, enforced here by path. Given before the first call is answered.
  void add_late_read_only(const std::vector<std::string>& paths, const std::string& why);

 private:
  struct Parent {
    sys::Fd fd;
    std::string path;  // in the sandbox's view
    std::string name;
    bool trailing_slash = false;
  };
  int parent_of(pid_t pid, long long dirfd, const std::string& path, Parent& out);
  static int exists_already(const Parent& p);
  std::string base_of(pid_t pid, long long dirfd, int* err);
  int root(pid_t pid);
  mode_t umask_of(pid_t pid);
  pid_t pid_inside(pid_t pid);
  bool host_proc_ = false;
  bool unix_sockets_open_ = false;
  std::vector<std::string> allowed_sockets_;
  sys::Fd unix_diag_;
  unsigned diag_seq_ = 0;
  bool bound_in_sandbox(dev_t dev, ino_t ino);
  bool hid_something_ = false;
  Performed unix_address(pid_t pid, const unsigned long long* a);
  Performed unix_bind(pid_t pid, const unsigned long long* a);
  Performed check_chmod(unsigned long long mode);
  struct Late {
    std::string path, why;
  };
  std::vector<Late> late_ro_;
  // The late guard a path lies in (or, with ancestors, one that lies below it), or nullptr.
  const Late* late_guard(const std::string& path, bool ancestors) const;
  Performed late_target(pid_t pid, int nr, const unsigned long long* a);
  Performed carry_out(pid_t pid, int nr, const unsigned long long* a, const Parent& p, Performed r, int target,
                      bool removes_dir);
  bool refuse_link_source(Performed& r, const std::string& from);
  Performed reopen_own_fd(pid_t pid, int n, int flags, const std::string& path, Performed r);
  Performed open_own_proc(pid_t pid, const std::string& norm, int flags, const std::string& path, Performed r);
  bool create_fresh(pid_t pid, const Parent& p, int flags, mode_t mode, Performed& r);
  Performed open_fifo(const Parent& p, int flags, int open_flags, int listener, unsigned long long id, Performed r);
  Performed perform_open(pid_t pid, int nr, const unsigned long long* a, int listener, unsigned long long id);
  Performed perform_mknod(pid_t pid, int nr, const unsigned long long* a);
  Performed perform_symlink(pid_t pid, int nr, const unsigned long long* a);
  Performed perform_link(pid_t pid, int nr, const unsigned long long* a);
  Performed perform_rename(pid_t pid, int nr, const unsigned long long* a);
  bool refuse_creation(Performed& r, const std::string& path, int parent, bool tree);
  bool new_name(pid_t pid, Performed& r, long long dirfd, const std::string& path, Parent& p, bool tree);
  std::string refusal(const std::string& path, int parent, bool tree);
  Performed open_for_write(pid_t pid, long long dirfd, const std::string& path, int flags, mode_t mode, int listener,
                           unsigned long long id);
  std::function<bool(const std::string&)> writable_;
  Refuses refuses_;
  std::function<std::string(const std::string&)> moving_;
  std::unordered_set<unsigned long long> new_dirs_;  // (dev, inode) of directories made in this run
  std::vector<std::string> allowed_new_;
  bool is_new_dir(int fd) const;
  void remember_new_dir(int parent, const std::string& name);
  sys::Fd root_;
  int listener_ = -1;
  unsigned long long id_ = 0;
  std::unordered_map<pid_t, mode_t> umask_;
};

}  // namespace wb::lnx
