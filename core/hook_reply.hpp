#pragma once
// `wavebox hook HOST`, the program an agent host runs before each shell command: where a host
// reads its hooks, what it sends, and the answer in the host's own form (the command wrapped in
// `wavebox run`, a refusal with the reason, or the user's approval asked). Every failure blocks.
// Pure: JSON in, the text to print and the exit status out.
#include <nlohmann/json.hpp>
#include <string>

#include "core/decision.hpp"
#include "core/hooks.hpp"

namespace wb::hooks {

// The hook file of a host: the user's (under home) or a project's (under dir).
std::string hook_file(Host h, bool project, const std::string& dir, const std::string& home);

// What the host sent: error is not empty when it cannot be read (the command is then blocked);
// shell is false when it is not a shell command (nothing of ours).
struct Input {
  std::string error;
  bool shell = false;
  std::string command, cwd;  // cwd: "" when the host named none
  nlohmann::ordered_json doc;
};
Input read_input(Host h, const std::string& text);

struct Answer {
  enum Kind { kNone, kRun, kAsk, kBlock } kind = kNone;
  std::string command;  // kRun, kAsk: what runs
  std::string reason;
};
// A command that changes the sandbox or wavebox itself (Shape::kPolicyChange): the user's call.
Answer policy_change_answer(Host h, const Classified& c, const std::string& command);
// A command already in wavebox's form (Shape::kWrapped).
Answer wrapped_answer(Host h, const std::string& command, bool auto_allow);
// Any other command, after the settings' decision (auto_allow: autoAllowBashIfSandboxed).
Answer decided_answer(Host h, const Decision& d, const std::string& command, const std::string& wavebox,
                      bool auto_allow);

// What the hook prints on stdout and stderr, and its exit status.
struct Reply {
  std::string out, err;
  int status = 0;
};
// The host's form of an answer; input: what the host sent.
Reply reply(Host h, const Answer& a, const nlohmann::ordered_json& input);
// Blocks in every host's form when the hook itself cannot decide.
Reply failure(Host h, const std::string& why);
// What a hook killed by a signal answers: it must block too (see cli/hook_run.cpp).
Reply crash_reply(Host h);

}  // namespace wb::hooks
