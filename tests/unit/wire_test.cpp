// The wire between wavebox and wavebox-shim (bwrap/shim/wire.h): what the C++ side writes, the
// shim's own parsing functions read back, record by record.
#include "bwrap/shim/wire.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "bwrap/launch/exec.hpp"
#include "bwrap/launch/netns.hpp"
#include "bwrap/plan/plan.hpp"
#include "bwrap/supervise/fuse_masks.hpp"

using namespace wb;
using namespace wb::lnx;

static_assert(kArgsFd == 3 && kStatusFd == 4 && kSeccompFd == 5 && kShimSpecFd == 6 && kObserverSockFd == 7 &&
              kShimMountsFd == 8);
static_assert(kHttpProxyPort == WB_HTTP_PORT && kSocksProxyPort == WB_SOCKS_PORT);

namespace {
std::vector<std::vector<std::string>> read_mounts(const std::string& list, int* status) {
  std::vector<std::vector<std::string>> out;
  const char* p = list.data();
  const char* f[3];
  while ((*status = wb_next_mount(&p, list.data() + list.size(), f)) == 1) out.push_back({f[0], f[1], f[2]});
  return out;
}
}  // namespace

TEST_CASE("wire: every mount record the planner writes, read back by the shim's reader") {
  Plan plan;
  plan.mounts = {{MountKind::kRwBind, "/w"},
                 {MountKind::kPin, "/w/pinned"},
                 {MountKind::kCarve, "/w/c", true},
                 {MountKind::kCarve, "/w/d", false},
                 {MountKind::kRoBind, "/w/.git/hooks"},
                 {MountKind::kMaskFile, "/h/.ssh/id_rsa"},
                 {MountKind::kMaskDir, "/h/.aws", false, true},
                 {MountKind::kMaskDir, "/h/.gnupg"}};
  LinuxFacts facts;
  facts.placeholder_file = "/state/placeholder";
  for (bool host_proc : {false, true}) {
    for (bool open : {false, true}) {
      plan.host_proc = host_proc;
      plan.filesystem_open = open;
      const std::string list = render_shim_mounts(plan, facts, "/dev/pts/3");
      int status = 0;
      auto r = read_mounts(list, &status);
      CHECK(status == 0);
      REQUIRE(r.size() == 3 + plan.mounts.size());
      CHECK(r[0] == std::vector<std::string>{WB_MOUNT_ROOT, open ? WB_ROOT_RW : WB_ROOT_RO, "/"});
      CHECK(r[1] == std::vector<std::string>{WB_MOUNT_DEV, "/dev/pts/3", "/dev"});
      CHECK(r[2] == std::vector<std::string>{WB_MOUNT_PROC, host_proc ? WB_PROC_HOST : WB_PROC_NEW, "/proc"});
      CHECK(r[3] == std::vector<std::string>{WB_MOUNT_RW, "/w", "/w"});
      CHECK(r[4] == std::vector<std::string>{WB_MOUNT_RW, "/w/pinned", "/w/pinned"});
      CHECK(r[5] == std::vector<std::string>{WB_MOUNT_RW, "/w/c", "/w/c"});
      CHECK(r[6] == std::vector<std::string>{WB_MOUNT_RO, "/w/d", "/w/d"});
      CHECK(r[7] == std::vector<std::string>{WB_MOUNT_RO, "/w/.git/hooks", "/w/.git/hooks"});
      CHECK(r[8] == std::vector<std::string>{WB_MOUNT_RO, "/state/placeholder", "/h/.ssh/id_rsa"});
      CHECK(r[9] == std::vector<std::string>{WB_MOUNT_TMPFS, "0711", "/h/.aws"});
      CHECK(r[10] == std::vector<std::string>{WB_MOUNT_TMPFS, "0000", "/h/.gnupg"});
      // Every kind the planner writes is one the shim knows.
      const std::set<std::string> known = {WB_MOUNT_ROOT, WB_MOUNT_DEV,   WB_MOUNT_PROC,     WB_MOUNT_RW,
                                           WB_MOUNT_RO,   WB_MOUNT_TMPFS, WB_MOUNT_FUSE_DIR, WB_MOUNT_FUSE_FILE};
      for (const auto& rec : r) CHECK(known.count(rec[0]) == 1);
      // The FUSE masks: the same records with their kinds, the fallback's argument kept.
      facts.fuse = true;
      auto fr = read_mounts(render_shim_mounts(plan, facts, "/dev/pts/3"), &status);
      facts.fuse = false;
      REQUIRE(fr.size() == r.size());
      CHECK(fr[8] == std::vector<std::string>{WB_MOUNT_FUSE_FILE, "/state/placeholder", "/h/.ssh/id_rsa"});
      CHECK(fr[9] == r[9]);  // it holds mounts: a tmpfs
      CHECK(fr[10] == std::vector<std::string>{WB_MOUNT_FUSE_DIR, "0000", "/h/.gnupg"});
      for (const auto& rec : fr) CHECK(known.count(rec[0]) == 1);
      // A list cut anywhere inside a record is refused, never read short.
      for (size_t cut = 1; cut < list.size(); ++cut) {
        if (list[cut - 1] == '\0') continue;
        int st = 0;
        read_mounts(list.substr(0, cut), &st);
        CHECK(st == -1);
      }
    }
  }
  int status = 0;
  auto d = read_mounts(render_shim_devices_read_only(), &status);
  CHECK(status == 0);
  REQUIRE(d.size() == 1);
  CHECK(d[0] == std::vector<std::string>{WB_MOUNT_DEVICES_RO, "", "/dev"});
}

