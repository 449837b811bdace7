// The macOS backend checked on Linux: its profiles pass the SBPL checker, and the contract table
// (tests/data/contract_cases.txt) holds for the profile under every rule-precedence model and for
// the Linux planner's decisions. Goldens pin one profile per settings (scripts/update-golden).
#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "bwrap/plan/plan.hpp"
#include "core/paths.hpp"
#include "core/protect.hpp"
#include "core/settings.hpp"
#include "netproxy/decision.hpp"
#include "seatbelt/profile.hpp"
#include "tests/golden/check_golden.hpp"
#include "tests/sbpl/sbpl.hpp"

using namespace wb;
using wb::testing::check_golden;

namespace {

constexpr int kHttp = 40001, kSocks = 40002;
const std::string kHome = "/Users/alice";
const std::string kWs = "/Users/alice/project";
const std::string kState = "/Users/alice/Library/Caches/wavebox";
const std::string kCache = kState + "/caches/5d41402abc4b2a76";
const std::string kTmp = kCache + "/tmp";

std::string expand(std::string s) {
  auto rep = [&](const std::string& from, const std::string& to) {
    for (size_t i = 0; (i = s.find(from, i)) != std::string::npos; i += to.size()) s.replace(i, from.size(), to);
  };
  if (s == "~" || s.rfind("~/", 0) == 0) s = kHome + s.substr(1);
  if (s == "@" || s.rfind("@/", 0) == 0) s = kWs + s.substr(1);
  rep("$T", kTmp);
  rep("$C", kCache);
  rep("$S", kState);
  rep("HTTP", std::to_string(kHttp));
  rep("SOCKS", std::to_string(kSocks));
  return s;
}

struct Case {
  std::string settings, op, target;
  bool allow;
  bool macos_only;
  int line;
};

struct Table {
  std::map<std::string, std::pair<std::string, bool>> settings;  // name -> JSON, network-only
  std::vector<std::string> order;
  std::map<std::string, bool> exists;  // path -> is dir
  std::vector<std::string> repos;
  std::vector<Case> cases;
};

Table read_table() {
  Table t;
  std::ifstream in(std::string(WAVEBOX_DATA_DIR) + "/contract_cases.txt");
  REQUIRE(in.good());
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string a, b, c, d, e;
    ss >> a >> b;
    if (a == "settings") {
      std::string rest;
      std::getline(ss, rest);
      bool net_only = false;
      rest = rest.substr(rest.find_first_not_of(' '));
      if (rest.rfind("--network-only ", 0) == 0) {
        net_only = true;
        rest = rest.substr(15);
      }
      t.settings[b] = {rest, net_only};
      t.order.push_back(b);
    } else if (a == "exists") {
      ss >> c;
      t.exists[expand(b)] = c == "dir";
    } else if (a == "repo") {
      t.repos.push_back(expand(b));
    } else {
      ss >> c >> d >> e;
      INFO("contract_cases.txt line " << n);
      REQUIRE(t.settings.count(a));
      REQUIRE((d == "allow" || d == "deny"));
      t.cases.push_back({a, b, c, d == "allow", e == "macos-only", n});
    }
  }
  return t;
}

struct Built {
  Settings settings;
  FsPolicy fs;
  netproxy::NetPolicy net;
  bool network_only = false;
  std::vector<GuardedPath> found;
};

Built build(const Table& t, const std::string& name) {
  Built b;
  const auto& [json, net_only] = t.settings.at(name);
  auto s = load_settings({{kWs + "/.wave/settings.json", json}}, kHome);
  REQUIRE(s.ok());
  b.settings = *s;
  b.network_only = net_only;
  PolicyContext ctx;
  ctx.home = kHome;
  ctx.workspace = kWs;
  ctx.state_dir = kState;
  ctx.state_base = kState;
  ctx.cache_dir = kCache;
  ctx.tmpdir = kTmp;
  ctx.settings_files = discoverable_settings_files(kHome, kWs);
  ctx.program_files = {"/usr/local/bin/wavebox"};
  b.fs = make_fs_policy(b.settings.sandbox, ctx, net_only);
  // What the workspace scan finds for the repository (core/sys/guards.cpp on either system).
  for (const auto& r : t.repos) {
    b.found.push_back({r + "/hooks", LeafType::kDir, true, "", "a repository's hooks"});
    b.found.push_back({r + "/config", LeafType::kFile, true, "", "a repository's config"});
    b.found.push_back({r + "/commondir", LeafType::kFile, true, "", "a repository's commondir"});
  }
  auto np = netproxy::make_net_policy(b.settings.sandbox.network);
  REQUIRE(np.ok());
  b.net = *np;
  return b;
}

