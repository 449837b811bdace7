// `wavebox hooks install|uninstall|status` and `wavebox hook HOST`: agent hosts' pre-command
// hooks (docs/guides/). The hook reads the host's JSON on stdin and answers in the host's form:
// the command wrapped in `wavebox run`, a refusal with the reason, or the user's approval asked.
// It never lets a command run unwrapped because something failed: every failure blocks.
#include "core/hooks.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "cli/setup.hpp"
#include "core/log.hpp"
#include "core/paths.hpp"
#include "core/sys/fs.hpp"
#include "engine/engine.hpp"

namespace wb::cli {
namespace {

using hooks::Host;
using Json = nlohmann::ordered_json;

const Host kHosts[] = {Host::kClaude, Host::kCursor, Host::kOpenCode, Host::kCodex};

// This program's path as the host will run it: absolute, links not resolved (a package
// manager's /usr/bin/wavebox link stays valid across upgrades).
std::string self_path(const char* argv0) {
  std::string a = argv0 ? argv0 : "";
  if (a.find('/') == std::string::npos) {
    const char* path = std::getenv("PATH");
    std::string found = sys::find_in_path(a, path ? path : "");
    if (!found.empty()) a = found;
  }
  if (!a.empty() && a[0] != '/') a = paths::join(sys::current_dir(), a);
  if (a.empty() || ::access(a.c_str(), X_OK) != 0) {
    char buf[4096];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) a.assign(buf, static_cast<size_t>(n));
  }
  return paths::normalize(a);
}

std::string hook_file(Host h, bool project, const std::string& dir, const std::string& home) {
  const std::string base = project ? dir : home;
  switch (h) {
    case Host::kClaude:
      return paths::join(base, ".claude/settings.json");
    case Host::kCursor:
      return paths::join(base, ".cursor/hooks.json");
    case Host::kCodex:
      return paths::join(base, ".codex/hooks.json");
    case Host::kOpenCode:
      return paths::join(base, project ? ".opencode/plugins/wavebox.js" : ".config/opencode/plugins/wavebox.js");
  }
  return "";
}

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

int install(const std::vector<Host>& hosts, bool project, const std::string& dir, const std::string& wavebox) {
  const std::string home = sys::home_dir();
  Json rec = read_record(home);
  int rc = 0;
  for (Host h : hosts) {
    const std::string file = hook_file(h, project, dir, home);
    auto before = current(file);
    if (!before.ok()) {
      log::error(before.error().message);
      rc = 125;
      continue;
    }
    bool changed = false;
    auto text = with_entry(h, *before, wavebox, file, changed);
    if (!text.ok()) {
      log::error(text.error().message);
      rc = 125;
      continue;
    }
    if (!changed) {
      std::printf("%s: already installed in %s\n", hooks::host_name(h).c_str(), file.c_str());
      continue;
    }
    auto made = make_parents(file);
    Status st = made.ok() ? write_keeping_mode(file, *text) : Status(made.error());
    if (!st.ok()) {
      log::error(st.error().message);
      rc = 125;
      continue;
    }
    Json& r = rec[file];
    if (!r.is_object()) {  // the first install keeps what was there before any of ours
      r = Json::object();
      r["before"] = *before ? Json(**before) : Json(nullptr);
      r["madeDirs"] = *made;
    }
    r["after"] = *text;
    std::printf("%s: installed in %s\n", hooks::host_name(h).c_str(), file.c_str());
    if (h == Host::kCodex) std::printf("  Codex runs it once you trust it: /hooks in Codex\n");
    if (h == Host::kCursor) std::printf("  restart Cursor to load it\n");
  }
  if (Status st = write_record(home, rec); !st.ok()) {
    log::error("could not record the install (uninstall will still remove the entry): " + st.error().message);
  }
  return rc;
}

int uninstall(const std::vector<Host>& hosts, bool project, const std::string& dir) {
  const std::string home = sys::home_dir();
  Json rec = read_record(home);
  int rc = 0;
  for (Host h : hosts) {
    const std::string file = hook_file(h, project, dir, home);
    auto now = current(file);
    if (!now.ok()) {
      log::error(now.error().message);
      rc = 125;
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
      log::error(st.error().message);
      rc = 125;
      continue;
    }
    if (removed && r.is_object() && r["madeDirs"].is_array()) {
      auto dirs = r["madeDirs"].get<std::vector<std::string>>();
      for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) ::rmdir(it->c_str());  // only when empty
    }
    rec.erase(file);
    std::printf("%s: %s %s\n", hooks::host_name(h).c_str(), removed ? "removed from" : "not installed in",
                file.c_str());
  }
  if (Status st = write_record(home, rec); !st.ok()) log::error(st.error().message);
  return rc;
}

