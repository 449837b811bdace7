#include "engine/hook_files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/hook_reply.hpp"
#include "core/paths.hpp"
#include "core/result.hpp"
#include "core/sys/fs.hpp"

namespace wb::engine {
namespace {

using hooks::Host;
using Json = nlohmann::ordered_json;

// What install changed, to put back exactly on uninstall: the file's bytes before (null: there
// was none), its bytes after, the directories it made. ~/.config/wavebox, which no sandbox can
// write.
std::string record_path(const std::string& home) {
  return paths::join(home, ".config/wavebox/hooks-installed.json");
}

Json read_record(const std::string& home) {
  auto t = sys::read_regular_file(record_path(home));
  if (!t.ok()) return Json::object();
  Json j = Json::parse(*t, nullptr, false);
  return j.is_object() ? j : Json::object();
}

Status write_record(const std::string& home, const Json& j) {
  const std::string p = record_path(home);
  ::mkdir(paths::join(home, ".config").c_str(), 0755);
  ::mkdir(paths::parent(p).c_str(), 0700);
  return sys::write_file_atomic(p, j.dump(2) + "\n");
}

// The directories from `from` down to file's parent that do not exist yet, made; returned
// outermost first.
Result<std::vector<std::string>> make_parents(const std::string& file) {
  std::vector<std::string> missing;
  for (std::string d = paths::parent(file); !d.empty() && d != "/" && !sys::exists(d); d = paths::parent(d)) {
    missing.insert(missing.begin(), d);
  }
  for (const auto& d : missing) {
    if (::mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) return sys::sys_error("mkdir", d, errno);
  }
  return missing;
}

Status write_keeping_mode(const std::string& path, const std::string& text) {
  struct stat st {};
  const bool had = ::stat(path.c_str(), &st) == 0;
  WB_TRY(sys::write_file_atomic(path, text));
  ::chmod(path.c_str(), had ? (st.st_mode & 07777) : 0644);
  return ok_status();
}

// The file as it is: "" when absent; an error for anything but a regular file.
Result<std::optional<std::string>> current(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return sys::sys_error("stat", path, errno);
  }
  auto t = sys::read_regular_file(path);
  if (!t.ok()) return t.error();
  return std::optional<std::string>(std::move(*t));
}

Result<std::string> with_entry(Host h, const std::optional<std::string>& before, const std::string& wavebox,
                               const std::string& file, bool& changed) {
  if (h == Host::kOpenCode) {
    std::string plugin = hooks::opencode_plugin(wavebox);
    if (before && !hooks::is_our_plugin(*before)) {
      return make_error(ErrorKind::kUsage, file + " exists and is not wavebox's: left as it is");
    }
    changed = !before || *before != plugin;
    return plugin;
  }
  auto r = hooks::add_entry(h, before.value_or(""), hooks::hook_command(wavebox, h), changed);
  if (!r.ok()) return make_error(ErrorKind::kSettings, file + ": " + r.error().message + "; left as it is");
  return r;
}

}  // namespace

HookChanges install_hooks(const std::vector<Host>& hosts, bool project, const std::string& dir,
                          const std::string& wavebox, const std::string& home) {
  HookChanges out;
  Json rec = read_record(home);
  for (Host h : hosts) {
    HookFileChange& c = out.files.emplace_back(HookFileChange{h, hooks::hook_file(h, project, dir, home)});
    const std::string& file = c.file;
    auto before = current(file);
    if (!before.ok()) {
      c.error = before.error().message;
      continue;
    }
    bool changed = false;
    auto text = with_entry(h, *before, wavebox, file, changed);
    if (!text.ok()) {
      c.error = text.error().message;
      continue;
    }
    if (!changed) continue;
    auto made = make_parents(file);
    Status st = made.ok() ? write_keeping_mode(file, *text) : Status(made.error());
    if (!st.ok()) {
      c.error = st.error().message;
      continue;
    }
    Json& r = rec[file];
    if (!r.is_object()) {  // the first install keeps what was there before any of ours
      r = Json::object();
      r["before"] = *before ? Json(**before) : Json(nullptr);
      r["madeDirs"] = *made;
    }
    r["after"] = *text;
    c.done = true;
  }
  if (Status st = write_record(home, rec); !st.ok()) {
    out.record_error = "could not record the install (uninstall will still remove the entry): " + st.error().message;
  }
  return out;
}

