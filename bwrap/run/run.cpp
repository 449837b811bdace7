#include "bwrap/run/run.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/mount.h>
#include <malloc.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "bwrap/launch/exec.hpp"
#include "bwrap/launch/netns.hpp"
#include "bwrap/launch/seccomp.hpp"
#include "bwrap/launch/terminal.hpp"
#include "bwrap/plan/facts.hpp"
#include "bwrap/plan/late_scan.hpp"
#include "bwrap/plan/plan.hpp"
#include "bwrap/run/prepared.hpp"
#include "bwrap/supervise/observer.hpp"
#include "core/invocation.hpp"
#include "core/log.hpp"
#include "core/paths.hpp"
#include "core/protect.hpp"
#include "core/sys/fs.hpp"
#include "core/sys/fswitness.hpp"
#include "core/sys/guards.hpp"
#include "core/sys/scan.hpp"
#include "core/sys/stubs.hpp"

namespace wb::lnx {

double now_ms() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// Probes, scans and plans; with a registry, creates the stubs the plan asks for and plans again.
// late: a large tree may be planned from its scan cache and checked while the command starts.
Result<Prepared> prepare_run(const LinuxRun& run, sys::StubRegistry* stubs, bool late) {
  Prepared p;
  if (!run.policy.enabled) {
    p.policy = run.policy;
    p.plan.filesystem_open = true;  // --network-only: no mounts, no scan, no stubs
    return p;
  }
  std::vector<std::string> notes;
  const FsPolicy expanded = expand_globs(run.policy, notes);
  for (const auto& note : notes) run.log->warn(note);
  WB_TRY(guard_what_the_scan_found(run, expanded, p, late));
  p.policy = with_findings(expanded, p.findings);
  p.facts.bwrap_path = run.bwrap;
  std::copy(std::begin(run.bwrap_version), std::end(run.bwrap_version), p.facts.bwrap_version);
  p.facts.placeholder_file = run.state.placeholder;
  p.facts.replaced = sys::sandbox_copies(run.state, expanded.masked);
  p.facts.fuse = fuse_masks_available();
  std::map<std::string, PathKind> simulated;  // `wrap`: stubs it would create, as if they existed
  for (int round = 0; round < 4; ++round) {
    if (!stubs) p.facts.paths.clear();  // `wrap` simulates its stubs on fresh facts each round
    probe_policy_paths(p.policy, p.facts);
    if (stubs && round == 0) {
      // A path probed as existing may be the stub of a concurrent run in the same workspace:
      // joined, it stays until the last run holding it ends, and is planned as a stub (a stub
      // directory is guarded whole). Unjoined, its run could remove it before our mounts.
      auto guards_under = [&](const std::string& path) {
        auto under = [&](const GuardedPath& g) { return paths::is_within(g.path, path); };
        return std::any_of(p.policy.deny_write.begin(), p.policy.deny_write.end(), under) ||
               std::any_of(p.policy.deny_read.begin(), p.policy.deny_read.end(), under);
      };
      for (auto& joined : stubs->join_registered(guards_under)) p.facts.stubs.insert(std::move(joined));
    }
    for (auto& [path, fact] : p.facts.paths) {
      for (const auto& [stub, kind] : simulated) {
        if (fact.kind != PathKind::kMissing) break;
        if (path == stub) {
          fact.kind = kind;
          fact.real = path;
        } else if (paths::is_within(path, stub)) {
          fact.first_missing =
              paths::join(stub, path.substr(stub.size() + 1, path.find('/', stub.size() + 1) - stub.size() - 1));
        }
      }
    }
    p.plan = WB_TRY(plan_mounts(p.policy, p.facts));
    if (p.plan.stubs.empty()) {
      // The command would start in a directory it may not read: said now, clearly, not as the
      // shim's failure to enter it.
      const std::string real_cwd = sys::real_path_or_empty(run.cwd);
      if (read_masked(p.plan, real_cwd.empty() ? run.cwd : real_cwd)) {
        return make_error(ErrorKind::kSandboxFailed,
                          fmt::format("the working directory \"{}\" is unreadable in the sandbox (denyRead); run "
                                      "the command from another directory",
                                      log::quote(run.cwd)));
      }
      for (const auto& c : p.plan.create_guards) p.guard.add_path(c.path, c.why);
      for (const auto& z : p.policy.zones) p.guard.add_zone(z.dir, z.carve, z.why);
      for (const auto& g : p.repo_dirs) p.guard.add_repository(g);
      p.guard.set_roots(p.scan_roots);
      return p;
    }
    if (!stubs) {
      for (const auto& s : p.plan.stubs) {
        p.facts.stubs.insert(s.path);
        p.stub_list.push_back(s);
        simulated[s.path] = s.type == LeafType::kDir ? PathKind::kDir : PathKind::kFile;
      }
      continue;
    }
    std::vector<sys::StubRegistry::Request> batch;
    for (const auto& s : p.plan.stubs) {
      p.facts.stubs.insert(s.path);
      batch.push_back({s.path, s.type, s.content});
    }
    auto st = stubs->acquire(batch);
    if (!st) return make_error(ErrorKind::kSandboxFailed, "cannot place a guard: " + st.error().message);
    // Only what lies in a new stub changed: those paths are probed again, the rest stays. A
    // path through a link lies in it by its resolution ("link/x", link -> real, stub real/x).
    for (auto it = p.facts.paths.begin(); it != p.facts.paths.end();) {
      bool under = std::any_of(batch.begin(), batch.end(), [&](const sys::StubRegistry::Request& r) {
        return paths::is_within(it->first, r.path) || paths::is_within(it->second.real, r.path);
      });
      it = under ? p.facts.paths.erase(it) : std::next(it);
    }
  }
  return make_error(ErrorKind::kSandboxFailed, "internal: guards still missing after placing stubs");
}

static std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
                        std::string::npos) {
    return s;
  }
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Unreadable paths that did not exist at start and got no stub (the built-in credential list):
// if one appeared during the run, the command could have read it.
std::vector<std::string> missing_unstubbed(const FsPolicy& policy, const LinuxFacts& facts) {
  std::vector<std::string> out;
  for (const auto& g : policy.deny_read) {
    auto it = facts.paths.find(g.path);
    if (!g.stub_if_missing && it != facts.paths.end() && it->second.kind == PathKind::kMissing) {
      out.push_back(g.path);
    }
  }
  return out;
}

