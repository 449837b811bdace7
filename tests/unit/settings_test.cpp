#include "core/settings.hpp"

#include <catch2/catch.hpp>

#include "core/rules.hpp"

using namespace wb;

namespace {
Result<Settings> load1(const std::string& text, const std::string& path = "/proj/.wave/settings.json") {
  return load_settings({{path, text}}, "/home/u");
}
}  // namespace

TEST_CASE("malformed JSON names the file, line and column") {
  auto r = load1("{\n  \"sandbox\": {\n    \"enabled\": tru\n  }\n}");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().kind == ErrorKind::kSettings);
  CHECK_THAT(r.error().message, Catch::Contains("/proj/.wave/settings.json:3:"));
}

TEST_CASE("an empty file is an error, not an empty policy") {
  auto r = load1("  \n");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("empty"));
}

TEST_CASE("a wrong type names the key path") {
  auto r = load1(R"({"sandbox":{"filesystem":{"allowWrite":"/tmp"}}})");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("sandbox.filesystem.allowWrite"));
  auto r2 = load1(R"({"sandbox":{"network":{"httpProxyPort":70000}}})");
  REQUIRE_FALSE(r2.ok());
  CHECK_THAT(r2.error().message, Catch::Contains("sandbox.network.httpProxyPort"));
  auto r3 = load1(R"({"sandbox":{"mode":"lax"}})");
  REQUIRE_FALSE(r3.ok());
  CHECK_THAT(r3.error().message, Catch::Contains("sandbox.mode"));
  auto r4 = load1(R"([1,2])");
  REQUIRE_FALSE(r4.ok());
}

TEST_CASE("unknown keys inside sandbox warn by name; other top-level keys are ignored") {
  auto r = load1(R"({"model":"x","sandbox":{"enabled":true,"colour":"blue"}})");
  REQUIRE(r.ok());
  REQUIRE(r->warnings.size() == 1);
  CHECK_THAT(r->warnings[0], Catch::Contains("sandbox.colour"));
}

TEST_CASE("a near miss of a restriction refuses the run, naming the key meant") {
  for (const char* text :
       {R"J({"sandbox":{"enabled":true,"filesytem":{}}})J",
        R"J({"sandbox":{"enabled":true,"allowedDomains":["a.com"]}})J",
        R"J({"sandbox":{"enabled":true,"network":{"allowedHosts":["a.com"]}}})J",
        R"J({"sandbox":{"enabled":true,"network":{"alowedDomains":["a.com"]}}})J",
        R"J({"sandbox":{"enabled":true,"filesystem":{"denyread":["/x"]}}})J",
        R"J({"permisions":{"deny":["Bash(rm:*)"]}})J", R"J({"permissions":{"denny":["Bash(rm:*)"]}})J"}) {
    auto r = load1(text);
    INFO(text);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("did you mean") || Catch::Contains("is spelled"));
  }
  auto w = load1(R"J({"sandbox":{"enabled":true,"network":{"allowUnixSocket":["/x"]}}})J");
  REQUIRE(w.ok());  // a widening key misspelled only warns, with the key meant
  CHECK_THAT(w->warnings.at(0), Catch::Contains("did you mean \"sandbox.network.allowUnixSockets\""));
}

TEST_CASE("Claude Code's and srt's files as they are written") {
  // null means not set; Claude Code's approval modes; keys of other platforms are known.
  auto r = load1(R"J({"sandbox":{"enabled":true,"network":{"httpProxyPort":null,"socksProxyPort":null,
    "allowMachLookup":["com.apple.x"]},"mode":"regular","allowAppleEvents":false,"enableWeakerNetworkIsolation":true}})J");
  REQUIRE(r.ok());
  CHECK(r->warnings.empty());
  CHECK_FALSE(r->sandbox.network.http_proxy_port.has_value());
  CHECK(r->sandbox.mode == Mode::kCompat);
  CHECK_FALSE(r->sandbox.auto_allow_bash_if_sandboxed);
  auto a = load1(R"J({"sandbox":{"enabled":true,"mode":"auto-allow"}})J");
  REQUIRE(a.ok());
  CHECK(a->sandbox.auto_allow_bash_if_sandboxed);
  // credentials: denied files become unreadable, variables denied or masked; injection refused.
  auto c = load1(R"J({"sandbox":{"enabled":true,"credentials":{"files":[{"path":"~/.npmrc","mode":"deny"},
    {"path":"./token","mode":"mask"}],"envVars":[{"name":"GH_TOKEN","mode":"deny"},{"name":"NPM_TOKEN","mode":"mask"}]}}})J");
  REQUIRE(c.ok());
  CHECK(c->sandbox.filesystem.deny_read == std::vector<std::string>{"/home/u/.npmrc", "/proj/token"});
  CHECK(c->sandbox.deny_environment == std::vector<std::string>{"GH_TOKEN"});
  CHECK(c->sandbox.mask_environment == std::vector<std::string>{"NPM_TOKEN"});
  auto inj = load1(
      R"J({"sandbox":{"enabled":true,"credentials":{"envVars":[{"name":"T","mode":"mask","injectHosts":["api.x.com"]}]}}})J");
  REQUIRE_FALSE(inj.ok());
  CHECK_THAT(inj.error().message, Catch::Contains("injectHosts"));
  auto mitm = load1(R"J({"network":{"allowedDomains":[],"mitmProxy":{"socketPath":"/s","domains":["a.com"]}}})J");
  REQUIRE_FALSE(mitm.ok());
  // srt's relative paths resolve against the working directory, as srt resolves them.
  auto srt = load_settings(
      {{"/home/u/.srt-settings.json", R"J({"filesystem":{"allowWrite":["."]},"network":{}})J", "/work/p"}}, "/home/u");
  REQUIRE(srt.ok());
  CHECK(srt->sandbox.filesystem.allow_write == std::vector<std::string>{"/work/p"});
  CHECK(srt->warnings.empty());  // the srt notice is said under -v only
}

