// pure
#include "core/policy.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/paths.hpp"
#include "core/protect.hpp"
#include "core/secrets.hpp"

namespace wb {
namespace {

LeafType guess_type(const std::string& path) {
  std::string base = paths::basename(path);
  auto dot = base.find('.', 1);
  return dot != std::string::npos ? LeafType::kFile : LeafType::kDir;
}

void add_guard(std::vector<GuardedPath>& v, GuardedPath g) {
  for (auto& e : v) {
    if (e.path == g.path) {
      e.stub_if_missing = e.stub_if_missing || g.stub_if_missing;
      return;
    }
  }
  v.push_back(std::move(g));
}

}  // namespace

const std::vector<std::string>& shell_startup_files() {
  static const std::vector<std::string> k = {
      ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc",
      ".zshenv", ".zprofile",     ".zlogin",     ".zlogout",     ".envrc",
  };
  return k;
}

bool is_scanned_name(const std::string& name) {
  return paths::same_name(name, ".git") || is_protected_name(name);
}

std::vector<GuardedPath> guarded_for_entry(const std::string& dir, const std::string& name, bool stub_missing) {
  std::vector<GuardedPath> out;
  for (const auto& e : protected_table()) {
    // Guarded whole: a read-only folder needs nothing for the files it does not have yet.
    if (e.scope == ProtectScope::kAnyDepth && paths::same_name(name, e.rel)) {
      out.push_back({paths::join(dir, name), e.type, stub_missing, "", fmt::format("protected name: {}", e.runs_it)});
    }
  }
  return out;
}

std::string protection_reason(const std::vector<GuardedPath>& deny_write, const std::string& path) {
  const GuardedPath* best = nullptr;
  for (const auto& g : deny_write) {
    if (g.why.empty() || !paths::is_within(path, g.path)) continue;
    if (!best || g.path.size() > best->path.size()) best = &g;
  }
  if (!best) return {};
  std::string why = best->why;
  const std::string prefix = "protected: ";  // (the protected table's reasons have it already)
  if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
  return prefix + why + "; change it outside the sandbox";
}

FsPolicy make_fs_policy(const SandboxSettings& s, const PolicyContext& ctx, bool network_only) {
  FsPolicy p;
  p.enabled = !(network_only || s.filesystem.disabled);
  p.host_proc = s.enable_weaker_nested_sandbox;
  if (p.host_proc) {
    p.warnings.push_back(
        "sandbox.enableWeakerNestedSandbox: the command sees the host's /proc (read-only): every "
        "process of the machine, and maybe the environment and memory of the caller's own; use it "
        "only where something else (a container) isolates those");
  }
  if (!p.enabled) return p;
  p.strict = s.mode == Mode::kStrict;
  if (p.strict) p.visible = ctx.visible;
  if (s.mode == Mode::kPermissive) {
    p.warnings.push_back(
        "mode \"permissive\" is for troubleshooting only: credential files in home are readable and "
        "credential variables (tokens, keys, agent sockets) reach the command");
  }

  if (ctx.workspace_holds_home) {
    p.warnings.push_back(fmt::format(
        "the workspace \"{}\" is the home directory (or holds it), so it is read-only in the sandbox; run from a "
        "project directory, or name the directories the command writes in sandbox.filesystem.allowWrite",
        ctx.workspace));
  } else {
    p.writable.push_back({ctx.workspace, false});
  }
  p.writable.push_back({ctx.tmpdir, false});
  if (!ctx.cache_dir.empty()) p.writable.push_back({ctx.cache_dir, false, true});
  // Package managers get caches of the sandbox's own (in TMPDIR, named by the
  // environment: engine/environment.cpp), not the host's ~/.npm, pnpm store or yarn cache: what a sandboxed
  // install puts in a cache is later unpacked and run by the host's installs (npx reruns
  // ~/.npm/_npx; PNPM_HOME is on PATH). Nothing in home is writable by default.
  // A glob in a write rule covers what matches it when the run starts (bwrap/plan/facts.cpp,
  // expand_globs, says so); "dir/**" was made the directory itself already.
  // Home itself as a writable root: read-only all the same (the user's shells, tools and agents
  // run what is in it, more than any table names), said with the fix.
  auto is_home = [&](const std::string& w) { return w == ctx.home || (!ctx.home_real.empty() && w == ctx.home_real); };
  auto add_writable = [&](const std::string& w, const char* key) {
    if (is_home(w)) {
      p.warnings.push_back(
          fmt::format("{} names the home directory \"{}\", which stays read-only in the sandbox; name "
                      "the directories inside it that the command writes",
                      key, w));
      return;
    }
    p.writable.push_back({w, false});
  };
  for (const auto& w : s.filesystem.allow_write) add_writable(w, "allowWrite");
  for (const auto& w : ctx.extra_writable) add_writable(w, "--allow-write");

  for (const auto& d : s.filesystem.deny_write) add_guard(p.deny_write, {d, guess_type(d), true});
  // A rule that needs no list: nothing on the user's PATH is writable. Only the entries inside
  // a writable root need a guard (the rest is read-only already); a relative entry ("." or
  // "bin") names a different directory in every shell, so it is said, not guessed.
  for (const auto& e : ctx.path_entries) {
    if (e.empty() || e[0] != '/') {
      p.warnings.push_back(
          fmt::format("PATH holds the relative entry \"{}\": a program a command leaves in the directory your shell "
                      "is in would run in place of the one you meant; remove it from PATH",
                      e.empty() ? "" : e));
      continue;
    }
    const std::string dir = paths::normalize(e);
    // A root given as a glob covers what it matches when the run starts: its fixed part decides.
    auto under = [&](const std::string& root) {
      const size_t g = root.find_first_of("*?[");
      const std::string fixed = g == std::string::npos ? root : paths::parent(root.substr(0, g) + "x");
      return paths::is_within(dir, fixed);
    };
    const bool inside =
        std::any_of(p.writable.begin(), p.writable.end(), [&](const WritableRoot& w) { return under(w.path); }) ||
        std::any_of(ctx.writable_real.begin(), ctx.writable_real.end(), under);
    if (inside) {
      add_guard(p.deny_write,
                {dir, LeafType::kDir, true, "", "on your PATH: your shell would run what a command leaves there"});
    }
  }

  // Always write-protected, whatever the configuration (core/protect.hpp's table).
  for (const auto& f : ctx.settings_files) {
    add_guard(p.deny_write, {f, LeafType::kFile, true, "", "a settings file wavebox reads"});
  }
  for (const auto& f : ctx.program_files) {
    add_guard(p.deny_write, {f, LeafType::kFile, true, "", "a program wavebox runs outside the sandbox"});
  }
  for (const auto& f : ctx.audit_files) {
    add_guard(p.deny_write, {f, LeafType::kFile, true, "", "wavebox's audit log"});
  }
  for (const auto& e : protected_table()) {
    std::string why = fmt::format("protected: {}", e.runs_it);
    if (e.scope == ProtectScope::kHome) add_guard(p.deny_write, {paths::join(ctx.home, e.rel), e.type, true, "", why});
    if (e.scope == ProtectScope::kWorkspace || e.scope == ProtectScope::kAnyDepth) {
      add_guard(p.deny_write, {paths::join(ctx.workspace, e.rel), e.type, true, "", why});
    }
  }
  // wavebox's own state: what later runs read back (caches, registry, compiled programs) is
  // never writable inside, whatever the policy makes writable around it (a workspace in /tmp,
  // allowWrite of /tmp or /dev/shm). Where it sits beside TMPDIR, nothing new may appear there.
  const std::string why_state = "wavebox's own state, which later runs trust";
  std::vector<std::string> own_cache;  // read back through the mask of every workspace's caches
  auto guard_state = [&](const std::string& path) {
    if (path.empty()) return;
    if (!ctx.tmpdir.empty() && paths::is_within(ctx.tmpdir, path)) {
      // Other workspaces' TMPDIRs and package caches (what their runs and builds left there) are
      // not this run's to read: the caches folder is masked, this workspace's own read through.
      const std::string caches = paths::join(path, "caches");
      if (!ctx.cache_dir.empty() && paths::is_within(ctx.cache_dir, caches) && ctx.cache_dir != caches) {
        add_guard(p.deny_read, {caches, LeafType::kDir, false});
        own_cache.push_back(ctx.cache_dir);
      }
      std::vector<std::string> carve = {ctx.tmpdir};
      if (!ctx.cache_dir.empty()) carve.push_back(ctx.cache_dir);
      p.zones.push_back({path, carve, why_state});
      for (const char* part : {"stubs", "stubpool", "stubpool-aside", "scan", "seccomp", "unreadable", "bwrap-version",
                               "userns-ok", "caches", "tmp"}) {
        add_guard(p.deny_write, {paths::join(path, part), LeafType::kDir, true, "", why_state});
      }
    } else {
      add_guard(p.deny_write, {path, LeafType::kDir, true, "", why_state});
    }
  };
  guard_state(ctx.state_dir);
  if (ctx.state_base != ctx.state_dir) guard_state(ctx.state_base);
  // The stub registry in /dev/shm: the sandbox has a /dev/shm of its own unless the policy
  // binds the host's (then the plan reaches into /dev anyway).
  bool dev_writable = std::any_of(p.writable.begin(), p.writable.end(),
                                  [](const WritableRoot& w) { return paths::is_within(w.path, "/dev"); });
  for (const auto& sp : ctx.state_paths) {
    if (!paths::is_within(sp, "/dev") || dev_writable) guard_state(sp);
  }

  if (s.mode != Mode::kPermissive) {
    for (const auto& rel : sensitive_home_paths()) {
      std::string path = paths::join(ctx.home, rel);
      LeafType t = (rel == ".netrc" || rel == ".git-credentials" || rel == ".docker/config.json") ? LeafType::kFile
                                                                                                  : LeafType::kDir;
      // Built-in entries are masked when they exist; a missing one gets no stub (eight empty
      // folders in every user's home during every run would be worse than the risk), and is
      // checked for after the run instead. A denyRead entry in settings gets the stub.
      add_guard(p.deny_read, {path, t, false});
    }
  }
  if (s.mode != Mode::kPermissive) {
    // Tools' configuration with credentials in it: shown without them, unless allowRead names
    // the file (the way to pass one through).
    for (const auto& rel : credential_config_files()) {
      std::string path = paths::join(ctx.home, rel);
      bool passed = std::find(s.filesystem.allow_read.begin(), s.filesystem.allow_read.end(), path) !=
                    s.filesystem.allow_read.end();
      if (!passed) p.masked.push_back(path);
    }
  }
  if (s.mode != Mode::kPermissive) {
    // The system's password hashes: unreadable to a root caller too, in every mode but permissive.
    for (const char* f : {"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-"}) {
      add_guard(p.deny_read, {f, LeafType::kFile, false});
    }
  }
  for (const auto& d : s.filesystem.deny_read) add_guard(p.deny_read, {d, guess_type(d), true});
  p.allow_read = s.filesystem.allow_read;
  p.allow_read.insert(p.allow_read.end(), own_cache.begin(), own_cache.end());

  // Nested repositories and editor folders can sit anywhere below a tree the sandbox may write.
  if (!ctx.workspace_holds_home) p.scan_roots.push_back(ctx.workspace);
  for (const auto& w : s.filesystem.allow_write) {
    if (!paths::has_glob(w)) p.scan_roots.push_back(w);
  }
  for (const auto& w : ctx.extra_writable) {
    if (!paths::has_glob(w)) p.scan_roots.push_back(w);
  }
  // A writable root above home (allowWrite of /home, or of a /tmp that holds the home): home is
  // guarded as a whole, and only the roots named inside it (the workspace, allowWrite entries)
  // are writable there, each still under the guards inside it.
  if (ctx.home_under_writable) {
    const std::string why = "the home directory: only the directories named inside it are writable";
    add_guard(p.deny_write, {ctx.home, LeafType::kDir, false, "", why});
    for (auto& w : p.writable) {
      bool in_home = (paths::is_within(w.path, ctx.home) && w.path != ctx.home) ||
                     (!ctx.home_real.empty() && paths::is_within(w.path, ctx.home_real) && w.path != ctx.home_real);
      bool in_other_guard = std::any_of(p.deny_write.begin(), p.deny_write.end(), [&](const GuardedPath& g) {
        return g.path != ctx.home && paths::is_within(w.path, g.path);
      });
      if (in_home && !in_other_guard) w.over_guard = true;
    }
  }
  return p;
}

}  // namespace wb

