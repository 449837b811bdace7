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

// The project files of one folder, in merge order (wavebox-settings(5)): wave's, then Claude Code's, each
// shared file before its local one.
std::vector<std::string> project_files_of(const std::string& dir) {
  return {paths::join(dir, ".wave/settings.json"), paths::join(dir, ".claude/settings.json"),
          paths::join(dir, ".wave/settings.local.json"), paths::join(dir, ".claude/settings.local.json")};
}

std::vector<std::string> user_files_of(const std::string& home) {
  return {paths::join(home, ".wave/settings.json"), paths::join(home, ".claude/settings.json")};
}

bool ours_or_roots(uid_t uid) {
  return uid == ::geteuid() || uid == 0;
}

// A directory that marks a project: one of ours or root's (another local user's /tmp/.wave does
// not make /tmp a project of ours).
bool marks_project(const std::string& dir) {
  struct stat st;
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && ours_or_roots(st.st_uid);
}

// A discovered settings file: a regular file (never a FIFO waited on, a device read without end),
// at most 1 MiB; its owner is told. A file named by the caller is read as given (a pipe included).
struct FileText {
  std::string text;
  uid_t owner = 0;
};
Result<FileText> read_discovered(const std::string& path) {
  sys::Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return sys::sys_error("open", path, errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return sys::sys_error("fstat", path, errno);
  if (!S_ISREG(st.st_mode)) return make_error(ErrorKind::kSettings, path + ": not a regular file");
  if (st.st_size > (1 << 20)) return make_error(ErrorKind::kSettings, path + ": larger than 1 MiB");
  FileText out;
  out.owner = st.st_uid;
  char buf[16384];
  for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      return sys::sys_error("read", path, errno);
    }
    out.text.append(buf, static_cast<size_t>(n));
    if (out.text.size() > (1u << 20)) return make_error(ErrorKind::kSettings, path + ": larger than 1 MiB");
  }
  return out;
}

// What a folder's trust needs: the folder, and its .claude/ and .wave/ where they exist, real
// directories of the user's or root's (a link could lead into a tree a sandbox writes). Returns
// why not, or "".
std::string trust_blocker(const std::string& dir) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return "it is not a directory";
  if (!ours_or_roots(st.st_uid)) return "it belongs to another user";
  for (const char* sub : {".claude", ".wave"}) {
    const std::string p = paths::join(dir, sub);
    if (::lstat(p.c_str(), &st) != 0) continue;
    if (!S_ISDIR(st.st_mode)) return p + " is not a directory (a link is not trusted)";
    if (!ours_or_roots(st.st_uid)) return p + " belongs to another user";
  }
  return "";
}

