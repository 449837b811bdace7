#pragma once
// `wavebox serve --stdio`: many sessions in one process, each command in its own boundary.
// JSON-RPC 2.0, one object per line on the given descriptors (man/wavebox-serve.7). Every
// command is one engine run (engine/engine.hpp) made from its own session's settings and
// working directory; nothing of one session reaches another.
#include <string>
#include <vector>

#include "core/log.hpp"

namespace wb::serve {

struct ServerConfig {
  int in = 0, out = 1;           // requests in, responses and notifications out
  std::vector<std::string> env;  // the environment commands start from (the server's)
  std::string home;              // for settings paths and discovery
  const Logger* log = &log::process();
};

// Serves until shutdown or the end of input; returns the exit status (0). Every running command
// is ended before it returns.
int serve(const ServerConfig& config);

}  // namespace wb::serve