seatbelt::ProfileInput profile_input(const Built& b, const Table& t) {
  seatbelt::ProfileInput in;
  in.fs = b.fs;
  if (b.fs.strict) in.fs.visible = {"/usr/local/bin/wavebox"};
  in.net.http_port = kHttp;
  in.net.socks_port = kSocks;
  in.net.allow_local_binding = b.settings.sandbox.network.allow_local_binding;
  in.net.unix_sockets = b.settings.sandbox.network.allow_unix_sockets;
  in.net.all_unix_sockets = b.settings.sandbox.network.allow_all_unix_sockets;
  in.tag = "wavebox_test_tag";
  in.command = "/usr/bin/true";
  in.helper = "/usr/local/bin/wavebox";
  in.tmpdir = kTmp;
  in.home = kHome;
  in.found = b.found;
  in.repositories = t.repos;
  return in;
}

bool proxy_allows(const Built& b, const std::string& target) {
  size_t c = target.rfind(':');
  return netproxy::decide_host(b.net, target.substr(0, c), std::stoi(target.substr(c + 1))).allow;
}

sbpl::Request mac_request(const Case& c, const std::map<std::string, bool>& exists) {
  sbpl::Request r;
  std::string target = expand(c.target);
  auto canon = [](const std::string& p) {
    auto x = seatbelt::canonical_path(p);
    REQUIRE(x.ok());
    return *x;
  };
  if (c.op == "read") {
    r.op = "file-read-data";
    r.path = canon(target);
  } else if (c.op == "write") {
    // Writing a file that is there (a device, an existing file) or creating it.
    r.op = exists.count(target) ? "file-write-data" : "file-write-create";
    r.path = canon(target);
  } else if (c.op == "unlink") {
    r.op = "file-write-unlink";
    r.path = canon(target);
  } else if (c.op == "exec") {
    r.op = "process-exec";
    r.path = canon(target);
  } else if (c.op == "connect") {
    r.op = "network-outbound";
    r.remote = target;
  } else if (c.op == "bind") {
    r.op = "network-bind";
    r.local = target;
  } else if (c.op == "mach") {
    r.op = "mach-lookup";
    r.name = target;
  } else {
    FAIL("unknown operation " << c.op);
  }
  return r;
}

// The Linux planner's answer: the mounts (the last covering a path decides) and the
// supervisor's creation guard for what does not exist.
struct LinuxSide {
  lnx::Plan plan;
  CreationGuard guard;
  std::map<std::string, bool> exists;
  std::vector<std::string> roots;
};

LinuxSide linux_side(const Built& b, const Table& t) {
  LinuxSide L;
  FsPolicy pol = b.fs;
  pol.deny_write.insert(pol.deny_write.end(), b.found.begin(), b.found.end());
  if (pol.strict) {
    pol.visible = lnx::strict_system_paths();
    pol.visible.push_back("/usr/local/bin/wavebox");
  }
  lnx::LinuxFacts f;
  f.placeholder_file = kState + "/unreadable";
  auto fact = [&](const std::string& p) {
    if (f.paths.count(p)) return;
    lnx::PathFact pf;
    pf.real = p;
    auto it = t.exists.find(p);
    if (it != t.exists.end()) {
      pf.kind = it->second ? lnx::PathKind::kDir : lnx::PathKind::kFile;
    } else if (p == "/usr" || p == "/etc" || p == "/opt" || p == "/bin" || p == "/sbin" || p == "/lib") {
      pf.kind = lnx::PathKind::kDir;
    } else {
      pf.first_missing = p;
    }
    f.paths[p] = pf;
  };
  for (auto& w : pol.writable) fact(w.path);
  for (auto& g : pol.deny_write) fact(g.path);
  for (auto& g : pol.deny_read) fact(g.path);
  for (auto& a : pol.allow_read) fact(a);
  for (auto& v : pol.visible) fact(v);
  for (auto& z : pol.zones) fact(z.dir);
  auto plan = lnx::plan_mounts(pol, f);
  if (!plan.ok()) FAIL("Linux plan: " << plan.error().message);
  L.plan = *plan;
  for (const auto& c : L.plan.create_guards) L.guard.add_path(c.path, c.why);
  for (const auto& z : pol.zones) L.guard.add_zone(z.dir, z.carve, z.why);
  for (const auto& r : t.repos) L.guard.add_repository(r);
  std::vector<std::string> roots;
  for (const auto& w : pol.writable) roots.push_back(w.path);
  L.guard.set_roots(roots);
  L.roots = roots;
  L.exists = t.exists;
  return L;
}

