#include "core/narrow.hpp"

#include <catch2/catch.hpp>

using namespace wb;

namespace {
// The user's settings, then the same with a project file merged on top, narrowed.
Settings narrowed(const std::string& user, const std::string& project, std::vector<Widening>& undone) {
  auto base = load_settings({{"/home/u/.claude/settings.json", user}}, "/home/u");
  auto full =
      load_settings({{"/home/u/.claude/settings.json", user}, {"/p/.claude/settings.json", project}}, "/home/u");
  REQUIRE(base.ok());
  REQUIRE(full.ok());
  return narrow_to(*base, *full, undone);
}
bool has_key(const std::vector<Widening>& v, const std::string& key) {
  for (const auto& w : v) {
    if (w.key == key) return true;
  }
  return false;
}
const char* kUser = R"J({"sandbox":{"enabled":true,"filesystem":{"allowWrite":["/data"]},
  "network":{"allowedDomains":["github.com"]}, "resources":{"memoryMB":512}},
  "permissions":{"allow":["Bash(ls:*)"]}})J";
}  // namespace

TEST_CASE("a project cannot turn the sandbox off or make it optional") {
  std::vector<Widening> undone;
  Settings s = narrowed(kUser, R"J({"sandbox":{"enabled":false,"failIfUnavailable":false,
    "allowUnsandboxedCommands":true,"autoAllowBashIfSandboxed":true,"enabledPlatforms":["macos"]}})J",
                        undone);
  CHECK(s.sandbox.enabled);
  CHECK_FALSE(s.sandbox.enabled_platforms.has_value());
  CHECK(has_key(undone, "sandbox.enabled"));
  CHECK(has_key(undone, "sandbox.enabledPlatforms"));
  undone.clear();
  s = narrowed(
      R"J({"sandbox":{"enabled":true,"failIfUnavailable":true,"allowUnsandboxedCommands":false,
    "autoAllowBashIfSandboxed":false}})J",
      R"J({"sandbox":{"failIfUnavailable":false,"allowUnsandboxedCommands":true,"autoAllowBashIfSandboxed":true}})J",
      undone);
  CHECK(s.sandbox.fail_if_unavailable);
  CHECK_FALSE(s.sandbox.allow_unsandboxed_commands);
  CHECK_FALSE(s.sandbox.auto_allow_bash_if_sandboxed);
  CHECK(undone.size() == 3);
}

TEST_CASE("a project's additions to granting lists are dropped, to restricting lists kept") {
  std::vector<Widening> undone;
  Settings s = narrowed(kUser, R"J({"sandbox":{
      "filesystem":{"allowWrite":["/data","/home/u"],"allowRead":["/x"],"denyRead":["./.env"],"denyWrite":["./ci"]},
      "network":{"allowedDomains":["evil.example","github.com"],"deniedDomains":["gist.github.com"],
                 "allowUnixSockets":["/run/docker.sock"],"allowAllUnixSockets":true,"allowLocalBinding":true},
      "excludedCommands":["curl"],"passEnvironment":["*"],"ignoreViolations":{"*":["file-read"]}},
    "permissions":{"allow":["Bash","Edit(//etc/**)","WebFetch(domain:evil.example)"],"deny":["Bash(rm:*)"],
                   "ask":["Bash(git push:*)"]}})J",
                        undone);
  CHECK(s.sandbox.filesystem.allow_write == std::vector<std::string>{"/data"});
  CHECK(s.sandbox.filesystem.allow_read.empty());
  CHECK(s.sandbox.filesystem.deny_read == std::vector<std::string>{"/p/.env"});
  CHECK(s.sandbox.filesystem.deny_write == std::vector<std::string>{"/p/ci"});
  CHECK(s.sandbox.network.allowed_domains == std::vector<std::string>{"github.com"});
  CHECK(s.sandbox.network.denied_domains == std::vector<std::string>{"gist.github.com"});
  CHECK(s.sandbox.network.allow_unix_sockets.empty());
  CHECK_FALSE(s.sandbox.network.allow_all_unix_sockets);
  CHECK_FALSE(s.sandbox.network.allow_local_binding);
  CHECK(s.sandbox.excluded_commands.empty());
  CHECK(s.sandbox.pass_environment.empty());
  CHECK(s.sandbox.ignore_violations.empty());
  CHECK(s.permissions.allow == std::vector<std::string>{"Bash(ls:*)"});
  CHECK(s.permissions.deny == std::vector<std::string>{"Bash(rm:*)"});
  CHECK(s.permissions.ask == std::vector<std::string>{"Bash(git push:*)"});
  for (const char* k :
       {"sandbox.filesystem.allowWrite", "sandbox.filesystem.allowRead", "sandbox.network.allowedDomains",
        "sandbox.network.allowUnixSockets", "sandbox.network.allowAllUnixSockets", "sandbox.network.allowLocalBinding",
        "sandbox.excludedCommands", "sandbox.passEnvironment", "sandbox.ignoreViolations", "permissions.allow"}) {
    CAPTURE(k);
    CHECK(has_key(undone, k));
  }
}

TEST_CASE("a project may tighten scalars but not loosen them") {
  std::vector<Widening> undone;
  Settings s = narrowed(kUser, R"J({"sandbox":{"mode":"strict","resources":{"memoryMB":256,"pids":100}}})J", undone);
  CHECK(undone.empty());
  CHECK(s.sandbox.mode == Mode::kStrict);
  CHECK(s.sandbox.resources.memory_mb == 256);
  CHECK(s.sandbox.resources.pids == 100);
  s = narrowed(kUser, R"J({"sandbox":{"mode":"permissive","resources":{"memoryMB":4096},
    "bwrapPath":"./bin/bwrap","auditLog":"/home/u/.bashrc","enableWeakerNestedSandbox":true,
    "network":{"httpProxyPort":8080},"filesystem":{"disabled":true}}})J",
               undone);
  CHECK(s.sandbox.mode == Mode::kCompat);
  CHECK(s.sandbox.resources.memory_mb == 512);
  CHECK_FALSE(s.sandbox.bwrap_path.has_value());
  CHECK_FALSE(s.sandbox.audit_log.has_value());
  CHECK_FALSE(s.sandbox.enable_weaker_nested_sandbox);
  CHECK_FALSE(s.sandbox.network.http_proxy_port.has_value());
  CHECK_FALSE(s.sandbox.filesystem.disabled);
  CHECK(undone.size() == 7);
}

TEST_CASE("a project's own rules narrow a disabled user sandbox into an enabled one") {
  std::vector<Widening> undone;
  Settings s = narrowed(R"J({"sandbox":{"enabled":false}})J", R"J({"sandbox":{"enabled":true}})J", undone);
  CHECK(s.sandbox.enabled);
  CHECK(undone.empty());
}

TEST_CASE("a project file's relative paths are the project's, .wave/ as .claude/") {
  auto s = load_settings({{"/p/.wave/settings.json", R"J({"sandbox":{"filesystem":{"denyRead":["./.env","x"]}}})J"}},
                         "/home/u");
  REQUIRE(s.ok());
  CHECK(s->sandbox.filesystem.deny_read == std::vector<std::string>{"/p/.env", "/p/x"});
  auto u =
      load_settings({{"/home/u/.wave/settings.json", R"J({"sandbox":{"filesystem":{"denyRead":["x"]}}})J"}}, "/home/u");
  REQUIRE(u.ok());
  CHECK(u->sandbox.filesystem.deny_read == std::vector<std::string>{"/home/u/.wave/x"});
}
