// A sandbox made before its command (serve keeps one per session): the namespaces, bubblewrap,
// the mounts, the filter and the observer's listener, waiting in the shim for the word to run.
// When the command comes it is planned again as any run is; the standby is used only when that
// plan is the one it was made from and the files its mounts were taken from are still the same
// (a directory renamed and made again on the host would leave a mask on the old one). Anything
// else, and it is dropped and the run made afresh: a standby never widens a run. A standby made
// from the session's kept plan while that plan still holds (bwrap/warm/kept_plan.hpp) is that plan,
// and its files' identities are what the plan's witness watches.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "bwrap/launch/exec.hpp"
#include "bwrap/plan/facts.hpp"
#include "bwrap/run/prepared.hpp"
#include "bwrap/run/run.hpp"
#include "bwrap/shim/wire.h"
#include "bwrap/warm/kept_plan.hpp"
#include "core/paths.hpp"
#include "core/sys/fs.hpp"
#include "core/sys/stubs.hpp"

namespace wb::lnx {

namespace {

// A file's identity: (device, inode) is not one on its own (ext4 gives a freed inode number to
// the next file at once: `rm f; echo > f` keeps it), so its birth time counts too, or, where the
// filesystem keeps none, its change time. Not both: a mount is of the inode, whose entries and
// contents it shows as they are (a directory's change time moves with every entry made in it).
struct Ident {
  dev_t dev = 0;
  ino_t ino = 0;
  mode_t type = 0;
  long long birth_s = 0, birth_ns = 0, change_s = 0, change_ns = 0;
  bool operator==(const Ident& o) const {
    return dev == o.dev && ino == o.ino && type == o.type && birth_s == o.birth_s && birth_ns == o.birth_ns &&
           change_s == o.change_s && change_ns == o.change_ns;
  }
  bool operator!=(const Ident& o) const { return !(*this == o); }
};

Ident ident(const char* path) {
  struct statx sx;
  if (::statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME, &sx) != 0) return {};
  Ident id;
  id.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  id.ino = sx.stx_ino;
  id.type = sx.stx_mode & S_IFMT;
  if (sx.stx_mask & STATX_BTIME) {
    id.birth_s = sx.stx_btime.tv_sec;
    id.birth_ns = sx.stx_btime.tv_nsec;
  } else {
    id.change_s = sx.stx_ctime.tv_sec;
    id.change_ns = sx.stx_ctime.tv_nsec;
  }
  return id;
}

// The host's files the shim's mounts are made of (binds: source and target; masks: what they
// cover), as they are now.
std::vector<Ident> idents_of(const std::string& mounts) {
  std::vector<Ident> out;
  const char* p = mounts.data();
  const char* end = p + mounts.size();
  const char* f[3];
  while (wb_next_mount(&p, end, f) == 1) {
    if (!std::strcmp(f[0], WB_MOUNT_RW) || !std::strcmp(f[0], WB_MOUNT_RO) || !std::strcmp(f[0], WB_MOUNT_FUSE_FILE)) {
      out.push_back(ident(f[1]));
      out.push_back(ident(f[2]));
    } else if (!std::strcmp(f[0], WB_MOUNT_TMPFS) || !std::strcmp(f[0], WB_MOUNT_FUSE_DIR)) {
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
  for (int i = 0; i < run.net.n_ports; ++i) add(fmt::format("port {}", run.net.ports[i]));
  for (int i = 0; i < run.net.n_addrs; ++i) add(fmt::format("address {:08x}", run.net.addrs[i]));
  add(run.bwrap);
  add(run.allow_unix_sockets ? "unix-open" : "unix-own");
  for (const auto& u : run.unix_socket_paths) add(u);
  add(run.policy.host_proc ? "host-proc" : "own-proc");
  // The limits: the standby's cgroup holds the settings' of when it was made.
  add(fmt::format("limits {} {} {} {}", run.cpu_seconds, run.pids, run.memory_mb, run.cpus));
  return k;
}

// Where a standby's end happens off the caller's path (a used standby's keeper is reaped, its
// descriptors closed after the answer): one thread for the process, made
// once and never destroyed; finish_standby_ends() waits for what it holds.
class Graveyard {
 public:
  static Graveyard& get() {
    static Graveyard* g = new Graveyard;
    return *g;
  }
  void bury(std::function<void()> end) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(end));
    }
    cv_.notify_one();
  }
  void drain() {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return queue_.empty() && !busy_; });
  }

 private:
  Graveyard() {
    std::thread([this] { loop(); }).detach();
  }
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return !queue_.empty(); });
      {
        std::function<void()> end = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
        lock.unlock();
        end();
      }  // what it held ends here, outside the lock
      lock.lock();
      busy_ = false;
      done_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_, done_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
};