bool linux_allows(const LinuxSide& L, const Case& c, const Built& b) {
  const std::string target = expand(c.target);
  const lnx::Plan& plan = L.plan;
  auto visible = [&](const std::string& p) {
    if (!plan.strict) return true;
    return std::any_of(plan.mounts.begin(), plan.mounts.end(),
                       [&](const lnx::MountOp& op) { return paths::is_within(p, op.path); });
  };
  auto writable = [&](const std::string& p) {
    if (!lnx::write_allowed(plan, p)) return false;
    // Each missing component is a creation the supervisor decides, from the first one down.
    std::vector<std::string> chain = paths::ancestors(p);
    chain.push_back(p);
    for (const auto& a : chain) {
      bool inside = std::any_of(L.roots.begin(), L.roots.end(),
                                [&](const std::string& r) { return a != r && paths::is_within(a, r); });
      if (!inside || L.exists.count(a)) continue;
      if (!L.guard.refuses(a, false, a != p).empty()) return false;
    }
    return true;
  };
  if (c.op == "read" || c.op == "exec") return !lnx::read_masked(plan, target) && visible(target);
  if (c.op == "write") return writable(target);
  if (c.op == "unlink") return lnx::write_allowed(plan, target) && lnx::write_allowed(plan, paths::parent(target));
  if (c.op == "connect") {
    // The sandbox's own network namespace: the proxy's listeners are all there is.
    return target == "localhost:" + std::to_string(kHttp) || target == "localhost:" + std::to_string(kSocks);
  }
  if (c.op == "proxy") return proxy_allows(b, target);
  FAIL("no Linux model for " << c.op);
  return false;
}

std::string golden_text(const seatbelt::Profile& p) {
  std::string out = p.text + "; params\n";
  for (const auto& [k, v] : p.params) out += "; -D " + k + "=" + v + "\n";
  return out;
}

}  // namespace

TEST_CASE("macOS paths: /tmp, /var, /etc spelled as Seatbelt sees them; relative and .. refused") {
  CHECK(*seatbelt::canonical_path("/tmp/x") == "/private/tmp/x");
  CHECK(*seatbelt::canonical_path("/var") == "/private/var");
  CHECK(*seatbelt::canonical_path("/etc/hosts") == "/private/etc/hosts");
  CHECK(*seatbelt::canonical_path("/Users/a//b/./c/") == "/Users/a/b/c");
  CHECK(*seatbelt::canonical_path("/tmpx") == "/tmpx");
  CHECK(*seatbelt::canonical_path("/private/tmp/x") == "/private/tmp/x");
  CHECK_FALSE(seatbelt::canonical_path("/Users/a/../b").ok());
  CHECK_FALSE(seatbelt::canonical_path("relative").ok());
  CHECK_FALSE(seatbelt::canonical_path("").ok());
}

TEST_CASE("SBPL checker: finds what Seatbelt would reject") {
  auto problems = [](const std::string& text, std::map<std::string, std::string> params = {},
                     std::vector<std::string> paths = {}) {
    return sbpl::check({text, std::move(params), paths});
  };
  CHECK(problems("(version 1)(deny default)(allow file-read* (subpath (param \"A\")))", {{"A", "/x"}}).empty());
  CHECK_FALSE(problems("(version 1)(allow file-read*").empty());                           // unbalanced
  CHECK_FALSE(problems("(version 1)(allow file-read*))").empty());                         // unbalanced
  CHECK_FALSE(problems("(version 1)(allow file-raed*)").empty());                          // unknown operation
  CHECK_FALSE(problems("(version 1)(allow file-read* (subpth \"/x\"))").empty());          // unknown filter
  CHECK_FALSE(problems("(version 1)(allow file-read* (subpath (param \"B\")))").empty());  // undefined
  CHECK_FALSE(problems("(version 1)(allow file-read*)", {{"A", "/x"}}).empty());           // unused
  CHECK_FALSE(problems("(version 1)(allow file-read* (subpath \"/Users/a\"))", {}, {"/Users/a"}).empty());
  CHECK_FALSE(problems("(version 1)(allow file-read* (literal \"" + std::string(1100, 'a') + "\"))").empty());
  CHECK_FALSE(problems("(allow file-read*)").empty());  // no version
}