TEST_CASE("wire: the command spec and its limits") {
  const std::vector<std::string> argv = {"sh", "-c", "echo 'a b'", "", "x\ny"};
  for (std::string exe : {"/bin/sh", ""}) {
    const std::string spec = encode_spec(encode_limits(7, 64, 512), exe, argv);
    REQUIRE(wb_spec_fields(spec.data(), spec.size()) == static_cast<int>(2 + argv.size()));
    const char* p = spec.data();
    const char* end = spec.data() + spec.size();
    std::vector<std::string> fields;
    while (const char* f = wb_next_field(&p, end)) fields.emplace_back(f);
    REQUIRE(fields.size() == 2 + argv.size());
    struct wb_limits lim {};
    REQUIRE(wb_parse_limits(fields[0].c_str(), &lim) == 0);
    CHECK(lim.cpu_seconds == 7);
    CHECK(lim.processes == 64);
    CHECK(lim.memory_mb == 512);
    CHECK(fields[1] == (exe.empty() ? "-" : exe));
    CHECK(std::vector<std::string>(fields.begin() + 2, fields.end()) == argv);
  }
  struct wb_limits lim {};
  CHECK(wb_parse_limits("1:2", &lim) != 0);
  CHECK(wb_parse_limits("1:2:3x", &lim) != 0);
  CHECK(wb_parse_limits("a:2:3", &lim) != 0);
  CHECK(wb_spec_fields("0:0:0\0-", 7) == -1);    // not terminated
  CHECK(wb_spec_fields("0:0:0\0-\0", 8) == -1);  // no command
}

TEST_CASE("wire: a standby's go spec: limits, exe, directory, environment, command") {
  const std::vector<std::string> argv = {"sh", "-c", "echo 'a b'", "", "x\ny"};
  for (const auto& env : {std::vector<std::string>{}, std::vector<std::string>{"A=1", "B=", "PATH=/bin:/usr/bin"}}) {
    for (std::string cwd : {"", "/w/sub dir"}) {
      const std::string spec = encode_go_spec(encode_limits(1, 2, 3), "/bin/sh", cwd, env, argv);
      int nenv = -1;
      REQUIRE(wb_go_spec(spec.data(), spec.size(), &nenv) == 0);
      CHECK(nenv == static_cast<int>(env.size()));
      const char* p = spec.data();
      const char* end = spec.data() + spec.size();
      std::vector<std::string> f;
      while (const char* x = wb_next_field(&p, end)) f.emplace_back(x);
      REQUIRE(f.size() == 4 + env.size() + argv.size());
      CHECK(f[0] == "1:2:3");
      CHECK(f[1] == "/bin/sh");
      CHECK(f[2] == cwd);
      CHECK(f[3] == std::to_string(env.size()));
      CHECK(std::vector<std::string>(f.begin() + 4, f.begin() + 4 + static_cast<long>(env.size())) == env);
      CHECK(std::vector<std::string>(f.begin() + 4 + static_cast<long>(env.size()), f.end()) == argv);
    }
  }
  int n = 0;
  CHECK(wb_go_spec("0:0:0\0-\0\0"
                   "0\0",
                   11, &n) == -1);  // no command
  CHECK(wb_go_spec("0:0:0\0-\0\0"
                   "2\0A=1\0ls\0",
                   18, &n) == -1);  // fewer entries than it says
  CHECK(wb_go_spec("0:0:0\0-\0\0"
                   "x\0ls\0",
                   14, &n) == -1);  // not a number
  CHECK(wb_go_spec("0:0:0\0-\0\0"
                   "\0ls\0",
                   13, &n) == -1);  // no number
  CHECK(wb_go_spec("0:0:0\0-\0\0"
                   "0\0ls",
                   13, &n) == -1);  // not terminated
  CHECK(wb_go_spec("0:0:0\0-\0\0"
                   "0\0ls\0",
                   14, &n) == 0);
  CHECK(n == 0);
}

