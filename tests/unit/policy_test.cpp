#include "core/policy.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

#include "core/paths.hpp"
#include "core/protect.hpp"
#include "core/secrets.hpp"

using namespace wb;

namespace {
PolicyContext ctx() {
  PolicyContext c;
  c.home = "/home/u";
  c.workspace = "/home/u/proj";
  c.tmpdir = "/tmp/wavebox-1000/tmp";
  c.state_dir = "/tmp/wavebox-1000";
  c.settings_files = {"/home/u/proj/.wave/settings.json"};
  return c;
}
bool has_write(const FsPolicy& p, const std::string& path) {
  return std::any_of(p.writable.begin(), p.writable.end(), [&](const WritableRoot& w) { return w.path == path; });
}
bool denies_write(const FsPolicy& p, const std::string& path) {
  return std::any_of(p.deny_write.begin(), p.deny_write.end(), [&](const GuardedPath& g) { return g.path == path; });
}
bool denies_read(const FsPolicy& p, const std::string& path) {
  return std::any_of(p.deny_read.begin(), p.deny_read.end(), [&](const GuardedPath& g) { return g.path == path; });
}
}  // namespace

TEST_CASE("default policy: workspace and temp dir writable, nothing in home, credentials unreadable") {
  SandboxSettings s;
  auto p = make_fs_policy(s, ctx(), false);
  CHECK(p.enabled);
  CHECK(has_write(p, "/home/u/proj"));
  CHECK(has_write(p, "/tmp/wavebox-1000/tmp"));
  // The package managers' caches are the sandbox's own, in its temp dir (engine/environment.cpp).
  CHECK_FALSE(has_write(p, "/home/u/.npm"));
  CHECK_FALSE(has_write(p, "/home/u"));
  CHECK(denies_read(p, "/home/u/.ssh"));
  CHECK(denies_read(p, "/home/u/.git-credentials"));
}

TEST_CASE("the protected set is always write-protected") {
  SandboxSettings s;
  s.filesystem.allow_write = {"/home/u"};
  auto p = make_fs_policy(s, ctx(), false);
  CHECK(denies_write(p, "/home/u/proj/.wave/settings.json"));
  CHECK(denies_write(p, "/home/u/.bashrc"));
  CHECK(denies_write(p, "/home/u/proj/.vscode"));
  CHECK(denies_write(p, "/home/u/proj/.mcp.json"));
  CHECK(denies_write(p, "/home/u/proj/.claude"));
  CHECK(denies_write(p, "/home/u/proj/.wave"));
  CHECK(denies_write(p, "/tmp/wavebox-1000/stubs"));
  CHECK(denies_write(p, "/tmp/wavebox-1000/seccomp"));
  // Home as a writable tree: what the host runs from there stays protected.
  for (const char* rel : {".local/bin", ".local/lib", ".ssh", ".config/autostart", ".config/systemd", ".claude.json",
                          ".claude", ".npm/_npx", ".local/share/pnpm", ".aws", ".kube", ".docker", ".npmrc",
                          ".cargo/config.toml", ".vimrc", ".config/git", ".gitconfig"}) {
    CHECK(denies_write(p, std::string("/home/u/") + rel));
  }
  for (const char* rel :
       {".envrc", ".cursor", ".devcontainer", ".gemini", ".zed", ".gitconfig", ".ripgreprc", ".bashrc"}) {
    CHECK(denies_write(p, std::string("/home/u/proj/") + rel));
  }
  // A tracked file git runs nothing from: not guarded (docs/protected.md says why).
  CHECK_FALSE(denies_write(p, "/home/u/proj/.gitmodules"));
  CHECK(std::any_of(p.zones.begin(), p.zones.end(), [](const FsPolicy::Zone& z) {
    return z.dir == "/tmp/wavebox-1000" && z.carve == std::vector<std::string>{"/tmp/wavebox-1000/tmp"};
  }));
}