void warn_appeared(const Logger& log, const std::vector<std::string>& missing) {
  for (const auto& m : missing) {
    if (sys::exists(m)) {
      log.warn(
          fmt::format("\"{}\" was created during the run and was not masked (it did not exist at "
                      "start); add it to sandbox.filesystem.denyRead to guard it even before it exists",
                      log::quote(m)));
    }
  }
}

// Next to the binary (a build tree, bin/ of a simple install), else in ../libexec/wavebox/ (a
// packaged install).
std::string shim_path() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  // Next to wavebox-core only (in the build tree and in libexec/wavebox/ alike): never a search,
  // whose other candidates would be programs a sandbox could plant.
  const std::string shim = paths::join(paths::parent(std::string(buf, static_cast<size_t>(n))), "wavebox-shim");
  return ::access(shim.c_str(), X_OK) == 0 ? shim : std::string();
}

// stderr can be relayed (to recognise refused reads) without changing what the caller sees only
// when it is a pipe of its own: a terminal stays a terminal, and when stdout is the very same
// pipe (2>&1) relaying could reorder stderr against stdout.
bool stderr_relayable(const int stdio[3]) {
  struct stat err, out;
  if (stdio[2] < 0 || ::fstat(stdio[2], &err) != 0 || !(S_ISFIFO(err.st_mode) || S_ISSOCK(err.st_mode))) return false;
  return !(stdio[1] >= 0 && ::fstat(stdio[1], &out) == 0 && out.st_dev == err.st_dev && out.st_ino == err.st_ino);
}