TEST_CASE("wire: the allowlist's ports and addresses, sent to the keeper after it started") {
  using wb::lnx::encode_net_config;
  wb_net_config net;
  std::memset(&net, 0, sizeof net);
  net.n_ports = 2;
  net.ports[0] = 22;
  net.ports[1] = 5432;
  net.n_addrs = 1;
  net.addrs[0] = htonl(0x0a000007);  // 10.0.0.7
  const std::string word = encode_net_config(net);
  REQUIRE(word.size() == 1 + sizeof net);
  CHECK(word[0] == WB_WORD_NET_CONFIG);
  wb_net_config got;
  std::memcpy(&got, word.data() + 1, sizeof got);  // as the keeper reads it
  REQUIRE(wb_net_config_ok(&got));
  CHECK(got.n_ports == 2);
  CHECK(got.ports[1] == 5432);
  CHECK(got.n_addrs == 1);
  CHECK(got.addrs[0] == htonl(0x0a000007));
  // None at all is a record too.
  std::memset(&net, 0, sizeof net);
  CHECK(encode_net_config(net).size() == 1 + sizeof net);
  // Anything else is refused: counts beyond the arrays, a port 0.
  net.n_ports = WB_MAX_EXTRA_PORTS + 1;
  CHECK(encode_net_config(net).empty());
  net.n_ports = 1;
  net.ports[0] = 0;
  CHECK_FALSE(wb_net_config_ok(&net));
  net.n_ports = 0;
  net.n_addrs = WB_MAX_NET_ADDRS + 1;
  CHECK_FALSE(wb_net_config_ok(&net));
}

TEST_CASE("wire: the keeper's steps each have a name") {
  std::set<std::string> names;
  for (int step = WB_STEP_UNSHARE; step <= WB_STEP_NET_CONFIG; ++step) names.insert(wb_step_name(step));
  CHECK(names.size() == 9);
  CHECK(names.count(wb_step_name(0)) == 0);
  CHECK(sizeof(wb_keeper_error) == 2 * sizeof(int));
  const std::set<char> words = {WB_WORD_LISTENERS, WB_WORD_START, WB_WORD_END, WB_WORD_ACK, WB_WORD_GO};
  CHECK(words.size() == 5);
  CHECK((WB_START_STANDBY & 0x07) == 0);  // apart from the bits that say which descriptors follow
}

TEST_CASE("wire: the listener's word names which read masks came as FUSE connections") {
  auto pipe_fd = [] {
    int p[2];
    REQUIRE(::pipe(p) == 0);
    ::close(p[1]);
    return p[0];
  };
  const std::vector<FuseMask> asked = {{"/h/.ssh", true}, {"/w/.env", false}, {"/h/.aws", true}};
  {
    FuseMasks m;
    m.expect(asked);
    const char flags[] = {WB_FUSE_SERVED, WB_FUSE_NOT, WB_FUSE_SERVED};
    int fds[] = {pipe_fd(), pipe_fd()};
    REQUIRE(m.adopt(flags, 3, fds, 2));
    CHECK(m.size() == 2);
    CHECK(m.covers("/h/.ssh/id_rsa"));
    CHECK(m.covers("/h/.aws"));
    CHECK_FALSE(m.covers("/w/.env"));  // the old mask: reported from stderr
    CHECK_FALSE(m.covers("/h/.sshx"));
  }
  // Any disagreement is refused (the run then fails: the observer did not start).
  for (const std::string& flags :
       {std::string{WB_FUSE_SERVED, WB_FUSE_NOT}, std::string{WB_FUSE_SERVED, 'x', WB_FUSE_NOT},
        std::string{WB_FUSE_SERVED, WB_FUSE_SERVED, WB_FUSE_SERVED}}) {
    FuseMasks m;
    m.expect(asked);
    int fds[] = {pipe_fd(), pipe_fd()};
    CHECK_FALSE(m.adopt(flags.data(), flags.size(), fds, 2));
    CHECK(m.size() == 0);
  }
}

TEST_CASE("wire: the launcher's record of the keeper it started") {
  int fds[WB_EARLY_FDS], back[WB_EARLY_FDS];
  for (int i = 0; i < WB_EARLY_FDS; ++i) fds[i] = 10 + i * 7;
  char buf[512];
  const char* shim = "/opt/a dir/libexec/wavebox/wavebox-shim";
  REQUIRE(wb_early_encode(buf, sizeof buf, 4242, fds, shim, "/usr/bin/bwrap") > 0);
  int pid = 0;
  const char *s = nullptr, *b = nullptr;
  size_t len = 0;
  REQUIRE(wb_early_decode(buf, &pid, back, &s, &len, &b) == 0);
  CHECK(pid == 4242);
  CHECK(std::equal(fds, fds + WB_EARLY_FDS, back));
  CHECK(std::string(s, len) == shim);
  CHECK(std::string(b) == "/usr/bin/bwrap");
  // Too small a buffer is no record at all.
  CHECK(wb_early_encode(buf, 20, 4242, fds, shim, "/usr/bin/bwrap") == -1);
  // Anything else is refused: short, signed, zero, too large, no paths, extra spaces.
  const std::string whole(buf);
  for (const std::string& bad :
       {std::string(""), std::string("1 2 3"), whole.substr(0, whole.find('\n')), "-1" + whole.substr(4),
        "0" + whole.substr(4), "99999999999" + whole.substr(4), " " + whole, whole.substr(0, whole.find('\n') + 1),
        std::string("4242  10 17 24 31 38 45 52 59 66 73 80 /s\n/b")}) {
    CHECK(wb_early_decode(bad.c_str(), &pid, back, &s, &len, &b) == -1);
  }
}
