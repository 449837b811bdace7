#include "bwrap/seccomp.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace wb::lnx {
namespace {

struct CtxDeleter {
  void operator()(void* c) const { seccomp_release(static_cast<scmp_filter_ctx>(c)); }
};

Error fail(const std::string& what, int rc) {
  return make_error(ErrorKind::kSandboxFailed,
                    fmt::format("seccomp filter: {} failed: {}", what, std::strerror(rc < 0 ? -rc : rc)));
}

scmp_arg_cmp to_cmp(const ArgCheck& a) {
  // libseccomp's SCMP_CMP32 only narrows the datum; the masking of the argument is ours.
  std::uint64_t mask = a.op == ArgCheck::Op::kMaskedEq ? a.mask : ~std::uint64_t{0};
  if (a.low32) mask &= 0xffffffffULL;
  return SCMP_CMP64(a.arg, SCMP_CMP_MASKED_EQ, mask, a.value & mask);
}

}  // namespace

Status compile_seccomp(const std::vector<SeccompRule>& rules, int fd) {
  std::unique_ptr<void, CtxDeleter> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return fail("seccomp_init", ENOMEM);
  auto* c = static_cast<scmp_filter_ctx>(ctx.get());
  int rc = seccomp_attr_set(c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc != 0) return fail("setting the bad-architecture action", rc);
  // A binary tree over syscall numbers: every call of the command walks this filter, so a
  // logarithmic dispatch instead of a linear list matters on syscall-heavy work.
  (void)seccomp_attr_set(c, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  for (const auto& r : rules) {
    int nr = seccomp_syscall_resolve_name(r.syscall.c_str());
    if (nr == __NR_SCMP_ERROR) {
      // A call this architecture does not have (vm86 on x86_64): nothing to refuse.
      continue;
    }
    std::vector<scmp_arg_cmp> cmps;
    for (const auto& a : r.args) cmps.push_back(to_cmp(a));
    rc = seccomp_rule_add_array(c, SCMP_ACT_ERRNO(static_cast<std::uint16_t>(r.errno_value)), nr,
                                static_cast<unsigned>(cmps.size()), cmps.empty() ? nullptr : cmps.data());
    if (rc != 0) return fail("adding the rule for " + r.syscall, rc);
  }
  if (::ftruncate(fd, 0) != 0) return fail("ftruncate", errno);
  ::lseek(fd, 0, SEEK_SET);
  rc = seccomp_export_bpf(c, fd);
  if (rc != 0) return fail("exporting the BPF program", rc);
  ::lseek(fd, 0, SEEK_SET);
  return ok_status();
}

Status compile_observer(int fd) {
  std::unique_ptr<void, CtxDeleter> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return fail("seccomp_init", ENOMEM);
  auto* c = static_cast<scmp_filter_ctx>(ctx.get());
  (void)seccomp_attr_set(c, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  auto add = [&](const char* name, std::vector<scmp_arg_cmp> cmps) -> Status {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return ok_status();
    int rc = seccomp_rule_add_array(c, SCMP_ACT_NOTIFY, nr, static_cast<unsigned>(cmps.size()),
                                    cmps.empty() ? nullptr : cmps.data());
    if (rc != 0) return fail(std::string("observer rule for ") + name, rc);
    return ok_status();
  };
  // open/openat: only with write intent; each flag is its own rule (rules OR together).
  for (unsigned flag : {unsigned(O_WRONLY), unsigned(O_RDWR), unsigned(O_CREAT), unsigned(O_TRUNC)}) {
    WB_TRY(add("open", {SCMP_CMP64(1, SCMP_CMP_MASKED_EQ, flag, flag)}));
    WB_TRY(add("openat", {SCMP_CMP64(2, SCMP_CMP_MASKED_EQ, flag, flag)}));
  }
  for (const char* s : {"openat2", "creat", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename",
                        "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat", "chmod", "fchmodat",
                        "chown", "lchown", "fchownat", "truncate", "mknod", "mknodat", "connect",
                        "chdir", "fchdir"}) {
    WB_TRY(add(s, {}));
  }
  // utimensat with a NULL path is futimens(2) on a descriptor (tar does it for every file it
  // writes): no path to report, so it does not trap.
  WB_TRY(add("utimensat", {SCMP_CMP64(1, SCMP_CMP_NE, 0)}));
  if (::ftruncate(fd, 0) != 0) return fail("ftruncate", errno);
  ::lseek(fd, 0, SEEK_SET);
  int rc = seccomp_export_bpf(c, fd);
  if (rc != 0) return fail("exporting the observer program", rc);
  ::lseek(fd, 0, SEEK_SET);
  return ok_status();
}

}  // namespace wb::lnx