TEST_CASE("excludedCommands: a bare name is the program with any arguments") {
  auto p = parse_excluded_command("git");
  CHECK(pattern_matches(p, "git"));
  CHECK(pattern_matches(p, "git push origin main"));
  CHECK_FALSE(pattern_matches(p, "gitk"));
  CHECK(pattern_matches(parse_excluded_command("git:*"), "git push"));
  CHECK(pattern_matches(parse_excluded_command("git *"), "git push"));
  CHECK_FALSE(pattern_matches(parse_excluded_command("npm test"), "npm test --watch"));
}

TEST_CASE("a project file's relative paths resolve against the project (the folder holding .wave/)") {
  auto r = load1(R"({"sandbox":{"filesystem":{"allowWrite":["out","~/cache","//abs"],"denyRead":["../secret"]}}})");
  REQUIRE(r.ok());
  CHECK(r->sandbox.filesystem.allow_write == std::vector<std::string>{"/proj/out", "/home/u/cache", "/abs"});
  CHECK(r->sandbox.filesystem.deny_read == std::vector<std::string>{"/secret"});
}

TEST_CASE("merge: objects deep, arrays concatenated without duplicates, scalars later wins") {
  auto r =
      load_settings({{"/a/s.json", R"({"sandbox":{"enabled":false,"network":{"allowedDomains":["a.com","b.com"]}}})"},
                     {"/b/s.json", R"({"sandbox":{"enabled":true,"network":{"allowedDomains":["b.com","c.com"]}}})"}},
                    "/home/u");
  REQUIRE(r.ok());
  CHECK(r->sandbox.enabled);
  CHECK(r->sandbox.network.allowed_domains == std::vector<std::string>{"a.com", "b.com", "c.com"});
}

TEST_CASE("Edit and Read permission rules feed the filesystem policy") {
  auto r =
      load1(R"J({"permissions":{"allow":["Edit(gen)"],"deny":["Edit(~/.config)","Read(~/.secrets)","Bash(rm:*)"]}})J");
  REQUIRE(r.ok());
  CHECK(r->sandbox.filesystem.allow_write == std::vector<std::string>{"/proj/gen"});
  CHECK(r->sandbox.filesystem.deny_write == std::vector<std::string>{"/home/u/.config"});
  CHECK(r->sandbox.filesystem.deny_read == std::vector<std::string>{"/home/u/.secrets"});
  CHECK(r->permissions.deny.size() == 3);
}

TEST_CASE("every documented sandbox key parses") {
  auto r = load1(R"({"sandbox":{
    "enabled":true,"failIfUnavailable":true,"enabledPlatforms":["linux"],
    "autoAllowBashIfSandboxed":false,"allowUnsandboxedCommands":false,"excludedCommands":["docker:*"],
    "ignoreViolations":{"*":["/dev/null"]},
    "network":{"allowedDomains":["x.com"],"deniedDomains":["y.com"],"allowUnixSockets":["/run/s"],
               "allowAllUnixSockets":false,"allowLocalBinding":true,"httpProxyPort":8080,"socksProxyPort":1081},
    "filesystem":{"allowWrite":[],"denyWrite":[],"denyRead":[],"allowRead":[],"disabled":false},
    "enableWeakerNestedSandbox":false,"bwrapPath":"/usr/bin/bwrap","mode":"strict",
    "resources":{"timeoutSeconds":1.5,"memoryMB":512,"pids":64,"cpuSeconds":10}}})");
  REQUIRE(r.ok());
  CHECK(r->warnings.empty());
  CHECK(r->sandbox.mode == Mode::kStrict);
  CHECK(*r->sandbox.network.http_proxy_port == 8080);
  CHECK(*r->sandbox.resources.timeout_seconds == 1.5);
  CHECK(r->sandbox.ignore_violations.at("*") == std::vector<std::string>{"/dev/null"});
  CHECK(*r->sandbox.enabled_platforms == std::vector<std::string>{"linux"});
}

TEST_CASE("a number out of range is a settings error, not a crash (found by fuzzing)") {
  auto r = load1("1E555");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("/proj/.wave/settings.json"));
}