int status(const std::vector<Host>& hosts, const std::string& dir, const std::string& wavebox, bool json) {
  const std::string home = sys::home_dir();
  Json out = Json::array();
  for (Host h : hosts) {
    for (bool project : {false, true}) {
      const std::string file = hook_file(h, project, dir, home);
      auto now = current(file);
      std::string state = "absent";
      std::string cmd;
      if (!now.ok()) {
        state = "unreadable";
      } else if (*now) {
        if (h == Host::kOpenCode) {
          state = hooks::is_our_plugin(**now) ? (**now == hooks::opencode_plugin(wavebox) ? "installed" : "stale")
                                              : "not installed";
        } else if (auto c = hooks::find_entry(h, **now)) {
          cmd = *c;
          state = *c == hooks::hook_command(wavebox, h) ? "installed" : "stale";
        } else {
          state = "not installed";
        }
      }
      Json row = {
          {"host", hooks::host_name(h)}, {"scope", project ? "project" : "user"}, {"file", file}, {"state", state}};
      if (!cmd.empty()) row["command"] = cmd;
      out.push_back(row);
      if (!json) {
        std::printf("%-9s %-8s %-14s %s%s\n", hooks::host_name(h).c_str(), project ? "project" : "user", state.c_str(),
                    file.c_str(), state == "stale" ? "  (names another wavebox: install again)" : "");
      }
    }
  }
  if (json) std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

// Inside a wavebox sandbox already (the agent host itself runs in one): the variable alone
// could be set by anyone, pid 1 being wavebox's shim cannot be arranged outside one.
bool inside_sandbox() {
  const char* v = std::getenv("WAVEBOX_SANDBOX");
  if (!v || std::strcmp(v, "1") != 0) return false;
  auto comm = sys::read_file("/proc/1/comm");
  return comm.ok() && *comm == "wavebox-shim\n";
}

struct Answer {
  enum Kind { kNone, kRun, kAsk, kBlock } kind = kNone;
  std::string command;  // kRun, kAsk: what runs
  std::string reason;
};

// The host's form of an answer. Returns the exit status.
int emit(Host h, const Answer& a, const Json& input) {
  auto pre_tool_use = [&](const char* decision, const std::string& reason, const std::string* cmd) {
    Json o = {{"hookEventName", "PreToolUse"}, {"permissionDecision", decision}};
    if (!reason.empty()) o["permissionDecisionReason"] = reason;
    if (cmd) {
      Json in = input.contains("tool_input") && input["tool_input"].is_object() ? input["tool_input"] : Json::object();
      in["command"] = *cmd;
      o["updatedInput"] = in;
    }
    std::printf("%s\n", Json{{"hookSpecificOutput", o}}.dump().c_str());
  };
  switch (h) {
    case Host::kClaude:
      if (a.kind == Answer::kNone) return 0;
      if (a.kind == Answer::kBlock) {
        pre_tool_use("deny", a.reason, nullptr);
      } else {
        pre_tool_use(a.kind == Answer::kRun ? "allow" : "ask", a.reason, a.command.empty() ? nullptr : &a.command);
      }
      return 0;
    case Host::kCodex:
      // Codex runs the original command when it does not support an answer ("ask"; "allow" with
      // updatedInput before its May 2026 builds): only silence and "deny" mean the same in every
      // version, so a command to wrap is refused with the wrapped form for the agent to run.
      if (a.kind == Answer::kNone) return 0;
      pre_tool_use("deny", a.reason, nullptr);
      return 0;
    case Host::kCursor: {
      // beforeShellExecution cannot rewrite a command (Cursor's documented answer is allow, deny
      // or ask): a command to wrap is refused with the wrapped form for the agent to run.
      Json o;
      if (a.kind == Answer::kNone) {
        o = Json::object();
      } else if (a.kind == Answer::kRun && a.command.empty()) {
        o = {{"permission", "allow"}};
      } else if (a.kind == Answer::kAsk && a.command.empty()) {
        o = {{"permission", "ask"}, {"user_message", a.reason}, {"agent_message", a.reason}};
      } else {
        o = {{"permission", "deny"}, {"user_message", a.reason}, {"agent_message", a.reason}};
      }
      std::printf("%s\n", o.dump().c_str());
      return 0;
    }
    case Host::kOpenCode: {
      Json o = Json::object();
      if (a.kind == Answer::kRun && !a.command.empty()) o["command"] = a.command;
      if (a.kind == Answer::kBlock || a.kind == Answer::kAsk) o["block"] = a.reason;
      std::printf("%s\n", o.dump().c_str());
      return 0;
    }
  }
  return 0;
}

// Blocks in every host's form when the hook itself cannot decide.
int fail(Host h, const std::string& why) {
  const std::string msg = "wavebox hook: " + why + "; the command was not run";
  if (h == Host::kClaude || h == Host::kCodex) {
    std::fprintf(stderr, "%s\n", msg.c_str());
    return 2;  // both hosts: exit 2 blocks, stderr is the reason
  }
  if (h == Host::kCursor) {
    std::printf("%s\n", Json{{"permission", "deny"}, {"user_message", msg}, {"agent_message", msg}}.dump().c_str());
    return 0;
  }
  std::fprintf(stderr, "%s\n", msg.c_str());
  return 1;
}

// A crash must block too: Claude Code and Codex run the command unchanged after any exit but 2
// (and Cursor after no answer), so a hook killed by a signal would let it run unwrapped.
char g_crash_answer[512];
size_t g_crash_len = 0;
int g_crash_status = 2;
void on_crash(int) {
  ssize_t ignored = ::write(g_crash_status == 2 ? 2 : 1, g_crash_answer, g_crash_len);
  (void)ignored;
  ::_exit(g_crash_status);
}
void block_on_crash(Host h) {
  const std::string msg = "wavebox hook: failed while reading the command; the command was not run";
  std::string answer = msg + "\n";
  if (h == Host::kCursor) {
    answer = Json{{"permission", "deny"}, {"user_message", msg}, {"agent_message", msg}}.dump() + "\n";
    g_crash_status = 0;
  } else if (h == Host::kOpenCode) {
    g_crash_status = 1;
  }
  g_crash_len = std::min(answer.size(), sizeof g_crash_answer);
  std::memcpy(g_crash_answer, answer.data(), g_crash_len);
  if (g_crash_status == 1) g_crash_status = 2;  // OpenCode's plugin throws on any failure
  static char alt[64 * 1024];
  stack_t ss{};
  ss.ss_sp = alt;
  ss.ss_size = sizeof alt;
  ::sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_crash;
  sa.sa_flags = SA_ONSTACK;
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) ::sigaction(sig, &sa, nullptr);
}

