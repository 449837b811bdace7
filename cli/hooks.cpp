// `wavebox hooks install|uninstall|status`: wavebox's entry in agent hosts' hook files
// (docs/guides/): the options; engine/hook_files.hpp does the work, cli/hooks_install.cpp says it.
#include "core/hooks.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "cli/hooks_install.hpp"
#include "cli/options.hpp"
#include "core/log.hpp"
#include "core/paths.hpp"
#include "core/sys/fs.hpp"
#include "engine/hook_files.hpp"

namespace wb::cli {
namespace {

using hooks::Host;

const Host kHosts[] = {Host::kClaude, Host::kCursor, Host::kOpenCode, Host::kCodex};

void usage() {
  std::fprintf(stderr,
               "usage: wavebox hooks install   (--claude | --cursor | --opencode | --codex)... [--project[=DIR]]\n"
               "       wavebox hooks uninstall (--claude | --cursor | --opencode | --codex)... [--project[=DIR]]\n"
               "       wavebox hooks status [--project=DIR] [--json]\n"
               "Every shell command the agent runs then goes through `wavebox run` with your settings\n"
               "(docs/guides/). Exit status: 0; 125 when a file could not be changed.\n");
}

}  // namespace

int cmd_hooks(int argc, char** argv, const char* argv0) {
  if (argc < 1) {
    usage();
    return 125;
  }
  const std::string verb = argv[0];
  if (verb == "-h" || verb == "--help") {
    usage();
    return 0;
  }
  std::vector<Host> hosts;
  bool project = false, json = false;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) == 0 && hooks::host_named(a.substr(2))) {
      Host h = *hooks::host_named(a.substr(2));
      if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
    } else if (a == "--project") {
      project = true;
    } else if (a.rfind("--project=", 0) == 0) {
      project = true;
      dir = a.substr(10);
    } else if (a == "--json") {
      json = true;
    } else {
      log::error("hooks: unknown argument " + log::quote(a));
      usage();
      return 125;
    }
  }
  const std::string caller = sys::current_dir();
  dir = dir.empty() ? caller : paths::resolve(dir, sys::home_dir(), caller);
  if (project && !sys::is_dir(dir)) {
    log::error("hooks: " + log::quote(dir) + " is not a directory");
    return 125;
  }
  const char* path = std::getenv("PATH");
  const std::string wavebox = engine::program_path(argv0, path ? path : "", caller);
  if (verb == "status") {
    if (hosts.empty()) hosts.assign(std::begin(kHosts), std::end(kHosts));
    return say_states(engine::hook_states(hosts, dir, wavebox, sys::home_dir()), json);
  }
  if (verb != "install" && verb != "uninstall") {
    usage();
    return 125;
  }
  if (hosts.empty()) {
    log::error("hooks " + verb + ": name the host: --claude, --cursor, --opencode or --codex");
    return 125;
  }
  const std::string home = sys::home_dir();
  if (verb == "install") return say_changes(engine::install_hooks(hosts, project, dir, wavebox, home), true);
  return say_changes(engine::uninstall_hooks(hosts, project, dir, home), false);
}

}  // namespace wb::cli