// A guarded path and, where a link makes it another, the path it resolves to (the file's, or its
// directory's when the file does not exist yet).
void add_guard(std::vector<std::string>& guarded, const std::string& p) {
  if (std::find(guarded.begin(), guarded.end(), p) != guarded.end()) return;
  guarded.push_back(p);
  std::string real = sys::real_path_or_empty(p);
  if (real.empty()) {
    const std::string dir = sys::real_path_or_empty(paths::parent(p));
    if (!dir.empty()) real = paths::join(dir, paths::basename(p));
  }
  if (!real.empty() && real != p && std::find(guarded.begin(), guarded.end(), real) == guarded.end()) {
    guarded.push_back(real);
  }
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
  const std::string real_home = sys::real_path_or_empty(home);
  for (const auto& d : chain) {
    // Home's .claude/ and .wave/ are the user's own files (home named by a link too).
    if (d == home || d == real_home) break;
    if (marks_project(paths::join(d, ".claude")) || marks_project(paths::join(d, ".wave"))) return d;
  }
  for (const auto& d : chain) {
    struct stat st;
    if (::lstat(paths::join(d, ".git").c_str(), &st) == 0 && ours_or_roots(st.st_uid)) return d;
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
  if (trusted) {
    if (std::string why = trust_blocker(real); !why.empty()) {
      return make_error(ErrorKind::kUsage, fmt::format("\"{}\" cannot be trusted: {}", real, why));
    }
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
  // Reads one file into `into`; a discovered one must be a regular file, and a project's must be
  // the user's or root's (*foreign: another user's, not read).
  auto read = [&](const std::string& f, std::vector<SettingsSource>& into, bool discovered,
                  bool* foreign = nullptr) -> Status {
    std::string text;
    if (discovered) {
      auto t = read_discovered(f);
      if (!t.ok())
        return make_error(ErrorKind::kSettings, fmt::format("settings file \"{}\": {}", f, t.error().message));
      if (foreign && !ours_or_roots(t->owner)) {
        *foreign = true;
        return ok_status();
      }
      text = std::move(t->text);
    } else {
      auto t = sys::read_file(f);
      if (!t.ok())
        return make_error(ErrorKind::kSettings, fmt::format("settings file \"{}\": {}", f, t.error().message));
      text = std::move(*t);
    }
    h = fnv1a(text, fnv1a(f, h));
    into.push_back({f, std::move(text)});
    out.read_files.push_back(f);
    add_guard(out.guarded, f);
    return ok_status();
  };
  // The user's files, existing or not, always: a command must not write what configures later runs.
  for (const auto& f : user_files_of(home)) add_guard(out.guarded, f);
  add_guard(out.guarded, trust_file(home));
  // What `wavebox hooks uninstall` writes back into an agent host's file (engine/hook_files.cpp).
  add_guard(out.guarded, paths::join(home, ".config/wavebox/hooks-installed.json"));

  std::vector<SettingsSource> mine, project;  // applied as written; only narrowing
  if (!named.empty() || inline_settings) {
    for (const auto& f : named) (void)WB_TRY(read(f, mine, false));
    if (inline_settings) {
      std::string text = inline_settings->dump();
      h = fnv1a(text, h);
      mine.push_back({"(session settings)", std::move(text)});
    }
    for (auto& src : mine) src.cwd = cwd;
    out.settings = WB_TRY(load_settings(mine, home));
    // Settings a caller hands over that say nothing of the sandbox mean what they mean in Claude
    // Code: no sandbox, the command as without wavebox (a host wraps every command this way).
    if (!out.settings.sandbox_section) out.settings.sandbox.enabled = false;
    out.text_digest = fmt::format("{:016x}", h);
    return out;
  }

  out.project_root = find_project_root(cwd, home);
  auto trusted = trusted_folders(home);
  if (!trusted.ok()) return trusted.error();
  const std::string real_root = sys::real_path_or_empty(out.project_root);
  out.trusted = std::find(trusted->begin(), trusted->end(), real_root) != trusted->end();
  std::vector<std::string> notes;
  if (out.trusted) {
    // The folder recorded may have been replaced since (another user's, a link): no trust then.
    if (std::string why = trust_blocker(real_root); !why.empty()) {
      out.trusted = false;
      notes.push_back(fmt::format("{} is trusted, but not applied: {}", real_root, why));
    }
  }
  // What configures a run from here or from any folder below the root on the way, and in every
  // trusted folder (a command here must not rewrite what another folder is trusted to say).
  std::vector<std::string> levels = {paths::normalize(cwd)};
  for (const auto& a : paths::ancestors(cwd)) {
    if (paths::is_within(a, out.project_root)) levels.push_back(a);
  }
  for (const auto& d : levels) {
    for (const auto& f : project_files_of(d)) add_guard(out.guarded, f);
  }
  for (const auto& d : *trusted) {
    for (const auto& f : project_files_of(d)) add_guard(out.guarded, f);
  }

  const auto user_files = user_files_of(home);
  for (const auto& f : user_files) {
    if (sys::exists(f)) (void)WB_TRY(read(f, mine, true));
  }
  for (const auto& f : project_files_of(out.project_root)) {
    // Home as the project: its files are the user's, read once.
    if (std::find(user_files.begin(), user_files.end(), f) != user_files.end()) continue;
    if (!sys::exists(f)) continue;
    bool foreign = false;
    (void)WB_TRY(read(f, project, true, &foreign));
    if (foreign) {
      notes.push_back(f + ": not read: it belongs to another user");
      out.trusted = false;
      continue;
    }
    out.project_files.push_back(f);
  }
  h = fnv1a(std::string_view(out.trusted ? "trusted" : "untrusted"), h);
  out.text_digest = fmt::format("{:016x}", h);

  auto with_notes = [&](LoadedSettings& o) -> LoadedSettings& {
    for (auto& n : notes) o.settings.warnings.push_back(std::move(n));
    return o;
  };
  if (project.empty()) {
    out.settings = mine.empty() ? default_settings() : WB_TRY(load_settings(mine, home));
    return with_notes(out);
  }
  std::vector<SettingsSource> base_sources = mine;
  if (base_sources.empty()) base_sources.push_back({"(built-in profile)", kBuiltinProfile});
  std::vector<SettingsSource> all = base_sources;
  all.insert(all.end(), project.begin(), project.end());
  Settings full = WB_TRY(load_settings(all, home));
  if (out.trusted) {
    out.settings = std::move(full);
    return with_notes(out);
  }
  const Settings base = WB_TRY(load_settings(base_sources, home));
  std::vector<Widening> undone;
  out.settings = narrow_to(base, full, undone);
  with_notes(out);
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