// The mount points of a mountinfo text (its fifth field, unescaped).
std::set<std::string> mount_points(const std::string& table) {
  std::set<std::string> out;
  auto octal = [](char c) { return c >= '0' && c <= '7'; };
  size_t pos = 0;
  while (pos < table.size()) {
    size_t end = table.find('\n', pos);
    if (end == std::string::npos) end = table.size();
    const std::string line = table.substr(pos, end - pos);
    pos = end + 1;
    size_t f = 0;
    for (int k = 0; k < 4 && f != std::string::npos; ++k) {
      f = line.find(' ', f);
      if (f != std::string::npos) ++f;
    }
    if (f == std::string::npos || f >= line.size()) continue;
    const std::string raw = line.substr(f, line.find(' ', f) - f);
    std::string point;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '\\' && i + 3 < raw.size() && octal(raw[i + 1]) && octal(raw[i + 2]) && octal(raw[i + 3])) {
        point += static_cast<char>((raw[i + 1] - '0') * 64 + (raw[i + 2] - '0') * 8 + (raw[i + 3] - '0'));
        i += 3;
      } else {
        point += raw[i];
      }
    }
    out.insert(point);
  }
  return out;
}

// Whether every bind and mask of the shim's mount list is a mount point in table.
bool all_mounted(const std::string& table, const std::string& mounts) {
  const std::set<std::string> points = mount_points(table);
  const char* p = mounts.data();
  const char* end = p + mounts.size();
  const char* f[3];
  while (wb_next_mount(&p, end, f) == 1) {
    const bool placed = !std::strcmp(f[0], WB_MOUNT_RW) || !std::strcmp(f[0], WB_MOUNT_RO) ||
                        !std::strcmp(f[0], WB_MOUNT_TMPFS) || !std::strcmp(f[0], WB_MOUNT_FUSE_DIR) ||
                        !std::strcmp(f[0], WB_MOUNT_FUSE_FILE);
    if (placed && !points.count(f[2])) return false;
  }
  return true;
}

