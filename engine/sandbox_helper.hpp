#pragma once
// macOS: inside a Seatbelt sandbox wavebox is its own first program (seatbelt/helper.hpp), called
// with its own first argument.

namespace wb::engine {

// argv names the helper: main hands the process to helper_main before anything else.
bool helper_call(int argc, char** argv);
// Returns only when the command could not be executed (126, 127; 125 for a malformed call).
int helper_main(int argc, char** argv);

}  // namespace wb::engine
