#include "core/hooks.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/shell_split.hpp"

namespace wb::hooks {
namespace {

using Json = nlohmann::ordered_json;

bool plain_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("-_./=:,@%+").find(c) != std::string_view::npos;
}

// The words of a command string written plainly as one simple command: blanks between words,
// '...' literal, "..." without $ or ` (\" and \\ escaped), a backslash before one character.
// nullopt for anything a shell would expand, redirect or split further.
std::optional<std::vector<std::string>> plain_words(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == ' ' || c == '\t') {
      if (in_word) out.push_back(std::move(cur));
      cur.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      size_t e = s.find('\'', i + 1);
      if (e == std::string_view::npos) return std::nullopt;
      cur.append(s.substr(i + 1, e - i - 1));
      i = e;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < s.size() && s[j] != '"'; ++j) {
        if (s[j] == '$' || s[j] == '`') return std::nullopt;
        if (s[j] == '\\' && j + 1 < s.size() && (s[j + 1] == '"' || s[j + 1] == '\\')) ++j;
        cur.push_back(s[j]);
      }
      if (j >= s.size()) return std::nullopt;
      i = j;
    } else if (c == '\\') {
      if (i + 1 >= s.size() || s[i + 1] == '\n') return std::nullopt;
      cur.push_back(s[++i]);
    } else if (plain_char(c) && !(c == '~' && cur.empty())) {
      cur.push_back(c);
    } else {
      return std::nullopt;
    }
  }
  if (in_word) out.push_back(std::move(cur));
  return out;
}

std::string base_name(std::string_view p) {
  auto slash = p.rfind('/');
  return std::string(slash == std::string_view::npos ? p : p.substr(slash + 1));
}

bool wavebox_program(std::string_view word) {
  const std::string b = base_name(word);
  return b == "wavebox" || b == "wavebox-core" || b == "srt";
}

// `run` with nothing but the options that change neither the policy nor the host: a command
// string or a command after --.
bool plain_run(const std::vector<std::string>& w) {
  if (w.size() < 3 || w[1] != "run") return false;
  bool saw_c = false;
  for (size_t i = 2; i < w.size(); ++i) {
    const std::string& a = w[i];
    if (a == "--no-prompt" || a == "-v" || a == "--verbose") continue;
    if (a == "-c" && !saw_c && i + 1 < w.size()) {
      saw_c = true;
      ++i;
      continue;
    }
    if (a == "--" && !saw_c) return i + 1 < w.size();
    return false;
  }
  return saw_c;
}

// What a wavebox invocation other than a plain run changes, for the person asked.
std::string change_of(const std::vector<std::string>& w) {
  if (w.size() < 2) return "wavebox without a subcommand";
  if (base_name(w[0]) == "srt") return "srt with its own options or settings";
  if (w[1] != "run") return "`wavebox " + w[1] + "` (changes wavebox itself, not a sandboxed command)";
  for (size_t i = 2; i < w.size(); ++i) {
    const std::string& a = w[i];
    if (a == "--" || a == "-c") break;
    if (a == "--no-prompt" || a == "-v" || a == "--verbose") continue;
    return "`wavebox run " + a + "` changes what the sandbox allows or where wavebox writes";
  }
  return "a wavebox run in another spelling";
}

std::string sub_first_word(const std::string& sub) {
  auto w = plain_words(sub);
  if (w && !w->empty()) return (*w)[0];
  auto sp = sub.find(' ');
  std::string first = sub.substr(0, sp);
  std::string out;
  for (char c : first) {
    if (c != '\'' && c != '"' && c != '\\') out.push_back(c);
  }
  return out;
}

bool ours(Host h, const std::string& cmd) {
  const std::string tail = " hook " + host_name(h);
  return cmd.size() > tail.size() && cmd.compare(cmd.size() - tail.size(), tail.size(), tail) == 0 &&
         cmd.find("wavebox") != std::string::npos;
}

Result<Json> parse_object(std::string_view text) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return Json::object();
  Json j = Json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return make_error(ErrorKind::kSettings, "not valid JSON");
  if (!j.is_object()) return make_error(ErrorKind::kSettings, "not a JSON object");
  return j;
}

std::string dump(const Json& j) {
  return j.dump(2) + "\n";
}

const char* event_of(Host h) {
  return h == Host::kCursor ? "beforeShellExecution" : "PreToolUse";
}