// Paths in an error line ("cat: /home/u/.ssh/id_rsa: Permission denied") that lie under a read
// mask. Relative paths are taken against the command's directory.
void scan_for_denied_reads(const std::string& line, const Plan& plan, const std::string& cwd, ViolationLog& log,
                           const FuseMasks* exact) {
  static const std::string kStop = " \t:'\"`,;()[]{}<>|";
  size_t i = 0;
  while (i < line.size()) {
    size_t start = line.find_first_not_of(kStop, i);
    if (start == std::string::npos) break;
    size_t end = line.find_first_of(kStop, start);
    if (end == std::string::npos) end = line.size();
    std::string tok = line.substr(start, end - start);
    i = end;
    if (tok.find('/') == std::string::npos || tok.size() > 4096) continue;
    while (tok.size() > 1 && (tok.back() == '.' || tok.back() == '/')) tok.pop_back();
    std::string abs = tok[0] == '/' ? paths::normalize(tok) : paths::normalize(cwd + "/" + tok);
    if (read_masked(plan, abs) && !(exact && exact->covers(abs))) log.add({Refused::kFileRead, abs, ""});
  }
}

static std::vector<std::string> sandbox_environment(const std::vector<std::string>& base) {
  std::string http_url = fmt::format("http://127.0.0.1:{}", kHttpProxyPort);
  std::string socks_url = fmt::format("socks5h://127.0.0.1:{}", kSocksProxyPort);
  std::vector<std::string> env;
  for (const auto& kv : base) {
    std::string lname = kv.substr(0, kv.find('='));
    for (auto& ch : lname) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    // NO_PROXY could exempt hosts from the proxy (they would then fail): nothing is exempt.
    if (lname == "http_proxy" || lname == "https_proxy" || lname == "all_proxy" || lname == "no_proxy" ||
        lname == "ftp_proxy") {
      continue;
    }
    env.push_back(kv);
  }
  for (const char* n : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"})
    env.push_back(std::string(n) + "=" + http_url);
  for (const char* n : {"ALL_PROXY", "all_proxy"}) env.push_back(std::string(n) + "=" + socks_url);
  // Loopback inside is the sandbox's own: a server the command starts there is reached directly.
  for (const char* n : {"NO_PROXY", "no_proxy"}) env.push_back(std::string(n) + "=localhost,127.0.0.1,::1");
  env.push_back("WAVEBOX_SANDBOX=1");
  // git over ssh: ssh's ProxyCommand is wavebox itself, speaking SOCKS5 to the proxy.
  bool has_git_ssh = false;
  for (const auto& kv : env) has_git_ssh = has_git_ssh || kv.rfind("GIT_SSH_COMMAND=", 0) == 0;
  char self[4096];
  ssize_t self_len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (!has_git_ssh && self_len > 0) {
    env.push_back(fmt::format("GIT_SSH_COMMAND=ssh -o ProxyCommand='{} connect %h %p'",
                              std::string(self, static_cast<size_t>(self_len))));
  }
  return env;
}

// The shim's read-only mounts use the new mount API with mount_setattr (Linux 5.12). Asked of
// the kernel itself, not of its version: an older kernel answers ENOSYS, and a seccomp policy
// around wavebox (a container's) ENOSYS or EPERM for open_tree, which needs no privilege here
// (without OPEN_TREE_CLONE it is an O_PATH open of "/", closed at once); then bwrap places every
// mount as before. The shim runs under the same outer policy, so what works here works there.
// mount_setattr and move_mount need privileges wavebox does not have outside the sandbox (EPERM
// is their normal answer here): only ENOSYS counts for them.
// WAVEBOX_SHIM_MOUNTS=0 leaves every mount to bwrap (tests run both ways).
bool shim_mounts_available() {
  const char* env = std::getenv("WAVEBOX_SHIM_MOUNTS");
  if (env && std::string(env) == "0") return false;
  long fd = ::syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLOEXEC);
  if (fd < 0) return false;
  ::close(static_cast<int>(fd));
  struct mount_attr attr {};
  if (::syscall(SYS_mount_setattr, -1, "", AT_EMPTY_PATH, &attr, sizeof attr) != 0 && errno == ENOSYS) return false;
  if (::syscall(SYS_move_mount, -1, "", -1, "", MOVE_MOUNT_F_EMPTY_PATH) != 0 && errno == ENOSYS) return false;
  if (::syscall(SYS_fsopen, "", 0) < 0 && errno == ENOSYS) return false;
  if (::syscall(SYS_fsconfig, -1, 0, nullptr, nullptr, 0) != 0 && errno == ENOSYS) return false;
  if (::syscall(SYS_fsmount, -1, 0, 0) < 0 && errno == ENOSYS) return false;
  return true;
}

