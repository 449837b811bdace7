#include "bwrap/launch/seccomp.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>

#include "core/hash.hpp"
#include "core/sys/fs.hpp"

namespace wb::lnx {
namespace {

Error fail(const std::string& what, int rc) {
  return make_error(ErrorKind::kSandboxFailed,
                    fmt::format("seccomp filter: {} failed: {}", what, std::strerror(rc < 0 ? -rc : rc)));
}

// libseccomp, loaded when a program must be compiled (most runs find it in the cache, and then
// do not pay for loading the library at every start: about 0.1 ms here).
struct Libseccomp {
  decltype(&seccomp_init) init;
  decltype(&seccomp_release) release;
  decltype(&seccomp_attr_set) attr_set;
  decltype(&seccomp_syscall_resolve_name) resolve_name;
  decltype(&seccomp_rule_add_array) rule_add_array;
  decltype(&seccomp_export_bpf) export_bpf;
  decltype(&seccomp_version) version;
  decltype(&seccomp_arch_native) arch_native;
  std::string path;  // the file loaded, for the cache's check
};

Result<const Libseccomp*> libseccomp() {
  static Libseccomp lib;
  static std::string error;
  static std::once_flag tried;
  // Once, whichever thread comes first (two serve sessions compiling their first filter at once
  // must not both load it, nor one read it half set up).
  std::call_once(tried, [] {
    // By absolute path: a bare name is looked up along LD_LIBRARY_PATH first, where an empty
    // element means the current directory (the workspace, which the sandbox writes).
    void* h = nullptr;
    for (const char* dir : {"/usr/lib/" WB_MULTIARCH, "/lib/" WB_MULTIARCH, "/usr/lib64", "/lib64", "/usr/lib", "/lib",
                            "/usr/local/lib"}) {
      std::string cand = std::string(dir) + "/libseccomp.so.2";
      struct stat st;
      if (::stat(cand.c_str(), &st) != 0 || st.st_uid != 0 || (st.st_mode & 022) != 0) continue;
      if ((h = ::dlopen(cand.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    }
    if (!h) {
      error = "libseccomp.so.2 is not in a system library directory (apt-get install libseccomp2)";
    } else {
      auto get = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::decay_t<decltype(fn)>>(::dlsym(h, name));
      };
      get(lib.init, "seccomp_init");
      get(lib.release, "seccomp_release");
      get(lib.attr_set, "seccomp_attr_set");
      get(lib.resolve_name, "seccomp_syscall_resolve_name");
      get(lib.rule_add_array, "seccomp_rule_add_array");
      get(lib.export_bpf, "seccomp_export_bpf");
      get(lib.version, "seccomp_version");
      get(lib.arch_native, "seccomp_arch_native");
      Dl_info info{};
      if (lib.init && ::dladdr(reinterpret_cast<void*>(lib.init), &info) && info.dli_fname) lib.path = info.dli_fname;
      if (!lib.init || !lib.release || !lib.attr_set || !lib.resolve_name || !lib.rule_add_array || !lib.export_bpf ||
          !lib.version || !lib.arch_native) {
        error = "a libseccomp function is missing";
      }
    }
  });
  if (!error.empty()) {
    return make_error(ErrorKind::kSandboxFailed,
                      "seccomp filter: libseccomp.so.2 cannot be loaded (install libseccomp2): " + error);
  }
  return &lib;
}

// The cached program's first line names the libseccomp file that compiled it and its identity
// (device, inode, size, change time): another or an upgraded library means compiling again.
std::string library_identity(const std::string& path) {
  struct stat st;
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return "";
  return fmt::format("wavebox-bpf 2 {} {} {} {}.{:09} {}\n", st.st_dev, st.st_ino, st.st_size, st.st_ctim.tv_sec,
                     st.st_ctim.tv_nsec, path);
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

// Calls refused by number: [first, last] but the calls a rule names (except).
struct RangeRule {
  std::uint32_t first = 0, last = 0;
  std::uint32_t action = 0;
  std::vector<std::uint32_t> except;
};

scmp_arg_cmp to_cmp(const ArgCheck& a) {
  // libseccomp's SCMP_CMP32 only narrows the datum; the masking of the argument is ours.
  std::uint64_t mask = a.op == ArgCheck::Op::kMaskedEq ? a.mask : ~std::uint64_t{0};
  if (a.low32) mask &= 0xffffffffULL;
  return SCMP_CMP64(a.arg, SCMP_CMP_MASKED_EQ, mask, a.value & mask);
}

// The cache key: the whole recipe, the libseccomp that compiles it and the machine it is for. A
// change to any rule, action or comparison is a different program, so a different file. Hashed
// field by field (every run computes it; formatting the whole recipe as text cost ~50 µs).
std::string recipe_key(const Recipe& r) {
  struct utsname u {};
  ::uname(&u);
  std::uint64_t h = kFnv1aStart;
  auto mix = [&h](const void* p, size_t n) { h = fnv1a(p, n, h); };
  auto mix_str = [&](std::string_view s) {
    mix(s.data(), s.size());
    mix("", 1);  // a separator: "ab"+"c" differs from "a"+"bc"
  };
  // The library's own version is checked through its file (see library_identity).
  const unsigned version[] = {4, SCMP_VER_MAJOR, SCMP_VER_MINOR, SCMP_VER_MICRO};
  mix(version, sizeof version);
  mix_str(r.name);
  mix(&r.kill_foreign_arch, sizeof r.kill_foreign_arch);
  mix_str(u.machine);
  for (const auto& e : r.entries) {
    mix_str(e.syscall);
    mix(&e.action, sizeof e.action);
    const std::uint64_t n = e.cmps.size();
    mix(&n, sizeof n);
    for (const auto& c : e.cmps) {
      const std::uint64_t f[] = {c.arg, static_cast<std::uint64_t>(c.op), c.datum_a, c.datum_b};
      mix(f, sizeof f);
    }
  }
  return fmt::format("{}-{:016x}", r.name, h);
}

// A cached program is taken only when it is the size a BPF program can be.
bool plausible_program(const std::string& bytes) {
  return !bytes.empty() && bytes.size() % sizeof(sock_filter) == 0 &&
         bytes.size() / sizeof(sock_filter) <= BPF_MAXINSNS;
}

// Calls refused by number range, on the native architecture (a foreign one meets libseccomp's
// own check, next): [ld arch; jne -> program; ld nr; per range: jlt first, jgt last, jeq each
// call a rule names (-> the program), ret action]; then libseccomp's program, which begins with
// its own architecture check. Jumps are relative and forward, so the program is unchanged.
Result<std::string> range_prefix(const std::vector<RangeRule>& ranges, std::uint32_t arch) {
  std::vector<sock_filter> f;
  std::vector<size_t> to_program;  // instructions whose false branch goes to the program
  std::vector<size_t> true_to_program;
  f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  to_program.push_back(f.size());
  f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, 0));
  f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
  for (const auto& r : ranges) {
    std::vector<size_t> to_next;
    to_next.push_back(f.size());  // nr < first: false branch
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, r.first, 0, 0));
    const size_t gt = f.size();  // nr > last: true branch
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, r.last, 0, 0));
    for (std::uint32_t e : r.except) {
      true_to_program.push_back(f.size());
      f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, e, 0, 0));
    }
    f.push_back(BPF_STMT(BPF_RET | BPF_K, r.action));
    const size_t next = f.size();
    auto jump = [&](size_t from, size_t to) -> Status {
      if (to <= from || to - from - 1 > 255) return fail("the range prefix's jumps", E2BIG);
      return ok_status();
    };
    for (size_t i : to_next) {
      WB_TRY(jump(i, next));
      f[i].jf = static_cast<std::uint8_t>(next - i - 1);
    }
    WB_TRY(jump(gt, next));
    f[gt].jt = static_cast<std::uint8_t>(next - gt - 1);
  }
  const size_t program = f.size();
  for (size_t i : to_program) {
    if (program - i - 1 > 255) return fail("the range prefix's jumps", E2BIG);
    f[i].jf = static_cast<std::uint8_t>(program - i - 1);
  }
  for (size_t i : true_to_program) {
    if (program - i - 1 > 255) return fail("the range prefix's jumps", E2BIG);
    f[i].jt = static_cast<std::uint8_t>(program - i - 1);
  }
  return std::string(reinterpret_cast<const char*>(f.data()), f.size() * sizeof(sock_filter));
}

