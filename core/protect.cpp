// pure
#include "core/protect.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/paths.hpp"

namespace wb {

const std::vector<ProtectedEntry>& protected_table() {
  using S = ProtectScope;
  using T = LeafType;
  static const std::vector<ProtectedEntry> k = {
      // Anywhere the sandbox may write: project files that tools load on their own.
      {".vscode", S::kAnyDepth, T::kDir, "VS Code (tasks, terminal settings, launch configs)"},
      {".idea", S::kAnyDepth, T::kDir, "JetBrains IDEs (run configurations, startup tasks)"},
      {".mcp.json", S::kAnyDepth, T::kFile, "agent hosts start the MCP servers it names"},
      {".claude", S::kAnyDepth, T::kDir, "Claude Code (settings hooks, commands, agents, skills)"},
      {".wave", S::kAnyDepth, T::kDir, "wavebox settings (a later run started there), skills"},
      {".envrc", S::kAnyDepth, T::kFile, "direnv evaluates it on entering the directory"},
      {".cursor", S::kAnyDepth, T::kDir, "Cursor (rules, MCP servers)"},
      {".devcontainer", S::kAnyDepth, T::kDir, "Dev Containers (postCreateCommand and friends)"},
      {".gemini", S::kAnyDepth, T::kDir, "Gemini CLI (settings, MCP servers)"},
      {".codex", S::kAnyDepth, T::kDir, "Codex CLI (a trusted project's hooks.json and config.toml)"},
      {".opencode", S::kAnyDepth, T::kDir, "OpenCode (plugins/*.js run inside the agent host)"},
      {"opencode.json", S::kAnyDepth, T::kFile, "OpenCode (plugins, MCP servers, found walking up)"},
      {"opencode.jsonc", S::kAnyDepth, T::kFile, "OpenCode (plugins, MCP servers, found walking up)"},
      {".zed", S::kAnyDepth, T::kDir, "Zed (tasks, settings)"},
      {"config.worktree", S::kAnyDepth, T::kFile,
       "git, in a linked worktree with extensions.worktreeConfig (core.fsmonitor, core.hooksPath)"},
      // Hook managers and toolchain selectors: what they name runs on the next commit or the
      // next tool command below them (docs/protected.md has each tool's documentation).
      {".husky", S::kAnyDepth, T::kDir, "husky (the hook scripts its .husky/_ shims run)"},
      {"lefthook.yml", S::kAnyDepth, T::kFile, "lefthook (the commands its git hooks run)"},
      {".lefthook.yml", S::kAnyDepth, T::kFile, "lefthook (the commands its git hooks run)"},
      {".pre-commit-config.yaml", S::kAnyDepth, T::kFile, "pre-commit (the hooks it installs and runs)"},
      {"rust-toolchain.toml", S::kAnyDepth, T::kFile, "rustup (a toolchain path its proxies run)"},
      {"rust-toolchain", S::kAnyDepth, T::kFile, "rustup (a toolchain path its proxies run)"},
      {".yarnrc.yml", S::kAnyDepth, T::kFile, "yarn 2+ (yarnPath: the script yarn runs)"},
      {".npmrc", S::kAnyDepth, T::kFile, "npm (script-shell, git, node-options)"},
      {".pnpmfile.cjs", S::kAnyDepth, T::kFile, "pnpm (hooks it runs during resolution)"},
      {"mise.toml", S::kAnyDepth, T::kFile, "mise (env sourcing, hooks, tasks)"},
      {".mise.toml", S::kAnyDepth, T::kFile, "mise (env sourcing, hooks, tasks)"},
      {".tool-versions", S::kAnyDepth, T::kFile, "asdf and mise (path: versions run programs)"},
      // The workspace root.
      {".gitconfig", S::kWorkspace, T::kFile, "git, when included or pointed at by GIT_CONFIG"},
      {".ripgreprc", S::kWorkspace, T::kFile, "ripgrep (RIPGREP_CONFIG_PATH)"},
      {".bashrc", S::kWorkspace, T::kFile, "bash, when the workspace is someone's home"},
      {".bash_aliases", S::kWorkspace, T::kFile, "bash (sourced by Debian's .bashrc)"},
      {".bash_profile", S::kWorkspace, T::kFile, "bash login shells"},
      {".bash_login", S::kWorkspace, T::kFile, "bash login shells"},
      {".bash_logout", S::kWorkspace, T::kFile, "bash login shells"},
      {".profile", S::kWorkspace, T::kFile, "login shells"},
      {".pdbrc", S::kWorkspace, T::kFile, "pdb (read in the current directory too)"},
      {".Rprofile", S::kWorkspace, T::kFile, "R (run in place of the user's when R starts here)"},
      {".irbrc", S::kWorkspace, T::kFile, "irb (read in the current directory too)"},
      {".pryrc", S::kWorkspace, T::kFile, "pry (read in the current directory too)"},
      {".zshrc", S::kWorkspace, T::kFile, "zsh"},
      {".zshenv", S::kWorkspace, T::kFile, "zsh (every zsh, scripts too)"},
      {".zprofile", S::kWorkspace, T::kFile, "zsh login shells"},
      {".zlogin", S::kWorkspace, T::kFile, "zsh login shells"},
      {".zlogout", S::kWorkspace, T::kFile, "zsh login shells"},
      // Home: guarded whatever is writable (home as the workspace, allowWrite of home).
      {".bashrc", S::kHome, T::kFile, "bash"},
      {".bash_profile", S::kHome, T::kFile, "bash login shells"},
      {".bash_login", S::kHome, T::kFile, "bash login shells"},
      {".bash_logout", S::kHome, T::kFile, "bash login shells"},
      {".profile", S::kHome, T::kFile, "login shells"},
      {".zshrc", S::kHome, T::kFile, "zsh"},
      {".zshenv", S::kHome, T::kFile, "zsh (every zsh, scripts too)"},
      {".zprofile", S::kHome, T::kFile, "zsh login shells"},
      {".zlogin", S::kHome, T::kFile, "zsh login shells"},
      {".zlogout", S::kHome, T::kFile, "zsh login shells"},
      {".envrc", S::kHome, T::kFile, "direnv"},
      {".bash_aliases", S::kHome, T::kFile, "bash (sourced by Debian's .bashrc)"},
      {".inputrc", S::kHome, T::kFile, "readline (key bindings that run commands)"},
      {".screenrc", S::kHome, T::kFile, "screen"},
      {".xinitrc", S::kHome, T::kFile, "startx"},
      {".xsession", S::kHome, T::kFile, "display managers"},
      {".xprofile", S::kHome, T::kFile, "display managers"},
      {".mailcap", S::kHome, T::kFile, "mail and file viewers run the programs it names"},
      {".gdbinit", S::kHome, T::kFile, "gdb"},
      {".lldbinit", S::kHome, T::kFile, "lldb"},
      {".pdbrc", S::kHome, T::kFile, "python's pdb"},
      {".ipython", S::kHome, T::kDir, "IPython startup scripts"},
      {".jupyter", S::kHome, T::kDir, "Jupyter configuration (python)"},
      {".irbrc", S::kHome, T::kFile, "irb (ruby)"},
      {".pryrc", S::kHome, T::kFile, "pry (ruby)"},
      {".Rprofile", S::kHome, T::kFile, "R"},
      {".psqlrc", S::kHome, T::kFile, "psql (\\! runs commands)"},
      {".sqliterc", S::kHome, T::kFile, "sqlite3 (.shell runs commands)"},
      {".hgrc", S::kHome, T::kFile, "Mercurial (hooks)"},
      {".pip", S::kHome, T::kDir, "pip (index URL)"},
      {".gradle", S::kHome, T::kDir, "Gradle (init.d scripts)"},
      {".m2", S::kHome, T::kDir, "Maven (settings, extensions)"},
      {".npm-init.js", S::kHome, T::kFile, "npm init"},
      {".tmux.conf", S::kHome, T::kFile, "tmux (run-shell)"},
      {".gitconfig", S::kHome, T::kFile, "git (core.fsmonitor, aliases, hooksPath)"},
      {".config/git", S::kHome, T::kDir, "git (XDG config, attributes, ignore)"},
      {".local/lib", S::kHome, T::kDir, "python's user site-packages (.pth, usercustomize)"},
      {".local/share/pnpm", S::kHome, T::kDir, "PNPM_HOME, on PATH after pnpm setup"},
      {".local/share/applications", S::kHome, T::kDir, "desktop launchers"},
      {".npm/_npx", S::kHome, T::kDir, "packages npx runs again"},
      {".ssh", S::kHome, T::kDir, "sshd (authorized_keys, rc) and ssh (config, ProxyCommand)"},
      {".config/autostart", S::kHome, T::kDir, "XDG autostart on login"},
      {".config/systemd", S::kHome, T::kDir, "systemd --user units"},
      {".config/environment.d", S::kHome, T::kDir, "systemd --user environment"},
      {".config/fish", S::kHome, T::kDir, "fish"},
      {".config/nvim", S::kHome, T::kDir, "Neovim"},
      {".config/Code", S::kHome, T::kDir, "VS Code user settings and tasks"},
      {".config/direnv", S::kHome, T::kDir, "direnv (direnvrc, allow list)"},
      {".config/pip", S::kHome, T::kDir, "pip (index URL, trusted hosts)"},
      {".config/gh", S::kHome, T::kDir, "GitHub CLI (aliases run commands, tokens)"},
      {".config/opencode", S::kHome, T::kDir, "OpenCode (global plugins, config)"},
      {"bin", S::kHome, T::kDir, "put first on PATH by the default ~/.profile when it exists (Debian, Ubuntu)"},
      {".local/bin", S::kHome, T::kDir, "put on PATH by the default ~/.profile and systemd's user PATH when it exists"},
      {".claude.json", S::kHome, T::kFile, "Claude Code (MCP servers, project trust)"},
      {".claude", S::kHome, T::kDir, "Claude Code (settings hooks, commands, credentials)"},
      {".wave", S::kHome, T::kDir, "wavebox settings"},
      {".codex", S::kHome, T::kDir, "Codex CLI (config, MCP servers)"},
      {".gemini", S::kHome, T::kDir, "Gemini CLI"},
      {".cursor", S::kHome, T::kDir, "Cursor"},
      {".aws", S::kHome, T::kDir, "AWS CLI (credential_process runs a command)"},
      {".kube", S::kHome, T::kDir, "kubectl (exec credential plugins)"},
      {".docker", S::kHome, T::kDir, "docker (credential helpers)"},
      {".gnupg", S::kHome, T::kDir, "gpg (agent programs)"},
      {".npmrc", S::kHome, T::kFile, "npm (script-shell, git, registry)"},
      {".yarnrc", S::kHome, T::kFile, "yarn"},
      {".yarnrc.yml", S::kHome, T::kFile, "yarn berry (yarnPath runs a script)"},
      {".pypirc", S::kHome, T::kFile, "twine (upload credentials)"},
      {".cargo/config.toml", S::kHome, T::kFile, "cargo (runners, linkers)"},
      {".cargo/config", S::kHome, T::kFile, "cargo (runners, linkers)"},
      {".cargo/bin", S::kHome, T::kDir, "on PATH after rustup"},
      {".rustup", S::kHome, T::kDir, "rustup toolchains the cargo shims run"},
      {".nvm", S::kHome, T::kDir, "nvm.sh, sourced by shells"},
      {".pyenv", S::kHome, T::kDir, "pyenv shims on PATH"},
      {".bun", S::kHome, T::kDir, "bun's global bin on PATH"},
      {".deno", S::kHome, T::kDir, "deno's installed scripts on PATH"},
      {"go/bin", S::kHome, T::kDir, "GOPATH/bin on PATH"},
      {".vimrc", S::kHome, T::kFile, "Vim"},
      {".vim", S::kHome, T::kDir, "Vim plugins"},
      {".emacs", S::kHome, T::kFile, "Emacs"},
      {".emacs.d", S::kHome, T::kDir, "Emacs"},
      {".netrc", S::kHome, T::kFile, "curl, git, ftp credentials"},
      {".git-credentials", S::kHome, T::kFile, "git credential store"},
      // macOS: what launchd, apps and agent hosts there run or trust (nothing on Linux has these).
      {"Library/LaunchAgents", S::kHome, T::kDir, "launchd starts what it names at login (macOS)"},
      {"Library/Preferences", S::kHome, T::kDir, "apps' settings, some of them commands (Terminal, iTerm2; macOS)"},
      {"Library/Services", S::kHome, T::kDir, "Services menu workflows (macOS)"},
      {"Library/Scripts", S::kHome, T::kDir, "AppleScripts that apps and Folder Actions run (macOS)"},
      {"Library/Application Support/Code/User", S::kHome, T::kDir, "VS Code user settings and tasks (macOS)"},
      {"Library/Application Support/Cursor/User", S::kHome, T::kDir, "Cursor user settings (macOS)"},
      {"Library/Application Support/Claude", S::kHome, T::kDir, "Claude Desktop (MCP servers it starts; macOS)"},
      {"Library/Application Support/iTerm2", S::kHome, T::kDir, "iTerm2 (AutoLaunch scripts, dynamic profiles; macOS)"},
      {"Library/Application Support/pip", S::kHome, T::kDir, "pip (index URL, trusted hosts; macOS)"},
      {"Library/Keychains", S::kHome, T::kDir, "the user's keychains (macOS)"},
      {".cargo/env", S::kHome, T::kFile, "every shell (rustup's installer sources it from .profile and .bashrc)"},
      {".bash_completion", S::kHome, T::kFile, "bash-completion (every interactive bash)"},
      {".xsessionrc", S::kHome, T::kFile, "Debian's Xsession (every graphical login)"},
      {".config/gdb", S::kHome, T::kDir, "gdb (its XDG gdbinit)"},
      {".config/tmux", S::kHome, T::kDir, "tmux (its XDG tmux.conf)"},
      {".config/zed", S::kHome, T::kDir, "Zed (user settings and tasks)"},
      {".config/Cursor", S::kHome, T::kDir, "Cursor (user settings, Linux)"},
      {".config/mise", S::kHome, T::kDir, "mise (global config: env sourcing, hooks, tasks)"},
  };
  return k;
}

const char* scope_name(ProtectScope s) {
  switch (s) {
    case ProtectScope::kAnyDepth:
      return "any depth";
    case ProtectScope::kWorkspace:
      return "workspace";
    case ProtectScope::kHome:
      return "home";
  }
  return "?";
}

bool is_protected_name(const std::string& name) {
  for (const auto& e : protected_table()) {
    if (e.scope == ProtectScope::kAnyDepth && paths::same_name(name, e.rel)) return true;
  }
  return false;
}

void CreationGuard::add_path(const std::string& path, const std::string& why) {
  for (const auto& p : paths_) {
    if (p.path == path) return;
  }
  paths_.push_back({path, why});
}

void CreationGuard::add_zone(const std::string& dir, std::vector<std::string> carve, const std::string& why) {
  zones_.push_back({dir, std::move(carve), why});
}

void CreationGuard::add_repository(const std::string& gitdir) {
  repos_.insert(gitdir);
}

bool in_dependency_tree(const std::string& path, const std::string& root) {
  if (!paths::is_within(path, root)) return false;
  std::string rel = path.substr(root == "/" ? 0 : root.size()) + "/";
  return rel.find("/node_modules/") != std::string::npos;
}

bool CreationGuard::in_deps(const std::string& path) const {
  // The deepest root holding the path decides.
  const std::string* best = nullptr;
  for (const auto& r : roots_) {
    if (paths::is_within(path, r) && (!best || r.size() > best->size())) best = &r;
  }
  return best && in_dependency_tree(path, *best);
}

std::string CreationGuard::refuses(const std::string& path, bool in_new_dir, bool tree) const {
  std::string name = paths::basename(path);
  // Inside node_modules, packages' own editor folders are nobody's project: no host tool opens
  // them, and guarding them made `rm -rf node_modules` fail (repositories there stay guarded).
  const bool deps = in_deps(path);
  for (const auto& e : protected_table()) {
    const bool wave = paths::same_name(name, ".wave");
    if (e.scope == ProtectScope::kAnyDepth && paths::same_name(name, e.rel) && (!in_new_dir || wave) &&
        (!deps || wave)) {
      return fmt::format("protected name: {}", e.runs_it);
    }
  }
  // HEAD in a directory that existed and is no repository: with objects and refs beside it
  // (files do: git only checks they can be entered), git takes that directory for a bare
  // repository before looking further up, and runs what its config says. Repositories made in
  // this run (a new directory) are warned about and guarded from the next run on.
  auto in_repo = [&](const std::string& dir) {
    // The nearest known git directory at or above dir (logs/HEAD, refs/remotes/origin/HEAD).
    for (std::string d = dir; d.size() > 1; d = paths::parent(d)) {
      if (repos_.count(d)) return true;
    }
    return false;
  };
  if (paths::same_name(name, "HEAD") && !in_new_dir && !in_repo(paths::parent(path))) {
    return "HEAD would make this directory a repository that git trusts";
  }
  for (const auto& p : paths_) {
    // The path itself, something inside it, or (a tree or link put in place) a directory that
    // would hold it.
    if (paths::is_within_any_case(path, p.path) || (tree && paths::is_within_any_case(p.path, path))) return p.why;
  }
  for (const auto& z : zones_) {
    // The zone's directory itself (moved away, made again) or a tree put where it is.
    if (paths::same_name(path, z.dir) || (tree && paths::is_within_any_case(z.dir, path))) return z.why;
    if (!paths::is_within_any_case(path, z.dir)) continue;
    bool carved = std::any_of(z.carve.begin(), z.carve.end(),
                              [&](const std::string& c) { return path != c && paths::is_within(path, c); });
    if (!carved) return z.why;
  }
  return {};
}

std::string CreationGuard::moving_refused(const std::string& path) const {
  for (const auto& z : zones_) {
    if (paths::is_within(z.dir, path)) return z.why;
  }
  return {};
}

std::vector<std::string> CreationGuard::describe() const {
  std::vector<std::string> out;
  for (const auto& p : paths_) out.push_back(fmt::format("{} ({})", p.path, p.why));
  for (const auto& z : zones_) out.push_back(fmt::format("{}/* ({})", z.dir, z.why));
  return out;
}

}  // namespace wb
