#include "engine/environment.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "core/paths.hpp"
#include "core/secrets.hpp"
#include "core/sys/fs.hpp"

namespace wb::engine {

// Package managers' caches of the sandbox's own, in its TMPDIR. The host's (~/.npm,
// the pnpm store, the yarn cache) stay read-only: what a sandboxed install leaves in a cache is
// unpacked and run later by the host's own installs (npx reruns ~/.npm/_npx). A cache the
// caller named in the environment is kept (then it is writable only if the policy says so).
std::vector<std::string> sandbox_env(const std::vector<std::string>& caller, const std::string& tmpdir,
                                     const std::string& caches, const std::vector<std::string>& pass, bool pass_all,
                                     const Logger& log, const SandboxSettings* credentials) {
  std::vector<std::string> env;
  // One set of caches per workspace, writable by that workspace's runs only: what a hostile
  // run leaves in a cache reaches only later installs of the same workspace (which it could
  // write anyway), never another project's. (pnpm's settings go through PNPM_HOME and the XDG
  // directories: as npm_config_* variables, npm warns about each.)
  std::vector<std::pair<std::string, std::string>> defaults = {
      {"npm_config_cache", caches + "/npm"},           // npm, npx
      {"PNPM_HOME", caches + "/pnpm"},                 // pnpm's store and global bin
      {"XDG_CACHE_HOME", caches + "/xdg-cache"},       // pnpm's metadata, pip's cache, ...
      {"XDG_STATE_HOME", caches + "/xdg-state"},       // pnpm's state
      {"YARN_CACHE_FOLDER", caches + "/yarn"},         // yarn 1
      {"YARN_GLOBAL_FOLDER", caches + "/yarn-berry"},  // yarn 2+
  };
  if (caches.empty()) defaults.clear();
  for (const auto& kv : caller) {
    if (kv.rfind("TMPDIR=", 0) == 0) continue;
    for (auto it = defaults.begin(); it != defaults.end(); ++it) {
      if (kv.rfind(it->first + "=", 0) == 0) {
        defaults.erase(it);
        break;
      }
    }
    env.push_back(kv);
  }
  env.push_back("TMPDIR=" + tmpdir);
  for (const auto& [k, v] : defaults) env.push_back(k + "=" + v);
  if (!pass_all) {
    // Secrets by default: tokens, keys, passwords and agent sockets stay outside, except what
    // the settings or --pass-env name (mode "permissive" passes everything).
    std::vector<std::string> removed;
    env = without_credentials(env, pass, &removed);
    if (!removed.empty()) {
      std::string names;
      for (const auto& n : removed) names += (names.empty() ? "" : " ") + n;
      log.info(
          "credential variables kept out of the sandbox (pass one with --pass-env NAME or "
          "sandbox.passEnvironment): " +
          names);
    }
  }
  if (credentials) {
    // sandbox.credentials: the user named these; no mode or passEnvironment brings them back.
    auto named = [](const std::vector<std::string>& names, const std::string& kv) {
      const std::string k = kv.substr(0, kv.find('='));
      return std::find(names.begin(), names.end(), k) != names.end();
    };
    std::erase_if(env, [&](const std::string& kv) { return named(credentials->deny_environment, kv); });
    for (auto& kv : env) {
      if (named(credentials->mask_environment, kv)) kv = kv.substr(0, kv.find('=') + 1) + "wavebox-masked-credential";
    }
  }
  return env;
}

Result<std::string> find_command(const std::vector<std::string>& argv, const std::string& cwd,
                                 const std::vector<std::string>& env) {
  std::string path_env;
  for (const auto& kv : env) {
    if (kv.rfind("PATH=", 0) == 0) path_env = kv.substr(5);
  }
  std::string exe = sys::find_in_path(argv[0], path_env);
  if (argv[0].find('/') != std::string::npos) {
    std::string full = argv[0][0] == '/' ? argv[0] : paths::join(cwd, argv[0]);
    if (!sys::exists(full)) {
      exe.clear();
    } else if (::access(full.c_str(), X_OK) != 0 || sys::is_dir(full)) {
      return make_error(ErrorKind::kNotExecutable, fmt::format("{}: Permission denied", argv[0]));
    }
  }
  if (exe.empty()) return make_error(ErrorKind::kNotFound, fmt::format("{}: command not found", argv[0]));
  return exe;
}

}  // namespace wb::engine
