// pure
#include "bwrap/plan/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>

#include "bwrap/shim/wire.h"
#include "core/paths.hpp"

namespace wb::lnx {
namespace {

int kind_order(MountKind k) {
  switch (k) {
    case MountKind::kVisible:
      return -1;
    case MountKind::kRwBind:
      return 0;
    case MountKind::kPin:
      return 1;
    case MountKind::kCarve:
      return 2;
    case MountKind::kRoBind:
      return 3;
    case MountKind::kMaskDir:
    case MountKind::kMaskFile:
      return 4;
  }
  return 5;
}

bool within_any(const std::string& p, const std::vector<std::string>& roots) {
  return std::any_of(roots.begin(), roots.end(), [&](const std::string& r) { return paths::is_within(p, r); });
}

bool strictly_within_any(const std::string& p, const std::vector<std::string>& roots) {
  return std::any_of(roots.begin(), roots.end(),
                     [&](const std::string& r) { return p != r && paths::is_within(p, r); });
}

// Read visibility: the deepest rule covering a path decides; at one path a mask beats a carve.
struct ReadRules {
  std::vector<std::string> masks;
  std::vector<std::string> carves;  // allowRead and writable roots

  // Returns 1 for mask, 0 for carve, -1 for none; strict: ignore rules at the path itself.
  int deepest(const std::string& p, bool strict) const {
    int best_depth = -1, best = -1;
    auto consider = [&](const std::vector<std::string>& v, int kind) {
      for (const auto& r : v) {
        if (strict && r == p) continue;
        if (!paths::is_within(p, r)) continue;
        int d = paths::depth(r);
        if (d > best_depth || (d == best_depth && kind == 1)) {
          best_depth = d;
          best = kind;
        }
      }
    };
    consider(carves, 0);
    consider(masks, 1);
    return best;
  }
  bool visible(const std::string& p) const { return deepest(p, false) != 1; }
  bool visible_above(const std::string& p) const { return deepest(p, true) != 1; }
};

const PathFact* find_fact(const LinuxFacts& facts, const std::string& p) {
  auto it = facts.paths.find(p);
  return it == facts.paths.end() ? nullptr : &it->second;
}

}  // namespace

namespace {

// The plan in steps: writable roots, write guards, read rules, stubs (denyRead only), mounts.
class Planner {
 public:
  Planner(const FsPolicy& policy, const LinuxFacts& facts) : policy_(policy), facts_(facts) {}
  Result<Plan> run();

 private:
  Result<PathFact> fact(const std::string& p) const {
    if (const PathFact* f = find_fact(facts_, p)) return *f;
    return make_error(ErrorKind::kSandboxFailed, fmt::format("internal: path \"{}\" was not probed", p));
  }
  Status writable_roots();
  Status planted_link(const WritableRoot& w, const PathFact& f) const;
  Status write_guards();
  void add_create_guard(const std::string& path, const std::string& why);
  Status read_rules();
  Status stubs();
  void want_stub(const GuardedPath& g, const std::string& first, bool leaf);
  void mounts();
  void replace_files(std::vector<MountOp>& ops, const std::function<bool(const std::string&)>& writable) const;
  void strict_root(std::vector<MountOp>& ops) const;
  Status strict_links() const;
  void pin_ancestors(const std::string& p, std::set<std::string>& pins) const;

