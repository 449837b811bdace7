// pure
#include "core/hook_reply.hpp"

#include "core/paths.hpp"

namespace wb::hooks {

using Json = nlohmann::ordered_json;

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

Input read_input(Host h, const std::string& text) {
  Input r;
  // No host sends a deeper document: refused before anything walks it recursively.
  bool too_deep = false;
  Json input = Json::parse(
      text,
      [&](int depth, nlohmann::detail::parse_event_t, Json&) {
        if (depth > 64) too_deep = true;
        return !too_deep;
      },
      false);
  if (too_deep) {
    r.error = "the host's input is nested more than 64 levels deep";
    return r;
  }
  if (!input.is_object()) {
    r.error = "the host's input is not a JSON object";
    return r;
  }
  auto str = [](const Json& j, const char* k) {
    return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
  };
  if (h == Host::kClaude || h == Host::kCodex) {
    if (!input.contains("tool_input") || !input["tool_input"].is_object() || !input["tool_input"].contains("command") ||
        !input["tool_input"]["command"].is_string()) {
      return r;  // not a shell command: nothing of ours
    }
    r.command = input["tool_input"]["command"].get<std::string>();
    r.cwd = str(input, "cwd");
  } else {
    r.command = str(input, "command");
    r.cwd = str(input, "cwd");
    if (r.cwd.empty() && input.contains("workspace_roots") && input["workspace_roots"].is_array() &&
        !input["workspace_roots"].empty() && input["workspace_roots"][0].is_string()) {
      r.cwd = input["workspace_roots"][0].get<std::string>();
    }
  }
  r.shell = true;
  r.doc = std::move(input);
  return r;
}

Answer policy_change_answer(Host h, const Classified& c, const std::string& command) {
  const std::string why =
      "wavebox: this command changes the sandbox or wavebox itself (" + c.reason + "); only the user may run it";
  if (h == Host::kCursor && !c.approved.empty() && c.approved != command) {
    return {Answer::kBlock, "", why + "; to ask the user, run exactly this instead: " + c.approved};
  }
  return {h == Host::kCodex ? Answer::kBlock : Answer::kAsk, h == Host::kClaude ? c.approved : "", why};
}

Answer wrapped_answer(Host h, const std::string& command, bool auto_allow) {
  if (h == Host::kCursor) return {auto_allow ? Answer::kRun : Answer::kAsk, "", ""};
  if (h == Host::kOpenCode) return {Answer::kRun, command, ""};
  return {};
}

Answer decided_answer(Host h, const Decision& d, const std::string& command, const std::string& wavebox,
                      bool auto_allow) {
  if (d.decision == "deny") return {Answer::kBlock, "", "wavebox: refused by your settings: " + d.reason};
  const bool ask = d.decision == "ask";
  const std::string wrapped = wrap(wavebox, command, ask);
  if (h == Host::kCodex || h == Host::kCursor) {
    return {
        Answer::kBlock, "",
        "wavebox: shell commands run in the sandbox here; run exactly this instead: " + wrap(wavebox, command, false)};
  }
  if (ask) {
    if (h == Host::kOpenCode) {
      return {
          Answer::kBlock, "",
          "wavebox: your settings ask before this command (" + d.reason + "); run it yourself or add an allow rule"};
    }
    return {Answer::kAsk, wrapped, "wavebox: your settings ask before this command: " + d.reason};
  }
  return {auto_allow && d.sandboxed ? Answer::kRun : Answer::kAsk, wrapped, ""};
}

Reply reply(Host h, const Answer& a, const Json& input) {
  Reply r;
  auto pre_tool_use = [&](const char* decision, const std::string& reason, const std::string* cmd) {
    Json o = {{"hookEventName", "PreToolUse"}, {"permissionDecision", decision}};
    if (!reason.empty()) o["permissionDecisionReason"] = reason;
    if (cmd) {
      Json in = input.contains("tool_input") && input["tool_input"].is_object() ? input["tool_input"] : Json::object();
      in["command"] = *cmd;
      o["updatedInput"] = in;
    }
    r.out = Json{{"hookSpecificOutput", o}}.dump() + "\n";
  };
  switch (h) {
    case Host::kClaude:
      if (a.kind == Answer::kNone) return r;
      if (a.kind == Answer::kBlock) {
        pre_tool_use("deny", a.reason, nullptr);
      } else {
        pre_tool_use(a.kind == Answer::kRun ? "allow" : "ask", a.reason, a.command.empty() ? nullptr : &a.command);
      }
      return r;
    case Host::kCodex:
      // Codex runs the original command when it does not support an answer ("ask"; "allow" with
      // updatedInput before its May 2026 builds): only silence and "deny" mean the same in every
      // version, so a command to wrap is refused with the wrapped form for the agent to run.
      if (a.kind == Answer::kNone) return r;
      pre_tool_use("deny", a.reason, nullptr);
      return r;
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
      r.out = o.dump() + "\n";
      return r;
    }
    case Host::kOpenCode: {
      Json o = Json::object();
      if (a.kind == Answer::kRun && !a.command.empty()) o["command"] = a.command;
      if (a.kind == Answer::kBlock || a.kind == Answer::kAsk) o["block"] = a.reason;
      r.out = o.dump() + "\n";
      return r;
    }
  }
  return r;
}

Reply failure(Host h, const std::string& why) {
  const std::string msg = "wavebox hook: " + why + "; the command was not run";
  if (h == Host::kClaude || h == Host::kCodex) {
    return {"", msg + "\n", 2};  // both hosts: exit 2 blocks, stderr is the reason
  }
  if (h == Host::kCursor) {
    return {Json{{"permission", "deny"}, {"user_message", msg}, {"agent_message", msg}}.dump() + "\n", "", 0};
  }
  return {"", msg + "\n", 1};
}

Reply crash_reply(Host h) {
  Reply r = failure(h, "failed while reading the command");
  if (h == Host::kOpenCode) r.status = 2;  // OpenCode's plugin throws on any failure
  return r;
}

}  // namespace wb::hooks
