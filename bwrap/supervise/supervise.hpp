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
  std::string refused;    // why it was refused, when a rule of its own refused it (a protected name)
  bool guarded = false;   // refused as read-only by the plan inside a writable tree: a guard's doing
  bool deferred = false;  // answered later from another thread (a FIFO waiting for its reader)
  bool network = false;   // the refusal is a connection (a host Unix socket), not a write
  std::string direct;     // an inet connect performed here that had nowhere to go: "IP:PORT"
};

// A directory's identity: device, inode and (where the file system keeps one) birth time, so
// that an inode number a removed directory leaves behind and another directory takes later is
// not the same directory.
struct DirId {
  unsigned long long dev = 0, ino = 0;
  long long birth_s = 0;
  unsigned birth_ns = 0;
  bool operator==(const DirId& o) const {
    return dev == o.dev && ino == o.ino && birth_s == o.birth_s && birth_ns == o.birth_ns;
  }
};
struct DirIdHash {
  size_t operator()(const DirId& d) const {
    return std::hash<unsigned long long>()(d.ino * 0x9e3779b97f4a7c15ULL ^ d.dev ^
                                           static_cast<unsigned long long>(d.birth_s) * 31 ^ d.birth_ns);
  }
};
// The identity of fd, or (name given) of name in the directory fd; false when it cannot be read.
bool dir_identity(int fd, const char* name, DirId* out);

// Directories the supervisor resolved lately, kept open (O_PATH), so that a run of calls in the
// same directories (an archive extracted, a tree removed) does not walk each path again in the
// sandbox's root. An entry is used only while the kernel names its descriptor by exactly the path
// asked for (one readlink instead of a walk, its readlink and a close): a directory moved or
// removed since, by the sandbox or by the host, is looked up afresh. Pure bookkeeping around
// descriptors; the checks are the supervisor's.
class DirCache {
 public:
  static constexpr size_t kEntries = 32;
  // A descriptor of the directory at path (absolute, in the sandbox's view), checked just now;
  // -1 when there is none. Borrowed: valid until the next release_evicted().
  int find(const std::string& path);
  // Keeps fd as the directory at path (its real path, as the kernel named it); returns it, borrowed.
  int keep(sys::Fd fd, const std::string& path);
  // The identity of a descriptor find() or keep() returned, read once; false for others.
  bool identity(int fd, DirId* out);
  // Closes the descriptors evicted since the last call (callers may still hold them until then).
  void release_evicted() { evicted_.clear(); }
  void clear();

 private:
  struct Entry {
    sys::Fd fd;
    std::string path;
    DirId id;
    bool id_known = false;
    unsigned long long used = 0;
  };
  std::vector<Entry> entries_;
  std::vector<sys::Fd> evicted_;
  unsigned long long tick_ = 0;
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
  // A rename moved something into or out of a node_modules tree (protected names are allowed
  // there): the workspace is looked at again after the run.
  bool moved_across_deps() const { return moved_across_deps_; }
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
  // Paths found to guard after the plan was made (bwrap/plan/late_scan.hpp): read-only as a mount
  // would make them, enforced here by path. Given before the first call is answered.
  void add_late_read_only(const std::vector<std::string>& paths, const std::string& why);
  // denyWrite globs: what matches them, now or once made (created, renamed or linked into place),
  // is read-only as a late guard is; a tree put in place where a glob reaches below it too
  // (for a glob without "**").
  void add_write_patterns(const std::vector<std::string>& globs);

 private:
  // A parent directory's descriptor: the cache's (borrowed for the call) or one of its own.
  struct DirRef {
    int fd = -1;
    sys::Fd own;
    int get() const { return fd; }
    void reset(int f) {
      own.reset(f);
      fd = f;
    }
  };
  struct Parent {
    DirRef fd;
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
  bool moved_across_deps_ = false;
  Performed unix_address(pid_t pid, const unsigned long long* a);
  Performed unix_bind(pid_t pid, const unsigned long long* a);
  Performed check_chmod(unsigned long long mode);
  struct Late {
    std::string path, why;
    bool glob = false;  // path is a denyWrite glob (paths::glob_matches), not a tree
  };
  std::vector<Late> late_ro_;
  // The late guard a path lies in (or, with ancestors, one that lies below it), or nullptr.
  const Late* late_guard(const std::string& path, bool ancestors) const;
  // A directory tree (name in dirfd) about to be put at dest: the reason it may not be, when a
  // denyWrite glob with "**" would match something in it there (or it is too large to look at).
  std::string tree_meets_glob(int dirfd, const std::string& name, const std::string& dest) const;
  Performed late_target(pid_t pid, int nr, const unsigned long long* a);
  // fchmod, fchown, futimens: on a file or directory under a late guard (or a denyWrite glob),
  // refused as its mount would have refused them; the rest is continued.
  Performed fd_attributes(pid_t pid, unsigned long long fd);
  // ftruncate and fallocate on a descriptor: a file outside the writable set (the caller's own
  // `>> log` handed in as stdout) or under a late guard is refused; the rest is continued.
  Performed fd_write(pid_t pid, const unsigned long long* a);
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
  // Why creating path in the directory parent is refused ("" when it is not). A name allowed
  // only because the directory is new or lies in node_modules is noted for the look after the
  // run, or, with allowed_new, said there for the caller to note once it made the name.
  std::string refusal(const std::string& path, int parent, bool tree, bool* allowed_new = nullptr);
  void note_allowed_new(const std::string& path);
  // O_CREAT of a name that is not there (the common case), made at once; false when the name
  // is taken or the creation needs a closer look (then open_for_write looks as before).
  bool create_first(pid_t pid, const Parent& p, int flags, mode_t mode, Performed& r);
  int make_new(pid_t pid, const Parent& p, int flags, mode_t mode);
  Performed open_for_write(pid_t pid, long long dirfd, const std::string& path, int flags, mode_t mode, int listener,
                           unsigned long long id);
  std::function<bool(const std::string&)> writable_;
  Refuses refuses_;
  std::function<std::string(const std::string&)> moving_;
  std::unordered_set<DirId, DirIdHash> new_dirs_;  // directories made in this run
  std::vector<std::string> allowed_new_;
  DirCache dirs_;
  // The directory at dir (absolute, as asked) from the cache, or walked in the sandbox's root.
  int open_dir(pid_t pid, const std::string& dir, Parent& out);
  bool is_new_dir(int fd);
  void remember_new_dir(int parent, const std::string& name);
  sys::Fd root_;
  int listener_ = -1;
  unsigned long long id_ = 0;
  std::unordered_map<pid_t, mode_t> umask_;
};

}  // namespace wb::lnx