HookChanges uninstall_hooks(const std::vector<Host>& hosts, bool project, const std::string& dir,
                            const std::string& home) {
  HookChanges out;
  Json rec = read_record(home);
  for (Host h : hosts) {
    HookFileChange& c = out.files.emplace_back(HookFileChange{h, hooks::hook_file(h, project, dir, home)});
    const std::string& file = c.file;
    auto now = current(file);
    if (!now.ok()) {
      c.error = now.error().message;
      continue;
    }
    const Json r = rec.contains(file) ? rec[file] : Json();
    Status st = ok_status();
    bool removed = false;
    if (*now && r.is_object() && r["after"] == **now) {
      // Untouched since the install: exactly as it was.
      if (r["before"].is_string()) {
        st = write_keeping_mode(file, r["before"].get<std::string>());
      } else if (::unlink(file.c_str()) != 0) {
        st = sys::sys_error("unlink", file, errno);
      }
      removed = true;
    } else if (*now && h == Host::kOpenCode) {
      if (hooks::is_our_plugin(**now)) {
        if (::unlink(file.c_str()) != 0) st = sys::sys_error("unlink", file, errno);
        removed = true;
      }
    } else if (*now) {
      bool changed = false;
      auto text = hooks::remove_entry(h, **now, changed);
      if (!text.ok()) {
        st = make_error(ErrorKind::kSettings, file + ": " + text.error().message + "; left as it is");
      } else if (changed) {
        st = text->empty() && r.is_object() && r["before"].is_null()
                 ? (::unlink(file.c_str()) == 0 ? ok_status() : Status(sys::sys_error("unlink", file, errno)))
                 : write_keeping_mode(file, text->empty() ? "{}\n" : *text);
        removed = true;
      }
    }
    if (!st.ok()) {
      c.error = st.error().message;
      continue;
    }
    if (removed && r.is_object() && r["madeDirs"].is_array()) {
      auto dirs = r["madeDirs"].get<std::vector<std::string>>();
      for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) ::rmdir(it->c_str());  // only when empty
    }
    rec.erase(file);
    c.done = removed;
  }
  if (Status st = write_record(home, rec); !st.ok()) out.record_error = st.error().message;
  return out;
}

std::vector<HookFileState> hook_states(const std::vector<Host>& hosts, const std::string& dir,
                                       const std::string& wavebox, const std::string& home) {
  std::vector<HookFileState> out;
  for (Host h : hosts) {
    for (bool project : {false, true}) {
      HookFileState& s = out.emplace_back(HookFileState{h, project, hooks::hook_file(h, project, dir, home)});
      auto now = current(s.file);
      s.state = "absent";
      if (!now.ok()) {
        s.state = "unreadable";
      } else if (*now) {
        if (h == Host::kOpenCode) {
          s.state = hooks::is_our_plugin(**now) ? (**now == hooks::opencode_plugin(wavebox) ? "installed" : "stale")
                                                : "not installed";
        } else if (auto c = hooks::find_entry(h, **now)) {
          s.command = *c;
          s.state = *c == hooks::hook_command(wavebox, h) ? "installed" : "stale";
        } else {
          s.state = "not installed";
        }
      }
    }
  }
  return out;
}

// Absolute, links not resolved (a package manager's /usr/bin/wavebox link stays valid across
// upgrades).
std::string program_path(const char* argv0, const std::string& path_var, const std::string& cwd) {
  std::string a = argv0 ? argv0 : "";
  if (a.find('/') == std::string::npos) {
    std::string found = sys::find_in_path(a, path_var);
    if (!found.empty()) a = found;
  }
  if (!a.empty() && a[0] != '/') a = paths::join(cwd, a);
  if (a.empty() || ::access(a.c_str(), X_OK) != 0) {
    char buf[4096];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) a.assign(buf, static_cast<size_t>(n));
  }
  return paths::normalize(a);
}

// The variable alone could be set by anyone, pid 1 being wavebox's shim cannot be arranged
// outside one.
bool inside_sandbox(const char* sandbox_var) {
  if (!sandbox_var || std::strcmp(sandbox_var, "1") != 0) return false;
  auto comm = sys::read_file("/proc/1/comm");
  return comm.ok() && *comm == "wavebox-shim\n";
}

}  // namespace wb::engine