  const FsPolicy& policy_;
  const LinuxFacts& facts_;
  Plan plan_;
  std::vector<std::string> rw_, ro_;
  std::set<std::string> over_guard_;  // writable even inside a guard (wavebox's own cache dir)
  std::vector<const GuardedPath*> missing_ro_, missing_masks_;
  ReadRules rules_;
  std::set<std::string> mask_is_dir_;
  std::vector<std::string> carves_;
};

// A writable path reached through a symbolic link that lies inside another writable tree: a
// sandboxed command could have planted it (replaced ./build by a link to ~) to make the next run
// write where its settings never said.
Status Planner::planted_link(const WritableRoot& w, const PathFact& f) const {
  if (f.kind == PathKind::kMissing || f.real == w.path) return ok_status();
  for (const auto& other : policy_.writable) {
    if (&other == &w || other.path == w.path) continue;
    const PathFact* of = find_fact(facts_, other.path);
    bool inside = paths::is_within(paths::parent(w.path), other.path) ||
                  (of && of->kind != PathKind::kMissing && paths::is_within(paths::parent(w.path), of->real));
    if (inside && !paths::is_within(other.path, w.path)) {
      return make_error(ErrorKind::kSandboxFailed,
                        fmt::format("writable path \"{}\" leads through a symbolic link inside the writable "
                                    "\"{}\" (to \"{}\"), which a sandboxed command could have planted; name "
                                    "the real directory in the settings instead",
                                    w.path, other.path, f.real));
    }
  }
  return ok_status();
}

Status Planner::writable_roots() {
  for (const auto& w : policy_.writable) {
    PathFact f = WB_TRY(fact(w.path));
    WB_TRY(planted_link(w, f));
    if (f.kind == PathKind::kMissing) {
      // One inside another writable root (a build directory of the workspace not made yet) is
      // writable all the same: nothing to say on every run.
      const bool covered = std::any_of(policy_.writable.begin(), policy_.writable.end(), [&](const WritableRoot& o) {
        return o.path != w.path && paths::is_within(w.path, o.path);
      });
      if (!w.optional && !covered) {
        plan_.warnings.push_back(fmt::format("writable path \"{}\" does not exist; skipped", w.path));
      }
      continue;
    }
    if (std::find(rw_.begin(), rw_.end(), f.real) == rw_.end()) rw_.push_back(f.real);
    if (w.over_guard) over_guard_.insert(f.real);
  }
  return ok_status();
}

void Planner::add_create_guard(const std::string& path, const std::string& why) {
  for (const auto& c : plan_.create_guards) {
    if (c.path == path) return;
  }
  plan_.create_guards.push_back({path, why.empty() ? "protected path" : why});
}

Status Planner::write_guards() {
  for (const auto& g : policy_.deny_write) {
    PathFact f = WB_TRY(fact(g.path));
    if (!f.unreachable_at.empty() && within_any(f.unreachable_at, rw_)) {
      plan_.warnings.push_back(
          fmt::format("cannot look into \"{}\" (to guard \"{}\"), so it is read-only in the sandbox; make it "
                      "readable (chmod u+rx) to have it writable again",
                      f.unreachable_at, g.path));
      ro_.push_back(f.unreachable_at);
    }
    if (f.kind != PathKind::kMissing) {
      if (f.is_symlink && within_any(paths::parent(g.path), rw_)) {
        return make_error(ErrorKind::kSandboxFailed,
                          fmt::format("protected path \"{}\" is a symbolic link inside a writable "
                                      "directory, so it cannot be pinned; replace the link with "
                                      "the file or directory itself",
                                      g.path));
      }
      ro_.push_back(f.real);
    } else if (g.stub_if_missing) {
      add_create_guard(g.path, g.why);
      if (!f.real.empty() && f.real != g.path) add_create_guard(f.real, g.why);
      missing_ro_.push_back(&g);
    }
  }
  // denyWrite wins over allowWrite: a writable root inside a protected tree is dropped.
  rw_.erase(std::remove_if(rw_.begin(), rw_.end(),
                           [&](const std::string& r) { return within_any(r, ro_) && !over_guard_.count(r); }),
            rw_.end());
  return ok_status();
}

Status Planner::read_rules() {
  rules_.carves = rw_;
  for (const auto& g : policy_.deny_read) {
    PathFact f = WB_TRY(fact(g.path));
    if (f.kind == PathKind::kMissing) {
      if (g.stub_if_missing) missing_masks_.push_back(&g);
      continue;
    }
    rules_.masks.push_back(f.real);
    if (f.kind == PathKind::kDir) mask_is_dir_.insert(f.real);
  }
  for (const auto& a : policy_.allow_read) {
    PathFact f = WB_TRY(fact(a));
    if (f.kind == PathKind::kMissing) continue;
    carves_.push_back(f.real);
    rules_.carves.push_back(f.real);
  }
  return ok_status();
}

void Planner::want_stub(const GuardedPath& g, const std::string& first, bool leaf) {
  for (const auto& s : plan_.stubs) {
    if (s.path == first) return;
  }
  if (leaf) {
    plan_.stubs.push_back({first, g.type, g.type == LeafType::kFile ? g.stub_content : ""});
  } else {
    plan_.stubs.push_back({first, LeafType::kDir, ""});
  }
}

// Paths that do not exist yet: a stub is needed where the sandbox could create the path (a
// writable parent) and, for unreadable paths, wherever the parent is visible (the host may
// create it during the run).
Status Planner::stubs() {
  // A stub directory made for a deeper guard is guarded whole: nothing may be created in it.
  std::vector<std::string> stub_guards;
  for (const GuardedPath* g : missing_ro_) {
    // Only where a denyRead stub made the parent (the rest needs nothing on the host).
    PathFact f = WB_TRY(fact(g->path));
    std::string first = f.first_missing.empty() ? f.real : f.first_missing;
    std::string parent = paths::parent(first);
    if (facts_.stubs.count(parent)) stub_guards.push_back(parent);
  }
  ro_.insert(ro_.end(), stub_guards.begin(), stub_guards.end());
  for (const GuardedPath* g : missing_masks_) {
    PathFact f = WB_TRY(fact(g->path));
    if (!f.creatable) continue;
    std::string first = f.first_missing.empty() ? f.real : f.first_missing;
    std::string parent = paths::parent(first);
    if (facts_.stubs.count(parent)) {
      rules_.masks.push_back(parent);
      mask_is_dir_.insert(parent);
    } else if (rules_.visible(parent)) {
      want_stub(*g, first, first == f.real);
    }
  }
  return ok_status();
}

void Planner::pin_ancestors(const std::string& p, std::set<std::string>& pins) const {
  for (const auto& a : paths::ancestors(p)) {
    if (strictly_within_any(a, rw_) && std::find(rw_.begin(), rw_.end(), a) == rw_.end() && !within_any(a, ro_) &&
        rules_.visible(a)) {
      pins.insert(a);
    }
  }
}

// Mode strict: the root is empty. What exists inside is the system trees, allowRead and the
// backend's own (the command, the shim), read-only, and the writable roots; a guard or a mask
// elsewhere guards nothing that is there, and would only make its path appear.
void Planner::strict_root(std::vector<MountOp>& ops) const {
  struct Shown {
    std::string at, real;
    bool link;
  };
  std::vector<Shown> vis;
  auto add = [&](const std::string& path) {
    const PathFact* f = find_fact(facts_, path);
    if (!f || f->kind == PathKind::kMissing || f->real.empty()) return;
    // A top-level link of the system (/lib -> usr/lib) stays a link: a mask below its target
    // then covers both names.
    bool top_link = f->is_symlink && paths::parent(path) == "/";
    vis.push_back({top_link ? path : f->real, f->real, top_link});
    if (top_link) vis.push_back({f->real, f->real, false});
  };
  for (const auto& v : policy_.visible) add(v);
  for (const auto& a : policy_.allow_read) add(a);
  std::sort(vis.begin(), vis.end(), [](const Shown& a, const Shown& b) { return a.at < b.at; });
  std::vector<std::string> shown = rw_;
  std::vector<MountOp> out;
  for (const auto& v : vis) {
    if (!v.link && within_any(v.at, shown)) continue;  // a writable root or another tree shows it already
    if (std::find(shown.begin(), shown.end(), v.at) != shown.end()) continue;
    shown.push_back(v.at);
    MountOp op{MountKind::kVisible, v.at};
    op.source = v.real;
    op.link = v.link;
    out.push_back(op);
  }
  for (auto& op : ops) {
    if (!within_any(op.path, shown)) continue;
    // An allowRead carve-out of a mask that is not there: the tree is shown read-only already.
    bool shown_as_is = std::any_of(vis.begin(), vis.end(), [&](const Shown& v) { return v.at == op.path; });
    if (op.kind == MountKind::kCarve && !op.writable && shown_as_is) continue;
    out.push_back(op);
  }
  ops = std::move(out);
}

// Mode strict shows what allowRead and the backend name as they resolve: a link inside a
// writable tree (which an earlier run could have planted: vendor/sdk -> ~) would show its target
// instead, so it refuses the run. Besides the system trees, the backend names files only (the
// command, the shim): a directory found as the command is a link's doing too.
Status Planner::strict_links() const {
  const auto& system = strict_system_paths();
  auto check = [&](const std::string& path, bool file_only) -> Status {
    const PathFact* f = find_fact(facts_, path);
    if (!f || f->kind == PathKind::kMissing) return ok_status();
    if (f->real != path && within_any(paths::parent(path), rw_)) {
      return make_error(ErrorKind::kSandboxFailed,
                        fmt::format("\"{}\" (shown in mode strict) leads through a symbolic link inside a writable "
                                    "directory (to \"{}\"), which a sandboxed command could have planted; name the "
                                    "real path in the settings instead",
                                    path, f->real));
    }
    if (file_only && f->kind == PathKind::kDir) {
      return make_error(
          ErrorKind::kSandboxFailed,
          fmt::format("\"{}\" is a directory, not a program: mode strict shows the command's file only", path));
    }
    return ok_status();
  };
  for (const auto& v : policy_.visible) {
    bool is_system = std::find(system.begin(), system.end(), v) != system.end();
    WB_TRY(check(v, !is_system));
  }
  for (const auto& a : policy_.allow_read) WB_TRY(check(a, false));
  return ok_status();
}

// LinuxFacts::replaced: each copy bound read-only over its file, last (nothing is mounted
// below a file, and every mount above it comes first), instead of a read-only guard there.
// Where the file is hidden (denyRead), writable (the user's choice), or not shown (strict),
// nothing is placed.
void Planner::replace_files(std::vector<MountOp>& ops, const std::function<bool(const std::string&)>& writable) const {
  for (const auto& [path, source] : facts_.replaced) {
    bool shown = !policy_.strict || std::any_of(ops.begin(), ops.end(), [&](const MountOp& o) {
      return (o.kind == MountKind::kVisible || o.kind == MountKind::kRwBind) && !o.link &&
             paths::is_within(path, o.path);
    });
    if (!shown || !rules_.visible(path) || writable(path)) continue;
    ops.erase(std::remove_if(ops.begin(), ops.end(),
                             [&](const MountOp& o) { return o.kind == MountKind::kRoBind && o.path == path; }),
              ops.end());
    MountOp op{MountKind::kVisible, path};
    op.source = source;
    ops.push_back(op);
  }
}

void Planner::mounts() {
  // A writable root inside a guard (the cache dir inside wavebox's guarded caches) is bound over
  // that guard: between the two, the root decides.
  auto root_between = [&](const std::string& q, const std::string& p) {
    return std::any_of(rw_.begin(), rw_.end(), [&](const std::string& r) {
      return r != q && paths::is_within(r, q) && paths::is_within(p, r);
    });
  };
  auto guarded = [&](const std::string& p) {
    return std::any_of(ro_.begin(), ro_.end(),
                       [&](const std::string& q) { return paths::is_within(p, q) && !root_between(q, p); });
  };
  auto writable = [&](const std::string& p) { return within_any(p, rw_) && !guarded(p); };
  std::vector<MountOp> ops;
  for (const auto& r : rw_) ops.push_back({MountKind::kRwBind, r});
  std::set<std::string> pins;
  for (const auto& p : ro_) {
    // Inside another guard already: its mount covers this one, unless a writable root lies
    // between the two.
    bool covered = std::any_of(ro_.begin(), ro_.end(), [&](const std::string& q) {
      return q != p && paths::is_within(p, q) && !root_between(q, p);
    });
    if (covered) continue;
    if (rules_.visible(p) && within_any(p, rw_)) {
      ops.push_back({MountKind::kRoBind, p});
      pin_ancestors(p, pins);
    }
  }
  for (const auto& m : rules_.masks) {
    if (!rules_.visible_above(m)) continue;
    ops.push_back({mask_is_dir_.count(m) ? MountKind::kMaskDir : MountKind::kMaskFile, m});
    pin_ancestors(m, pins);
  }
  for (const auto& c : carves_) {
    if (rules_.deepest(c, true) == 1) ops.push_back({MountKind::kCarve, c, writable(c)});
  }
  for (const auto& p : pins) ops.push_back({MountKind::kPin, p});
  if (policy_.strict) strict_root(ops);

  std::sort(ops.begin(), ops.end(), [](const MountOp& a, const MountOp& b) {
    int da = paths::depth(a.path), db = paths::depth(b.path);
    if (da != db) return da < db;
    if (kind_order(a.kind) != kind_order(b.kind)) return kind_order(a.kind) < kind_order(b.kind);
    return a.path < b.path;
  });
  ops.erase(std::unique(ops.begin(), ops.end(),
                        [](const MountOp& a, const MountOp& b) { return a.kind == b.kind && a.path == b.path; }),
            ops.end());
  replace_files(ops, writable);
  for (auto& op : ops) {
    if (op.kind != MountKind::kMaskDir) continue;
    op.has_inner = std::any_of(ops.begin(), ops.end(), [&](const MountOp& o) {
      return o.path != op.path && paths::is_within(o.path, op.path);
    });
  }
  plan_.mounts = std::move(ops);
}

Result<Plan> Planner::run() {
  plan_.host_proc = policy_.host_proc;
  plan_.strict = policy_.strict && policy_.enabled;
  if (!policy_.enabled) {
    plan_.filesystem_open = true;
    return plan_;
  }
  WB_TRY(writable_roots());
  WB_TRY(write_guards());
  WB_TRY(read_rules());
  WB_TRY(stubs());
  if (!plan_.stubs.empty()) return plan_;
  if (plan_.strict) WB_TRY(strict_links());
  mounts();
  return plan_;
}

}  // namespace

const std::vector<std::string>& strict_system_paths() {
  static const std::vector<std::string> paths = {"/usr",   "/bin",    "/sbin", "/lib", "/lib32",
                                                 "/lib64", "/libx32", "/etc",  "/opt"};
  return paths;
}

Result<Plan> plan_mounts(const FsPolicy& policy, const LinuxFacts& facts) {
  return Planner(policy, facts).run();
}

bool write_allowed(const Plan& plan, const std::string& path) {
  // bwrap's own /dev (with /dev/shm) and /proc are not read-only binds of the host.
  if (paths::is_within(path, "/dev") || paths::is_within(path, "/proc")) return true;
  bool allowed = plan.filesystem_open;  // "--bind / /" or "--ro-bind / /"
  for (const auto& op : plan.mounts) {
    if (!paths::is_within(path, op.path)) continue;
    switch (op.kind) {
      case MountKind::kVisible:
        allowed = false;
        break;
      case MountKind::kRwBind:
      case MountKind::kPin:
        allowed = true;
        break;
      case MountKind::kCarve:
        allowed = op.writable;
        break;
      case MountKind::kRoBind:
      case MountKind::kMaskDir:
      case MountKind::kMaskFile:
        allowed = false;
        break;
    }
  }
  return allowed;
}

bool read_masked(const Plan& plan, const std::string& path) {
  bool masked = false;
  for (const auto& op : plan.mounts) {
    if (!paths::is_within(path, op.path)) continue;
    masked = op.kind == MountKind::kMaskDir || op.kind == MountKind::kMaskFile;
  }
  return masked;
}

bool shim_can_place(const Plan& plan) {
  // An empty root is bwrap's to build (the shim binds over the host's tree as it is).
  if (plan.strict) return false;
  return std::none_of(plan.mounts.begin(), plan.mounts.end(), [](const MountOp& op) {
    return paths::is_within(op.path, "/dev") || paths::is_within(op.path, "/proc");
  });
}

namespace {
bool fuse_eligible(const MountOp& op) {
  return (op.kind == MountKind::kMaskDir && !op.has_inner) || op.kind == MountKind::kMaskFile;
}
}  // namespace

std::vector<FuseMask> fuse_masks(const Plan& plan, const LinuxFacts& facts) {
  std::vector<FuseMask> out;
  if (!facts.fuse) return out;
  for (const auto& op : plan.mounts) {
    if (out.size() == WB_MAX_FUSE_MASKS) break;
    if (fuse_eligible(op)) out.push_back({op.path, op.kind == MountKind::kMaskDir});
  }
  return out;
}

std::string render_shim_mounts(const Plan& plan, const LinuxFacts& facts, const std::string& console) {
  std::string out;
  size_t fuse_left = facts.fuse ? WB_MAX_FUSE_MASKS : 0;  // as fuse_masks() counts
  auto record = [&](const char* kind, const std::string& a, const std::string& dst) {
    for (const std::string& f : {std::string(kind), a, dst}) {
      out += f;
      out += '\0';
    }
  };
  record(WB_MOUNT_ROOT, plan.filesystem_open ? WB_ROOT_RW : WB_ROOT_RO, "/");
  record(WB_MOUNT_DEV, console, "/dev");
  record(WB_MOUNT_PROC, plan.host_proc ? WB_PROC_HOST : WB_PROC_NEW, "/proc");
  for (const auto& op : plan.mounts) {
    switch (op.kind) {
      case MountKind::kVisible:  // the sandbox's /etc/hosts (a strict plan is bwrap's: shim_can_place)
        record(WB_MOUNT_RO, op.source, op.path);
        break;
      case MountKind::kRwBind:
      case MountKind::kPin:
        record(WB_MOUNT_RW, op.path, op.path);
        break;
      case MountKind::kCarve:
        record(op.writable ? WB_MOUNT_RW : WB_MOUNT_RO, op.path, op.path);
        break;
      case MountKind::kRoBind:
        record(WB_MOUNT_RO, op.path, op.path);
        break;
      case MountKind::kMaskFile:
        if (fuse_left > 0) {
          --fuse_left;
          record(WB_MOUNT_FUSE_FILE, facts.placeholder_file, op.path);
        } else {
          record(WB_MOUNT_RO, facts.placeholder_file, op.path);
        }
        break;
      case MountKind::kMaskDir:
        if (fuse_left > 0 && fuse_eligible(op)) {
          --fuse_left;
          record(WB_MOUNT_FUSE_DIR, "0000", op.path);
        } else {
          record(WB_MOUNT_TMPFS, op.has_inner ? "0711" : "0000", op.path);
        }
        break;
    }
  }
  return out;
}

std::string render_shim_devices_read_only() {
  std::string out = WB_MOUNT_DEVICES_RO;
  out += '\0';
  out += '\0';
  out += "/dev";
  out += '\0';
  return out;
}

std::vector<std::string> render_args(const Plan& plan, const LinuxFacts& facts, const RunSpec& run) {
  std::vector<std::string> a = {
      // CVE-2017-5226: without a new session the command could push input into our terminal.
      "--new-session", "--die-with-parent", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
  };
  if (!run.share_net) a.push_back("--unshare-net");
  bool v08 = facts.bwrap_version[0] > 0 || facts.bwrap_version[1] >= 8;
  // The shim placing every mount forbids user namespaces itself (it must stay in bwrap's to
  // mount /proc), whatever bwrap's version.
  if (v08 && run.shim_mounts != ShimMounts::kAll) a.push_back("--disable-userns");
  a.insert(a.end(), {"--cap-drop", "ALL"});
  if (run.shim_mounts != ShimMounts::kNone) {
    // Only for the shim's mounts: it drops both (bounding set included) before the command.
    a.insert(a.end(), {"--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP"});
  }
  if (run.shim_mounts == ShimMounts::kAll) {
    // And to set the user namespace limit to 0.
    a.insert(a.end(), {"--cap-add", "CAP_SYS_RESOURCE"});
    // The host's tree as it is: the shim takes its sources from it, then makes it read-only,
    // mounts /proc and builds /dev.
    a.insert(a.end(), {"--dev-bind", "/", "/"});
    if (run.shim_is_init) a.push_back("--as-pid-1");
    a.insert(a.end(), {"--chdir", run.cwd});
    return a;
  }
  // bwrap makes /proc/sys read-only only when access(2) calls it writable, which the kernel
  // never does for that directory; yet a sysctl file there lets uid 0 write when uid 0 is the
  // host's root (a root caller): without this bind, such a command could change the host's
  // kernel settings.
  if (!plan.strict) a.insert(a.end(), {plan.filesystem_open ? "--bind" : "--ro-bind", "/", "/"});
  a.insert(a.end(), {"--dev", "/dev"});
  if (plan.host_proc) {
    a.insert(a.end(), {"--ro-bind", "/proc", "/proc"});
  } else {
    a.insert(a.end(), {"--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"});
  }
  a.insert(a.end(), {"--perms", "1777", "--tmpfs", "/dev/shm"});
  std::vector<std::string> remount;
  for (const auto& op : plan.mounts) {
    switch (op.kind) {
      case MountKind::kVisible:
        if (op.link) {
          a.insert(a.end(), {"--symlink", op.source, op.path});
        } else {
          a.insert(a.end(), {"--ro-bind", op.source, op.path});
        }
        break;
      case MountKind::kRwBind:
      case MountKind::kPin:
        a.insert(a.end(), {"--bind", op.path, op.path});
        break;
      case MountKind::kCarve:
        a.insert(a.end(), {op.writable ? "--bind" : "--ro-bind", op.path, op.path});
        break;
      case MountKind::kRoBind:
        a.insert(a.end(), {"--ro-bind", op.path, op.path});
        break;
      case MountKind::kMaskDir:
        a.insert(a.end(), {"--perms", op.has_inner ? "0711" : "0000", "--tmpfs", op.path});
        remount.push_back(op.path);
        break;
      case MountKind::kMaskFile:
        a.insert(a.end(), {"--ro-bind", facts.placeholder_file, op.path});
        break;
    }
  }
  for (const auto& r : remount) a.insert(a.end(), {"--remount-ro", r});
  // The empty root bwrap made, and the directories it made in it for the mounts: read-only.
  if (plan.strict) a.insert(a.end(), {"--remount-ro", "/"});
  if (run.seccomp_fd >= 0 && run.shim_mounts == ShimMounts::kNone)
    a.insert(a.end(), {"--seccomp", std::to_string(run.seccomp_fd)});
  // wavebox-shim is pid 1 and reaps: it arms its parent-death signal before anything runs,
  // which bwrap's own init only does after starting the command.
  if (run.shim_is_init) a.push_back("--as-pid-1");
  a.insert(a.end(), {"--chdir", run.cwd});
  return a;
}

}  // namespace wb::lnx