// Read masks served by FUSE (bwrap/supervise/fuse_masks.hpp) need /dev/fuse open to the caller: the shim
// opens it in the sandbox's user namespace, as the caller. WAVEBOX_FUSE=0 keeps the old masks
// (tests run both ways).
bool fuse_masks_available(std::string* why) {
  const char* env = std::getenv("WAVEBOX_FUSE");
  if (env && std::string(env) == "0") {
    if (why) *why = "WAVEBOX_FUSE=0";
    return false;
  }
  if (sys::FsReads* rec = sys::recording()) rec->path("/dev/fuse");
  if (::access("/dev/fuse", R_OK | W_OK) == 0) return true;
  if (why) *why = fmt::format("/dev/fuse cannot be opened for reading and writing ({})", std::strerror(errno));
  return false;
}

// The terminal bwrap would bind at /dev/console: the one on stdout, if it is one.
std::string console_device(int out) {
  char name[256];
  if (out < 0 || !::isatty(out) || ::ttyname_r(out, name, sizeof name) != 0) return "";
  return name;
}

// Whether the plan will stay out of /dev and /proc (so the shim can place all of it) can be told
// before it is made: its mounts lie on the policy's paths, below its writable roots and on the
// working directory. A glob counts by its text. A path that only resolves into /dev or /proc
// through a link is caught once planned (run_sandboxed starts again).
bool plan_stays_out_of_dev_and_proc(const FsPolicy& policy, const std::string& cwd) {
  auto out = [](const std::string& p) { return !paths::is_within(p, "/dev") && !paths::is_within(p, "/proc"); };
  return !policy.strict && out(cwd) &&
         std::all_of(policy.writable.begin(), policy.writable.end(), [&](const auto& w) { return out(w.path); }) &&
         std::all_of(policy.deny_write.begin(), policy.deny_write.end(), [&](const auto& g) { return out(g.path); }) &&
         std::all_of(policy.deny_read.begin(), policy.deny_read.end(), [&](const auto& g) { return out(g.path); }) &&
         std::all_of(policy.allow_read.begin(), policy.allow_read.end(), out);
}

Result<std::unique_ptr<Launch>> launch_sandbox(const std::string& bwrap, const int* stdio,
                                               const std::vector<std::string>& env, const Logger& log,
                                               const sys::RunCgroup* cgroup, const wb_net_config* net) {
  std::string shim = shim_path();
  if (shim.empty()) {
    return make_error(ErrorKind::kSandboxFailed,
                      "wavebox-shim is not installed next to the wavebox binary (it starts the sandbox); reinstall");
  }
  return start_launch(bwrap, shim, !stdio || stderr_relayable(stdio), env, log,
                      cgroup ? cgroup->join_fds() : std::vector<int>{}, net);
}

Result<std::shared_ptr<sys::RunCgroup>> run_cgroup(const sys::CgroupLimits& limits, const Logger& log) {
  if (!limits.any()) return std::shared_ptr<sys::RunCgroup>();
  auto made = sys::RunCgroup::create(limits);
  if (!made.ok() && limits.pids > 0 && ::geteuid() == 0) {
    return make_error(ErrorKind::kUnavailable,
                      "sandbox.resources.pids cannot hold for root without a cgroup of the run's own (RLIMIT_NPROC "
                      "does not bind root), and none can be made: " +
                          made.error().message);
  }
  if (!made.ok()) {
    if (limits.cpus > 0) {
      log.warn("sandbox.resources.cpus is not enforced here: no cgroup can be made (" + made.error().message + ")");
    }
    log.info("the limits are rlimits: " + made.error().message);
    return std::shared_ptr<sys::RunCgroup>();
  }
  std::string dirs;
  for (const auto& d : (*made)->dirs()) dirs += (dirs.empty() ? "" : ", ") + d;
  log.info(fmt::format("the limits are the kernel's: cgroup {} ({})", (*made)->v2() ? "v2" : "v1", dirs));
  return std::shared_ptr<sys::RunCgroup>(std::move(*made));
}

