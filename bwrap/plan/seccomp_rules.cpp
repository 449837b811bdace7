// pure
#include "bwrap/plan/seccomp_rules.hpp"

#include <fmt/format.h>

namespace wb::lnx {
namespace {

// Linux ABI constants, spelled out so this file needs no system header.
constexpr int kEPERM = 1, kENOSYS = 38, kEOPNOTSUPP = 95, kEAFNOSUPPORT = 97;
constexpr std::uint64_t kAfUnix = 1, kAfInet = 2, kAfInet6 = 10, kAfNetlink = 16, kAfMax = 46;
constexpr std::uint64_t kSockStream = 1, kSockDgram = 2, kSockSeqpacket = 5, kSockTypeMask = 0xf;
constexpr std::uint64_t kCloneNewUser = 0x10000000;
constexpr std::uint64_t kTiocsti = 0x5412, kTioclinux = 0x541C, kTiocsetd = 0x5423, kTiocexcl = 0x540C;
// FS_IOC_SETFLAGS (and its 32-bit number), FS_IOC_FSSETXATTR.
constexpr std::uint64_t kSetFlags = 0x40086602, kSetFlags32 = 0x40046602, kFsSetXattr = 0x401c5820;
constexpr std::uint64_t kSetUid = 04000, kSetGid = 02000, kOtherWrite = 02;

SeccompRule always(const char* name, int err, const char* why) {
  return {name, err, {}, why};
}

}  // namespace

std::vector<SeccompRule> seccomp_rules(const SeccompOptions& o) {
  std::vector<SeccompRule> r;
  using Op = ArgCheck::Op;
  // Sockets: the proxy is the only way out; AF_UNIX would reach host daemons (docker,
  // ssh-agent, dbus) through a read-only bind, since connect() needs no write access to a mount.
  // Stream and seqpacket AF_UNIX sockets work inside: wavebox performs their connect and bind
  // (bwrap/supervise/supervise.cpp) and refuses a host socket (docker, ssh-agent, D-Bus) outside the
  // writable set. A datagram socket can sendto() any path, unseen: refused.
  if (!o.allow_unix_sockets) {
    // Every type but stream (1) and seqpacket (5): SOCK_RAW is a datagram socket to AF_UNIX.
    for (std::uint64_t type = 0; type <= kSockTypeMask; ++type) {
      if (type == kSockStream || type == kSockSeqpacket) continue;
      r.push_back({"socket",
                   kEPERM,
                   {{0, Op::kEq, 0, kAfUnix}, {1, Op::kMaskedEq, kSockTypeMask, type}},
                   "a datagram socket can sendto() a host socket by path"});
    }
    r.push_back({"socketpair",
                 kEPERM,
                 {{0, Op::kEq, 0, kAfUnix}, {1, Op::kMaskedEq, kSockTypeMask, kSockDgram}},
                 "a datagram end can sendto() a host socket by path"});
  }
  for (std::uint64_t fam = 0; fam < kAfMax; ++fam) {
    if (fam == kAfUnix || fam == kAfInet || fam == kAfInet6 || fam == kAfNetlink) continue;
    r.push_back({"socket", kEAFNOSUPPORT, {{0, Op::kEq, 0, fam}}, "only INET, INET6, NETLINK (and UNIX if allowed)"});
  }
  // Families >= AF_MAX (in the low 32 bits) are refused by the kernel itself.
  // Kernel attack surface with a history of sandbox escapes.
  for (const char* s : {"io_uring_setup", "io_uring_enter", "io_uring_register"}) {
    r.push_back(always(s, kENOSYS, "io_uring bypasses seccomp for its operations"));
  }
  for (const char* s : {"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd"}) {
    r.push_back(always(s, kEPERM, "reading or steering other processes"));
  }
  // User namespaces would give the command capabilities again (CVE-2022-0185 and many more);
  // bwrap --disable-userns also stops them, this is the second lock.
  r.push_back({"clone", kEPERM, {{0, Op::kMaskedEq, kCloneNewUser, kCloneNewUser, false}}, "new user namespace"});
  r.push_back({"unshare", kEPERM, {{0, Op::kMaskedEq, kCloneNewUser, kCloneNewUser, false}}, "new user namespace"});
  r.push_back(always("clone3", kENOSYS, "its flags sit in memory seccomp cannot read; libc falls back to clone"));
  // openat2's flags sit in memory too: the supervisor would check one open and the kernel,
  // reading them again, perform another (O_CREAT of a protected name). Callers fall back to
  // openat. fchmodat2 (flags) likewise falls back to fchmodat, which the supervisor sees.
  r.push_back(
      always("openat2", kENOSYS, "its flags sit in memory the kernel reads again; callers fall back to openat"));
  r.push_back(always("fchmodat2", kENOSYS, "callers fall back to fchmodat"));
  // A set-user-ID or set-group-ID file left in the workspace runs as its owner (root, for a root
  // caller) for anyone on the host who executes it later.
  // (chmod and fchmodat are answered by the supervisor.)
  for (std::uint64_t bit : {kSetUid, kSetGid}) {
    r.push_back({"fchmod", kEPERM, {{1, Op::kMaskedEq, bit, bit}}, "set-user-ID and set-group-ID modes"});
  }
  // Extended attributes: a POSIX ACL (system.posix_acl_access) grants another local user write
  // access as a mode would, and the attribute's name sits in memory, beyond a filter. Tools treat
  // EOPNOTSUPP as a file system without them.
  for (const char* x : {"setxattr", "lsetxattr", "fsetxattr", "setxattrat"}) {
    r.push_back(always(x, kEOPNOTSUPP, "a POSIX ACL would grant other users write access"));
  }
  // Calls newer than this filter (setxattrat, open_tree_attr, file_setattr, ... from Linux
  // 6.13 on): refused by number, whatever libseccomp knows, so none of them bypasses a rule or
  // the supervisor; programs fall back as on an older kernel.
  r.push_back(always("@463-599", kENOSYS, "calls newer than this filter fail closed"));
  // World-writable, sticky or not: another local user could rewrite or add to what the user runs.
  r.push_back({"fchmod", kEPERM, {{1, Op::kMaskedEq, kOtherWrite, kOtherWrite}}, "world-writable modes"});
  for (const char* s : {"mount", "umount2", "pivot_root", "chroot", "setns"}) {
    r.push_back(always(s, kEPERM, "mount table and namespaces are fixed by the sandbox"));
  }
  for (const char* s : {"open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"}) {
    r.push_back(always(s, kENOSYS, "the new mount API"));
  }
  // CVE-2017-5226 (TIOCSTI) and TIOCLINUX: pushing input into the caller's terminal.
  r.push_back({"ioctl", kEPERM, {{1, Op::kEq, 0, kTiocsti}}, "TIOCSTI injects terminal input"});
  r.push_back({"ioctl", kEPERM, {{1, Op::kEq, 0, kTioclinux}}, "TIOCLINUX can inject terminal input"});
  // A terminal the caller handed over outlives the run: its line discipline (N_NULL leaves it
  // dead) and exclusive mode (every later open of it refused) are not the command's to change.
  r.push_back({"ioctl", kEPERM, {{1, Op::kEq, 0, kTiocsetd}}, "TIOCSETD changes the terminal's line discipline"});
  r.push_back({"ioctl", kEPERM, {{1, Op::kEq, 0, kTiocexcl}}, "TIOCEXCL locks the terminal against later opens"});
  // A directory made case-folding (chattr +F) finds ".GIT/CONFIG" where ".git/config" is
  // protected, and names its new entries as made: the guards and serve's witness compare names.
  for (std::uint64_t op : {kSetFlags, kSetFlags32, kFsSetXattr}) {
    r.push_back({"ioctl", kEPERM, {{1, Op::kEq, 0, op}}, "file flags (case folding) are not the command's to set"});
  }
  for (const char* s : {"keyctl", "add_key", "request_key"}) {
    r.push_back(always(s, kEPERM, "the kernel keyring is not namespaced"));
  }
  for (const char* s : {"bpf", "perf_event_open", "userfaultfd"}) {
    r.push_back(always(s, kEPERM, "kernel attack surface (eBPF, perf, userfaultfd races)"));
  }
  // The privileged calls Docker's default profile refuses.
  for (const char* s : {"acct",
                        "kexec_load",
                        "kexec_file_load",
                        "init_module",
                        "finit_module",
                        "delete_module",
                        "reboot",
                        "swapon",
                        "swapoff",
                        "settimeofday",
                        "clock_settime",
                        "clock_adjtime",
                        "adjtimex",
                        "quotactl",
                        "lookup_dcookie",
                        "vhangup",
                        "syslog",
                        "iopl",
                        "ioperm",
                        "open_by_handle_at",
                        "name_to_handle_at",
                        "uselib",
                        "ustat",
                        "sysfs",
                        "_sysctl",
                        "nfsservctl",
                        "get_kernel_syms",
                        "query_module",
                        "create_module",
                        "pciconfig_read",
                        "pciconfig_write",
                        "pciconfig_iobase",
                        "afs_syscall",
                        "tuxcall",
                        "security",
                        "vm86",
                        "vm86old",
                        "kcmp",
                        "fanotify_init"}) {
    r.push_back(always(s, kEPERM, "privileged; refused by Docker's default profile too"));
  }
  return r;
}

std::string describe_rules(const std::vector<SeccompRule>& rules) {
  std::string out;
  for (const auto& r : rules) {
    std::string cond;
    for (const auto& a : r.args) {
      std::string lhs = a.low32 ? fmt::format("(u32)arg{}", a.arg) : fmt::format("arg{}", a.arg);
      switch (a.op) {
        case ArgCheck::Op::kEq:
          cond += fmt::format(" {}=={:#x}", lhs, a.value);
          break;
        case ArgCheck::Op::kMaskedEq:
          cond += fmt::format(" ({}&{:#x})=={:#x}", lhs, a.mask, a.value);
          break;
      }
    }
    out += fmt::format("{}{} -> errno {}  # {}\n", r.syscall, cond, r.errno_value, r.why);
  }
  return out;
}

}  // namespace wb::lnx