TEST_CASE("SBPL evaluator: the three precedence models differ where rules overlap") {
  sbpl::Profile p(
      "(version 1)(deny default)(allow file-read* (subpath \"/a\"))(deny file-read* (subpath \"/a/b\"))"
      "(allow file-read* (literal \"/a/b/c\"))",
      {});
  sbpl::Request r{"file-read-data", "/a/b/c"};
  CHECK(p.evaluate(r, sbpl::Model::kLastMatch).allow);
  CHECK(p.evaluate(r, sbpl::Model::kFirstMatch).allow);
  CHECK_FALSE(p.evaluate(r, sbpl::Model::kDenyWins).allow);
  sbpl::Request r2{"file-read-data", "/a/b/d"};
  CHECK_FALSE(p.evaluate(r2, sbpl::Model::kLastMatch).allow);
  CHECK(p.evaluate(r2, sbpl::Model::kFirstMatch).allow);
  sbpl::Request w{"file-write-data", "/a/x"};
  CHECK_FALSE(p.evaluate(w, sbpl::Model::kLastMatch).allow);  // the default
  sbpl::Profile net("(version 1)(deny default)(allow network-outbound (remote ip \"localhost:8080\"))", {});
  sbpl::Request c;
  c.op = "network-outbound";
  c.remote = "localhost:8080";
  CHECK(net.evaluate(c, sbpl::Model::kLastMatch).allow);
  c.remote = "93.184.216.34:8080";
  CHECK_FALSE(net.evaluate(c, sbpl::Model::kLastMatch).allow);
}

TEST_CASE("contract: every case holds for the macOS profile (three models) and the Linux planner") {
  Table t = read_table();
  REQUIRE(t.cases.size() >= 150);
  REQUIRE(t.order.size() >= 5);
  const sbpl::Model models[] = {sbpl::Model::kLastMatch, sbpl::Model::kFirstMatch, sbpl::Model::kDenyWins};
  size_t checked = 0;
  for (const auto& name : t.order) {
    Built b = build(t, name);
    auto in = profile_input(b, t);
    auto prof = seatbelt::render_profile(in);
    INFO("settings " << name);
    REQUIRE(prof.ok());
    std::map<std::string, std::string> params(prof->params.begin(), prof->params.end());
    std::vector<std::string> named = {kHome, kWs, kTmp};
    for (const auto& [k, v] : prof->params) {
      // The policy's paths, not the system trees the profile also names as constants (/dev/null).
      const auto& sys = seatbelt::strict_system_paths();
      if (std::find(sys.begin(), sys.end(), v) == sys.end()) named.push_back(v);
    }
    auto problems = sbpl::check({prof->text, params, named});
    for (const auto& pr : problems) UNSCOPED_INFO(pr);
    CHECK(problems.empty());
    sbpl::Profile eval(prof->text, params);
    LinuxSide L = linux_side(b, t);
    for (const auto& c : t.cases) {
      if (c.settings != name) continue;
      INFO("contract_cases.txt line " << c.line << ": " << c.settings << " " << c.op << " " << c.target);
      ++checked;
      if (c.op == "proxy") {
        CHECK(proxy_allows(b, expand(c.target)) == c.allow);
        continue;
      }
      sbpl::Request r = mac_request(c, t.exists);
      for (auto m : models) {
        auto v = eval.evaluate(r, m);
        CHECK(v.allow == c.allow);
        if (!v.allow) CHECK(v.message == "wavebox_test_tag");
      }
      if (!c.macos_only) CHECK(linux_allows(L, c, b) == c.allow);
    }
    check_golden("macos_" + name, golden_text(*prof));
  }
  CHECK(checked == t.cases.size());
}

