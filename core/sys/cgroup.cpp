#include "core/sys/cgroup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "core/sys/fs.hpp"

namespace wb::sys {
namespace {

struct Mount {
  std::string point, fstype;
  std::set<std::string> options;  // the superblock's (v1: its controllers)
};

std::string unescape(const std::string& s) {  // mountinfo's \040 and friends
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<Mount> cgroup_mounts() {
  std::vector<Mount> out;
  auto text = read_file("/proc/self/mountinfo");
  if (!text.ok()) return out;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream head(line.substr(0, dash)), tail(line.substr(dash + 3));
    std::string f[5], fstype, source, super;
    for (auto& x : f) head >> x;
    tail >> fstype >> source >> super;
    if (fstype != "cgroup" && fstype != "cgroup2") continue;
    Mount m{unescape(f[4]), fstype, {}};
    std::istringstream opts(super);
    std::string o;
    while (std::getline(opts, o, ',')) m.options.insert(o);
    out.push_back(std::move(m));
  }
  return out;
}

// /proc/self/cgroup: controller list ("" for v2) -> path.
std::vector<std::pair<std::set<std::string>, std::string>> own_cgroups() {
  std::vector<std::pair<std::set<std::string>, std::string>> out;
  auto text = read_file("/proc/self/cgroup");
  if (!text.ok()) return out;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::set<std::string> ctl;
    std::istringstream c(line.substr(a + 1, b - a - 1));
    std::string x;
    while (std::getline(c, x, ',')) {
      if (!x.empty()) ctl.insert(x);
    }
    out.push_back({ctl, line.substr(b + 1)});
  }
  return out;
}

std::set<std::string> words_of(const std::string& path) {
  std::set<std::string> out;
  auto t = read_file(path);
  if (!t.ok()) return out;
  std::istringstream in(*t);
  std::string w;
  while (in >> w) out.insert(w);
  return out;
}

bool write_to(const std::string& path, const std::string& value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  bool ok = ::write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  ::close(fd);
  return ok;
}

// "key N" in a flat-keyed file (memory.events, pids.events, cpu.stat, memory.oom_control).
long long counter(const std::string& path, const std::string& key) {
  auto t = read_file(path);
  if (!t.ok()) return 0;
  std::istringstream in(*t);
  std::string k;
  long long v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return 0;
}

std::vector<std::string> needed(const CgroupLimits& l) {
  std::vector<std::string> n;
  if (l.memory_mb > 0) n.push_back("memory");
  if (l.pids > 0) n.push_back("pids");
  if (l.cpus > 0) n.push_back("cpu");
  return n;
}

std::atomic<unsigned> g_seq{0};

// wavebox-PID-NONCE: a directory left by an earlier wavebox of the same pid (a reused pid after
// a SIGKILL) never collides with this one.
std::string run_name() {
  static const unsigned nonce = [] {
    unsigned v = 0;
    if (::getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) v = static_cast<unsigned>(::time(nullptr));
    return v;
  }();
  return fmt::format("wavebox-{}-{:08x}{}", ::getpid(), nonce, g_seq.fetch_add(1));
}

// Empty run cgroups of wavebox processes that are gone (killed before they removed theirs).
void sweep(const std::string& parent) {
  DIR* d = ::opendir(parent.c_str());
  if (!d) return;
  int looked = 0;
  while (struct dirent* e = ::readdir(d)) {
    if (++looked > 4096) break;
    int pid = 0;
    char rest = 0;
    if (std::sscanf(e->d_name, "wavebox-%d-%c", &pid, &rest) != 2 || pid <= 0) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // (ours, or a live one's: busy anyway)
    (void)::rmdir((parent + "/" + e->d_name).c_str());
  }
  ::closedir(d);
}

// The v2 parent whose children get the controllers: the caller's own cgroup when it delegates
// them, else (root) a "wavebox" cgroup at the hierarchy's root, which holds no process.
std::string v2_parent(const std::string& mp, const std::string& own, const std::vector<std::string>& need,
                      std::string* why) {
  auto has_all = [&](const std::string& dir) {
    const auto sub = words_of(dir + "/cgroup.subtree_control");
    for (const auto& c : need) {
      if (!sub.count(c)) return false;
    }
    return ::access(dir.c_str(), W_OK) == 0;
  };
  const std::string mine = own == "/" ? mp : mp + own;
  if (has_all(mine)) return mine;
  if (::geteuid() != 0) {
    *why = "the caller's cgroup (" + mine + ") does not delegate the controllers";
    return {};
  }
  if (!has_all(mp)) {
    *why = "the cgroup v2 root does not enable the controllers";
    return {};
  }
  const std::string dir = mp + "/wavebox";
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    *why = "mkdir " + dir + ": " + std::strerror(errno);
    return {};
  }
  std::string enable;
  for (const auto& c : need) enable += (enable.empty() ? "+" : " +") + c;
  if (!has_all(dir) && !write_to(dir + "/cgroup.subtree_control", enable)) {
    *why = "enabling the controllers in " + dir + ": " + std::strerror(errno);
    return {};
  }
  return dir;
}

}  // namespace

