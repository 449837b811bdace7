#pragma once
// What a run executes, as a value: `wavebox wrap` prints it, `wavebox run` sends it, and both
// name it by the same id (invocation_id). On Linux: bwrap's command line, the options it reads
// from a descriptor (`--args 3`: never in a command line), the command's environment, the
// command, and the list of mounts wavebox-shim places.
#include <string>
#include <vector>

namespace wb {

struct Invocation {
  std::string program;               // absolute path
  std::vector<std::string> args;     // its command line (argv[1..])
  std::vector<std::string> options;  // read from a descriptor (bwrap's --args)
  std::vector<std::string> env;      // the command's environment, "K=V"
  std::vector<std::string> command;  // the user's command (argv) as it will run inside
  std::string mounts;                // the shim's mount list (records of NUL-separated fields)
};

// A short id of every field (FNV-1a, hex): equal ids, the same invocation.
std::string invocation_id(const Invocation& inv);

}  // namespace wb
