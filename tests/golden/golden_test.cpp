// Golden tests of the Linux planner: facts are built by hand, the rendered bwrap argument list is
// compared with tests/golden/*.txt. Regenerate with scripts/update-golden.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "bwrap/plan/plan.hpp"
#include "bwrap/shim/wire.h"
#include "core/paths.hpp"
#include "tests/golden/check_golden.hpp"

using namespace wb;
using namespace wb::lnx;
using wb::testing::check_golden;

namespace {

void fact(LinuxFacts& f, const std::string& p, PathKind k, bool link = false, std::string real = "") {
  PathFact pf;
  pf.kind = k;
  pf.is_symlink = link;
  pf.real = real.empty() ? p : real;
  if (k == PathKind::kMissing) pf.first_missing = p;
  f.paths[p] = pf;
}

// Every path the policy names is missing unless the test says otherwise.
void fill_missing(const FsPolicy& pol, LinuxFacts& f) {
  auto miss = [&](const std::string& p) {
    if (!f.paths.count(p)) {
      PathFact pf;
      pf.real = p;
      pf.first_missing = p;
      f.paths[p] = pf;
    }
  };
  for (auto& w : pol.writable) miss(w.path);
  for (auto& g : pol.deny_write) miss(g.path);
  for (auto& g : pol.deny_read) miss(g.path);
  for (auto& a : pol.allow_read) miss(a);
}

std::string render(const Plan& plan, const LinuxFacts& facts) {
  RunSpec run{{"sh", "-c", "true"}, "/home/u/proj", {}, false, -1};
  std::string out;
  for (const auto& a : render_args(plan, facts, run)) out += a + "\n";
  return out;
}

FsPolicy base_policy() {
  FsPolicy p;
  p.writable = {{"/home/u/proj", false}, {"/tmp/wavebox-1000/tmp", false}, {"/home/u/.npm", true}};
  p.deny_write = {{"/home/u/proj/.wave/settings.json", LeafType::kFile, true, ""},
                  {"/home/u/.bashrc", LeafType::kFile, true, ""},
                  {"/home/u/proj/.git/hooks", LeafType::kDir, true, ""},
                  {"/home/u/proj/.git/config", LeafType::kFile, true, ""},
                  {"/home/u/proj/.git/commondir", LeafType::kFile, true, ".\n"},
                  {"/home/u/proj/sub/deep/.git/hooks", LeafType::kDir, true, ""}};
  p.deny_read = {{"/home/u/.ssh", LeafType::kDir, true, ""}, {"/home/u/.netrc", LeafType::kFile, true, ""}};
  p.allow_read = {"/home/u/.ssh/known_hosts"};
  return p;
}

// The facts of base_policy's paths: every one exists.
LinuxFacts base_facts() {
  LinuxFacts f;
  f.bwrap_path = "/usr/bin/bwrap";
  f.bwrap_version[1] = 8;
  f.placeholder_file = "/tmp/wavebox-1000/unreadable";
  f.replaced["/etc/hosts"] = "/tmp/wavebox-1000/hosts";
  for (auto p : {"/home/u/proj", "/tmp/wavebox-1000/tmp", "/home/u/proj/.git/hooks", "/home/u/proj/sub/deep/.git/hooks",
                 "/home/u/.ssh"}) {
    fact(f, p, PathKind::kDir);
  }
  for (auto p : {"/home/u/proj/.wave/settings.json", "/home/u/.bashrc", "/home/u/proj/.git/config",
                 "/home/u/proj/.git/commondir", "/home/u/.netrc", "/home/u/.ssh/known_hosts"}) {
    fact(f, p, PathKind::kFile);
  }
  return f;
}

// The default policy planned against base_facts (filled into f).
Result<Plan> default_plan(LinuxFacts& f) {
  FsPolicy pol = base_policy();
  f = base_facts();
  fill_missing(pol, f);
  return plan_mounts(pol, f);
}

}  // namespace

TEST_CASE("plan: default workspace with a repository, a nested repository and read masks") {
  LinuxFacts f;
  auto plan = default_plan(f);
  REQUIRE(plan.ok());
  CHECK(plan->stubs.empty());
  check_golden("plan_default", render(*plan, f));
}