// The array of the host's event: created when absent; an error when something else is there.
Result<Json*> event_array(Host h, Json& root, bool create) {
  if (!root.contains("hooks")) {
    if (!create) return static_cast<Json*>(nullptr);
    root["hooks"] = Json::object();
  }
  Json& hooks = root["hooks"];
  if (!hooks.is_object()) return make_error(ErrorKind::kSettings, "\"hooks\" is not an object");
  if (!hooks.contains(event_of(h))) {
    if (!create) return static_cast<Json*>(nullptr);
    hooks[event_of(h)] = Json::array();
  }
  Json& arr = hooks[event_of(h)];
  if (!arr.is_array())
    return make_error(ErrorKind::kSettings, std::string("\"hooks.") + event_of(h) + "\" is not an array");
  return &arr;
}

// Calls fn(handler object) for every handler of the event (Cursor: the entries themselves;
// Claude and Codex: each group's "hooks").
template <class Fn>
void each_handler(Host h, Json& arr, Fn fn) {
  for (auto& entry : arr) {
    if (!entry.is_object()) continue;
    if (h == Host::kCursor) {
      fn(entry);
    } else if (entry.contains("hooks") && entry["hooks"].is_array()) {
      for (auto& handler : entry["hooks"]) {
        if (handler.is_object()) fn(handler);
      }
    }
  }
}