int hook(Host h, const std::string& wavebox) {
  block_on_crash(h);
  std::string in;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) {
    in.append(buf, n);
    if (in.size() > (4u << 20)) return fail(h, "the host's input is larger than 4 MiB");
  }
  // No host sends a deeper document: refused before anything walks it recursively.
  bool too_deep = false;
  Json input = Json::parse(
      in,
      [&](int depth, nlohmann::detail::parse_event_t, Json&) {
        if (depth > 64) too_deep = true;
        return !too_deep;
      },
      false);
  if (too_deep) return fail(h, "the host's input is nested more than 64 levels deep");
  if (!input.is_object()) return fail(h, "the host's input is not a JSON object");
  std::string command, cwd;
  auto str = [](const Json& j, const char* k) {
    return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
  };
  if (h == Host::kClaude || h == Host::kCodex) {
    if (!input.contains("tool_input") || !input["tool_input"].is_object() || !input["tool_input"].contains("command") ||
        !input["tool_input"]["command"].is_string()) {
      return 0;  // not a shell command: nothing of ours
    }
    command = input["tool_input"]["command"].get<std::string>();
    cwd = str(input, "cwd");
  } else {
    command = str(input, "command");
    cwd = str(input, "cwd");
    if (cwd.empty() && input.contains("workspace_roots") && input["workspace_roots"].is_array() &&
        !input["workspace_roots"].empty() && input["workspace_roots"][0].is_string()) {
      cwd = input["workspace_roots"][0].get<std::string>();
    }
  }
  if (command.size() > (64u << 10)) return fail(h, "the command is longer than 64 KiB");
  if (inside_sandbox()) return emit(h, {}, input);
  if (cwd.empty()) cwd = sys::current_dir();

  const hooks::Classified c = hooks::classify(command, wavebox);
  if (c.shape == hooks::Shape::kPolicyChange) {
    const std::string why =
        "wavebox: this command changes the sandbox or wavebox itself (" + c.reason + "); only the user may run it";
    if (h == Host::kCursor && !c.approved.empty() && c.approved != command) {
      return emit(h, {Answer::kBlock, "", why + "; to ask the user, run exactly this instead: " + c.approved}, input);
    }
    return emit(h, {h == Host::kCodex ? Answer::kBlock : Answer::kAsk, h == Host::kClaude ? c.approved : "", why},
                input);
  }
  Options o;
  o.cwd = cwd;
  auto env = load_environment(o);
  if (!env.ok()) return fail(h, env.error().message);
  const bool auto_allow = env->settings.sandbox.auto_allow_bash_if_sandboxed;
  if (c.shape == hooks::Shape::kWrapped) {
    if (h == Host::kCursor) return emit(h, {auto_allow ? Answer::kRun : Answer::kAsk, "", ""}, input);
    if (h == Host::kOpenCode) return emit(h, {Answer::kRun, command, ""}, input);
    return 0;
  }
  Decision d = engine::decide_here(env->settings, command, false, log::process());
  if (d.decision == "deny") {
    return emit(h, {Answer::kBlock, "", "wavebox: refused by your settings: " + d.reason}, input);
  }
  if (std::string why = engine::wont_run_here(env->settings, d); !why.empty()) return fail(h, why);
  const bool ask = d.decision == "ask";
  const std::string wrapped = hooks::wrap(wavebox, command, ask);
  if (h == Host::kCodex || h == Host::kCursor) {
    return emit(h,
                {Answer::kBlock, "",
                 "wavebox: shell commands run in the sandbox here; run exactly this instead: " +
                     hooks::wrap(wavebox, command, false)},
                input);
  }
  if (ask) {
    if (h == Host::kOpenCode) {
      return emit(
          h,
          {Answer::kBlock, "",
           "wavebox: your settings ask before this command (" + d.reason + "); run it yourself or add an allow rule"},
          input);
    }
    return emit(h, {Answer::kAsk, wrapped, "wavebox: your settings ask before this command: " + d.reason}, input);
  }
  return emit(h, {auto_allow && d.sandboxed ? Answer::kRun : Answer::kAsk, wrapped, ""}, input);
}

