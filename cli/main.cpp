// wavebox: run a shell command in an OS sandbox. Argument parsing (CLI11) lives only in cli/.
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "cli/subcommands.hpp"
#include "core/log.hpp"
#include "core/sys/fs.hpp"
#include "engine/engine.hpp"
#include "engine/sandbox_helper.hpp"

namespace {

int dispatch(const wb::cli::Subcommands& sc, wb::cli::Options& o) {
  o.learn = sc.learn && sc.learn->count() > 0;
  if (sc.run && sc.run->parsed()) return wb::cli::cmd_run(o);
  if (sc.wrap && sc.wrap->parsed()) return wb::cli::cmd_wrap(o);
  if (sc.decide && sc.decide->parsed()) return wb::cli::cmd_decide(o);
  if (sc.connect && sc.connect->parsed()) return wb::cli::cmd_connect(sc.connect_host, sc.connect_port);
  if (sc.doctor && sc.doctor->parsed()) return wb::cli::cmd_doctor(o);
  if (sc.serve && sc.serve->parsed()) return wb::cli::cmd_serve(o);
  if (sc.trust && sc.trust->parsed()) return wb::cli::cmd_trust(o, sc.revoke, sc.list);
  return 125;
}

}  // namespace

// Kept for the whole process and never destroyed: tearing down CLI11's option tree at exit
// would be work for nothing (a global pointer, so leak checkers still see it reachable).
CLI::App* g_app = nullptr;

int main(int argc, char** argv) {
  // Inside a macOS sandbox: wavebox as its own helper (seatbelt/helper.hpp), before anything else.
  if (wb::engine::helper_call(argc, argv)) return wb::engine::helper_main(argc, argv);
  // The launcher's sandbox (the `wavebox` a user runs started it and became this process): its
  // record leaves the environment before anything reads or copies it.
  const std::string inherited = wb::engine::take_inherited_launch();
  // Our children are ours to wait for, whatever the caller ignores (the launcher resets it too).
  ::signal(SIGCHLD, SIG_DFL);
  // Named as the program the user ran (ps, pgrep -x, killall see "wavebox", not "wavebox-core").
#ifdef __linux__
  ::prctl(PR_SET_NAME, "wavebox", 0, 0, 0);
#endif
  wb::sys::hold_standard_fds();
  // srt's command line: `srt ...` through a link, or `wavebox srt ...`.
  {
    const char* slash = std::strrchr(argv[0], '/');
    const std::string name = slash ? slash + 1 : argv[0];
    if (name == "srt") return wb::cli::cmd_srt(argc - 1, argv + 1);
    if (argc > 1 && std::strcmp(argv[1], "srt") == 0) return wb::cli::cmd_srt(argc - 2, argv + 2);
  }
  if (argc > 1 && std::strcmp(argv[1], "hooks") == 0) return wb::cli::cmd_hooks(argc - 2, argv + 2, argv[0]);
  if (argc > 1 && std::strcmp(argv[1], "hook") == 0) return wb::cli::cmd_hook(argc - 2, argv + 2, argv[0]);
  // A run's sandbox starts now, while the options and settings are read (cmd_run takes it;
  // whatever way main returns without it, --help or a bad option, drops it).
  if (argc > 1 && std::strcmp(argv[1], "run") == 0) wb::cli::start_run_early(inherited);
  struct DropEarly {
    ~DropEarly() { wb::cli::drop_run_early(); }
  } drop_early;
  g_app = new CLI::App{"wavebox: run shell commands in an OS sandbox (bubblewrap on Linux, Seatbelt on macOS)"};
  CLI::App& app = *g_app;
  app.set_version_flag("--version", "wavebox 0.1.0");
  app.require_subcommand(1);
  wb::cli::Options o;
  const std::string first = argc > 1 ? argv[1] : "";
  wb::cli::Subcommands sc;
  wb::cli::add_subcommands(app, o, sc, first);
  std::vector<std::string> after;
  const int ours = wb::cli::split_command(argc, argv, first, after);
  try {
    app.parse(ours, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    wb::cli::drop_run_early();
    wb::log::error(e.what());
    return 125;
  }
  wb::log::set_verbose(o.verbose);
  if (ours != argc) o.command.insert(o.command.end(), after.begin(), after.end());
  return dispatch(sc, o);
}
