#include "core/hooks.hpp"

#include <catch2/catch.hpp>

using namespace wb;
using namespace wb::hooks;

namespace {
const std::string kWb = "/opt/wb/bin/wavebox";
}

TEST_CASE("hooks: a command is wrapped unless it is exactly wavebox's plain run") {
  CHECK(classify("npm test", kWb).shape == Shape::kWrap);
  CHECK(classify("echo 'wavebox run' > x", kWb).shape == Shape::kWrap);
  CHECK(classify("'/opt/wb/bin/wavebox' run --no-prompt -c 'npm test'", kWb).shape == Shape::kWrapped);
  CHECK(classify("/opt/wb/bin/wavebox run -- npm test", kWb).shape == Shape::kWrapped);
  // Another wavebox (earlier on the agent's PATH, or a relative one) is never taken as ours.
  CHECK(classify("wavebox run -c 'npm test'", kWb).shape == Shape::kPolicyChange);
  CHECK(classify("./wavebox run -c x", kWb).shape == Shape::kPolicyChange);
  // Expansions, redirections, a second command: not the plain form.
  CHECK(classify("/opt/wb/bin/wavebox run -c x > /tmp/y", kWb).shape == Shape::kWrap);
  CHECK(classify("/opt/wb/bin/wavebox run -c \"$(evil)\"", kWb).shape != Shape::kWrapped);
}

TEST_CASE("hooks: a wavebox invocation that changes the policy is the user's call, wherever it is") {
  for (const char* c :
       {"/opt/wb/bin/wavebox run --dangerously-disable-sandbox -- ls",
        "/opt/wb/bin/wavebox run --settings /tmp/s.json -c ls", "/opt/wb/bin/wavebox run --allow-domain evil.com -c ls",
        "/opt/wb/bin/wavebox run --approve -c ls", "/opt/wb/bin/wavebox run --report-json /home/u/.bashrc -c ls",
        "wavebox hooks uninstall --claude", "wavebox trust .",
        "cd x && wavebox run --dangerously-disable-sandbox -- ls", "env A=1 wavebox-core run --allow-write / -c ls",
        "timeout 5 srt --settings s.json -c ls", "(wavebox hooks uninstall --codex)"}) {
    INFO(c);
    CHECK(classify(c, kWb).shape == Shape::kPolicyChange);
  }
  auto c = classify("/opt/wb/bin/wavebox run --dangerously-disable-sandbox -- ls", kWb);
  CHECK(c.approved == "/opt/wb/bin/wavebox run --approve --dangerously-disable-sandbox -- ls");
  CHECK(classify("wavebox hooks uninstall --claude", kWb).approved.empty());
}

TEST_CASE("hooks: the wrapped command line quotes what it carries") {
  CHECK(wrap(kWb, "echo 'a' && b", false) == "'/opt/wb/bin/wavebox' run --no-prompt -c 'echo '\\''a'\\'' && b'");
  CHECK(wrap(kWb, "x", true) == "'/opt/wb/bin/wavebox' run --no-prompt --approve -c 'x'");
  // The wrapped form is itself the plain form.
  CHECK(classify(wrap(kWb, "rm -rf node_modules; npm ci", false), kWb).shape == Shape::kWrapped);
}

TEST_CASE("hooks: entries are added once, beside the user's, and removed alone") {
  const std::string cmd = hook_command(kWb, Host::kClaude);
  const std::string user =
      R"({"model":"opus","hooks":{"PreToolUse":[{"matcher":"Edit","hooks":[{"type":"command","command":"lint"}]}]}})";
  bool changed = false;
  auto added = add_entry(Host::kClaude, user, cmd, changed);
  REQUIRE(added.ok());
  CHECK(changed);
  CHECK(find_entry(Host::kClaude, *added) == cmd);
  auto again = add_entry(Host::kClaude, *added, cmd, changed);
  REQUIRE(again.ok());
  CHECK_FALSE(changed);
  CHECK(*again == *added);
  // Another wavebox path: the entry is updated, not doubled.
  auto moved = add_entry(Host::kClaude, *added, hook_command("/usr/bin/wavebox", Host::kClaude), changed);
  REQUIRE(moved.ok());
  CHECK(changed);
  CHECK(find_entry(Host::kClaude, *moved) == hook_command("/usr/bin/wavebox", Host::kClaude));
  auto removed = remove_entry(Host::kClaude, *moved, changed);
  REQUIRE(removed.ok());
  CHECK(changed);
  CHECK(removed->find("wavebox") == std::string::npos);
  CHECK(removed->find("lint") != std::string::npos);
  CHECK(removed->find("opus") != std::string::npos);
  // Only ours: the file becomes empty (the caller deletes what it made).
  auto only = add_entry(Host::kCodex, "", hook_command(kWb, Host::kCodex), changed);
  REQUIRE(only.ok());
  auto none = remove_entry(Host::kCodex, *only, changed);
  REQUIRE(none.ok());
  CHECK(none->empty());
}

TEST_CASE("hooks: Cursor's file keeps its version; other shapes are refused, never rewritten") {
  bool changed = false;
  auto c = add_entry(Host::kCursor, "", hook_command(kWb, Host::kCursor), changed);
  REQUIRE(c.ok());
  CHECK(c->find("\"version\": 1") != std::string::npos);
  CHECK(c->find("beforeShellExecution") != std::string::npos);
  CHECK_FALSE(add_entry(Host::kCursor, R"({"version":2})", "x", changed).ok());
  CHECK_FALSE(add_entry(Host::kClaude, "{ not json", "x", changed).ok());
  CHECK_FALSE(add_entry(Host::kClaude, "[]", "x", changed).ok());
  CHECK_FALSE(add_entry(Host::kClaude, R"({"hooks":[]})", "x", changed).ok());
  CHECK_FALSE(add_entry(Host::kClaude, R"({"hooks":{"PreToolUse":{}}})", "x", changed).ok());
}

TEST_CASE("hooks: OpenCode's plugin is known by its first line") {
  CHECK(is_our_plugin(opencode_plugin(kWb)));
  CHECK_FALSE(is_our_plugin("export const Mine = async () => ({});\n"));
  CHECK(opencode_plugin("/a \"b\"/wavebox").find(R"("/a \"b\"/wavebox")") != std::string::npos);
}
