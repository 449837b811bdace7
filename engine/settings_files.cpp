#include "engine/settings_files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "core/hash.hpp"
#include "core/narrow.hpp"
#include "core/paths.hpp"
#include "core/sys/fd.hpp"
#include "core/sys/fs.hpp"

namespace wb::engine {
namespace {

// The built-in profile as a settings file: what a project narrows when the user has no file.
constexpr const char* kBuiltinProfile = R"({"sandbox":{"enabled":true}})";

// The project files of one folder, in merge order (SPEC §2): wave's, then Claude Code's, each
// shared file before its local one.
std::vector<std::string> project_files_of(const std::string& dir) {
  return {paths::join(dir, ".wave/settings.json"), paths::join(dir, ".claude/settings.json"),
          paths::join(dir, ".wave/settings.local.json"), paths::join(dir, ".claude/settings.local.json")};
}

std::vector<std::string> user_files_of(const std::string& home) {
  return {paths::join(home, ".wave/settings.json"), paths::join(home, ".claude/settings.json")};
}

// A directory that marks a project: one of ours or root's (another local user's /tmp/.wave does
// not make /tmp a project of ours).
bool marks_project(const std::string& dir) {
  struct stat st;
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && (st.st_uid == ::geteuid() || st.st_uid == 0);
}

void add_unique(std::vector<std::string>& v, const std::string& x) {
  if (!x.empty() && std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

std::string shown(const std::string& v) {
  return v.size() > 60 ? v.substr(0, 57) + "..." : v;
}

}  // namespace

std::string find_project_root(const std::string& cwd, const std::string& home) {
  std::vector<std::string> chain = paths::ancestors(cwd);
  chain.push_back(paths::normalize(cwd));
  std::reverse(chain.begin(), chain.end());  // cwd first, "/" last
  for (const auto& d : chain) {
    if (d == home) break;  // home's .claude/ and .wave/ are the user's own files
    if (marks_project(paths::join(d, ".claude")) || marks_project(paths::join(d, ".wave"))) return d;
  }
  for (const auto& d : chain) {
    struct stat st;
    if (::lstat(paths::join(d, ".git").c_str(), &st) == 0) return d;
  }
  return paths::normalize(cwd);
}

std::string trust_file(const std::string& home) {
  return paths::join(home, ".config/wavebox/trusted-folders.json");
}

Result<std::vector<std::string>> trusted_folders(const std::string& home) {
  const std::string file = trust_file(home);
  sys::Fd fd(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT || errno == ENOTDIR) return std::vector<std::string>{};
    return sys::sys_error("open", file, errno);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    return make_error(ErrorKind::kSettings,
                      fmt::format("{}: not a regular file of this user's that only they can write; no folder is "
                                  "trusted until it is removed or fixed",
                                  file));
  }
  std::string text;
  char buf[8192];
  for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      return sys::sys_error("read", file, errno);
    }
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > (1u << 20)) return make_error(ErrorKind::kSettings, file + ": larger than 1 MiB");
  }
  std::vector<std::string> out;
  try {
    auto j = nlohmann::json::parse(text);
    for (const auto& e : j.at("trustedFolders")) {
      const std::string& p = e.get_ref<const std::string&>();
      if (!p.empty() && p[0] == '/') add_unique(out, paths::normalize(p));
    }
  } catch (const nlohmann::json::exception&) {
    return make_error(ErrorKind::kSettings,
                      fmt::format("{}: not the list wavebox writes ({{\"trustedFolders\": [...]}}); no folder is "
                                  "trusted until it is fixed",
                                  file));
  }
  return out;
}

Result<std::string> set_trusted(const std::string& home, const std::string& dir, bool trusted) {
  std::string real = sys::real_path_or_empty(dir);
  if (real.empty() || !sys::is_dir(real)) {
    if (trusted) return make_error(ErrorKind::kUsage, fmt::format("\"{}\" is not a directory", dir));
    real = paths::normalize(dir);  // a folder gone since: its trust can still be revoked
  }
  auto list = WB_TRY(trusted_folders(home));
  std::erase(list, real);
  if (trusted) list.push_back(real);
  const std::string file = trust_file(home);
  for (const auto& d : {paths::parent(paths::parent(file)), paths::parent(file)}) {
    if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) return sys::sys_error("mkdir", d, errno);
  }
  nlohmann::json j;
  j["trustedFolders"] = list;
  (void)WB_TRY(sys::write_file_atomic(file, j.dump(2) + "\n"));
  return real;
}

