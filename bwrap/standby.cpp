// A sandbox made before its command (serve keeps one per session): the namespaces, bubblewrap,
// the mounts, the filter and the observer's listener, waiting in the shim for the word to run.
// When the command comes it is planned again as any run is; the standby is used only when that
// plan is the one it was made from and the files its mounts were taken from are still the same
// (a directory renamed and made again on the host would leave a mask on the old one). Anything
// else, and it is dropped and the run made afresh: a standby never widens a run.
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "bwrap/exec.hpp"
#include "bwrap/facts.hpp"
#include "bwrap/prepared.hpp"
#include "bwrap/sandbox.hpp"
#include "bwrap/shim/wire.h"
#include "core/paths.hpp"

namespace wb::lnx {

namespace {

struct Ident {
  dev_t dev = 0;
  ino_t ino = 0;
  mode_t type = 0;
  bool operator==(const Ident& o) const { return dev == o.dev && ino == o.ino && type == o.type; }
};

Ident ident(const char* path) {
  struct stat st;
  if (::lstat(path, &st) != 0) return {};
  return {st.st_dev, st.st_ino, st.st_mode & S_IFMT};
}

// The host's files the shim's mounts are made of (binds: source and target; masks: what they
// cover), as they are now.
std::vector<Ident> idents_of(const std::string& mounts) {
  std::vector<Ident> out;
  const char* p = mounts.data();
  const char* end = p + mounts.size();
  const char* f[3];
  while (wb_next_mount(&p, end, f) == 1) {
    if (!std::strcmp(f[0], WB_MOUNT_RW) || !std::strcmp(f[0], WB_MOUNT_RO)) {
      out.push_back(ident(f[1]));
      out.push_back(ident(f[2]));
    } else if (!std::strcmp(f[0], WB_MOUNT_TMPFS)) {
      out.push_back(ident(f[2]));
    }
  }
  return out;
}

// Everything the sandbox was made of: bwrap's options (with the standby's working directory:
// the command's is entered by the shim), the mounts, what the supervisor refuses to create, the
// keeper's listeners, the filter's inputs.
std::string key_of(const LinuxRun& run, const Prepared& p, ShimMounts mode, const std::string& cwd,
                   std::string* mounts) {
  std::string k;
  auto add = [&k](const std::string& s) {
    k += s;
    k += '\0';
  };
  RunSpec spec = spec_for(run, mode);
  spec.cwd = cwd;
  for (const auto& a : render_args(p.plan, p.facts, spec)) add(a);
  *mounts = render_shim_mounts(p.plan, p.facts, console_device(run.stdio[1]));
  add("mounts");
  add(*mounts);
  add("guard");
  for (const auto& d : p.guard.describe()) add(d);
  add("launch");
  for (const auto& e : run.launch_env) add(e);
  add(run.bwrap);
  add(run.allow_unix_sockets ? "unix-open" : "unix-own");
  for (const auto& u : run.unix_socket_paths) add(u);
  add(run.policy.host_proc ? "host-proc" : "own-proc");
  return k;
}

bool same_fact(const PathFact& a, const PathFact& b) {
  return a.kind == b.kind && a.is_symlink == b.is_symlink && a.real == b.real && a.first_missing == b.first_missing &&
         a.creatable == b.creatable && a.unreachable_at == b.unreachable_at;
}

bool same_facts(const LinuxFacts& a, const LinuxFacts& b) {
  if (a.paths.size() != b.paths.size()) return false;
  for (const auto& [path, fact] : a.paths) {
    auto it = b.paths.find(path);
    if (it == b.paths.end() || !same_fact(fact, it->second)) return false;
  }
  return true;
}

// Whether the facts a standby was planned from can still be true: inotify on every directory
// they were read from (each existing ancestor of each path and of its resolution: a name made,
// removed, renamed or re-moded there changes a fact), and the mount table. Any event at all, an
// overflow, a watch that could not be set, or a filesystem whose changes inotify may not see
// (network, FUSE), and the facts are probed again.
class FactsWatch {
 public:
  explicit FactsWatch(const LinuxFacts& facts) {
    ino_ = sys::Fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    mounts_ = sys::Fd(::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
    if (!ino_.valid() || !mounts_.valid()) return;
    std::set<std::string> dirs;
    auto add_ancestors = [&](const std::string& path) {
      for (const auto& a : paths::ancestors(path)) dirs.insert(a);
      dirs.insert(path);
    };
    for (const auto& [path, fact] : facts.paths) {
      add_ancestors(path);
      if (!fact.real.empty()) add_ancestors(fact.real);
    }
    for (const auto& d : dirs) {
      struct stat st;
      if (::lstat(d.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;  // not there: its parent is watched
      if (!local_filesystem(d)) return;
      const uint32_t mask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF |
                            IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW;
      if (::inotify_add_watch(ino_.get(), d.c_str(), mask) < 0) return;
    }
    usable_ = true;
  }
  // Nothing changed since the watch was set.
  bool unchanged() const {
    if (!usable_) return false;
    struct pollfd p[2] = {{ino_.get(), POLLIN, 0}, {mounts_.get(), POLLPRI, 0}};
    return ::poll(p, 2, 0) == 0;
  }
  size_t fds() const { return usable_ ? 2 : 0; }

 private:
  static bool local_filesystem(const std::string& dir) {
    struct statfs fs;
    if (::statfs(dir.c_str(), &fs) != 0) return false;
    switch (static_cast<unsigned long>(fs.f_type)) {
      case EXT4_SUPER_MAGIC:
      case XFS_SUPER_MAGIC:
      case BTRFS_SUPER_MAGIC:
      case TMPFS_MAGIC:
      case OVERLAYFS_SUPER_MAGIC:
      case F2FS_SUPER_MAGIC:
      case 0x2fc12fc1UL:  // zfs
        return true;
      default:
        return false;
    }
  }
  sys::Fd ino_, mounts_;
  bool usable_ = false;
};

}  // namespace

struct Standby {
  LinuxRun run;  // the standby's own (its policy as planned; its command never runs)
  std::unique_ptr<Launch> launch;
  ExecRequest req;
  Prepared p;
  bool mount_api = false;
  std::mutex mu;  // the observer, the proxy and the stderr relay report concurrently
  ViolationLog violations;
  std::unique_ptr<Observer> observer;
  std::string key;
  std::vector<Ident> idents;
  std::unique_ptr<FactsWatch> watch;  // set before the facts are read again (make_standby)
  ~Standby() {
    if (launch) end_standby(*launch);
    if (watch) std::thread([w = std::move(watch)] {}).detach();  // its close waits (run_in_standby)
  }
};

Result<std::shared_ptr<Standby>> make_standby(LinuxRun run) {
  if (!run.policy.enabled) return make_error(ErrorKind::kUnavailable, "a network-only run has no standby");
  if (run.network_off) return make_error(ErrorKind::kUnavailable, "--network off has no standby");
  const double t0 = now_ms();
  auto sb = std::make_shared<Standby>();
  Standby* raw = sb.get();
  sb->mount_api = shim_mounts_available();
  if (!sb->mount_api) return make_error(ErrorKind::kUnavailable, "a standby needs the shim to place the mounts");
  // Its stderr is relayed: serve gives every command a pipe of its own.
  if (run.launch && run.launch->relay_command_stderr) {
    sb->launch = std::move(run.launch);
  } else {
    run.launch.reset();
    sb->launch = WB_TRY(launch_sandbox(run.bwrap, nullptr, run.launch_env, *run.log));
  }
  sb->req = exec_request(run);
  sb->req.env.clear();  // the command's comes with it
  auto sink = [raw](const Violation& v) {
    std::lock_guard<std::mutex> lock(raw->mu);
    raw->violations.add(v);
  };
  sb->observer =
      std::make_unique<Observer>([raw](const std::string& path) { return write_allowed(raw->p.plan, path); }, sink,
                                 [raw](const std::string& path, bool in_new_dir, bool tree) {
                                   return raw->p.guard.refuses(path, in_new_dir, tree);
                                 },
                                 [raw](const std::string& path) { return raw->p.guard.moving_refused(path); });
  sb->observer->set_host_proc(run.policy.host_proc);
  sb->observer->set_unix_sockets_open(run.allow_unix_sockets);
  sb->observer->set_allowed_unix_sockets(run.unix_socket_paths);
  sb->observer->set_logger(run.log);
  sb->req.observer = sb->observer.get();
  const bool early = plan_stays_out_of_dev_and_proc(run.policy, run.cwd);
  std::string early_options;
  if (early) {
    LinuxFacts known;
    std::copy(std::begin(run.bwrap_version), std::end(run.bwrap_version), known.bwrap_version);
    early_options = bwrap_options(render_args(Plan{}, known, spec_for(run, ShimMounts::kAll)));
  }
  WB_TRY(begin_launch(*sb->launch, sb->req, early_options));
  const FsPolicy as_given = run.policy;
  sb->p = WB_TRY(prepare_run(run, nullptr, false));
  if (!sb->p.stub_list.empty()) return make_error(ErrorKind::kUnavailable, "a run that needs stubs has no standby");
  {
    // The watch first, then the facts read again: a change between the two readings shows as a
    // difference, one after them as an event.
    sb->watch = std::make_unique<FactsWatch>(sb->p.facts);
    LinuxFacts again;
    probe_policy_paths(run.policy, again);
    if (!same_facts(again, sb->p.facts)) sb->watch.reset();
  }
  (void)as_given;
  const ShimMounts mode = mount_mode(sb->p, true);
  if (mode != ShimMounts::kAll) return make_error(ErrorKind::kUnavailable, "a plan bwrap must place has no standby");
  std::string options = WB_TRY(write_plan(run, sb->p, *sb->launch, true, sb->req.env));
  if (early) {
    if (options != early_options) return make_error(ErrorKind::kUnavailable, "the plan reaches into /dev or /proc");
    options.clear();
  }
  std::string mounts;
  sb->key = key_of(run, sb->p, mode, run.cwd, &mounts);
  const std::vector<Ident> before = idents_of(mounts);
  WB_TRY(standby_begin(*sb->launch, sb->req, options));
  // The same files before and after the shim took them: what it holds is what was planned.
  sb->idents = idents_of(mounts);
  if (sb->idents != before) return make_error(ErrorKind::kUnavailable, "the tree changed while the standby was made");
  run.log->info(
      fmt::format("a sandbox prepared ahead in {:.2f} ms ({} mounts)", now_ms() - t0, sb->p.plan.mounts.size()));
  sb->run = std::move(run);
  return sb;
}

Result<std::optional<RunOutcome>> run_in_standby(LinuxRun& run, std::shared_ptr<Standby> sb) {
  const Logger& log = *run.log;
  auto unfit = [&](const char* why) -> Result<std::optional<RunOutcome>> {
    log.info(std::string("the sandbox prepared ahead is not used: ") + why);
    return std::optional<RunOutcome>();
  };
  if (run.network_off) return unfit("--network off");
  if (!standby_alive(*sb->launch, *sb->observer)) return unfit("it ended while it waited");
  if (!stderr_relayable(run.stdio)) return unfit("stderr is not a pipe of its own");
  const double t0 = now_ms();
  const FsPolicy as_given = run.policy;
  const bool unchanged = sb->watch && sb->watch->unchanged();
  // Closing an inotify instance waits for the kernel's grace period (milliseconds): not here.
  if (sb->watch) std::thread([w = std::move(sb->watch)] {}).detach();
  auto fresh = prepare_run(run, nullptr, true, unchanged ? &sb->p.facts : nullptr);
  if (!fresh.ok() || !fresh->stub_list.empty()) {
    run.policy = as_given;  // planned again by the usual path, which says what failed
    return unfit(fresh.ok() ? "the run needs stubs" : "planning failed");
  }
  std::string mounts;
  if (key_of(run, *fresh, mount_mode(*fresh, sb->mount_api), sb->run.cwd, &mounts) != sb->key) {
    run.policy = as_given;
    return unfit("the plan is not the one it was made from (the settings or the tree changed)");
  }
  if (idents_of(mounts) != sb->idents) {
    run.policy = as_given;
    return unfit("a file its mounts were taken from was replaced");
  }
  RunOutcome outcome;
  outcome.observed_writes = true;
  outcome.relayed_stderr = true;
  outcome.prepared_ahead = true;
  Standby* raw = sb.get();
  sb->p = std::move(*fresh);  // the same plan, with this run's check of it (the observer reads it)
  Prepared& p = sb->p;
  ExecRequest req = exec_request(run);
  req.timed_out = &outcome.timed_out;
  req.observer = sb->observer.get();
  sb->observer->set_logger(run.log);  // the command's, not the one it was made with
  auto sink = [raw](const Violation& v) {
    std::lock_guard<std::mutex> lock(raw->mu);
    raw->violations.add(v);
  };
  req.stderr_line = [&](const std::string& line) {
    ViolationLog found;
    scan_for_denied_reads(line, p.plan, run.cwd, found);
    for (const auto& v : found.items()) sink(v);
  };
  req.on_listeners = [&](sys::NetListeners listeners) -> Status {
    if (!run.start_network) return make_error(ErrorKind::kSandboxFailed, "internal: no network side");
    return run.start_network(std::move(listeners), sink);
  };
  if (p.late) {
    req.late_fd = p.late->done_fd();
    req.late_ready = [&run, &p](Observer& o) { apply_late(run, p, o); };
    req.late_start = [&p] { p.late->start(); };
  }
  const std::vector<std::string> missing = missing_unstubbed(run.policy, p.facts);
  for (const auto& w : p.plan.warnings) log.warn(w);
  const double t1 = now_ms();
  log.info(fmt::format("planned again in {:.2f} ms ({}): the sandbox prepared ahead fits, the command starts in it",
                       t1 - t0, unchanged ? "nothing changed where its facts were read" : "every path probed"));
  // The keeper (killed, the sandbox empty) is reaped and the rest closed when the standby is
  // dropped: after the answer, on a thread of its own.
  Result<int> result = standby_go(*sb->launch, req, run.cwd == sb->run.cwd ? std::string() : run.cwd);
  if (run.stop_network) run.stop_network();
  after_run(run, p, *sb->observer, missing, t1);
  if (!result.ok()) return result.error();
  outcome.exit_code = *result;
  {
    std::lock_guard<std::mutex> lock(sb->mu);
    outcome.violations = sb->violations.items();
    outcome.more = sb->violations.dropped();
  }
  std::thread([done = std::move(sb)] {}).detach();
  return std::optional<RunOutcome>(std::move(outcome));
}

}  // namespace wb::lnx