TEST_CASE("plan: the sandbox's /etc/hosts is bound unless the settings hide or open /etc/hosts") {
  auto hosts_op = [](const Plan& plan) {
    return std::count_if(plan.mounts.begin(), plan.mounts.end(), [](const MountOp& op) {
      return op.kind == MountKind::kVisible && op.path == "/etc/hosts" && op.source == "/tmp/wavebox-1000/hosts";
    });
  };
  LinuxFacts f;
  auto plan = default_plan(f);
  REQUIRE(plan.ok());
  CHECK(hosts_op(*plan) == 1);
  CHECK_FALSE(write_allowed(*plan, "/etc/hosts"));
  for (const char* hidden : {"/etc/hosts", "/etc"}) {
    INFO(hidden);
    FsPolicy pol = base_policy();
    pol.deny_read.push_back({hidden, std::string(hidden) == "/etc" ? LeafType::kDir : LeafType::kFile, true, ""});
    LinuxFacts g = base_facts();
    fact(g, hidden, std::string(hidden) == "/etc" ? PathKind::kDir : PathKind::kFile);
    fill_missing(pol, g);
    auto p = plan_mounts(pol, g);
    REQUIRE(p.ok());
    CHECK(hosts_op(*p) == 0);
    CHECK(read_masked(*p, "/etc/hosts"));
  }
  LinuxFacts none = base_facts();
  none.replaced.clear();
  FsPolicy pol = base_policy();
  fill_missing(pol, none);
  auto p = plan_mounts(pol, none);
  REQUIRE(p.ok());
  CHECK(hosts_op(*p) == 0);
}

TEST_CASE("plan: a file with credentials is shown as its masked copy, also where it is guarded in a writable home") {
  auto copy_op = [](const Plan& plan, const std::string& path) {
    return std::count_if(plan.mounts.begin(), plan.mounts.end(), [&](const MountOp& op) {
      return op.kind == MountKind::kVisible && op.path == path && op.source == "/tmp/wavebox-1000/masked-1";
    });
  };
  auto host_bind = [](const Plan& plan, const std::string& path) {
    return std::count_if(plan.mounts.begin(), plan.mounts.end(),
                         [&](const MountOp& op) { return op.kind != MountKind::kVisible && op.path == path; });
  };
  const std::string npmrc = "/home/u/.npmrc";
  LinuxFacts f = base_facts();
  fact(f, npmrc, PathKind::kFile);
  f.replaced[npmrc] = "/tmp/wavebox-1000/masked-1";
  FsPolicy pol = base_policy();
  fill_missing(pol, f);
  auto plan = plan_mounts(pol, f);
  REQUIRE(plan.ok());
  CHECK(copy_op(*plan, npmrc) == 1);
  CHECK(plan->mounts.back().path != "/home/u/proj");  // placed after the mounts above it

  // The home writable, the file guarded (the protected table's ~/.npmrc): the copy replaces
  // the read-only bind of the host's file.
  FsPolicy home = base_policy();
  home.writable.push_back({"/home/u"});
  home.deny_write.push_back({npmrc, LeafType::kFile, true, "npm"});
  LinuxFacts g = f;
  fact(g, "/home/u", PathKind::kDir);
  fill_missing(home, g);
  auto p = plan_mounts(home, g);
  REQUIRE(p.ok());
  CHECK(copy_op(*p, npmrc) == 1);
  CHECK(host_bind(*p, npmrc) == 0);
  CHECK_FALSE(write_allowed(*p, npmrc));

  // Writable and not guarded (the user's choice), or hidden by denyRead: nothing placed.
  FsPolicy open_home = base_policy();
  open_home.writable.push_back({"/home/u"});
  fill_missing(open_home, g);
  auto q = plan_mounts(open_home, g);
  REQUIRE(q.ok());
  CHECK(copy_op(*q, npmrc) == 0);
  FsPolicy hidden = base_policy();
  hidden.deny_read.push_back({npmrc, LeafType::kFile, true, ""});
  fill_missing(hidden, f);
  auto r = plan_mounts(hidden, f);
  REQUIRE(r.ok());
  CHECK(copy_op(*r, npmrc) == 0);
  CHECK(read_masked(*r, npmrc));
}