std::string command_of(const Json& handler) {
  auto it = handler.find("command");
  return it != handler.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::optional<Host> host_named(std::string_view name) {
  if (name == "claude") return Host::kClaude;
  if (name == "cursor") return Host::kCursor;
  if (name == "opencode") return Host::kOpenCode;
  if (name == "codex") return Host::kCodex;
  return std::nullopt;
}

std::string host_name(Host h) {
  switch (h) {
    case Host::kClaude:
      return "claude";
    case Host::kCursor:
      return "cursor";
    case Host::kOpenCode:
      return "opencode";
    case Host::kCodex:
      return "codex";
  }
  return "";
}

std::string sh_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

Classified classify(std::string_view command, std::string_view wavebox) {
  if (auto w = plain_words(command); w && !w->empty() && wavebox_program((*w)[0])) {
    if ((*w)[0] == wavebox && plain_run(*w)) return {Shape::kWrapped, "", ""};
    Classified c{Shape::kPolicyChange, change_of(*w), ""};
    if (w->size() > 2 && (*w)[1] == "run") {
      std::vector<std::string> a = *w;
      if (std::find(a.begin(), a.end(), "--approve") == a.end()) a.insert(a.begin() + 2, "--approve");
      c.approved = shell_join(a);
    }
    return c;
  }
  // A wavebox invocation anywhere inside (after &&, in a subshell, behind env or timeout).
  const SplitResult split = split_command(command);
  for (const auto& sub : split.subcommands) {
    for (const auto& cand : match_candidates(sub)) {
      if (!wavebox_program(sub_first_word(cand))) continue;
      auto w = plain_words(cand);
      if (w && plain_run(*w)) continue;  // a plain run nested in a compound: it runs sandboxed
      return {Shape::kPolicyChange, w ? change_of(*w) : "a wavebox invocation written in a way not read here", ""};
    }
  }
  return {Shape::kWrap, "", ""};
}

std::string wrap(std::string_view wavebox, std::string_view command, bool approve) {
  std::string out = sh_quote(wavebox) + " run --no-prompt ";
  if (approve) out += "--approve ";
  return out + "-c " + sh_quote(command);
}

std::string hook_command(std::string_view wavebox, Host h) {
  return sh_quote(wavebox) + " hook " + host_name(h);
}

Result<std::string> add_entry(Host h, std::string_view text, std::string_view hook_cmd, bool& changed) {
  changed = false;
  auto parsed = parse_object(text);
  if (!parsed.ok()) return parsed.error();
  Json root = std::move(*parsed);
  if (h == Host::kCursor) {
    if (!root.contains("version")) {
      root["version"] = 1;
    } else if (root["version"] != 1) {
      return make_error(ErrorKind::kSettings, "\"version\" is not 1 (a hooks file of another format)");
    }
  }
  auto arr = event_array(h, root, true);
  if (!arr.ok()) return arr.error();
  bool found = false;
  each_handler(h, **arr, [&](Json& handler) {
    std::string c = command_of(handler);
    if (!ours(h, c)) return;
    found = true;
    if (c != hook_cmd) {
      handler["command"] = std::string(hook_cmd);
      changed = true;
    }
  });
  if (!found) {
    if (h == Host::kCursor) {
      (*arr)->push_back(Json{{"command", std::string(hook_cmd)}});
    } else {
      Json handler = Json{{"type", "command"}, {"command", std::string(hook_cmd)}, {"timeout", 60}};
      (*arr)->push_back(Json{{"matcher", "Bash"}, {"hooks", Json::array({handler})}});
    }
    changed = true;
  }
  return dump(root);
}

Result<std::string> remove_entry(Host h, std::string_view text, bool& changed) {
  changed = false;
  auto parsed = parse_object(text);
  if (!parsed.ok()) return parsed.error();
  Json root = std::move(*parsed);
  auto arr = event_array(h, root, false);
  if (!arr.ok()) return arr.error();
  if (*arr == nullptr) return std::string(text);
  Json& a = **arr;
  Json kept = Json::array();
  for (auto& entry : a) {
    if (h == Host::kCursor) {
      if (entry.is_object() && ours(h, command_of(entry))) {
        changed = true;
        continue;
      }
    } else if (entry.is_object() && entry.contains("hooks") && entry["hooks"].is_array()) {
      Json handlers = Json::array();
      for (auto& handler : entry["hooks"]) {
        if (handler.is_object() && ours(h, command_of(handler))) {
          changed = true;
          continue;
        }
        handlers.push_back(handler);
      }
      if (handlers.empty() && !entry["hooks"].empty()) continue;  // a group that held only ours
      entry["hooks"] = handlers;
    }
    kept.push_back(entry);
  }
  if (!changed) return std::string(text);
  a = kept;
  if (a.empty()) root["hooks"].erase(event_of(h));
  if (root["hooks"].empty()) root.erase("hooks");
  if (h == Host::kCursor && root.size() == 1 && root.contains("version")) root.erase("version");
  return root.empty() ? std::string() : dump(root);
}

std::optional<std::string> find_entry(Host h, std::string_view text) {
  auto parsed = parse_object(text);
  if (!parsed.ok()) return std::nullopt;
  auto arr = event_array(h, *parsed, false);
  if (!arr.ok() || *arr == nullptr) return std::nullopt;
  std::optional<std::string> out;
  each_handler(h, **arr, [&](Json& handler) {
    std::string c = command_of(handler);
    if (!out && ours(h, c)) out = c;
  });
  return out;
}

std::string opencode_plugin(std::string_view wavebox) {
  // The decision is wavebox's (`wavebox hook opencode`, JSON in and out); the plugin only carries
  // it: the command rewritten in place (output.args is the object the tool then runs), or thrown.
  const std::string wb = Json(std::string(wavebox)).dump();
  return std::string(kPluginMarker) + "\n" +
         "// Every bash command the agent runs goes through wavebox with the user's settings.\n"
         "// Remove with: wavebox hooks uninstall --opencode\n"
         "import { spawnSync } from \"node:child_process\";\n"
         "const WAVEBOX = " +
         wb +
         ";\n"
         "export const WaveboxSandbox = async ({ directory }) => ({\n"
         "  \"tool.execute.before\": async (input, output) => {\n"
         "    if (input.tool !== \"bash\" || typeof output.args?.command !== \"string\") return;\n"
         "    const cwd = output.args.workdir || directory || process.cwd();\n"
         "    const r = spawnSync(WAVEBOX, [\"hook\", \"opencode\"], {\n"
         "      input: JSON.stringify({ command: output.args.command, cwd }), encoding: \"utf8\",\n"
         "    });\n"
         "    let answer = null;\n"
         "    try { answer = JSON.parse(r.stdout); } catch {}\n"
         "    if (r.status !== 0 || !answer) {\n"
         "      throw new Error(`wavebox could not check this command (${(r.stderr || r.error || \"no answer\")"
         ".toString().trim()}); it was not run`);\n"
         "    }\n"
         "    if (answer.block) throw new Error(answer.block);\n"
         "    if (typeof answer.command === \"string\") output.args.command = answer.command;\n"
         "  },\n"
         "});\n";
}

bool is_our_plugin(std::string_view text) {
  return text.substr(0, kPluginMarker.size()) == kPluginMarker;
}

}  // namespace wb::hooks
