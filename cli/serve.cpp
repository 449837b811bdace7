// `wavebox serve --stdio`: the server (serve/) on this process's stdin and stdout.
#include "cli/options.hpp"
#include "core/log.hpp"
#include "core/sys/fs.hpp"
#include "serve/server.hpp"

extern char** environ;

namespace wb::cli {

int cmd_serve(const Options& o) {
  if (!o.stdio) {
    log::error("wavebox serve speaks JSON-RPC on stdin and stdout: pass --stdio (see man wavebox-serve)");
    return 125;
  }
  serve::ServerConfig cfg;
  for (char** e = environ; *e; ++e) cfg.env.emplace_back(*e);
  cfg.home = sys::home_dir();
  return serve::serve(cfg);
}

}  // namespace wb::cli