namespace {
std::string show_records(const std::string& recs) {
  std::string out;
  for (size_t i = 0, field = 0; i < recs.size(); ++i) {
    if (recs[i] != '\0') {
      out += recs[i];
    } else {
      out += ++field % 3 == 0 ? "\n" : " ";
    }
  }
  return out;
}
}  // namespace

TEST_CASE("plan: every mount placed by the shim, bwrap binds the host's tree and mounts /proc") {
  LinuxFacts f;
  auto plan = default_plan(f);
  REQUIRE(plan.ok());
  REQUIRE(shim_can_place(*plan));
  RunSpec run{{"sh", "-c", "true"}, "/home/u/proj", {}, false, 5};
  run.shim_mounts = ShimMounts::kAll;
  std::string out;
  for (const auto& a : render_args(*plan, f, run)) out += a + "\n";
  out += "-- shim mounts (kind, source or mode, target) --\n";
  std::string recs = render_shim_mounts(*plan, f, "/dev/pts/3");
  out += show_records(recs);
  check_golden("plan_shim_mounts", out);
  // One record per planned mount, in the plan's order, after the root, /dev and /proc.
  size_t fields = static_cast<size_t>(std::count(recs.begin(), recs.end(), '\0'));
  CHECK(fields == 3 * (plan->mounts.size() + 3));
}

TEST_CASE("plan: the shim's records keep the plan's order and kinds") {
  Plan plan;
  plan.mounts = {{MountKind::kRwBind, "/w"},
                 {MountKind::kRwBind, "/w/a/b"},
                 {MountKind::kRoBind, "/w/a"},
                 {MountKind::kPin, "/w/c"},
                 {MountKind::kMaskFile, "/w/d/secret"},
                 {MountKind::kMaskDir, "/w/e", false, true},
                 {MountKind::kCarve, "/w/e/f", false},
                 {MountKind::kCarve, "/w/e/g", true},
                 {MountKind::kMaskDir, "/w/h", false, false}};
  LinuxFacts f;
  f.placeholder_file = "/ph";
  CHECK(show_records(render_shim_mounts(plan, f, "")) ==
        "root ro /\ndev  /dev\nproc new /proc\nrw /w /w\nrw /w/a/b /w/a/b\nro /w/a /w/a\nrw /w/c /w/c\nro /ph "
        "/w/d/secret\n"
        "tmpfs 0711 /w/e\nro /w/e/f /w/e/f\nrw /w/e/g /w/e/g\ntmpfs 0000 /w/h\n");
  // With /dev/fuse: the masks that hold no mount report by FUSE (the old mask is the fallback);
  // the one with carve-outs stays a tmpfs. fuse_masks() lists them in the same order.
  f.fuse = true;
  CHECK(show_records(render_shim_mounts(plan, f, "")) ==
        "root ro /\ndev  /dev\nproc new /proc\nrw /w /w\nrw /w/a/b /w/a/b\nro /w/a /w/a\nrw /w/c /w/c\nfuse-file /ph "
        "/w/d/secret\n"
        "tmpfs 0711 /w/e\nro /w/e/f /w/e/f\nrw /w/e/g /w/e/g\nfuse-dir 0000 /w/h\n");
  const auto fm = fuse_masks(plan, f);
  REQUIRE(fm.size() == 2);
  CHECK((fm[0].path == "/w/d/secret" && !fm[0].is_dir));
  CHECK((fm[1].path == "/w/h" && fm[1].is_dir));
  // At most WB_MAX_FUSE_MASKS: the rest keep the old masks, and fuse_masks() agrees.
  Plan many;
  for (int i = 0; i < WB_MAX_FUSE_MASKS + 3; ++i)
    many.mounts.push_back({MountKind::kMaskDir, "/m/" + std::to_string(i)});
  const std::string recs = show_records(render_shim_mounts(many, f, ""));
  size_t n_fuse = 0;
  for (size_t at = recs.find("fuse-dir"); at != std::string::npos; at = recs.find("fuse-dir", at + 1)) ++n_fuse;
  CHECK(n_fuse == WB_MAX_FUSE_MASKS);
  CHECK(fuse_masks(many, f).size() == WB_MAX_FUSE_MASKS);
  CHECK(recs.find("tmpfs 0000 /m/" + std::to_string(WB_MAX_FUSE_MASKS) + "\n") != std::string::npos);
  f.fuse = false;
  CHECK(fuse_masks(plan, f).empty());
  plan.filesystem_open = true;
  CHECK(show_records(render_shim_mounts(plan, f, "")).rfind("root rw /\n", 0) == 0);
  plan.host_proc = true;  // enableWeakerNestedSandbox
  CHECK(show_records(render_shim_mounts(plan, f, "")).find("\nproc host /proc\n") != std::string::npos);
  CHECK(show_records(render_shim_devices_read_only()) == "devices-ro  /dev\n");
  CHECK(shim_can_place(plan));
  plan.mounts.push_back({MountKind::kRwBind, "/dev/shm"});
  CHECK_FALSE(shim_can_place(plan));
  plan.mounts.back() = {MountKind::kMaskFile, "/proc/cpuinfo"};
  CHECK_FALSE(shim_can_place(plan));
  plan.mounts.back() = {MountKind::kMaskFile, "/devices"};
  CHECK(shim_can_place(plan));
}