TEST_CASE("creation guard: protected names anywhere, missing guarded paths and their ancestors, zones") {
  CreationGuard g;
  g.add_path("/w/.git/hooks", "git hooks");
  g.add_path("/h/.ssh/authorized_keys", "sshd");
  g.add_zone("/w/.git/modules", {"/w/.git/modules/a"}, "submodules");
  CHECK_FALSE(g.refuses("/w/a/.mcp.json").empty());
  CHECK_FALSE(g.refuses("/w/deep/er/.wave").empty());
  CHECK_FALSE(g.refuses("/w/x/.envrc").empty());
  CHECK_FALSE(g.refuses("/w/.git/hooks").empty());
  CHECK_FALSE(g.refuses("/w/.git/hooks/pre-commit").empty());
  CHECK_FALSE(g.refuses("/h/.ssh").empty());  // a directory that would hold a guarded path (tree)
  CHECK_FALSE(g.refuses("/w/.git/modules/b").empty());
  CHECK_FALSE(g.refuses("/w/.git/modules/b/hooks").empty());
  CHECK(g.refuses("/w/.git/modules/a/objects").empty());
  CHECK(g.refuses("/w/.git/index.lock").empty());
  CHECK(g.refuses("/w/src/main.c").empty());
  CHECK(g.refuses("/w/.github").empty());
  CHECK(g.refuses("/w/.gitignore").empty());
  CHECK(g.refuses("/w/sub/.git").empty());            // new repositories are allowed, warned about after the run
  CHECK_FALSE(g.refuses("/w/.git/modules").empty());  // the zone itself, moved away and made again
  CHECK_FALSE(g.moving_refused("/w/.git/modules").empty());
  CHECK(g.moving_refused("/w/.git/objects").empty());
  // Protected names are allowed in directories the run made, except .wave; a rename or link puts
  // a tree in place, so a directory that would hold a guard counts then.
  CHECK(g.refuses("/w/clone/.vscode", true).empty());
  CHECK_FALSE(g.refuses("/w/clone/.wave", true).empty());
  CHECK(g.refuses("/h/.ssh", false, false).empty());
  // Names compared as a case-insensitive volume compares them: there ".WAVE" is ".wave" and
  // ".Git/HOOKS" is ".git/hooks" (refused on every file system: fail closed).
  CHECK_FALSE(g.refuses("/w/a/.WAVE").empty());
  CHECK_FALSE(g.refuses("/w/a/.EnvRC").empty());
  CHECK_FALSE(g.refuses("/w/.Git/HOOKS/pre-commit").empty());
  CHECK_FALSE(g.refuses("/W/.git/modules/b").empty());
  CHECK_FALSE(g.refuses("/w/clone/.Wave", true).empty());
  CHECK(wb::is_scanned_name(".GIT"));
  CHECK(wb::is_scanned_name(".VSCode"));
  CHECK(wb::paths::same_name("Settings.JSON", "settings.json"));
  CHECK_FALSE(wb::paths::same_name("settings.json", "settings.jsonx"));
  CHECK(wb::paths::is_within_any_case("/W/.Git/x", "/w/.git"));
  CHECK_FALSE(wb::paths::is_within_any_case("/w/.gitx", "/w/.git"));
  CHECK_FALSE(g.refuses("/h/.ssh", false, true).empty());
}

TEST_CASE("permissive drops the credential list") {
  SandboxSettings s;
  s.mode = Mode::kPermissive;
  CHECK_FALSE(denies_read(make_fs_policy(s, ctx(), false), "/home/u/.ssh"));
}

TEST_CASE("globs in allowWrite and denyWrite are kept for the planner (never dropped)") {
  // bwrap/plan/facts.cpp (expand_globs) turns them into what matches when the run starts, and says
  // what that leaves out: a dropped denyWrite would be less protection than the settings say.
  SandboxSettings s;
  s.filesystem.allow_write = {"/home/u/out/*"};
  s.filesystem.deny_write = {"/home/u/proj/*.lock"};
  auto p = make_fs_policy(s, ctx(), false);
  CHECK(has_write(p, "/home/u/out/*"));
  CHECK(std::any_of(p.deny_write.begin(), p.deny_write.end(),
                    [](const GuardedPath& g) { return g.path == "/home/u/proj/*.lock"; }));
}

TEST_CASE("network-only and filesystem.disabled turn filesystem rules off") {
  SandboxSettings s;
  CHECK_FALSE(make_fs_policy(s, ctx(), true).enabled);
  s.filesystem.disabled = true;
  CHECK_FALSE(make_fs_policy(s, ctx(), false).enabled);
}

TEST_CASE("credential variables stay out unless passed") {
  std::vector<std::string> env = {"PATH=/usr/bin",    "HOME=/h",        "GITHUB_TOKEN=x",
                                  "SSH_AUTH_SOCK=/s", "MY_API_KEY=k",   "AWS_SECRET_ACCESS_KEY=s",
                                  "DB_PASSWORD=p",    "TERM=xterm",     "npm_config_cache=/c",
                                  "LANG=C",           "CI_JOB_TOKEN=t", "TOKENIZERS_PARALLELISM=false"};
  std::vector<std::string> removed;
  auto out = without_credentials(env, {"CI_*"}, &removed);
  CHECK(out == std::vector<std::string>{"PATH=/usr/bin", "HOME=/h", "TERM=xterm", "npm_config_cache=/c", "LANG=C",
                                        "CI_JOB_TOKEN=t", "TOKENIZERS_PARALLELISM=false"});
  CHECK(removed.size() == 5);
  CHECK(without_credentials({"GH_TOKEN=1"}, {"GH_TOKEN"}).size() == 1);
}