Result<LoadedSettings> load_run_settings(const std::string& home, const std::string& cwd,
                                         const std::vector<std::string>& named, const nlohmann::json* inline_settings) {
  LoadedSettings out;
  std::uint64_t h = fnv1a(cwd);
  auto read = [&](const std::string& f, std::vector<SettingsSource>& into) -> Status {
    auto text = sys::read_file(f);
    if (!text.ok())
      return make_error(ErrorKind::kSettings, fmt::format("settings file \"{}\": {}", f, text.error().message));
    h = fnv1a(*text, fnv1a(f, h));
    into.push_back({f, std::move(*text)});
    out.read_files.push_back(f);
    add_unique(out.guarded, f);
    if (std::string real = sys::real_path_or_empty(f); real != f) add_unique(out.guarded, real);
    return ok_status();
  };
  // The user's files, existing or not, always: a command must not write what configures later runs.
  for (const auto& f : user_files_of(home)) add_unique(out.guarded, f);
  add_unique(out.guarded, trust_file(home));

  std::vector<SettingsSource> mine, project;  // applied as written; only narrowing
  if (!named.empty() || inline_settings) {
    for (const auto& f : named) (void)WB_TRY(read(f, mine));
    if (inline_settings) {
      std::string text = inline_settings->dump();
      h = fnv1a(text, h);
      mine.push_back({"(session settings)", std::move(text)});
    }
    out.settings = WB_TRY(load_settings(mine, home));
    out.text_digest = fmt::format("{:016x}", h);
    return out;
  }

  out.project_root = find_project_root(cwd, home);
  auto trusted = trusted_folders(home);
  if (!trusted.ok()) return trusted.error();
  const std::string real_root = sys::real_path_or_empty(out.project_root);
  out.trusted = std::find(trusted->begin(), trusted->end(), real_root) != trusted->end();
  // What configures a run from here or from any folder below the root on the way, and in every
  // trusted folder (a command here must not rewrite what another folder is trusted to say).
  std::vector<std::string> levels = {paths::normalize(cwd)};
  for (const auto& a : paths::ancestors(cwd)) {
    if (paths::is_within(a, out.project_root)) levels.push_back(a);
  }
  for (const auto& d : levels) {
    for (const auto& f : project_files_of(d)) add_unique(out.guarded, f);
  }
  for (const auto& d : *trusted) {
    for (const auto& f : project_files_of(d)) add_unique(out.guarded, f);
  }

  const auto user_files = user_files_of(home);
  for (const auto& f : user_files) {
    if (sys::exists(f)) (void)WB_TRY(read(f, mine));
  }
  for (const auto& f : project_files_of(out.project_root)) {
    // Home as the project: its files are the user's, read once.
    if (std::find(user_files.begin(), user_files.end(), f) != user_files.end()) continue;
    if (!sys::exists(f)) continue;
    (void)WB_TRY(read(f, project));
    out.project_files.push_back(f);
  }
  h = fnv1a(std::string_view(out.trusted ? "trusted" : "untrusted"), h);
  out.text_digest = fmt::format("{:016x}", h);

  if (project.empty()) {
    out.settings = mine.empty() ? default_settings() : WB_TRY(load_settings(mine, home));
    return out;
  }
  std::vector<SettingsSource> base_sources = mine;
  if (base_sources.empty()) base_sources.push_back({"(built-in profile)", kBuiltinProfile});
  std::vector<SettingsSource> all = base_sources;
  all.insert(all.end(), project.begin(), project.end());
  Settings full = WB_TRY(load_settings(all, home));
  if (out.trusted) {
    out.settings = std::move(full);
    return out;
  }
  const Settings base = WB_TRY(load_settings(base_sources, home));
  std::vector<Widening> undone;
  out.settings = narrow_to(base, full, undone);
  if (undone.empty()) return out;
  // Said once per file, naming what it asked for (each file against the user's own settings).
  for (const auto& src : project) {
    std::vector<SettingsSource> one = base_sources;
    one.push_back(src);
    auto alone = load_settings(one, home);
    if (!alone.ok()) continue;
    std::vector<Widening> its;
    narrow_to(base, *alone, its);
    if (its.empty()) continue;
    std::string keys;
    for (const auto& w : its) keys += fmt::format("{}{} ({})", keys.empty() ? "" : ", ", w.key, shown(w.value));
    out.settings.warnings.push_back(fmt::format(
        "{}: ignored, this folder is not trusted (a project's settings may only narrow the sandbox): {}; to apply "
        "them, run: wavebox trust {}",
        src.path, keys, out.project_root));
  }
  return out;
}

}  // namespace wb::engine