TEST_CASE("plan: protected paths are re-bound read-only after their writable root, ancestors pinned") {
  FsPolicy pol = base_policy();
  pol.writable.push_back({"/home/u", false});
  LinuxFacts f;
  f.placeholder_file = "/ph";
  for (auto p : {"/home/u", "/home/u/proj", "/tmp/wavebox-1000/tmp", "/home/u/proj/.git/hooks",
                 "/home/u/proj/sub/deep/.git/hooks", "/home/u/.ssh"}) {
    fact(f, p, PathKind::kDir);
  }
  for (auto p : {"/home/u/proj/.wave/settings.json", "/home/u/.bashrc", "/home/u/proj/.git/config",
                 "/home/u/proj/.git/commondir", "/home/u/.netrc"}) {
    fact(f, p, PathKind::kFile);
  }
  fill_missing(pol, f);
  auto plan = plan_mounts(pol, f);
  REQUIRE(plan.ok());
  const auto& m = plan->mounts;
  auto index = [&](MountKind k, const std::string& p) {
    for (size_t i = 0; i < m.size(); ++i) {
      if (m[i].kind == k && m[i].path == p) return static_cast<int>(i);
    }
    return -1;
  };
  int home = index(MountKind::kRwBind, "/home/u");
  int pin_git = index(MountKind::kPin, "/home/u/proj/.git");
  int pin_sub = index(MountKind::kPin, "/home/u/proj/sub/deep");
  int hooks = index(MountKind::kRoBind, "/home/u/proj/.git/hooks");
  int bashrc = index(MountKind::kRoBind, "/home/u/.bashrc");
  REQUIRE(home >= 0);
  REQUIRE(pin_git >= 0);
  REQUIRE(pin_sub >= 0);
  REQUIRE(hooks >= 0);
  REQUIRE(bashrc >= 0);
  CHECK(home < bashrc);
  CHECK(pin_git < hooks);
  CHECK(index(MountKind::kPin, "/home/u/proj") == -1);  // a writable root is a mount already
  CHECK(index(MountKind::kPin, "/home/u/proj/.wave") >= 0);
  check_golden("plan_home_writable", render(*plan, f));
}

TEST_CASE("plan: a missing guard needs nothing on the host: the supervisor refuses to create it") {
  FsPolicy pol;
  pol.writable = {{"/w", false}};
  pol.deny_write = {{"/w/.vscode", LeafType::kDir, true, ""},
                    {"/w/.wave/settings.json", LeafType::kFile, true, ""},
                    {"/home/u/.wave/settings.json", LeafType::kFile, true, ""}};
  LinuxFacts f;
  fact(f, "/w", PathKind::kDir);
  PathFact s;
  s.real = "/w/.wave/settings.json";
  s.first_missing = "/w/.wave";
  f.paths["/w/.wave/settings.json"] = s;
  fill_missing(pol, f);
  auto plan = plan_mounts(pol, f);
  REQUIRE(plan.ok());
  CHECK(plan->stubs.empty());
  std::vector<std::string> guarded;
  for (const auto& c : plan->create_guards) guarded.push_back(c.path);
  CHECK(guarded == std::vector<std::string>{"/w/.vscode", "/w/.wave/settings.json", "/home/u/.wave/settings.json"});
}

