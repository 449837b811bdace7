#pragma once
// The supervisor's helpers, shared by its files (bwrap/supervise/supervise.cpp: the calls and the path
// walk; bwrap/supervise/supervise_open.cpp: opens and Unix socket connects). Internal to bwrap/.
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <string>

#include "bwrap/supervise/supervise.hpp"

namespace wb::lnx::detail {

// Answers (bwrap/supervise/supervise.cpp): an error; the call's own result (errno when rc < 0).
Performed failed(int err);
Performed failed(Performed r, int err);
Performed done_with(Performed r, long rc);
long long dirfd_arg(unsigned long long v);

constexpr int kMaxHops = 40;  // symbolic links followed, as the kernel's limit

// A pidfd of the task a notification names (its id is the calling thread's): the thread itself
// where the kernel can (PIDFD_THREAD, Linux 6.9), else its thread group's, which shares its
// descriptor table. Invalid when the task is gone.
int task_pidfd(pid_t tid);

// The string at addr in the caller, read once; EFAULT, ENAMETOOLONG as the kernel answers.
int read_string(pid_t pid, unsigned long long addr, std::string& out);
std::string read_link_at(int dirfd, const char* p);
// The path a descriptor of ours names (in the sandbox's view for its tree).
std::string fd_path(int fd);
// "/dev/stdout", "/dev/fd/N", "/proc/self/fd/N": the caller's descriptor N, else -1;
// *under_self: the path lies in the caller's own /proc directory.
int self_fd(const std::string& p, bool* under_self);
// "/dev/fd/N/..." or "/proc/self/fd/N/...": a name below a directory descriptor of the caller.
bool self_dir_entry(const std::string& p);
long openat2_in(int root, const std::string& p, int flags, unsigned long long resolve);
// Why a hard link from src is refused ("" when it is not).
std::string link_source_refusal(const std::string& src);
// EEXIST when name in dir is taken, 0 when free, errno otherwise.
int exists_already_at(int dir, const std::string& name);
// EBUSY when name in dir is the root of a mount of the sandbox's tree.
int mount_point(int dir, const std::string& name);

// What this thread is known to be, set once by Supervisor::drop_thread_privileges (the
// observer's thread): no effective capabilities (only our own code could raise them again,
// and it does not), and an umask of its own (CLONE_FS unshared) whose value is remembered. A
// thread without that (the supervision loop answering alone, as root) checks every time.
struct ThreadState {
  bool caps_off = false;
  bool own_umask = false;
  mode_t umask = 0;
};
ThreadState& thread_state();

// Where the calling thread still has effective capabilities (the supervision loop answering
// without a thread of its own, as root), they are off while a call is performed.
struct NoCapsScope {
  NoCapsScope() {
    if (thread_state().caps_off) return;  // (no capget per call on the observer's thread)
    if (::syscall(SYS_capget, &hdr, saved) != 0 || (!saved[0].effective && !saved[1].effective)) return;
    struct __user_cap_data_struct off[2] = {saved[0], saved[1]};
    off[0].effective = off[1].effective = 0;
    dropped = ::syscall(SYS_capset, &hdr, off) == 0;
  }
  ~NoCapsScope() {
    if (!dropped) return;
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    (void)::syscall(SYS_capset, &h, saved);
  }
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct saved[2] = {};
  bool dropped = false;
};

// The caller's umask for a creation. A thread with an umask of its own keeps the last one set
// (set again only when a caller's differs); elsewhere it is the process's, and put back.
struct UmaskScope {
  explicit UmaskScope(mode_t m) {
    ThreadState& t = thread_state();
    if (!t.own_umask) {
      restore = true;
      old = ::umask(m);
    } else if (t.umask != m) {
      ::umask(m);
      t.umask = m;
    }
  }
  ~UmaskScope() {
    if (restore) ::umask(old);
  }
  UmaskScope(const UmaskScope&) = delete;
  UmaskScope& operator=(const UmaskScope&) = delete;
  bool restore = false;
  mode_t old = 0;
};

}  // namespace wb::lnx::detail
