// macOS: the pure pieces around the profile: the invocation, the environment, the log reader's
// parser.
#include "seatbelt/plan.hpp"

#include <catch2/catch.hpp>

#include "netproxy/socks_parse.hpp"
#include "seatbelt/denials.hpp"

using namespace wb;

TEST_CASE("macOS invocation: sandbox-exec by absolute path, parameters as -D, the helper, then the command") {
  seatbelt::Profile p;
  p.text = "(version 1)\n(deny default)\n";
  p.params = {{"WRITABLE_0", "/Users/a/p q"}, {"TMPDIR_0", "/x"}};
  seatbelt::Facts f;
  f.helper = "/opt/wavebox/bin/wavebox";
  auto inv = seatbelt::invocation(f, p, "/usr/bin/make", {"make", "-j4"}, {"A=1"});
  CHECK(inv.program == "/usr/bin/sandbox-exec");
  std::vector<std::string> want = {"-p",
                                   p.text,
                                   "-DWRITABLE_0=/Users/a/p q",
                                   "-DTMPDIR_0=/x",
                                   "--",
                                   f.helper,
                                   "__sandbox-helper",
                                   "3",
                                   "/usr/bin/make",
                                   "make",
                                   "-j4"};
  CHECK(inv.args == want);
  auto j = seatbelt::invocation_json(inv, p);
  CHECK(j["program"] == "/usr/bin/sandbox-exec");
  CHECK(j["params"]["WRITABLE_0"] == "/Users/a/p q");
  CHECK(j["env"]["A"] == "1");
  CHECK(j["profile"] == p.text);
}

TEST_CASE("macOS environment: the proxy with its credential, nothing exempt, the caller's proxies replaced") {
  auto env =
      seatbelt::sandbox_environment({"PATH=/bin", "https_proxy=http://evil:1", "NO_PROXY=*", "WAVEBOX_SANDBOX=0"},
                                    {8080, 1080, "wavebox", "s3cret"}, false);
  auto has = [&](const std::string& kv) { return std::find(env.begin(), env.end(), kv) != env.end(); };
  CHECK(has("PATH=/bin"));
  CHECK(has("HTTPS_PROXY=http://wavebox:s3cret@127.0.0.1:8080"));
  CHECK(has("https_proxy=http://wavebox:s3cret@127.0.0.1:8080"));
  CHECK(has("ALL_PROXY=socks5h://wavebox:s3cret@127.0.0.1:1080"));
  CHECK(has("WAVEBOX_SANDBOX=1"));
  CHECK_FALSE(has("https_proxy=http://evil:1"));
  CHECK_FALSE(has("NO_PROXY=*"));
  CHECK_FALSE(has("WAVEBOX_SANDBOX=0"));
  auto off = seatbelt::sandbox_environment({"PATH=/bin"}, {}, true);
  for (const auto& kv : off) CHECK(kv.find("PROXY") == std::string::npos);
}

TEST_CASE("macOS refusals: this run's tag only, in the block's form") {
  const std::string tag = "wavebox_00112233aabbccdd";
  auto line = [](const std::string& msg) { return nlohmann::json({{"eventMessage", msg}}).dump(); };
  auto v = seatbelt::parse_denial(line("Sandbox: cat(7866) deny(1) file-read-data /Users/a/.ssh/id_rsa\n" + tag), tag);
  REQUIRE(v);
  CHECK(v->line() == "deny file-read /Users/a/.ssh/id_rsa");
  v = seatbelt::parse_denial(line("Sandbox: touch(1) deny(1) file-write-create /Users/a/p q/.envrc " + tag), tag);
  REQUIRE(v);
  CHECK(v->operation() == "file-write");
  CHECK(v->target == "/Users/a/p q/.envrc");
  v = seatbelt::parse_denial(line("Sandbox: curl(9) deny(1) network-outbound 93.184.216.34:443\n" + tag), tag);
  REQUIRE(v);
  CHECK(v->line() == "deny network-outbound 93.184.216.34:443");
  v = seatbelt::parse_denial(line("Sandbox: x(9) deny(1) mach-lookup com.apple.pasteboard.1\n" + tag), tag);
  REQUIRE(v);
  CHECK(v->operation() == "mach-lookup");
  // A process name made to look like a refusal, and a target that holds one: the real one counts.
  v = seatbelt::parse_denial(line("Sandbox: a(1) deny(1) fil(4242) deny(1) file-read-data /Users/a/.ssh/x\n" + tag),
                             tag);
  REQUIRE(v);
  CHECK(v->line() == "deny file-read /Users/a/.ssh/x");
  v = seatbelt::parse_denial(line("Sandbox: cat(7) deny(1) file-write-create /w/(9) deny(1) mach-lookup x\n" + tag),
                             tag);
  REQUIRE(v);
  CHECK(v->target == "/w/(9) deny(1) mach-lookup x");
  CHECK(v->line() == "deny file-write /w/\\x289) deny\\x281) mach-lookup x");  // (a path's "(" escaped)
  // Another run's, an untagged one, not a refusal, not JSON.
  CHECK_FALSE(seatbelt::parse_denial(line("Sandbox: cat(1) deny(1) file-read-data /x\nwavebox_ffffffffffffffff"), tag));
  CHECK_FALSE(seatbelt::parse_denial(line("Sandbox: cat(1) deny(1) file-read-data /x"), tag));
  CHECK_FALSE(seatbelt::parse_denial(line("something else " + tag), tag));
  CHECK_FALSE(seatbelt::parse_denial("Filtering the log data using \"eventMessage CONTAINS\"", tag));
  CHECK_FALSE(seatbelt::parse_denial("{\"eventMessage\": 5}", tag));
  CHECK(seatbelt::log_stream_args(tag).back() == "eventMessage CONTAINS \"" + tag + "\"");
}

TEST_CASE("SOCKS5 username/password sub-negotiation (RFC 1929)") {
  using netproxy::ParseStatus;
  std::string msg = std::string("\x01\x07wavebox\x03", 10) + "abc";
  auto a = netproxy::parse_socks_auth(msg);
  REQUIRE(a.status == ParseStatus::kDone);
  CHECK(a.user == "wavebox");
  CHECK(a.password == "abc");
  CHECK(a.consumed == msg.size());
  CHECK(netproxy::parse_socks_auth(msg.substr(0, 5)).status == ParseStatus::kNeedMore);
  CHECK(netproxy::parse_socks_auth(std::string("\x05\x01", 2)).status == ParseStatus::kError);
  auto g = netproxy::parse_socks_greeting(std::string("\x05\x02\x00\x02", 4));
  CHECK(g.no_auth);
  CHECK(g.user_pass);
}