TEST_CASE("plan: a writable path reached through a link inside another writable tree is refused") {
  FsPolicy pol;
  pol.writable = {{"/w", false}, {"/w/build", false}};
  LinuxFacts f;
  fact(f, "/w", PathKind::kDir);
  fact(f, "/w/build", PathKind::kDir, true, "/home/u");
  auto plan = plan_mounts(pol, f);
  REQUIRE_FALSE(plan.ok());
  CHECK_THAT(plan.error().message, Catch::Contains("symbolic link"));
  pol.writable = {{"/w", false}, {"/elsewhere", false}};
  fact(f, "/elsewhere", PathKind::kDir, true, "/data/elsewhere");  // a link the sandbox cannot reach
  CHECK(plan_mounts(pol, f).ok());
}

TEST_CASE("plan: a guard that cannot be looked at is never dropped: what hides it is read-only") {
  FsPolicy pol;
  pol.writable = {{"/w", false}};
  pol.deny_write = {{"/w/locked/.git/hooks", LeafType::kDir, true, ""}};
  LinuxFacts f;
  fact(f, "/w", PathKind::kDir);
  PathFact s;
  s.real = "/w/locked/.git/hooks";
  s.creatable = false;
  s.unreachable_at = "/w/locked";
  f.paths["/w/locked/.git/hooks"] = s;
  auto plan = plan_mounts(pol, f);
  REQUIRE(plan.ok());
  CHECK_FALSE(write_allowed(*plan, "/w/locked/.git/hooks/pre-commit"));
  CHECK_FALSE(write_allowed(*plan, "/w/locked"));
  CHECK(write_allowed(*plan, "/w/other"));
  REQUIRE(plan->create_guards.size() == 1);
  CHECK(plan->warnings.size() == 1);
}

TEST_CASE("plan: a guarded symlink inside a writable tree is an error") {
  FsPolicy pol;
  pol.writable = {{"/w", false}};
  pol.deny_write = {{"/w/.mcp.json", LeafType::kFile, true, ""}};
  LinuxFacts f;
  fact(f, "/w", PathKind::kDir);
  fact(f, "/w/.mcp.json", PathKind::kFile, true, "/w/elsewhere.json");
  auto plan = plan_mounts(pol, f);
  REQUIRE_FALSE(plan.ok());
  CHECK_THAT(plan.error().message, Catch::Contains("symbolic link"));
}

TEST_CASE("plan: denyWrite wins over allowWrite") {
  FsPolicy pol;
  pol.writable = {{"/w", false}, {"/w/locked/out", false}};
  pol.deny_write = {{"/w/locked", LeafType::kDir, true, ""}};
  LinuxFacts f;
  fact(f, "/w", PathKind::kDir);
  fact(f, "/w/locked", PathKind::kDir);
  fact(f, "/w/locked/out", PathKind::kDir);
  auto plan = plan_mounts(pol, f);
  REQUIRE(plan.ok());
  for (const auto& m : plan->mounts) CHECK(m.path != "/w/locked/out");
}

TEST_CASE("plan: a writable workspace inside a denied-read home stays visible, its guards re-applied") {
  FsPolicy pol;
  pol.writable = {{"/home/u/proj", false}};
  pol.deny_read = {{"/home/u", LeafType::kDir, true, ""}};
  pol.deny_write = {{"/home/u/proj/.git/hooks", LeafType::kDir, true, ""},
                    {"/home/u/.bashrc", LeafType::kFile, true, ""}};
  LinuxFacts f;
  f.placeholder_file = "/ph";
  fact(f, "/home/u/proj", PathKind::kDir);
  fact(f, "/home/u", PathKind::kDir);
  fact(f, "/home/u/proj/.git/hooks", PathKind::kDir);
  fact(f, "/home/u/.bashrc", PathKind::kFile);
  auto plan = plan_mounts(pol, f);
  REQUIRE(plan.ok());
  const auto& m = plan->mounts;
  REQUIRE(m.size() == 4);
  CHECK(m[0].kind == MountKind::kMaskDir);
  CHECK(m[0].has_inner);
  CHECK(m[1].kind == MountKind::kRwBind);
  CHECK(m[2].kind == MountKind::kPin);
  CHECK(m[3].kind == MountKind::kRoBind);
  CHECK(m[3].path == "/home/u/proj/.git/hooks");
}

