#pragma once
// Agent hosts' pre-command hooks (docs/guides/): what a command the agent is about to run is
// (already wavebox's, a policy change, or one to wrap), the wrapped command line, and the edits
// that add or remove wavebox's entry in a host's hook file. Pure: text in, text out.
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace wb::hooks {

enum class Host { kClaude, kCursor, kOpenCode, kCodex };

std::optional<Host> host_named(std::string_view name);  // "claude", "cursor", "opencode", "codex"
std::string host_name(Host h);

// POSIX single quotes ('it'\''s').
std::string sh_quote(std::string_view s);

enum class Shape {
  kWrap,          // run it through wavebox
  kWrapped,       // exactly `WAVEBOX run [--no-prompt|-v] -c STRING` (or `-- ARGS`): leave it
  kPolicyChange,  // a wavebox invocation that changes the policy or wavebox itself: the user's call
};
struct Classified {
  Shape shape = Shape::kWrap;
  std::string reason;  // kPolicyChange: what it changes
  // kPolicyChange of a `wavebox run`: the same with --approve, for a host that asks the user
  // (the user's yes is then wavebox's approval); empty otherwise.
  std::string approved;
};
// wavebox: the absolute path of the wavebox the hook was installed with; only that spelling is
// taken as already wrapped (a bare `wavebox` could be another program earlier on the agent's PATH).
Classified classify(std::string_view command, std::string_view wavebox);

// `'WAVEBOX' run --no-prompt [--approve] -c 'COMMAND'`
std::string wrap(std::string_view wavebox, std::string_view command, bool approve);

// The command a host's hook file names: `'WAVEBOX' hook HOST`.
std::string hook_command(std::string_view wavebox, Host h);

// A JSON hook file (Claude's settings.json, Codex's and Cursor's hooks.json) with wavebox's
// entry added: text is the file as it is ("" when there is none). changed is false when an entry
// of ours is already there (with this wavebox). An error when the text is not a JSON object or
// its hooks section has another shape: the file is never rewritten then.
Result<std::string> add_entry(Host h, std::string_view text, std::string_view hook_cmd, bool& changed);
// The same with every entry of ours removed (whatever wavebox path it names); groups and sections
// left empty by that are removed too.
Result<std::string> remove_entry(Host h, std::string_view text, bool& changed);
// The hook command of ours the file holds, if any.
std::optional<std::string> find_entry(Host h, std::string_view text);

// OpenCode's plugin file, wholly ours; the marker line tells it from another file.
std::string opencode_plugin(std::string_view wavebox);
bool is_our_plugin(std::string_view text);
inline constexpr std::string_view kPluginMarker = "// wavebox hook for OpenCode (wavebox hooks install --opencode)";

}  // namespace wb::hooks