namespace wb {

FsPolicy with_findings(const FsPolicy& given, const Findings& found) {
  FsPolicy planned = given;
  planned.deny_write.insert(planned.deny_write.end(), found.deny_write.begin(), found.deny_write.end());
  for (const auto& w : found.writable) planned.writable.push_back({w, false});
  planned.zones.insert(planned.zones.end(), found.zones.begin(), found.zones.end());
  return planned;
}

namespace {

// Each value with its length first: no two lists of fields give the same text.
void add(std::string& k, const std::string& s) {
  k += std::to_string(s.size());
  k += ':';
  k += s;
}
void add(std::string& k, bool b) {
  k += b ? '1' : '0';
}
void add(std::string& k, LeafType t) {
  k += t == LeafType::kDir ? 'd' : 'f';
}
void add(std::string& k, const WritableRoot& w) {
  const auto& [path, optional, over_guard] = w;
  add(k, path);
  add(k, optional);
  add(k, over_guard);
}
void add(std::string& k, const GuardedPath& g) {
  const auto& [path, type, stub_if_missing, stub_content, why] = g;
  add(k, path);
  add(k, type);
  add(k, stub_if_missing);
  add(k, stub_content);
  add(k, why);
}
void add(std::string& k, const FsPolicy::Zone& z);
template <typename T>
void add(std::string& k, const std::vector<T>& list) {
  k += '[' + std::to_string(list.size());
  for (const auto& item : list) add(k, item);
  k += ']';
}
void add(std::string& k, const FsPolicy::Zone& z) {
  const auto& [dir, carve, why] = z;
  add(k, dir);
  add(k, carve);
  add(k, why);
}

}  // namespace

std::string policy_key(const FsPolicy& policy) {
  const auto& [enabled, host_proc, writable, deny_write, deny_read, allow_read, scan_roots, zones, warnings, strict,
               visible, masked] = policy;
  std::string k;
  add(k, enabled);
  add(k, host_proc);
  add(k, writable);
  add(k, deny_write);
  add(k, deny_read);
  add(k, allow_read);
  add(k, scan_roots);
  add(k, zones);
  add(k, warnings);
  add(k, strict);
  add(k, visible);
  add(k, masked);
  return k;
}

}  // namespace wb
