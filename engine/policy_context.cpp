// What the filesystem policy must know of this run (core/policy's PolicyContext): home, the
// workspace, wavebox's own places, the settings files, the programs it runs, and the caller's
// PATH as the kernel would walk it. Not pure, by design: it looks at the file system (lstat,
// readlink) to walk PATH as the kernel does; it reads no environment of its own (the request's).
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <string_view>

#include "bwrap/run/run.hpp"
#include "core/paths.hpp"
#include "core/policy.hpp"
#include "core/sys/fs.hpp"
#include "engine/engine.hpp"

namespace wb::engine {

namespace {

// A path's names, "." left out, as a queue the walk below takes from the front.
std::deque<std::string> components(std::string_view p) {
  std::deque<std::string> out;
  for (auto c : paths::components(p)) {
    if (c != ".") out.emplace_back(c);
  }
  return out;
}

// Where an absolute PATH entry leads, as the kernel would walk it now: links followed (dangling
// ones too), ".." taken after the link before it. A missing part is taken as written; when a
// ".." comes after it, the first missing name is returned as well (what it becomes decides
// where the entry leads: a link made there later must not be possible).
void resolve_entry(const std::string& raw, std::vector<std::string>& out) {
  std::deque<std::string> comps = components(raw);
  std::string cur = "/", first_missing;
  bool missing = false, dotdot_after_missing = false;
  int hops = 0;
  while (!comps.empty()) {
    std::string c = std::move(comps.front());
    comps.pop_front();
    if (c == "..") {
      if (missing) dotdot_after_missing = true;
      cur = paths::parent(cur);
      continue;
    }
    std::string cand = paths::join(cur, c);
    if (missing) {
      cur = cand;
      continue;
    }
    struct stat st {};
    if (::lstat(cand.c_str(), &st) != 0) {
      missing = true;
      first_missing = cand;
      cur = cand;
      continue;
    }
    if (S_ISLNK(st.st_mode)) {
      // The link itself is guarded too: re-pointed, it would lead the entry elsewhere.
      out.push_back(cand);
      char buf[4096];
      ssize_t n = ::readlink(cand.c_str(), buf, sizeof buf - 1);
      if (n <= 0 || ++hops > 40) {  // unreadable, or a loop: the name itself, as written
        cur = cand;
        continue;
      }
      std::deque<std::string> target = components(std::string_view(buf, static_cast<size_t>(n)));
      if (buf[0] == '/') cur = "/";
      comps.insert(comps.begin(), target.begin(), target.end());
      continue;
    }
    cur = cand;
  }
  out.push_back(cur);
  if (dotdot_after_missing) out.push_back(first_missing);
}

}  // namespace

// The PATH entries of each PATH value ("a:b:c"), each also where it leads on disk: an entry that
// is a link into the workspace, lies below one, or uses ".." names the directory it leads to,
// which is the one to guard. "~" leads to home (bash expands it in PATH). Relative entries are
// kept as written, for the policy to say.
std::vector<std::string> resolved_path_entries(const std::vector<std::string>& path_values, const std::string& home) {
  std::vector<std::string> out;
  for (const auto& value : path_values) {
    for (const auto& e : paths::path_entries({"PATH=" + value})) {
      std::string abs = e;
      if (!home.empty() && (e == "~" || e.rfind("~/", 0) == 0)) abs = home + e.substr(1);
      if (abs.empty() || abs[0] != '/') {
        out.push_back(e);
        continue;
      }
      out.push_back(paths::normalize(abs));
      resolve_entry(abs, out);
    }
  }
  return out;
}

Result<PolicyContext> policy_context(const RunRequest& req, const sys::StateDir& state) {
  PolicyContext ctx;
  ctx.home = req.home;
  ctx.workspace = req.workspace.empty() ? req.cwd : req.workspace;
  // A home (or a directory above it) as a writable root: core/policy.cpp keeps home read-only
  // but for the roots named inside it. Decided on real paths (home named through a link too).
  const std::string real_home = sys::real_path_or_empty(req.home);
  auto holds_home = [&](const std::string& p) {
    const std::string r = sys::real_path_or_empty(p);
    return !real_home.empty() && !r.empty() && paths::is_within(real_home, r);
  };
  ctx.workspace_holds_home = holds_home(ctx.workspace);
  ctx.home_real = real_home;
  for (const auto& w : req.settings.sandbox.filesystem.allow_write) {
    if (!paths::has_glob(w) && holds_home(w) && sys::real_path_or_empty(w) != real_home) ctx.home_under_writable = true;
  }
  for (const auto& w : req.extra_writable) {
    if (holds_home(w) && sys::real_path_or_empty(w) != real_home) ctx.home_under_writable = true;
  }
  ctx.state_dir = state.root;
  ctx.state_base = state.base;
  ctx.state_paths = {state.stubs};
  // Each workspace's caches beside TMPDIR, writable only by its own runs: another project's
  // sandbox cannot leave packages there that this one's installs would then unpack and run.
  // TMPDIR too is the workspace's own (in its cache directory): a git directory or a program a
  // run leaves in TMPDIR is not another project's run to rewrite. Without it, the run is refused
  // rather than given a TMPDIR shared with every workspace.
  auto caches = sys::ensure_cache_dir(state, ctx.workspace);
  if (!caches.ok()) return caches.error();
  ctx.cache_dir = caches->dir;
  ctx.tmpdir = caches->tmp;
  ctx.settings_files = req.settings_files;
  // What later runs execute outside any sandbox: wavebox itself, its shim, the bubblewrap named
  // by sandbox.bwrapPath (a build tree in the workspace, a tool in ~/.local/bin).
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string exe(self, static_cast<size_t>(n));
    ctx.program_files.push_back(exe);
    ctx.program_files.push_back(paths::join(paths::parent(exe), "wavebox-shim"));
    // The launcher that becomes this program (launcher/): next to it in a build tree, in bin/
    // once installed (each launcher runs wavebox-core from one place only: its own, here).
    ctx.program_files.push_back(paths::join(paths::parent(exe), "wavebox"));
    // (In a build tree, the launcher `cmake --install` copies into bin/.)
    ctx.program_files.push_back(paths::join(paths::parent(exe), "launcher-installed/wavebox"));
    if (paths::basename(paths::parent(exe)) == "wavebox") {  // (libexec/wavebox/: installed)
      ctx.program_files.push_back(paths::normalize(paths::parent(exe) + "/" WB_LAUNCHER_FROM_CORE));
    }
    if (std::string shim = lnx::shim_path(); !shim.empty()) ctx.program_files.push_back(shim);
  }
  if (req.settings.sandbox.bwrap_path) ctx.program_files.push_back(*req.settings.sandbox.bwrap_path);
  if (req.settings.sandbox.audit_log) ctx.audit_files.push_back(*req.settings.sandbox.audit_log);
  if (!req.audit_log.empty()) ctx.audit_files.push_back(req.audit_log);
  ctx.extra_writable = req.extra_writable;
  ctx.path_entries = resolved_path_entries(req.path_values(), req.home);
  for (const auto& w : req.settings.sandbox.filesystem.allow_write) {
    if (std::string r = sys::real_path_or_empty(w); !r.empty()) ctx.writable_real.push_back(r);
  }
  for (const auto& w : req.extra_writable) {
    if (std::string r = sys::real_path_or_empty(w); !r.empty()) ctx.writable_real.push_back(r);
  }
  if (std::string r = sys::real_path_or_empty(ctx.workspace); !r.empty() && !ctx.workspace_holds_home) {
    ctx.writable_real.push_back(r);
  }
  return ctx;
}

}  // namespace wb::engine
