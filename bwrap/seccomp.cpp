#include "bwrap/seccomp.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/filter.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "core/sys/fs.hpp"

namespace wb::lnx {
namespace {

struct CtxDeleter {
  void operator()(void* c) const { seccomp_release(static_cast<scmp_filter_ctx>(c)); }
};

Error fail(const std::string& what, int rc) {
  return make_error(ErrorKind::kSandboxFailed,
                    fmt::format("seccomp filter: {} failed: {}", what, std::strerror(rc < 0 ? -rc : rc)));
}

// One libseccomp rule: the call (by name), its action, its argument comparisons.
struct Entry {
  std::string syscall;
  std::uint32_t action;
  std::vector<scmp_arg_cmp> cmps;
};

// Everything the program is made of: what it does with a foreign architecture, and its rules.
struct Recipe {
  const char* name;  // "filter" or "observer"
  bool kill_foreign_arch;
  std::vector<Entry> entries;
};

scmp_arg_cmp to_cmp(const ArgCheck& a) {
  // libseccomp's SCMP_CMP32 only narrows the datum; the masking of the argument is ours.
  std::uint64_t mask = a.op == ArgCheck::Op::kMaskedEq ? a.mask : ~std::uint64_t{0};
  if (a.low32) mask &= 0xffffffffULL;
  return SCMP_CMP64(a.arg, SCMP_CMP_MASKED_EQ, mask, a.value & mask);
}

// The cache key: the whole recipe, the libseccomp that compiles it and the machine it is for. A
// change to any rule, action or comparison is a different program, so a different file.
std::string recipe_key(const Recipe& r) {
  const scmp_version* v = seccomp_version();
  struct utsname u {};
  ::uname(&u);
  std::string text = fmt::format("wavebox-bpf 1 {} {} {}.{}.{} {}\n", r.name, r.kill_foreign_arch, v ? v->major : 0,
                                 v ? v->minor : 0, v ? v->micro : 0, u.machine);
  for (const auto& e : r.entries) {
    text += fmt::format("{} {:x}", e.syscall, e.action);
    for (const auto& c : e.cmps) text += fmt::format(" {}:{}:{:x}:{:x}", c.arg, static_cast<int>(c.op), c.datum_a, c.datum_b);
    text += '\n';
  }
  // FNV-1a, 64 bits: names a file, guards nothing (the directory is the user's own, 0700).
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char ch : text) h = (h ^ ch) * 1099511628211ULL;
  return fmt::format("{}-{:016x}", r.name, h);
}

bool write_all_at_start(int fd, const std::string& data) {
  if (::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) != 0) return false;
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return ::lseek(fd, 0, SEEK_SET) == 0;
}

// A cached program is taken only when it is the size a BPF program can be.
bool plausible_program(const std::string& bytes) {
  return !bytes.empty() && bytes.size() % sizeof(sock_filter) == 0 && bytes.size() / sizeof(sock_filter) <= BPF_MAXINSNS;
}

Status compile(const Recipe& recipe, int fd, const std::string& cache_dir) {
  std::string cache_file = cache_dir.empty() ? "" : cache_dir + "/" + recipe_key(recipe);
  if (!cache_file.empty()) {
    if (auto cached = sys::read_file(cache_file); cached.ok() && plausible_program(*cached)) {
      if (write_all_at_start(fd, *cached)) return ok_status();
      return fail("writing the program", errno);
    }
  }
  std::unique_ptr<void, CtxDeleter> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return fail("seccomp_init", ENOMEM);
  auto* c = static_cast<scmp_filter_ctx>(ctx.get());
  if (recipe.kill_foreign_arch) {
    int rc = seccomp_attr_set(c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (rc != 0) return fail("setting the bad-architecture action", rc);
  }
  // A binary tree over syscall numbers: every call of the command walks this filter, so a
  // logarithmic dispatch instead of a linear list matters on syscall-heavy work.
  (void)seccomp_attr_set(c, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  for (const auto& e : recipe.entries) {
    int nr = seccomp_syscall_resolve_name(e.syscall.c_str());
    // A call this architecture does not have (vm86 on x86_64): nothing to match.
    if (nr == __NR_SCMP_ERROR) continue;
    int rc = seccomp_rule_add_array(c, e.action, nr, static_cast<unsigned>(e.cmps.size()),
                                    e.cmps.empty() ? nullptr : e.cmps.data());
    if (rc != 0) return fail(fmt::format("adding the {} rule for {}", recipe.name, e.syscall), rc);
  }
  if (::ftruncate(fd, 0) != 0) return fail("ftruncate", errno);
  ::lseek(fd, 0, SEEK_SET);
  int rc = seccomp_export_bpf(c, fd);
  if (rc != 0) return fail(fmt::format("exporting the {} program", recipe.name), rc);
  ::lseek(fd, 0, SEEK_SET);
  if (!cache_file.empty()) {
    // Best effort: a run that cannot keep the program compiles it again next time.
    std::string bytes;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) bytes.append(buf, static_cast<size_t>(n));
    ::lseek(fd, 0, SEEK_SET);
    if (plausible_program(bytes)) (void)sys::write_file_atomic(cache_file, bytes);
  }
  return ok_status();
}

void add_refusals(Recipe& recipe, const std::vector<SeccompRule>& rules) {
  for (const auto& r : rules) {
    Entry e{r.syscall, SCMP_ACT_ERRNO(static_cast<std::uint16_t>(r.errno_value)), {}};
    for (const auto& a : r.args) e.cmps.push_back(to_cmp(a));
    recipe.entries.push_back(std::move(e));
  }
}

void add_observed(Recipe& recipe) {
  auto add = [&](const char* name, std::vector<scmp_arg_cmp> cmps) {
    recipe.entries.push_back({name, SCMP_ACT_NOTIFY, std::move(cmps)});
  };
  // open/openat: only with write intent; each flag is its own rule (rules OR together).
  for (unsigned flag : {unsigned(O_WRONLY), unsigned(O_RDWR), unsigned(O_CREAT), unsigned(O_TRUNC)}) {
    add("open", {SCMP_CMP64(1, SCMP_CMP_MASKED_EQ, flag, flag)});
    add("openat", {SCMP_CMP64(2, SCMP_CMP_MASKED_EQ, flag, flag)});
  }
  for (const char* s : {"openat2", "creat", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename",
                        "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat", "chmod", "fchmodat",
                        "chown", "lchown", "fchownat", "truncate", "mknod", "mknodat", "connect",
                        "chdir", "fchdir"}) {
    add(s, {});
  }
  // utimensat with a NULL path is futimens(2) on a descriptor (tar does it for every file it
  // writes): no path to report, so it does not trap.
  add("utimensat", {SCMP_CMP64(1, SCMP_CMP_NE, 0)});
}

}  // namespace

Status compile_seccomp(const std::vector<SeccompRule>& rules, int fd, const std::string& cache_dir) {
  Recipe recipe{"filter", true, {}};
  add_refusals(recipe, rules);
  return compile(recipe, fd, cache_dir);
}

Status compile_observer(int fd, const std::string& cache_dir) {
  Recipe recipe{"observer", false, {}};
  add_observed(recipe);
  return compile(recipe, fd, cache_dir);
}

Status compile_sandbox_filter(const std::vector<SeccompRule>& rules, int fd, const std::string& cache_dir) {
  // The two lists name different calls (a golden test keeps the refusals; none is observed), so
  // each call has one action: refused, reported, or allowed.
  Recipe recipe{"sandbox", true, {}};
  add_refusals(recipe, rules);
  add_observed(recipe);
  return compile(recipe, fd, cache_dir);
}

}  // namespace wb::lnx
