// The macOS run, planned on any system and executed where sandbox-exec is.
#include "engine/macos_run.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "bwrap/plan/facts.hpp"
#include "core/hash.hpp"
#include "core/paths.hpp"
#include "core/shell_split.hpp"
#include "core/sys/fs.hpp"
#include "core/sys/guards.hpp"
#include "core/sys/scan.hpp"
#include "engine/engine.hpp"
#include "engine/environment.hpp"
#include "netproxy/proxy.hpp"

namespace wb::engine {

namespace {

std::string random_hex(size_t bytes) {
  std::random_device rd;
  std::string out;
  for (size_t i = 0; i < bytes; ++i) out += fmt::format("{:02x}", rd() & 0xff);
  return out;
}

// A listener on the host's loopback, any free port.
Result<sys::Fd> loopback_listener(int& port) {
  sys::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return sys::sys_error("socket", "127.0.0.1", errno);
  struct sockaddr_in a {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd.get(), 512) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return sys::sys_error("listen", "127.0.0.1", errno);
  }
  port = ntohs(a.sin_port);
  return fd;
}

// ~/Library/Caches/wavebox and what it holds: the parents as the system makes them (they exist on
// every Mac), wavebox's own private.
Status ensure_state(const std::string& home, const std::string& state) {
  for (const char* d : {"Library", "Library/Caches"}) {
    std::string p = paths::join(home, d);
    if (::mkdir(p.c_str(), 0700) != 0 && errno != EEXIST) return sys::sys_error("mkdir", p, errno);
  }
  WB_TRY(sys::ensure_private_dir(state));
  return sys::ensure_private_dir(state + "/scan");
}

}  // namespace