TEST_CASE("protection_reason: the deepest guard's reason, said once, with what to do") {
  std::vector<GuardedPath> g = {
      {"/w/.git", LeafType::kDir, true, "", ""},
      {"/w/.git/hooks", LeafType::kDir, true, "", "git runs a repository's hooks"},
      {"/w/.git/hooks/pre-commit", LeafType::kFile, true, "", ""},
      {"/h/.bashrc", LeafType::kFile, true, "", "protected: bash"},
  };
  CHECK(protection_reason(g, "/w/.git/hooks/pre-commit") ==
        "protected: git runs a repository's hooks; change it outside the sandbox");
  CHECK(protection_reason(g, "/w/.git/hooks") ==
        "protected: git runs a repository's hooks; change it outside the sandbox");
  CHECK(protection_reason(g, "/h/.bashrc") == "protected: bash; change it outside the sandbox");
  CHECK(protection_reason(g, "/w/.git/HEAD").empty());  // a guard without a reason says nothing
  CHECK(protection_reason(g, "/w/.github/x").empty());  // a sibling with the same prefix is not inside
  CHECK(protection_reason(g, "/usr/lib/x").empty());
}

TEST_CASE("policy: a directory on the caller's PATH inside a writable root is guarded; others cost nothing") {
  SandboxSettings s;
  s.filesystem.allow_write = {"/opt/tools"};
  PolicyContext c = ctx();
  c.path_entries = {"/home/u/proj/node_modules/.bin", "/opt/tools/bin/", "/usr/bin", "/home/u/.local/bin", "."};
  auto p = make_fs_policy(s, c, false);
  CHECK(denies_write(p, "/home/u/proj/node_modules/.bin"));
  CHECK(denies_write(p, "/opt/tools/bin"));
  CHECK_FALSE(denies_write(p, "/usr/bin"));  // read-only already: no guard, no mount
  CHECK(has_write(p, "/opt/tools"));
  CHECK(std::any_of(p.warnings.begin(), p.warnings.end(),
                    [](const std::string& w) { return w.find("relative entry \".\"") != std::string::npos; }));
  c.path_entries = {"/usr/bin", "/bin"};
  CHECK(make_fs_policy(s, c, false).warnings.empty());
}

TEST_CASE("policy: the scan's findings make a new value; the given policy is unchanged") {
  FsPolicy given;
  given.writable = {{"/w"}};
  given.deny_write = {{"/w/.bashrc"}};
  Findings found;
  found.deny_write = {{"/w/sub/.git/hooks", LeafType::kDir}};
  found.writable = {"/repo/.git"};
  found.zones = {{"/w/.git/modules", {}, "submodules"}};
  const std::string before = policy_key(given);
  const FsPolicy planned = with_findings(given, found);
  CHECK(policy_key(given) == before);
  REQUIRE(planned.deny_write.size() == 2);
  CHECK(planned.deny_write[1].path == "/w/sub/.git/hooks");
  REQUIRE(planned.writable.size() == 2);
  CHECK(planned.writable[1].path == "/repo/.git");
  CHECK(planned.zones.size() == 1);
  CHECK(policy_key(planned) != before);
}

TEST_CASE("policy: the key changes with every field, including those of its parts") {
  const FsPolicy base = [] {
    FsPolicy p;
    p.writable = {{"/w"}};
    p.deny_write = {{"/w/a"}};
    p.deny_read = {{"/r"}};
    p.zones = {{"/z", {"/z/c"}, "why"}};
    return p;
  }();
  const std::string k = policy_key(base);
  std::vector<FsPolicy> changed(12, base);
  changed[0].enabled = false;
  changed[1].host_proc = true;
  changed[2].writable[0].optional = true;
  changed[3].writable[0].over_guard = true;
  changed[4].deny_write[0].type = LeafType::kDir;
  changed[5].deny_write[0].stub_if_missing = false;
  changed[6].deny_write[0].stub_content = ".\n";
  changed[7].deny_read[0].why = "x";
  changed[8].zones[0].carve.push_back("/z/d");
  changed[9].strict = true;
  changed[10].visible = {"/bin"};
  changed[11].allow_read = {"/r/ok"};
  for (const auto& c : changed) CHECK(policy_key(c) != k);
  // Lengths go first: moving a character between two fields changes the key.
  FsPolicy a = base, b = base;
  a.allow_read = {"ab", "c"};
  b.allow_read = {"a", "bc"};
  CHECK(policy_key(a) != policy_key(b));
}