Status compile(const Recipe& recipe, int fd, const std::string& cache_dir) {
  std::string cache_file = cache_dir.empty() ? "" : cache_dir + "/" + recipe_key(recipe);
  if (!cache_file.empty()) {
    if (auto cached = sys::read_file(cache_file); cached.ok()) {
      size_t nl = cached->find('\n');
      if (nl != std::string::npos) {
        std::string first = cached->substr(0, nl + 1);
        std::string program = cached->substr(nl + 1);
        size_t path_at = first.rfind(' ');
        std::string path = path_at == std::string::npos ? "" : first.substr(path_at + 1, first.size() - path_at - 2);
        if (plausible_program(program) && !path.empty() && library_identity(path) == first) {
          return sys::replace_contents(fd, program, "the seccomp program");
        }
      }
    }
  }
  const Libseccomp* lib = WB_TRY(libseccomp());
  // One compilation at a time in this process: libseccomp's own tables are shared, and a cache
  // miss is rare (once per rule set and library).
  static std::mutex compiling;
  std::lock_guard<std::mutex> one(compiling);
  struct CtxDeleter {
    const Libseccomp* lib;
    void operator()(void* c) const { lib->release(static_cast<scmp_filter_ctx>(c)); }
  };
  std::unique_ptr<void, CtxDeleter> ctx(lib->init(SCMP_ACT_ALLOW), CtxDeleter{lib});
  if (!ctx) return fail("seccomp_init", ENOMEM);
  auto* c = static_cast<scmp_filter_ctx>(ctx.get());
  if (recipe.kill_foreign_arch) {
    int rc = lib->attr_set(c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (rc != 0) return fail("setting the bad-architecture action", rc);
  }
  // A binary tree over syscall numbers: every call of the command walks this filter, so a
  // logarithmic dispatch instead of a linear list matters on syscall-heavy work.
  (void)lib->attr_set(c, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  std::set<int> ruled;
  for (const auto& e : recipe.entries) {
    if (e.syscall.size() > 1 && e.syscall[0] == '@') continue;  // ranges last, below
    int nr = lib->resolve_name(e.syscall.c_str());
    // A call this architecture does not have (vm86 on x86_64), or one newer than this
    // libseccomp knows (setxattrat in 2.5): the range below refuses the latter by number.
    if (nr == __NR_SCMP_ERROR) continue;
    int rc = lib->rule_add_array(c, e.action, nr, static_cast<unsigned>(e.cmps.size()),
                                 e.cmps.empty() ? nullptr : e.cmps.data());
    if (rc != 0) return fail(fmt::format("adding the {} rule for {}", recipe.name, e.syscall), rc);
    ruled.insert(nr);
  }
  // "@FIRST-LAST": every call number in the range that no rule names (calls newer than this
  // filter: what they take is unknown to it, so they fail closed, ENOSYS, as on an older kernel).
  // Since Linux 5.1 new calls get one number on every architecture. A few instructions ahead of
  // libseccomp's program, not a rule per number: those were 170 of its 450 instructions, and the
  // kernel's cost of loading a program (checking, converting, compiling it) grows with its length.
  std::vector<RangeRule> ranges;
  for (const auto& e : recipe.entries) {
    if (e.syscall.size() < 2 || e.syscall[0] != '@') continue;
    RangeRule r;
    r.first = static_cast<std::uint32_t>(std::atoi(e.syscall.c_str() + 1));
    auto dash = e.syscall.find('-');
    r.last = dash == std::string::npos ? r.first : static_cast<std::uint32_t>(std::atoi(e.syscall.c_str() + dash + 1));
    r.action = e.action;
    for (int nr : ruled) {
      if (nr >= 0 && static_cast<std::uint32_t>(nr) >= r.first && static_cast<std::uint32_t>(nr) <= r.last) {
        r.except.push_back(static_cast<std::uint32_t>(nr));
      }
    }
    ranges.push_back(std::move(r));
  }
  // Exported into a memory file of our own, read back, and prefixed.
  sys::Fd out(::memfd_create("wavebox-bpf", MFD_CLOEXEC));
  if (!out.valid()) return fail("memfd_create", errno);
  int rc = lib->export_bpf(c, out.get());
  if (rc != 0) return fail(fmt::format("exporting the {} program", recipe.name), rc);
  std::string bytes;
  {
    char buf[4096];
    ssize_t n;
    ::lseek(out.get(), 0, SEEK_SET);
    while ((n = ::read(out.get(), buf, sizeof buf)) > 0) bytes.append(buf, static_cast<size_t>(n));
    if (n < 0) return fail("reading the exported program", errno);
  }
  if (!ranges.empty()) bytes = WB_TRY(range_prefix(ranges, lib->arch_native())) + bytes;
  if (!plausible_program(bytes)) return fail(fmt::format("the {} program's size", recipe.name), EINVAL);
  WB_TRY(sys::replace_contents(fd, bytes, "the seccomp program"));
  if (!cache_file.empty()) {
    // Best effort: a run that cannot keep the program compiles it again next time.
    std::string identity = library_identity(lib->path);
    if (!identity.empty()) (void)sys::write_file_atomic(cache_file, identity + bytes);
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
  for (const char* s : {"creat",    "mkdir",     "mkdirat", "rmdir",    "unlink",   "unlinkat",  "rename",
                        "renameat", "renameat2", "link",    "linkat",   "symlink",  "symlinkat", "chmod",
                        "fchmodat", "chown",     "lchown",  "fchownat", "truncate", "mknod",     "mknodat",
                        "connect",  "chdir",     "fchdir",  "umask",    "bind",     "ftruncate", "fallocate"}) {
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

Status compile_sandbox_filter(const std::vector<SeccompRule>& rules, int fd, const std::string& cache_dir,
                              bool descriptors) {
  // The two lists name different calls (a golden test keeps the refusals; none is observed), so
  // each call has one action: refused, reported, or allowed. (fchmod's refusals of set-ID and
  // world-writable modes take precedence over its notification: libseccomp's ERRNO outranks it.)
  Recipe recipe{descriptors ? "sandbox-descriptors" : "sandbox", true, {}};
  add_refusals(recipe, rules);
  add_observed(recipe);
  if (descriptors) {
    // Guards with no mount (late guards, denyWrite globs) hold through a descriptor too: a mode,
    // an owner or times changed on a file opened for reading. Only in runs that have them: tar
    // makes these calls for every file it writes.
    for (const char* s : {"fchmod", "fchown"}) recipe.entries.push_back({s, SCMP_ACT_NOTIFY, {}});
    recipe.entries.push_back({"utimensat", SCMP_ACT_NOTIFY, {SCMP_CMP64(1, SCMP_CMP_EQ, 0)}});
  }
  return compile(recipe, fd, cache_dir);
}

}  // namespace wb::lnx
