// `wavebox srt ...`, and wavebox run as `srt` through a link: srt's command line (sandbox-runtime's
// CLI), so that scripts written for srt run unchanged: -s/--settings FILE (default
// ~/.srt-settings.json when it exists), -c 'STRING', -d/--debug, the command after its options
// or after --. srt always sandboxes: the settings cannot turn the sandbox off here.
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/options.hpp"
#include "core/log.hpp"
#include "core/paths.hpp"
#include "core/sys/fs.hpp"

namespace wb::cli {

int cmd_srt(int argc, char** argv) {
  Options o;
  o.srt = true;
  int i = 0;
  auto value = [&](const std::string& opt) -> const char* {
    if (i + 1 >= argc) {
      log::error("srt: " + opt + " needs a value");
      return nullptr;
    }
    return argv[++i];
  };
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-s" || a == "--settings") {
      const char* v = value(a);
      if (!v) return 125;
      o.settings_files.push_back(v);
    } else if (a.rfind("--settings=", 0) == 0) {
      o.settings_files.push_back(a.substr(11));
    } else if (a == "-c") {
      const char* v = value(a);
      if (!v) return 125;
      o.shell_command = v;
    } else if (a == "-d" || a == "--debug") {
      o.verbose = true;
    } else if (a == "--control-fd" || a.rfind("--control-fd=", 0) == 0) {
      log::error(
          "srt: --control-fd is not supported: settings do not change during a wavebox run (run again with the new "
          "settings, or use wavebox serve's session/update)");
      return 125;
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: srt [-s FILE | --settings FILE] [-d | --debug] (-c 'COMMAND STRING' | [--] COMMAND [ARG...])\n"
          "wavebox's srt-compatible front: srt's settings format and meaning (relative paths against the working\n"
          "directory, the sandbox always on); the default settings file is ~/.srt-settings.json when it exists.\n"
          "Exit status: the command's; 125 when it did not run (see wavebox(1)).\n");
      return 0;
    } else if (a == "-V" || a == "--version") {
      std::printf("wavebox 0.1.0 (srt-compatible front)\n");
      return 0;
    } else if (!a.empty() && a[0] == '-' && o.command.empty()) {
      log::error("srt: unknown option " + a + " (wavebox's srt front takes -s, -c, -d and the command)");
      return 125;
    } else {
      break;
    }
  }
  for (; i < argc; ++i) o.command.push_back(argv[i]);
  if (o.settings_files.empty()) {
    const std::string def = paths::join(sys::home_dir(), ".srt-settings.json");
    if (sys::exists(def)) o.settings_files.push_back(def);
  }
  if (!o.shell_command && o.command.empty()) {
    log::error("srt: no command: use -c 'COMMAND' or give the command and its arguments");
    return 125;
  }
  if (o.shell_command && !o.command.empty()) {
    log::error("srt: both -c and a command were given");
    return 125;
  }
  log::set_verbose(o.verbose);
  return cmd_run(o);
}

}  // namespace wb::cli
