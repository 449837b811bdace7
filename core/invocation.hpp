#pragma once
// What a planner hands to the executor: the program, its arguments and environment. A value.
#include <string>
#include <vector>

namespace wb {

struct Invocation {
  std::string program;                 // absolute path
  std::vector<std::string> args;       // argv[1..], what the planner wants the program to get
  std::vector<std::string> env;        // full environment, "K=V"
  std::vector<std::string> command;    // the user's command (argv) as it will run inside
};

}  // namespace wb
