// The decision table (tests/data/decide_cases.json): profiles of settings, commands, and the
// expected decision, sandboxing and matched rule.
#include "core/decision.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/rules.hpp"
#include "core/shell_split.hpp"

using namespace wb;

TEST_CASE("decision table") {
  std::ifstream in(std::string(WAVEBOX_DATA_DIR) + "/decide_cases.json");
  REQUIRE(in.good());
  auto doc = nlohmann::json::parse(in);
  std::map<std::string, Settings> profiles;
  for (auto it = doc["profiles"].begin(); it != doc["profiles"].end(); ++it) {
    auto s = load_settings({{"/p/settings.json", it.value().dump()}}, "/home/u");
    REQUIRE(s.ok());
    profiles[it.key()] = *s;
  }
  REQUIRE(doc["cases"].size() >= 40);
  for (const auto& c : doc["cases"]) {
    DecisionInput in;
    in.command = c["command"];
    in.disable_sandbox = c.value("disable", false);
    in.sandbox_available = c.value("available", true);
    auto d = decide(profiles.at(c["profile"]), in);
    INFO("profile " << c["profile"] << ", command: " << in.command << " -> " << d.decision << " (" << d.reason << ")");
    CHECK(d.decision == c["decision"].get<std::string>());
    if (c.contains("sandboxed")) CHECK(d.sandboxed == c["sandboxed"].get<bool>());
    if (c.contains("matchedRule")) CHECK(d.matched_rule == c["matchedRule"].get<std::string>());
    if (c.contains("subcommands")) CHECK(d.subcommands == c["subcommands"].get<std::vector<std::string>>());
  }
}

TEST_CASE("splitting respects quotes, substitutions, subshells and groups") {
  auto s = [](const char* c) { return split_command(c).subcommands; };
  using V = std::vector<std::string>;
  CHECK(s("a && b || c ; d | e |& f & g") == V{"a", "b", "c", "d", "e", "f", "g"});
  CHECK(s("echo \"a && b\"") == V{"echo \"a && b\""});
  CHECK(s("echo 'x | y'") == V{"echo 'x | y'"});
  CHECK(s("echo a\\;b") == V{"echo a\\;b"});
  CHECK(s("echo $(date) x") == V{"date", "echo $(date) x"});
  CHECK(s("echo \"$((1+2))\" $((3))") == V{"echo \"$((1+2))\" $((3))"});
  CHECK(s("echo \"`id`\"") == V{"id", "echo \"`id`\""});
  CHECK(s("(a; b) && c") == V{"a", "b", "c"});
  CHECK(s("{ a; b; }") == V{"a", "b"});
  CHECK(s("cmd > out 2>&1 < in") == V{"cmd"});
  CHECK(s("cmd &> log") == V{"cmd"});
  CHECK(split_command("cmd > out").writes_file);
  CHECK(split_command("a | b >> log").writes_file);
  CHECK_FALSE(split_command("cmd >/dev/null 2>&1 < in").writes_file);
  CHECK_FALSE(split_command("diff <(a) <(b)").parsed);
  CHECK(s("  spaced   words  ") == V{"spaced words"});
  CHECK_FALSE(split_command("echo 'open").parsed);
  CHECK_FALSE(split_command("cat <<EOF\nx\nEOF").parsed);
  CHECK(split_command("a) b").subcommands == V{"a) b"});
}

TEST_CASE("splitting: deep nesting is unparsed, never a stack overflow") {
  for (const char* open : {"(", "{ ", "$("}) {
    std::string deep = "touch x\n";
    for (int i = 0; i < 40000; ++i) deep += open;
    CHECK_FALSE(split_command(deep).parsed);
  }
  std::string ok = "echo ";
  for (int i = 0; i < 20; ++i) ok += "$(";
  ok += "x";
  for (int i = 0; i < 20; ++i) ok += ")";
  CHECK(split_command(ok).parsed);
}

TEST_CASE("candidates strip assignments and wrappers step by step") {
  auto c = match_candidates("FOO=1 timeout 5 nice -n 3 env A=b nohup rm -f x");
  CHECK(c.back() == "rm -f x");
  CHECK(c.front() == "FOO=1 timeout 5 nice -n 3 env A=b nohup rm -f x");
  CHECK(match_candidates("timeout") == std::vector<std::string>{"timeout"});
}

TEST_CASE("candidates include the spellings that run the same program") {
  auto has = [](const std::string& cmd, const std::string& want) {
    auto c = match_candidates(cmd);
    return std::find(c.begin(), c.end(), want) != c.end();
  };
  CHECK(has("command rm -f x", "rm -f x"));
  CHECK(has("command -p rm -f x", "rm -f x"));
  CHECK(has("exec rm -f x", "rm -f x"));
  CHECK(has("exec -a foo rm -f x", "rm -f x"));
  CHECK(has("/usr/bin/rm -f x", "rm -f x"));
  CHECK(has("\\rm -f x", "rm -f x"));
  CHECK(has("\"rm\" -f x", "rm -f x"));
  CHECK(has("'r'm -f x", "rm -f x"));
  CHECK(has("env /bin/rm x", "rm x"));
  CHECK_FALSE(has("rmdir x", "rm x"));
}

TEST_CASE("rule grammar") {
  auto m = [](const char* rule, const char* cmd) { return pattern_matches(*parse_bash_rule(rule), cmd); };
  CHECK(m("Bash", "anything"));
  CHECK(m("Bash(npm run build)", "npm run build"));
  CHECK_FALSE(m("Bash(npm run build)", "npm run build2"));
  CHECK(m("Bash(npm run test:*)", "npm run test:unit") == false);
  CHECK(m("Bash(npm run test:*)", "npm run test --x"));
  CHECK(m("Bash(git commit *)", "git commit"));
  CHECK(m("Bash(git * main)", "git push origin main"));
  CHECK(m("Bash(echo \\*)", "echo *"));
  CHECK_FALSE(m("Bash(echo \\*)", "echo x"));
  CHECK_FALSE(parse_bash_rule("Edit(/x)"));
}

#include "netproxy/decision.hpp"

TEST_CASE("every host (--dangerously-allow-network) never covers a local address") {
  wb::NetworkSettings ns;
  ns.denied_domains = {"denied.test"};
  ns.allow_all_hosts = true;
  auto p = wb::netproxy::make_net_policy(ns);
  REQUIRE(p.ok());
  CHECK(wb::netproxy::decide_host(*p, "anything.test", 443).allow);
  CHECK_FALSE(wb::netproxy::decide_host(*p, "denied.test", 443).allow);
  const std::string lo("\x7f\x00\x00\x01", 4);
  CHECK_FALSE(wb::netproxy::check_resolved(*p, "name.test", "127.0.0.1", lo, false, 80).allow);
  CHECK_FALSE(wb::netproxy::check_resolved(*p, "127.0.0.1", "127.0.0.1", lo, false, 80).allow);
  CHECK(wb::netproxy::check_resolved(*p, "127.0.0.1", "127.0.0.1", lo, false, 80, true).allow);
  ns.allow_all_hosts = false;
  ns.allowed_domains = {"127.0.0.1:80"};
  auto named = wb::netproxy::make_net_policy(ns);
  REQUIRE(named.ok());
  CHECK(wb::netproxy::check_resolved(*named, "127.0.0.1", "127.0.0.1", lo, false, 80).allow);
}