std::string cgroup_support(std::string* why) {
  CgroupLimits all{1, 1, 1};
  auto made = RunCgroup::create(all);
  if (!made.ok()) {
    if (why) *why = made.error().message;
    return {};
  }
  std::string dirs;
  // Where the runs' cgroups go (this one's parents).
  for (const auto& d : (*made)->dirs()) dirs += (dirs.empty() ? "" : ", ") + d.substr(0, d.rfind('/')) + "/";
  return fmt::format("cgroup {} under {}", (*made)->v2() ? "v2" : "v1", dirs);
}

Result<std::unique_ptr<RunCgroup>> RunCgroup::create(const CgroupLimits& limits) {
  std::unique_ptr<RunCgroup> cg(new RunCgroup());
  cg->limits_ = limits;
  const std::vector<std::string> need = needed(limits);
  if (need.empty()) return make_error(ErrorKind::kUnavailable, "no limit to set");
  const auto mounts = cgroup_mounts();
  const auto own = own_cgroups();
  std::string why2 = "no cgroup v2 hierarchy", why1 = "no cgroup v1 hierarchy";
  auto fail = [&](std::string why) -> Result<std::unique_ptr<RunCgroup>> {
    return make_error(ErrorKind::kUnavailable, std::move(why));
  };
  const long long bytes = limits.memory_mb * 1024 * 1024;
  const std::string name = run_name();  // the same in every hierarchy
  // The kernel's smallest quota is 1 ms a period: 0.01 CPU; at most 4096 CPUs' worth (more limits
  // nothing on any machine, and the product stays far inside a long long: a settings file may
  // say 1e14). Rounded by hand: no libm, one library fewer to load at every start.
  const double cpus = std::min(limits.cpus, 4096.0);
  const std::string quota = fmt::format("{}", std::max<long long>(1000, static_cast<long long>(cpus * 100000 + 0.5)));

  // v2: one directory, every controller in it.
  for (const auto& m : mounts) {
    if (m.fstype != "cgroup2") continue;
    std::string own_path;
    for (const auto& [ctl, path] : own) {
      if (ctl.empty()) own_path = path;
    }
    if (own_path.empty()) break;
    const std::string parent = v2_parent(m.point, own_path, need, &why2);
    if (parent.empty()) break;
    sweep(parent);
    const std::string dir = parent + "/" + name;
    if (::mkdir(dir.c_str(), 0755) != 0) {
      why2 = "mkdir " + dir + ": " + std::strerror(errno);
      break;
    }
    cg->dirs_.push_back(dir);
    cg->v2_ = true;
    bool ok = true;
    if (limits.memory_mb > 0) {
      ok = ok && write_to(dir + "/memory.max", std::to_string(bytes));
      if (::access((dir + "/memory.swap.max").c_str(), F_OK) == 0) ok = ok && write_to(dir + "/memory.swap.max", "0");
    }
    if (limits.pids > 0) ok = ok && write_to(dir + "/pids.max", std::to_string(limits.pids + kSandboxOwnProcesses));
    if (limits.cpus > 0) ok = ok && write_to(dir + "/cpu.max", quota + " 100000");
    Fd procs(::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
    if (!ok || !procs.valid()) {
      why2 = "setting the limits in " + dir + ": " + std::strerror(errno);
      (void)::rmdir(dir.c_str());
      cg->dirs_.clear();
      cg->v2_ = false;
      break;
    }
    cg->procs_.push_back(std::move(procs));
    return cg;
  }

  // v1: a directory in each controller's hierarchy (controllers mounted together share one).
  std::set<std::string> points;
  for (const auto& c : need) {
    const Mount* hier = nullptr;
    for (const auto& m : mounts) {
      if (m.fstype == "cgroup" && m.options.count(c)) hier = &m;
    }
    std::string own_path;
    for (const auto& [ctl, path] : own) {
      if (ctl.count(c)) own_path = path;
    }
    if (!hier || own_path.empty()) return fail(why2 + "; no cgroup v1 " + c + " hierarchy");
    if (!points.insert(hier->point).second) continue;
    const std::string parent = own_path == "/" ? hier->point : hier->point + own_path;
    if (::access(parent.c_str(), W_OK) != 0) {
      return fail(fmt::format("{}; cgroup v1: {} is not writable ({})", why2, parent, std::strerror(errno)));
    }
    sweep(parent);
    const std::string dir = parent + "/" + name;
    if (::mkdir(dir.c_str(), 0755) != 0) return fail("mkdir " + dir + ": " + std::strerror(errno));
    cg->dirs_.push_back(dir);
    bool ok = true;
    if (c == "memory") {
      ok = write_to(dir + "/memory.limit_in_bytes", std::to_string(bytes));
      // No swap: with swap accounting the memory+swap limit is the same; else no swapping.
      if (::access((dir + "/memory.memsw.limit_in_bytes").c_str(), F_OK) == 0) {
        ok = ok && write_to(dir + "/memory.memsw.limit_in_bytes", std::to_string(bytes));
      }
      (void)write_to(dir + "/memory.swappiness", "0");
    } else if (c == "pids") {
      ok = write_to(dir + "/pids.max", std::to_string(limits.pids + kSandboxOwnProcesses));
    } else if (c == "cpu") {
      ok = write_to(dir + "/cpu.cfs_period_us", "100000") && write_to(dir + "/cpu.cfs_quota_us", quota);
    }
    Fd procs(::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
    if (!ok || !procs.valid())
      return fail(fmt::format("cgroup v1: setting {} in {}: {}", c, dir, std::strerror(errno)));
    cg->procs_.push_back(std::move(procs));
  }
  return cg;
}

RunCgroup::~RunCgroup() {
  procs_.clear();
  // The sandbox's last processes may still be on their way out: a little while, then leave it
  // (the next run's sweep removes an empty one whose wavebox is gone).
  for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
    for (int i = 0; i < 100 && ::rmdir(it->c_str()) != 0 && errno == EBUSY; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

std::vector<int> RunCgroup::join_fds() const {
  std::vector<int> out;
  for (const auto& f : procs_) out.push_back(f.get());
  return out;
}

std::string RunCgroup::dir_of(const char* file) const {
  for (const auto& d : dirs_) {
    if (::access((d + "/" + file).c_str(), F_OK) == 0) return d;
  }
  return {};
}

std::vector<Violation> RunCgroup::effects() const {
  std::vector<Violation> out;
  if (limits_.memory_mb > 0) {
    std::string d = dir_of(v2_ ? "memory.events" : "memory.oom_control");
    // v2: "oom" is counted before the OOM killer picks its victim, "oom_kill" only after the
    // SIGKILL is sent: the killed command can be reaped (and this read) before the second one
    // counts, on a loaded machine. Either says the limit ended something.
    const std::string events = d + (v2_ ? "/memory.events" : "/memory.oom_control");
    if (!d.empty() && (counter(events, "oom_kill") > 0 || (v2_ && counter(events, "oom") > 0))) {
      out.push_back({Refused::kMemory, fmt::format("{} MiB", limits_.memory_mb), "sandbox.resources.memoryMB",
                     RefusalCode::kLimit, "sandbox.resources.memoryMB"});
    }
  }
  if (limits_.pids > 0) {
    std::string d = dir_of("pids.events");
    if (!d.empty() && counter(d + "/pids.events", "max") > 0) {
      out.push_back({Refused::kProcesses, fmt::format("{}", limits_.pids), "sandbox.resources.pids",
                     RefusalCode::kLimit, "sandbox.resources.pids"});
    }
  }
  if (limits_.cpus > 0) {
    std::string d = dir_of(v2_ ? "cpu.max" : "cpu.cfs_quota_us");
    if (!d.empty() && counter(d + "/cpu.stat", "nr_throttled") > 0) {
      out.push_back({Refused::kCpu, fmt::format("{:g} CPUs", limits_.cpus), "sandbox.resources.cpus",
                     RefusalCode::kLimit, "sandbox.resources.cpus"});
    }
  }
  return out;
}

}  // namespace wb::sys
