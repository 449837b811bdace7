// pure
#include "core/policy.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/paths.hpp"

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
  return name == ".git" || name == ".vscode" || name == ".idea" || name == ".mcp.json" ||
         name == ".claude" || name == ".wave";
}

std::vector<GuardedPath> guarded_for_entry(const std::string& dir, const std::string& name,
                                           bool stub_missing) {
  std::vector<GuardedPath> out;
  auto at = [&](std::initializer_list<const char*> parts, LeafType t, bool stub) {
    std::string p = dir;
    for (const char* part : parts) p = paths::join(p, part);
    out.push_back({p, t, stub});
  };
  if (name == ".vscode" || name == ".idea") {
    at({name.c_str()}, LeafType::kDir, stub_missing);
  } else if (name == ".mcp.json") {
    // A stub the host's agent may read during the run: an empty JSON object, not an empty file.
    out.push_back({paths::join(dir, ".mcp.json"), LeafType::kFile, stub_missing, "{}\n"});
  } else if (name == ".claude" || name == ".wave") {
    // Guarded whole: settings (hooks, permissions), commands, agents, skills all live there, and
    // a read-only folder needs no stubs for the files it does not have yet (a stub settings file
    // would be read by a concurrent wavebox or agent as an empty, invalid settings file).
    at({name.c_str()}, LeafType::kDir, stub_missing);
  }  return out;
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

  p.writable.push_back({ctx.workspace, false});
  p.writable.push_back({ctx.tmpdir, false});
  if (s.mode != Mode::kStrict) {
    // FS-6: package managers' caches, so installs work sandboxed. Nothing else in home.
    for (const char* rel : {".npm", ".local/share/pnpm", ".cache/pnpm", ".cache/yarn"}) {
      p.writable.push_back({paths::join(ctx.home, rel), true});
    }
  }
  auto add_writable = [&](const std::string& w, const char* source) {
    if (paths::has_glob(w)) {
      p.warnings.push_back(fmt::format(
          "{} entry \"{}\" is a glob; Linux binds concrete paths, so it is ignored", source, w));
      return;
    }
    p.writable.push_back({w, false});
  };
  for (const auto& w : s.filesystem.allow_write) add_writable(w, "allowWrite");
  for (const auto& w : ctx.extra_writable) add_writable(w, "--allow-write");

  for (const auto& d : s.filesystem.deny_write) {
    if (paths::has_glob(d)) {
      p.warnings.push_back(fmt::format(
          "denyWrite entry \"{}\" is a glob; Linux binds concrete paths, so it is ignored", d));
      continue;
    }
    add_guard(p.deny_write, {d, guess_type(d), true});
  }

  // FS-4: always write-protected, whatever the configuration.
  for (const auto& f : ctx.settings_files) add_guard(p.deny_write, {f, LeafType::kFile, true});
  for (const auto& rc : shell_startup_files()) {
    add_guard(p.deny_write, {paths::join(ctx.home, rc), LeafType::kFile, true});
    add_guard(p.deny_write, {paths::join(ctx.workspace, rc), LeafType::kFile, false});
  }
  add_guard(p.deny_write, {paths::join(ctx.home, ".gitconfig"), LeafType::kFile, true});
  add_guard(p.deny_write, {paths::join(ctx.home, ".config/git"), LeafType::kDir, true});
  for (const char* name : {".wave", ".claude"}) {
    for (auto& g : guarded_for_entry(ctx.home, name, true)) add_guard(p.deny_write, g);
  }
  for (const char* name : {".vscode", ".idea", ".mcp.json", ".claude", ".wave"}) {
    for (auto& g : guarded_for_entry(ctx.workspace, name, true)) add_guard(p.deny_write, g);
  }
  // wavebox's own state (stub registry, scan cache) sits beside the writable TMPDIR.
  for (const char* part : {"stubs", "stubpool", "scan", "unreadable", "bwrap-version", "userns-ok"}) {
    add_guard(p.deny_write, {paths::join(ctx.state_dir, part), LeafType::kDir, false, ""});
  }

  if (s.mode != Mode::kPermissive) {
    for (const auto& rel : sensitive_home_paths()) {
      std::string path = paths::join(ctx.home, rel);
      LeafType t = (rel == ".netrc" || rel == ".git-credentials" || rel == ".docker/config.json")
                       ? LeafType::kFile
                       : LeafType::kDir;
      // Built-in entries are masked when they exist; a missing one gets no stub (eight empty
      // folders in every user's home during every run would be worse than the risk), and is
      // checked for after the run instead. A denyRead entry in settings gets the stub.
      add_guard(p.deny_read, {path, t, false});
    }
  }
  for (const auto& d : s.filesystem.deny_read) add_guard(p.deny_read, {d, guess_type(d), true});
  p.allow_read = s.filesystem.allow_read;

  // Nested repositories and editor folders can sit anywhere below a tree the sandbox may write.
  p.scan_roots.push_back(ctx.workspace);
  for (const auto& w : s.filesystem.allow_write) {
    if (!paths::has_glob(w)) p.scan_roots.push_back(w);
  }
  for (const auto& w : ctx.extra_writable) {
    if (!paths::has_glob(w)) p.scan_roots.push_back(w);
  }
  return p;
}

}  // namespace wb