#include "bwrap/plan/seccomp_rules.hpp"

TEST_CASE("seccomp rule list is pinned (rules, not BPF bytes)") {
  check_golden("seccomp_rules", lnx::describe_rules(lnx::seccomp_rules({false})));
  auto with_unix = lnx::seccomp_rules({true});
  for (const auto& r : with_unix) {
    bool unix_rule = (r.syscall == "socket" || r.syscall == "socketpair") && !r.args.empty() && r.args[0].value == 1;
    CHECK_FALSE(unix_rule);
  }
}

TEST_CASE("plan: enableWeakerNestedSandbox leaves the host's /proc, read-only, where bwrap places the mounts") {
  Plan plan;
  LinuxFacts f;
  RunSpec spec{{"true"}, "/w", {}, false, -1};
  auto joined = [](const std::vector<std::string>& a) {
    std::string out;
    for (const auto& w : a) out += w + " ";
    return out;
  };
  std::string fresh = joined(render_args(plan, f, spec));
  CHECK(fresh.find("--proc /proc --ro-bind /proc/sys /proc/sys ") != std::string::npos);
  plan.host_proc = true;
  std::string host = joined(render_args(plan, f, spec));
  CHECK(host.find("--proc ") == std::string::npos);
  CHECK(host.find("--ro-bind /proc /proc ") != std::string::npos);
}

TEST_CASE("plan: mode strict builds an empty root holding only the system trees, the writable roots and allowRead") {
  FsPolicy pol = base_policy();
  pol.strict = true;
  pol.visible = strict_system_paths();
  pol.visible.push_back("/home/u/.local/bin/tool");  // the command, found in home
  LinuxFacts f = base_facts();
  for (auto p : {"/usr", "/etc", "/opt"}) fact(f, p, PathKind::kDir);
  fact(f, "/bin", PathKind::kDir, true, "/usr/bin");
  fact(f, "/lib", PathKind::kDir, true, "/usr/lib");
  fact(f, "/lib64", PathKind::kDir, true, "/usr/lib64");
  fact(f, "/home/u/.local/bin/tool", PathKind::kFile);
  fill_missing(pol, f);
  for (auto p : {"/sbin", "/lib32", "/libx32"}) fact(f, p, PathKind::kMissing);
  auto plan = plan_mounts(pol, f);
  REQUIRE(plan.ok());
  CHECK(plan->strict);
  CHECK_FALSE(shim_can_place(*plan));
  std::string args = render(*plan, f);
  // No bind of the host's root; home's guards and masks (not there) are not placed either.
  CHECK(args.find("--ro-bind\n/\n/\n") == std::string::npos);
  CHECK(args.find("/home/u/.bashrc") == std::string::npos);
  CHECK(args.find("/home/u/.netrc") == std::string::npos);
  check_golden("plan_strict", args);
}

TEST_CASE("plan: a guard inside another guard stays when a writable root lies between them") {
  // The package cache (writable) inside wavebox's guarded caches folder: a guard inside the cache
  // is not covered by the outer guard, whose mount the cache's own bind lies over.
  FsPolicy pol;
  pol.writable = {{"/w", false}, {"/w/caches/abc", false, true}};
  pol.deny_write = {{"/w/caches", LeafType::kDir, true, ""}, {"/w/caches/abc/bin", LeafType::kDir, true, ""}};
  LinuxFacts f;
  fact(f, "/w", PathKind::kDir);
  fact(f, "/w/caches", PathKind::kDir);
  fact(f, "/w/caches/abc", PathKind::kDir);
  fact(f, "/w/caches/abc/bin", PathKind::kDir);
  auto plan = plan_mounts(pol, f);
  REQUIRE(plan.ok());
  CHECK_FALSE(write_allowed(*plan, "/w/caches/abc/bin/x"));
  CHECK_FALSE(write_allowed(*plan, "/w/caches/other"));
  CHECK(write_allowed(*plan, "/w/caches/abc/y"));
  // Without a root between them the inner guard is covered, and needs no mount of its own.
  pol.writable = {{"/w", false}};
  auto plain = plan_mounts(pol, f);
  REQUIRE(plain.ok());
  CHECK_FALSE(write_allowed(*plain, "/w/caches/abc/bin/x"));
}