// A process's mount table as text, "" when it cannot be read; *kept: the descriptor it was read
// from, which polls POLLPRI once that mount namespace's table changes after the open (a mount
// placed, moved, detached or changed in it, by anyone: the kernel counts every change).
std::string mount_table(pid_t pid, sys::Fd* kept) {
  if (pid <= 0) return {};
  sys::Fd fd(::open(fmt::format("/proc/{}/mountinfo", pid).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return {};
  std::string text;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return {};
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  *kept = std::move(fd);
  return text;
}

// Whether a mount table watched by a kept descriptor changed since it was read.
bool mounts_changed(const sys::Fd& table) {
  struct pollfd p = {table.get(), POLLPRI, 0};
  return ::poll(&p, 1, 0) != 0;
}

// Whether another live run holds a stub among run's guarded paths (a denyRead path that did
// not exist, placeholder and mask): a standby has no registry of its own, so it would plan that
// stub as a plain file, and lose its mask when the other run lets go. Joined to look, and
// released again with the registry.
bool joins_stubs(const LinuxRun& run, const FsPolicy& policy) {
  sys::StubRegistry stubs(run.state.stubs, run.state.pool);
  auto under = [&](const std::string& path) {
    auto within = [&](const GuardedPath& g) { return paths::is_within(g.path, path); };
    return std::any_of(policy.deny_write.begin(), policy.deny_write.end(), within) ||
           std::any_of(policy.deny_read.begin(), policy.deny_read.end(), within);
  };
  return !stubs.join_registered(under).empty();
}

}  // namespace

struct Standby {
  LinuxRun run;  // the standby's own (its policy as planned; its command never runs)
  std::unique_ptr<Launch> launch;
  ExecRequest req;
  Prepared p;
  bool mount_api = false;
  Refusals refusals;  // the command's listener joins once it starts
  std::unique_ptr<Observer> observer;
  std::string key;
  std::vector<Ident> idents;
  // The host's mount table (POLLPRI once it changed: a filesystem mounted or unmounted since),
  // and the standby's own, through the descriptor it was read from once every mount was placed
  // (a host unlink or rmdir of a mount point detaches a mount in every other namespace, this one
  // too). A rename of one changes no table: the files' identities (idents) catch it.
  sys::Fd host_mounts;
  sys::Fd own_mounts_fd;
  pid_t init = -1;
  ~Standby() {
    if (launch) end_standby(*launch);
  }
};

Result<std::shared_ptr<Standby>> make_standby(LinuxRun run) {
  if (!run.policy.enabled) return make_error(ErrorKind::kUnavailable, "a network-only run has no standby");
  if (run.network_off) return make_error(ErrorKind::kUnavailable, "--network off has no standby");
  const double t0 = now_ms();
  auto sb = std::make_shared<Standby>();
  sb->host_mounts = sys::Fd(::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
  if (!sb->host_mounts.valid()) return make_error(ErrorKind::kUnavailable, "the mount table cannot be watched");
  sb->mount_api = shim_mounts_available();
  if (!sb->mount_api) return make_error(ErrorKind::kUnavailable, "a standby needs the shim to place the mounts");
  // Its stderr is relayed: serve gives every command a pipe of its own.
  if (run.launch && run.launch->relay_command_stderr) {
    sb->launch = std::move(run.launch);
  } else {
    run.launch.reset();
    sb->launch = WB_TRY(launch_sandbox(run.bwrap, nullptr, run.launch_env, *run.log, run.cgroup.get(), &run.net));
  }
  sb->req = exec_request(run);
  sb->req.env.clear();  // the command's comes with it
  // (Of sb->p, which is the standby's plan once it is made, and the command's when it starts.)
  sb->observer = make_observer(run, sb->p, sb->refusals.sink());
  sb->req.observer = sb->observer.get();
  const bool early = plan_stays_out_of_dev_and_proc(run.policy, run.cwd);
  const std::string early_options = early ? options_before_the_plan(run) : "";
  WB_TRY(begin_launch(*sb->launch, sb->req, early_options));
  sb->p = WB_TRY(run.plan_cache ? run.plan_cache->plan(run, false) : prepare_run(run, nullptr, false));
  if (!sb->p.stub_list.empty()) return make_error(ErrorKind::kUnavailable, "a run that needs stubs has no standby");
  if (joins_stubs(run, sb->p.policy))
    return make_error(ErrorKind::kUnavailable, "another run holds a stub among its paths");
  const ShimMounts mode = mount_mode(sb->p, true);
  if (mode != ShimMounts::kAll) return make_error(ErrorKind::kUnavailable, "a plan bwrap must place has no standby");
  std::string options = WB_TRY(write_plan(run, sb->p, *sb->launch, true, sb->req.env));
  sb->observer->set_fuse_masks(fuse_masks(sb->p.plan, sb->p.facts));
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
  sb->init = standby_init(*sb->launch);
  const std::string own_mounts = mount_table(sb->init, &sb->own_mounts_fd);
  if (own_mounts.empty() || !all_mounted(own_mounts, mounts)) {
    return make_error(ErrorKind::kUnavailable, "the standby's mounts cannot be checked, or one is missing");
  }
  run.log->info(
      fmt::format("a sandbox prepared ahead in {:.2f} ms ({} mounts)", now_ms() - t0, sb->p.plan.mounts.size()));
  sb->run = std::move(run);
  return sb;
}

Result<std::optional<RunOutcome>> run_in_standby(const LinuxRun& run, std::shared_ptr<Standby> sb) {
  const Logger& log = *run.log;
  auto unfit = [&](const char* why) -> Result<std::optional<RunOutcome>> {
    log.info(std::string("the sandbox prepared ahead is not used: ") + why);
    return std::optional<RunOutcome>();
  };
  if (run.network_off) return unfit("--network off");
  if (!stderr_relayable(run.stdio)) return unfit("stderr is not a pipe of its own");
  const double t0 = now_ms();
  // The standby made from the session's kept plan, which still holds: that plan is the one this
  // command would make, and the files its mounts were taken from are the ones watched since
  // before it was made (a file replaced at one of them is a change the witness saw).
  const bool vouched = run.plan_cache && sb->p.generation && run.plan_cache->vouches(run, sb->p.generation);
  Result<Prepared> fresh = make_error(ErrorKind::kSystem, "internal: not planned");
  if (!vouched) fresh = run.plan_cache ? run.plan_cache->plan(run, true) : prepare_run(run, nullptr, true);
  // Planned again by the usual path, which says what failed.
  auto refuse = [&](const char* why) { return unfit(why); };
  if (!vouched && !fresh.ok()) return refuse("planning failed");
  if (!vouched && !fresh->stub_list.empty()) return refuse("the run needs stubs");
  const Prepared& planned = vouched ? sb->p : *fresh;
  if (joins_stubs(run, planned.policy)) return refuse("another run holds a stub among its paths");
  std::string mounts;
  if (key_of(run, planned, mount_mode(planned, sb->mount_api), sb->run.cwd, &mounts) != sb->key) {
    return refuse("the plan is not the one it was made from (the settings or the tree changed)");
  }
  if (vouched && run.plan_cache->checking()) {
    // Tests: what the witness stands in for, checked as well; a difference ends the server.
    auto again = run.plan_cache->plan(run, false);  // compares a fresh plan with the kept one
    if (!again.ok() || idents_of(mounts) != sb->idents) {
      log.warn("internal: a standby from the kept plan is not what it was made of (WAVEBOX_PLAN_CACHE_CHECK)");
      std::abort();
    }
  }
  if (!vouched && idents_of(mounts) != sb->idents) return refuse("a file its mounts were taken from was replaced");
  // Last, right before the command starts in it: the standby itself, as it is now.
  if (!standby_alive(*sb->launch, *sb->observer)) return refuse("it ended while it waited");
  if (mounts_changed(sb->host_mounts)) return refuse("the host's mounts changed since it was made");
  if (mounts_changed(sb->own_mounts_fd)) return refuse("its mounts changed while it waited");
  RunOutcome outcome;
  outcome.observed_writes = true;
  outcome.relayed_stderr = true;
  outcome.prepared_ahead = true;
  outcome.plan_kept = vouched || fresh->kept;
  if (!vouched) sb->p = std::move(*fresh);  // the same plan, with this run's check of it (the observer reads it)
  Prepared& p = sb->p;
  ExecRequest req = exec_request(run);
  req.limits = rlimits_for(run, sb->run.cgroup.get());  // the standby's cgroup holds the rest
  req.timed_out = &outcome.timed_out;
  req.observer = sb->observer.get();
  sb->observer->set_logger(run.log);  // the command's, not the one it was made with
  sb->refusals.listen(run.on_refusal);
  wire_reports(req, run, p, *sb->observer, sb->refusals, true);
  wire_late_scan(req, run, p);
  const std::vector<std::string> missing = missing_unstubbed(p.policy, p.facts);
  for (const auto& w : p.plan.warnings) log.warn(w);
  const double t1 = now_ms();
  log.info(
      fmt::format("planned again in {:.2f} ms: the sandbox prepared ahead fits, the command starts in it", t1 - t0));
  // The keeper (killed, the sandbox empty) is reaped and the rest closed when the standby is
  // dropped: after the answer, on a thread of its own.
  Result<int> result = standby_go(*sb->launch, req, run.cwd == sb->run.cwd ? std::string() : run.cwd);
  WB_TRY(finish_command(run, p, *sb->observer, missing, t1, sb->run.cgroup.get(), result, sb->refusals, outcome));
  Graveyard::get().bury([done = std::move(sb)] {});
  return std::optional<RunOutcome>(std::move(outcome));
}

void finish_standby_ends() {
  Graveyard::get().drain();
}

}  // namespace wb::lnx