TEST_CASE("macOS profile: no path bytes in the text, whatever the paths hold") {
  Table t = read_table();
  Built b = build(t, "default");
  auto in = profile_input(b, t);
  in.fs.writable.push_back({"/Users/alice/we\"ird) (allow default", false});
  in.fs.deny_read.push_back({"/Users/alice/x\n(allow default)", LeafType::kDir, true, ""});
  auto p = seatbelt::render_profile(in);
  REQUIRE(p.ok());
  CHECK(p->text.find("we\"ird") == std::string::npos);
  CHECK(p->text.find("/Users") == std::string::npos);
  std::map<std::string, std::string> params(p->params.begin(), p->params.end());
  CHECK(sbpl::check({p->text, params, {}}).empty());
  sbpl::Profile eval(p->text, params);
  sbpl::Request w{"file-write-create", "/Users/alice/other"};
  CHECK_FALSE(eval.evaluate(w, sbpl::Model::kLastMatch).allow);
  // A path with ".." is refused, not guessed at.
  in.fs.writable.push_back({"/Users/alice/project/../../etc", false});
  CHECK_FALSE(seatbelt::render_profile(in).ok());
  // So is a tag that could close the message string.
  auto bad = profile_input(b, t);
  bad.tag = "x\") (allow default";
  CHECK_FALSE(seatbelt::render_profile(bad).ok());
}

TEST_CASE("macOS profile: a guard inside a root that is writable over a guard (the cache dir) still holds") {
  Table t = read_table();
  Built b = build(t, "default");
  auto in = profile_input(b, t);
  in.fs.writable.push_back({"/Users/alice/Library/Caches/wb/c1", false, true});
  in.fs.deny_write.push_back({"/Users/alice/Library/Caches/wb/c1/hooks", LeafType::kDir, true, ""});
  in.fs.deny_write.push_back({"/Users/alice/Library/Caches/wb", LeafType::kDir, true, ""});
  auto p = seatbelt::render_profile(in);
  REQUIRE(p.ok());
  std::map<std::string, std::string> params(p->params.begin(), p->params.end());
  CHECK(sbpl::check({p->text, params, {}}).empty());
  sbpl::Profile eval(p->text, params);
  for (auto model : {sbpl::Model::kLastMatch, sbpl::Model::kFirstMatch, sbpl::Model::kDenyWins}) {
    CHECK(eval.evaluate({"file-write-create", "/Users/alice/Library/Caches/wb/c1/x"}, model).allow);
    CHECK_FALSE(eval.evaluate({"file-write-create", "/Users/alice/Library/Caches/wb/c1/hooks/x"}, model).allow);
    CHECK_FALSE(eval.evaluate({"file-write-create", "/Users/alice/Library/Caches/wb/other"}, model).allow);
  }
}

TEST_CASE("macOS profile goldens: the network variants") {
  Table t = read_table();
  struct Variant {
    const char* name;
    std::function<void(seatbelt::ProfileInput&)> change;
  };
  std::vector<Variant> variants = {
      {"unix_sockets",
       [](seatbelt::ProfileInput& in) {
         in.net.unix_sockets = {"/private/var/run/docker.sock", kHome + "/.ssh/agent.sock"};
       }},
      {"all_unix_sockets", [](seatbelt::ProfileInput& in) { in.net.all_unix_sockets = true; }},
      {"network_off",
       [](seatbelt::ProfileInput& in) {
         in.net.off = true;
         in.net.http_port = in.net.socks_port = 0;
       }},
      {"filesystem_only", [](seatbelt::ProfileInput& in) { in.net.open = true; }},
  };
  Built b = build(t, "default");
  for (const auto& v : variants) {
    auto in = profile_input(b, t);
    v.change(in);
    auto p = seatbelt::render_profile(in);
    REQUIRE(p.ok());
    std::map<std::string, std::string> params(p->params.begin(), p->params.end());
    INFO(v.name);
    CHECK(sbpl::check({p->text, params, {kHome, kWs}}).empty());
    sbpl::Profile eval(p->text, params);
    sbpl::Request sock;
    sock.op = "network-outbound";
    sock.unix_socket = true;
    sock.path = "/private/var/run/docker.sock";
    bool docker = eval.evaluate(sock, sbpl::Model::kLastMatch).allow;
    const std::string name = v.name;
    CHECK(docker == (name == "unix_sockets" || name == "all_unix_sockets" || name == "filesystem_only"));
    sock.path = "/private/var/run/other.sock";
    bool other = eval.evaluate(sock, sbpl::Model::kLastMatch).allow;
    CHECK(other == (name == "all_unix_sockets" || name == "filesystem_only"));
    sock.path = kTmp + "/pymp-1/listener";  // the command's own, in its TMPDIR
    CHECK(eval.evaluate(sock, sbpl::Model::kLastMatch).allow);
    check_golden(std::string("macos_") + v.name, golden_text(*p));
  }
}