void usage() {
  std::fprintf(stderr,
               "usage: wavebox hooks install   (--claude | --cursor | --opencode | --codex)... [--project[=DIR]]\n"
               "       wavebox hooks uninstall (--claude | --cursor | --opencode | --codex)... [--project[=DIR]]\n"
               "       wavebox hooks status [--project=DIR] [--json]\n"
               "Every shell command the agent runs then goes through `wavebox run` with your settings\n"
               "(docs/guides/). Exit status: 0; 125 when a file could not be changed.\n");
}

}  // namespace

int cmd_hooks(int argc, char** argv, const char* argv0) {
  if (argc < 1) {
    usage();
    return 125;
  }
  const std::string verb = argv[0];
  if (verb == "-h" || verb == "--help") {
    usage();
    return 0;
  }
  std::vector<Host> hosts;
  bool project = false, json = false;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) == 0 && hooks::host_named(a.substr(2))) {
      Host h = *hooks::host_named(a.substr(2));
      if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
    } else if (a == "--project") {
      project = true;
    } else if (a.rfind("--project=", 0) == 0) {
      project = true;
      dir = a.substr(10);
    } else if (a == "--json") {
      json = true;
    } else {
      log::error("hooks: unknown argument " + log::quote(a));
      usage();
      return 125;
    }
  }
  const std::string caller = sys::current_dir();
  dir = dir.empty() ? caller : paths::resolve(dir, sys::home_dir(), caller);
  if (project && !sys::is_dir(dir)) {
    log::error("hooks: " + log::quote(dir) + " is not a directory");
    return 125;
  }
  const std::string wavebox = self_path(argv0);
  if (verb == "status") {
    if (hosts.empty()) hosts.assign(std::begin(kHosts), std::end(kHosts));
    return status(hosts, dir, wavebox, json);
  }
  if (verb != "install" && verb != "uninstall") {
    usage();
    return 125;
  }
  if (hosts.empty()) {
    log::error("hooks " + verb + ": name the host: --claude, --cursor, --opencode or --codex");
    return 125;
  }
  return verb == "install" ? install(hosts, project, dir, wavebox) : uninstall(hosts, project, dir);
}

int cmd_hook(int argc, char** argv, const char* argv0) {
  std::optional<Host> h = argc >= 1 ? hooks::host_named(argv[0]) : std::nullopt;
  if (!h) {
    std::fprintf(stderr, "usage: wavebox hook (claude | cursor | opencode | codex)  (run by the agent host)\n");
    return 2;
  }
  log::set_verbose(false);
  return hook(*h, self_path(argv0));
}

}  // namespace wb::cli