std::string rlimits_for(const LinuxRun& run, const sys::RunCgroup* cgroup) {
  const bool memory = cgroup && cgroup->limits().memory_mb > 0, pids = cgroup && cgroup->limits().pids > 0;
  return encode_limits(run.cpu_seconds, pids ? 0 : run.pids, memory ? 0 : run.memory_mb);
}

ExecRequest exec_request(const LinuxRun& run) {
  ExecRequest req;
  req.command = run.command;
  req.exe = run.exe;
  req.network_off = run.network_off;
  req.log = run.log;
  req.signals = run.signals;
  std::copy(std::begin(run.stdio), std::end(run.stdio), req.stdio);
  if (run.network_off) {
    // No proxy to name: the caller's proxy variables go too.
    for (const auto& kv : run.env) {
      std::string n = kv.substr(0, kv.find('='));
      for (auto& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (n != "http_proxy" && n != "https_proxy" && n != "all_proxy" && n != "no_proxy" && n != "ftp_proxy") {
        req.env.push_back(kv);
      }
    }
  } else {
    req.env = sandbox_environment(run.env);
  }
  // --clearenv came with bubblewrap 0.5 (an unknown version, 0.0, is taken as recent).
  req.bwrap_clearenv =
      run.bwrap_version[0] > 0 || run.bwrap_version[1] >= 5 || (run.bwrap_version[0] == 0 && run.bwrap_version[1] == 0);
  req.timeout_seconds = run.timeout_seconds;
  req.limits = rlimits_for(run, run.cgroup.get());
  req.leave_keeper = run.signals && run.signals->whole_process() && !run.cgroup;
  return req;
}

RunSpec spec_for(const LinuxRun& run, ShimMounts mode) {
  RunSpec spec{run.command, run.cwd, run.env, true, kSeccompFd, true};
  spec.shim_mounts = mode;
  return spec;
}

// What the run executes (and `wrap` prints): one function for both.
Invocation invocation_for(const LinuxRun& run, const Prepared& p, ShimMounts mode,
                          const std::vector<std::string>& env) {
  Invocation inv;
  inv.program = run.bwrap;
  inv.args = launch_args(shim_path());
  inv.options = render_args(p.plan, p.facts, spec_for(run, mode));
  inv.env = env;
  inv.command = run.command;
  inv.mounts = mode == ShimMounts::kAll ? render_shim_mounts(p.plan, p.facts, console_device(run.stdio[1]))
                                        : render_shim_devices_read_only();
  return inv;
}

ShimMounts mount_mode(const Prepared& p, bool mount_api) {
  return mount_api && shim_can_place(p.plan) ? ShimMounts::kAll : ShimMounts::kDevicesReadOnly;
}

// The plan made: the filter compiled into the launch, the mount list written, and bwrap's
// options returned. An error stops everything before the shim places a mount, so before the
// command can run.
Result<std::string> write_plan(const LinuxRun& run, const Prepared& p, Launch& launch, bool mount_api,
                               const std::vector<std::string>& env) {
  // wavebox-shim places every mount where the kernel lets it; else bwrap does, and the shim
  // only makes the device nodes bwrap bound writable read-only.
  const Invocation inv = invocation_for(run, p, mount_mode(p, mount_api), env);
  run.log->timing("planned");
  run.log->info("invocation " + invocation_id(inv) + " (`wavebox wrap` prints it)");
  // The filter is part of the sandbox: if it cannot be built, nothing runs (fail closed).
  const bool descriptors =
      p.late != nullptr || std::any_of(run.policy.deny_write.begin(), run.policy.deny_write.end(),
                                       [](const GuardedPath& g) { return paths::has_glob(g.path); });
  WB_TRY(compile_sandbox_filter(seccomp_rules({run.allow_unix_sockets}), launch.filter.get(), run.state.seccomp,
                                descriptors));
  WB_TRY(sys::replace_contents(launch.mounts.get(), inv.mounts, "the shim's mount list"));
  std::string options = bwrap_options(inv.options);
  // The scan cache and probes are done with: give their pages back for the length of the run.
  ::malloc_trim(0);
  run.log->timing("filters compiled, arguments written");
  return options;
}

void report_ends(Observer& observer, const sys::RunCgroup* cgroup, const std::function<void(const Violation&)>& sink) {
  observer.fuse().finish(sink);
  if (cgroup) {
    for (auto& v : cgroup->effects()) sink(v);
  }
}

// After the command: the plan's check finished, what the command left warned about.
void after_run(const LinuxRun& run, Prepared& p, const Observer& observer, const std::vector<std::string>& missing,
               double started_ms) {
  const Logger& log = *run.log;
  double t2 = now_ms();
  if (p.late) {
    // A check still at the known directories when the command ended gives up (it answered
    // nothing, so nothing depends on it; the next run checks again).
    const double f0 = now_ms();
    p.late->finish(true);
    log.info(
        fmt::format("the plan's check {} ({:.2f} ms waited)", p.late->found() ? "was done" : "gave up", now_ms() - f0));
    adopt_late_findings(p);
  }
  warn_new_repositories(log, p, run.state.scan, run.home, &observer);
  warn_appeared(log, missing);
  log.info(fmt::format(
      "sandbox ran {:.2f} ms ({} notifications, {:.1f} ms handling them, {} empty receives); "
      "cleanup {:.2f} ms",
      t2 - started_ms, observer.handled(), observer.busy_ns() / 1e6, observer.empty_receives(), now_ms() - t2));
}

// The run's write observer: the plan's writable set, its creation guard, the protections' reasons.
std::unique_ptr<Observer> make_observer(const LinuxRun& run, const Prepared& p,
                                        const std::function<void(const Violation&)>& sink) {
  const Plan& plan = p.plan;
  const CreationGuard& guard = p.guard;
  auto observer = std::make_unique<Observer>(
      [&plan](const std::string& path) { return write_allowed(plan, path); }, sink,
      [&guard](const std::string& path, bool in_new_dir, bool tree) { return guard.refuses(path, in_new_dir, tree); },
      [&guard](const std::string& path) { return guard.moving_refused(path); });
  observer->set_host_proc(run.policy.host_proc);
  // (p's policy is the one planned: p is filled in once the plan is made, before the command.)
  observer->set_explainer([&p](const std::string& path) { return protection_reason(p.policy.deny_write, path); });
  observer->set_unix_sockets_open(run.allow_unix_sockets);
  observer->set_allowed_unix_sockets(run.unix_socket_paths);
  observer->set_logger(run.log);
  // denyWrite globs hold for what comes to match them during the run (the plan bound what
  // matched when it was made).
  std::vector<std::string> globs;
  for (const auto& g : run.policy.deny_write) {
    if (paths::has_glob(g.path)) globs.push_back(g.path);
  }
  if (!globs.empty()) observer->add_write_patterns(globs);
  return observer;
}

void Refusals::listen(std::function<void(const Violation&)> on_refusal) {
  std::lock_guard<std::mutex> lock(mu_);
  on_refusal_ = std::move(on_refusal);
}

void Refusals::add(const Violation& v) {
  std::lock_guard<std::mutex> lock(mu_);
  if (log_.add(v) && on_refusal_) on_refusal_(v);
}

void Refusals::into(RunOutcome& outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  outcome.violations = log_.items();
  outcome.more = log_.dropped();
}

void wire_reports(ExecRequest& req, const LinuxRun& run, const Prepared& p, Observer& observer, Refusals& refusals,
                  bool relayed_stderr) {
  if (relayed_stderr) {
    // The command's stderr, relayed: each line is looked at for a refused read under a mask.
    req.stderr_line = [&plan = p.plan, cwd = run.cwd, &observer, &refusals](const std::string& line) {
      ViolationLog found;
      scan_for_denied_reads(line, plan, cwd, found, &observer.fuse());
      for (const auto& v : found.items()) refusals.add(v);
    };
  }
  req.on_listeners = [&run, &refusals](sys::NetListeners listeners) -> Status {
    if (!run.start_network) return make_error(ErrorKind::kSandboxFailed, "internal: no network side");
    return run.start_network(std::move(listeners), refusals.sink());
  };
}

void wire_late_scan(ExecRequest& req, const LinuxRun& run, Prepared& p) {
  if (!p.late) return;
  req.late_fd = p.late->done_fd();
  req.late_ready = [&run, &p](Observer& o) { apply_late(run, p, o); };
  req.late_start = [&p] { p.late->start(); };
}

Status finish_command(const LinuxRun& run, Prepared& p, Observer& observer, const std::vector<std::string>& missing,
                      double started_ms, const sys::RunCgroup* cgroup, Result<int> result, Refusals& refusals,
                      RunOutcome& outcome) {
  if (run.stop_network) run.stop_network();
  after_run(run, p, observer, missing, started_ms);
  if (!result.ok()) return result.error();
  outcome.exit_code = *result;
  report_ends(observer, cgroup, refusals.sink());
  refusals.into(outcome);
  return ok_status();
}

std::string options_before_the_plan(const LinuxRun& run) {
  LinuxFacts known;
  std::copy(std::begin(run.bwrap_version), std::end(run.bwrap_version), known.bwrap_version);
  return bwrap_options(render_args(Plan{}, known, spec_for(run, ShimMounts::kAll)));
}

// A one-command wavebox after its run: the keeper, killed when the shim said the sandbox is
// empty, has died meanwhile and is reaped now (no zombie of the run outlives wavebox: `pgrep`
// right after sees none). The process ends right after (no cgroup to remove): the descriptors,
// the plan and the observer's state go with its exit, not one by one here first (~0.2 ms). The
// observer has no thread left (its loop stopped it), and nothing calls into either again.
void leave_to_exit(std::unique_ptr<Launch>& launch, std::unique_ptr<Prepared>& p, std::unique_ptr<Observer>& o) {
  if (launch->child.pid > 0) {
    while (::waitpid(launch->child.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  (void)launch.release();
  (void)p.release();
  (void)o.release();
}

Result<RunOutcome> run_sandboxed(LinuxRun run) {
  const Logger& log = *run.log;
  if (run.standby) {
    // Made ahead (serve): used when it is what this run would make now, else a fresh sandbox.
    auto standby = std::move(run.standby);
    auto in_standby = WB_TRY(run_in_standby(run, std::move(standby)));
    if (in_standby) return std::move(*in_standby);
  }
  RunOutcome outcome;
  // A terminal of its own for an interactive command: its slave is the command's stdio.
  std::unique_ptr<Terminal> terminal =
      run.own_terminal ? Terminal::open_for(run.stdio[0], run.stdio[1], run.stdio[2]) : nullptr;
  if (terminal) {
    if (terminal->in_too()) run.stdio[0] = terminal->slave();
    if (terminal->out_too()) run.stdio[1] = terminal->slave();
    if (terminal->err_too()) run.stdio[2] = terminal->slave();
  }
  // Else a terminal among the command's descriptors is the caller's: its modes are put back.
  std::optional<TerminalModes> modes;
  if (!terminal) modes.emplace(run.stdio);
  std::unique_ptr<Launch> launch = std::move(run.launch);
  if (!launch) {
    if (!run.cgroup) run.cgroup = WB_TRY(run_cgroup({run.memory_mb, run.pids, run.cpus}, log));
    launch = WB_TRY(launch_sandbox(run.bwrap, run.stdio, run.launch_env, log, run.cgroup.get(), &run.net));
  }
  ExecRequest req = exec_request(run);
  req.timed_out = &outcome.timed_out;
  req.terminal = terminal.get();
  const bool mount_api = shim_mounts_available();

  Refusals refusals;
  refusals.listen(run.on_refusal);
  // On the heap: a one-command process leaves them to its exit (below).
  auto p_held = std::make_unique<Prepared>();
  Prepared& p = *p_held;
  auto observer_held = make_observer(run, p, refusals.sink());
  Observer& observer = *observer_held;
  req.observer = &observer;
  outcome.observed_writes = true;
  outcome.relayed_stderr = launch->relay_command_stderr;
  wire_reports(req, run, p, observer, refusals, outcome.relayed_stderr);
  sys::StubRegistry stubs(run.state.stubs, run.state.pool);
  req.on_sandbox_ended = [&] {
    stubs.release_all();
    log.timing("stubs released");
  };

  // Planning runs while the keeper builds the namespaces on the other core, and, where the shim
  // will place every mount, while bwrap sets up its own: its options do not depend on the plan.
  double t0 = now_ms();
  const bool early = mount_api && plan_stays_out_of_dev_and_proc(run.policy, run.cwd);
  const std::string early_options = early ? options_before_the_plan(run) : "";
  WB_TRY(begin_launch(*launch, req, early_options));
  stubs.sweep();
  p = WB_TRY(prepare_run(run, &stubs, true));
  wire_late_scan(req, run, p);
  double t1 = now_ms();
  std::vector<std::string> missing = missing_unstubbed(p.policy, p.facts);
  for (const auto& w : p.plan.warnings) log.warn(w);
  const bool shim_places = mount_api && shim_can_place(p.plan);
  log.info(fmt::format("prepared in {:.2f} ms: {} mounts (placed by {}{}), {} stubs", t1 - t0, p.plan.mounts.size(),
                       shim_places ? "the shim" : "bwrap", early ? "; bwrap started before the plan" : "",
                       stubs.held()));
  std::string options = WB_TRY(write_plan(run, p, *launch, mount_api, req.env));
  if (mount_mode(p, mount_api) == ShimMounts::kAll) observer.set_fuse_masks(fuse_masks(p.plan, p.facts));
  log.timing("starting");
  Result<int> result = 0;
  if (early && options != early_options) {
    // bwrap has its options already, and the plan reaches into /dev or /proc after all (a path
    // that resolves there): this launch is dropped and another made, for bwrap to place mounts.
    log.info("the plan needs bwrap to place the mounts: starting the sandbox again");
    launch = WB_TRY(launch_sandbox(run.bwrap, run.stdio, run.launch_env, log, run.cgroup.get(), &run.net));
    WB_TRY(begin_launch(*launch, req, ""));
    options = WB_TRY(write_plan(run, p, *launch, mount_api, req.env));
  } else if (early) {
    options.clear();  // sent already
  }
  result = exec_bwrap(*launch, req, options);
  log.timing("sandbox exited");
  stubs.release_all();
  WB_TRY(finish_command(run, p, observer, missing, t1, run.cgroup.get(), result, refusals, outcome));
  if (req.leave_keeper) leave_to_exit(launch, p_held, observer_held);
  return outcome;
}

Result<std::string> describe_sandboxed(LinuxRun run) {
  Prepared p = WB_TRY(prepare_run(run, nullptr, false));
  std::string out;
  for (const auto& s : p.stub_list) {
    out += fmt::format("# stub ({}) created for the run: {}\n", s.type == LeafType::kDir ? "directory" : "file",
                       shell_quote(s.path));
  }
  out += "# wavebox's supervisor also refuses to create protected names (core/protect.hpp) and:\n";
  for (const auto& d : p.guard.describe()) out += "#   " + d + "\n";
  const Invocation inv = invocation_for(run, p, mount_mode(p, shim_mounts_available()), exec_request(run).env);
  out += "# invocation " + invocation_id(inv) + ": what `wavebox run` executes (it logs the same id with -v)\n";
  out += shell_quote(inv.program);
  for (const auto& a : inv.args) out += " " + shell_quote(a);
  out += "\n# fd 3, bwrap's options (--args):";
  for (const auto& a : inv.options) out += " " + shell_quote(a);
  out += "\n# fd 5: the seccomp filter (`wavebox doctor -v` lists its rules)\n# fd 6, the command:";
  for (const auto& a : inv.command) out += " " + shell_quote(a);
  out += "\n# fd 8, the mounts wavebox-shim places:";
  std::string field;
  for (char c : inv.mounts) {
    if (c) {
      field += c;
      continue;
    }
    out += " " + (field.empty() ? std::string("''") : shell_quote(field));
    field.clear();
  }
  out += "\n# the command's environment:";
  for (const auto& kv : inv.env) out += " " + shell_quote(kv.substr(0, kv.find('=')));
  out += "\n";
  return out;
}

}  // namespace wb::lnx