Result<MacRun> plan_macos(const RunRequest& req) {
  MacRun m;
  m.facts = req.macos;
  m.argv = req.argv;
  m.plan_only = req.plan_only;
  const Settings& s = req.settings;
  // On the Mac: wavebox's state in the user's own caches (no other user can squat it, unlike
  // /tmp); TMPDIR and the package caches per workspace inside it, as on Linux.
  const std::string home = req.home;
  const std::string ws = WB_TRY(seatbelt::canonical_path(req.workspace.empty() ? req.cwd : req.workspace));
  m.state_dir = paths::join(home, "Library/Caches/wavebox");
  m.cache_dir = fmt::format("{}/caches/{:016x}", m.state_dir, fnv1a(ws));
  m.tmpdir = m.cache_dir + "/tmp";
  PolicyContext ctx;
  ctx.home = home;
  ctx.workspace = ws;
  if (auto h = seatbelt::canonical_path(home); h.ok()) ctx.workspace_holds_home = paths::is_within(*h, ws);
  ctx.state_dir = m.state_dir;
  ctx.state_base = m.state_dir;
  ctx.cache_dir = m.cache_dir;
  ctx.tmpdir = m.tmpdir;
  ctx.settings_files = req.settings_files;
  ctx.extra_writable = req.extra_writable;
  ctx.path_entries = resolved_path_entries(req.path_values(), home);
  if (!m.facts.helper.empty()) ctx.program_files.push_back(m.facts.helper);
  if (s.sandbox.audit_log) ctx.audit_files.push_back(*s.sandbox.audit_log);
  if (!req.audit_log.empty()) ctx.audit_files.push_back(req.audit_log);
  std::vector<std::string> pass = s.sandbox.pass_environment;
  pass.insert(pass.end(), req.pass_env.begin(), req.pass_env.end());
  m.env = sandbox_env(req.env, m.tmpdir, m.cache_dir, pass, s.sandbox.mode == Mode::kPermissive, *req.log, &s.sandbox);
  auto found = find_command(req.argv, req.cwd, m.env);
  if (found.ok()) {
    m.exe = *found;
  } else if (req.plan_only && found.error().kind == ErrorKind::kNotFound) {
    // Planning for another system: the command is looked up there.
    const std::string& a0 = req.argv[0];
    m.exe = a0.find('/') == std::string::npos || a0[0] == '/' ? a0 : paths::join(req.cwd, a0);
  } else {
    return found.error();
  }
  // Mode strict: the command and the helper that starts it are shown besides the system trees.
  ctx.visible.push_back(m.exe);
  if (!m.facts.helper.empty()) ctx.visible.push_back(m.facts.helper);
  const FsPolicy given = make_fs_policy(s.sandbox, ctx, req.network_only);
  for (const auto& w : given.warnings) req.log->warn(w);
  // Globs cover what they match when the run starts, as on Linux.
  std::vector<std::string> notes;
  const FsPolicy fs = lnx::expand_globs(given, notes);
  for (const auto& w : notes) req.log->warn(w);
  Findings findings;  // the found guards go to the profile apart (in.found); the rest joins the policy
  seatbelt::ProfileInput& in = m.input;
  // Nested repositories and editor folders: the scan of the writable trees, on the Mac at the
  // start of the run (a profile cannot learn of them later). `wrap` scans as well, so that it
  // prints what a run executes; planning for a Mac from another machine, it scans the trees that
  // exist here, with no cache (nothing of a Mac's is made on this one).
  if (fs.enabled) {
    std::string cache;
    if (!req.plan_only) {
      WB_TRY(ensure_state(home, m.state_dir));
      cache = m.state_dir + "/scan";
    } else if (sys::is_dir(m.state_dir + "/scan")) {
      cache = m.state_dir + "/scan";
    }
    // The same scan as on Linux (core/sys/guards.hpp): the roots as resolved, what could not
    // be read made read-only, hard links and paths too deep refused.
    const std::vector<std::string> roots = sys::scan_roots_of(fs);
    std::vector<std::string> unreadable, too_deep;
    const auto hits = WB_TRY(sys::scan_all(*req.log, roots, cache, &unreadable, &too_deep));
    sys::ScanFound found = WB_TRY(sys::guards_from_scan(hits, unreadable, too_deep, ws, home, *req.log));
    in.found = std::move(found.findings.deny_write);
    in.repositories = std::move(found.repo_dirs);
    m.git_dirs = std::move(found.git_dirs);
    m.scan_roots = roots;
    findings.zones = std::move(found.findings.zones);
    findings.writable = std::move(found.findings.writable);
  }
  in.fs = with_findings(fs, findings);
  in.command = m.exe;
  in.helper = m.facts.helper;
  in.tmpdir = m.tmpdir;
  in.home = home;
  in.tag = "wavebox_" + random_hex(8);
  in.net.off = req.network_off;
  in.net.allow_local_binding = s.sandbox.network.allow_local_binding;
  in.net.unix_sockets = s.sandbox.network.allow_unix_sockets;
  in.net.all_unix_sockets = s.sandbox.network.allow_all_unix_sockets;
  m.network_off = req.network_off;
  if (s.sandbox.network.allow_local_binding && !req.network_off) {
    req.log->warn(
        "sandbox.network.allowLocalBinding on macOS: the command can accept connections from any host that reaches "
        "this Mac, not only from itself (Seatbelt cannot limit binding to loopback; on Linux the sandbox's loopback "
        "is its own)");
  }
  m.timeout_s = s.sandbox.resources.timeout_seconds;
  m.net_policy = WB_TRY(netproxy::make_net_policy(s.sandbox.network));
  // The profile must render (no "..", no glob left, a valid tag) before anything runs.
  WB_TRY(seatbelt::render_profile(in));
  return m;
}

std::string describe_macos(const MacRun& run, bool json) {
  // The proxy's ports and credential are chosen when the run starts: 0 and "CREDENTIAL" here.
  seatbelt::ProxyEndpoints ends{0, 0, "wavebox", "CREDENTIAL"};
  auto profile = seatbelt::render_profile(run.input);
  if (!profile.ok()) return "# " + profile.error().message + "\n";
  auto env = seatbelt::sandbox_environment(run.env, ends, run.network_off);
  Invocation inv = seatbelt::invocation(run.facts, *profile, run.exe, run.argv, env);
  if (json) return seatbelt::invocation_json(inv, *profile).dump(2) + "\n";
  std::string out =
      "# macOS (Seatbelt): what `wavebox run` executes there; the proxy's ports (0 here) and its\n"
      "# per-run credential are chosen when the run starts, and so is the log tag\n";
  out += shell_join({inv.program});
  for (const auto& a : inv.args) out += " " + shell_join({a});
  out += "\n# the command's environment:";
  for (const auto& kv : inv.env) out += " " + shell_join({kv.substr(0, kv.find('='))});
  return out + "\n";
}

