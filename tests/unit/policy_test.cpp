#include <catch2/catch.hpp>

#include <algorithm>

#include "core/policy.hpp"

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

TEST_CASE("default policy: workspace, temp dir and package caches writable, credentials unreadable") {
  SandboxSettings s;
  auto p = make_fs_policy(s, ctx(), false);
  CHECK(p.enabled);
  CHECK(has_write(p, "/home/u/proj"));
  CHECK(has_write(p, "/tmp/wavebox-1000/tmp"));
  CHECK(has_write(p, "/home/u/.npm"));
  CHECK_FALSE(has_write(p, "/home/u"));
  CHECK(denies_read(p, "/home/u/.ssh"));
  CHECK(denies_read(p, "/home/u/.git-credentials"));
}

TEST_CASE("FS-4 paths are always write-protected") {
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
}

TEST_CASE("strict mode drops the package caches; permissive drops the credential list") {
  SandboxSettings s;
  s.mode = Mode::kStrict;
  CHECK_FALSE(has_write(make_fs_policy(s, ctx(), false), "/home/u/.npm"));
  s.mode = Mode::kPermissive;
  CHECK_FALSE(denies_read(make_fs_policy(s, ctx(), false), "/home/u/.ssh"));
}

TEST_CASE("globs in allowWrite and denyWrite are dropped with a warning naming them") {
  SandboxSettings s;
  s.filesystem.allow_write = {"/home/u/out/*"};
  s.filesystem.deny_write = {"/home/u/proj/*.lock"};
  auto p = make_fs_policy(s, ctx(), false);
  CHECK_FALSE(has_write(p, "/home/u/out/*"));
  REQUIRE(p.warnings.size() == 2);
  CHECK_THAT(p.warnings[0], Catch::Contains("/home/u/out/*"));
}

TEST_CASE("network-only and filesystem.disabled turn filesystem rules off") {
  SandboxSettings s;
  CHECK_FALSE(make_fs_policy(s, ctx(), true).enabled);
  s.filesystem.disabled = true;
  CHECK_FALSE(make_fs_policy(s, ctx(), false).enabled);
}
