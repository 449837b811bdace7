#pragma once
// macOS: wavebox's helper, the first program inside the sandbox (see seatbelt/plan.hpp). It says
// "started" on its report descriptor, then becomes the command. POSIX only.
namespace wb::seatbelt {

// argv: wavebox __sandbox-helper FD EXE ARGV0 [ARG...]. Returns only when the command could not
// be executed (126, 127; 125 for a malformed call).
int helper_main(int argc, char** argv);

}  // namespace wb::seatbelt