void MacStarted::warn_new_repositories(const Logger& log) const {
  std::vector<sys::ScanHit> hits;
  for (const auto& root : scan_roots) {
    if (!sys::is_dir(root)) continue;
    auto res = sys::scan_tree(root, state_dir + "/scan");
    if (!res.ok()) return;
    hits.insert(hits.end(), res->hits.begin(), res->hits.end());
  }
  auto now = sys::guards_for_hits(hits, workspace, home);
  for (const auto& d : now.git_dirs) {
    if (std::find(git_dirs.begin(), git_dirs.end(), d) != git_dirs.end()) continue;
    log.warn(
        fmt::format("the command created the git repository \"{}\"; its hooks and config were writable "
                    "during this run (they are protected from the next run on). Check them before running "
                    "git there outside the sandbox",
                    d));
  }
}

MacStarted::~MacStarted() {
  process.reset();  // ends the command's group first
  if (proxy) proxy->stop();
}

Result<std::unique_ptr<MacStarted>> start_macos(MacRun run, const RunRequest& req,
                                                std::function<void(const Violation&)> on_refusal) {
  auto st = std::make_unique<MacStarted>();
  WB_TRY(ensure_state(req.home, run.state_dir));
  st->state_dir = run.state_dir;
  st->home = req.home;
  st->workspace =
      run.input.fs.scan_roots.empty() ? (req.workspace.empty() ? req.cwd : req.workspace) : run.input.fs.scan_roots[0];
  st->scan_roots = run.scan_roots;
  st->git_dirs = run.git_dirs;
  st->protections = run.input.fs.deny_write;
  st->protections.insert(st->protections.end(), run.input.found.begin(), run.input.found.end());
  WB_TRY(sys::ensure_private_dir(run.state_dir + "/caches"));
  WB_TRY(sys::ensure_private_dir(run.cache_dir));
  WB_TRY(sys::ensure_private_dir(run.tmpdir));
  seatbelt::ProxyEndpoints ends;
  if (!run.network_off) {
    ends.user = "wavebox";
    ends.password = random_hex(16);
    sys::Fd http = WB_TRY(loopback_listener(ends.http_port));
    sys::Fd socks = WB_TRY(loopback_listener(ends.socks_port));
    netproxy::ProxyConfig cfg;
    cfg.policy = run.net_policy;
    cfg.on_refusal = std::move(on_refusal);
    cfg.forward_http_port = req.settings.sandbox.network.http_proxy_port;
    cfg.forward_socks_port = req.settings.sandbox.network.socks_proxy_port;
    cfg.credential = ends.user + ":" + ends.password;
    cfg.ask = req.ask_network;
    cfg.approval_timeout_s = req.network_approval_timeout_s;
    sys::NetListeners listeners;
    listeners.http = std::move(http);
    listeners.socks = std::move(socks);
    st->proxy = WB_TRY(netproxy::Proxy::start(std::move(cfg), std::move(listeners)));
    run.input.net.http_port = ends.http_port;
    run.input.net.socks_port = ends.socks_port;
  }
  // Its own terminal, by name: every other one of the user's stays unreadable.
  for (int fd : req.stdio) {
    if (fd < 0 || !::isatty(fd)) continue;
    if (const char* name = ::ttyname(fd)) run.input.own_tty = name;
    break;
  }
  seatbelt::Profile profile = WB_TRY(seatbelt::render_profile(run.input));
  auto env = seatbelt::sandbox_environment(run.env, ends, run.network_off);
  seatbelt::LaunchSpec spec;
  spec.inv = seatbelt::invocation(run.facts, profile, run.exe, req.argv, env);
  spec.cwd = req.cwd;
  std::copy(std::begin(req.stdio), std::end(req.stdio), spec.stdio);
  spec.timeout_s = run.timeout_s;
  spec.log_program = run.facts.log;
  spec.tag = run.input.tag;
  spec.log = req.log;
  req.log->info(fmt::format("macOS: {} with a profile of {} bytes and {} parameters", spec.inv.program,
                            profile.text.size(), profile.params.size()));
  st->process = WB_TRY(seatbelt::Process::start(std::move(spec)));
  return st;
}

}  // namespace wb::engine
