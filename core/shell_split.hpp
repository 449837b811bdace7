#pragma once
// Splits a shell command string into its simple commands (subcommands) for permission matching.
// Pure. Operators && || ; | |& & and newlines separate; quotes, backslashes, $(...), backticks,
// ( ... ) subshells and { ...; } groups are respected (their insides are subcommands too);
// redirections are dropped (writes_file says whether one writes a file); process substitution
// and here-documents are not parsed. A string that cannot be parsed is returned whole.
#include <string>
#include <string_view>
#include <vector>

namespace wb {

struct SplitResult {
  std::vector<std::string> subcommands;  // words joined by single spaces, quotes kept as written
  bool parsed = true;                    // false: unparseable, subcommands = {the whole string}
  // A redirection writes a file (">", ">>", "&>", "<>", not to /dev/null or another descriptor):
  // something the subcommands' words do not show.
  bool writes_file = false;
};

SplitResult split_command(std::string_view command);

// The forms a subcommand is matched in: itself, then with leading VAR=value assignments and the
// wrappers timeout, time, nice, nohup, stdbuf, env stripped, step by step.
std::vector<std::string> match_candidates(const std::string& subcommand);

// argv as a shell would read it back: plain words as they are, others in single quotes.
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace wb
