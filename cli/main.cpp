// wavebox: run a shell command in an OS sandbox. Argument parsing (CLI11) lives only here.
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
#include "core/log.hpp"
#include "core/sys/fs.hpp"
#include "engine/engine.hpp"
#include "seatbelt/helper.hpp"
#include "seatbelt/plan.hpp"

namespace {

// The options of run, wrap and decide that take a value (the next word when not --opt=value).
bool takes_value(const std::string& opt) {
  for (const char* o : {"--settings", "--cwd", "--pass-env", "--allow-domain", "--network", "--allow-write",
                        "--report-json", "--audit-log", "--platform", "-c"}) {
    if (opt == o) return true;
  }
  return false;
}

void add_common(CLI::App* sub, wb::cli::Options& o) {
  // One value per occurrence: a vector option would otherwise swallow the "--" that ends our
  // options, and the command's own options would be parsed as ours.
  sub->add_option("--settings", o.settings_files, "settings file (repeatable; later files win)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--cwd", o.cwd, "the workspace (default: the current directory)");
  sub->add_flag("--dangerously-disable-sandbox", o.disable_sandbox,
                "run unsandboxed if sandbox.allowUnsandboxedCommands allows it");
  sub->add_option(
      "--pass-env", o.pass_env,
      "pass this credential variable (or PREFIX*) into the sandbox (repeatable; see sandbox.passEnvironment)");
  sub->add_option("--allow-domain", o.allow_domains,
                  "reach this host (allowedDomains grammar) in this run only, besides the settings (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_flag("--dangerously-allow-network", o.allow_network,
                "every host through the proxy, for this run only (the deny list and this machine's own "
                "addresses excepted); never the default");
  sub->add_option("--network", o.network,
                  "off: nothing reachable in this run, no proxy; allowlist: as the settings say")
      ->check(CLI::IsMember({"off", "allowlist"}));
  sub->add_option("--allow-write", o.allow_write, "an extra writable path (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_flag("--network-only", o.network_only, "filesystem rules off, network rules on");
  sub->add_option("--report-json", o.report_json, "write a JSON report to FILE or fd:N");
  sub->add_option("--audit-log", o.audit_log, "append one JSON line for this run to FILE (as sandbox.auditLog)");
  sub->add_flag("--approve", o.approve, "the caller already has the user's approval for an ask rule");
  sub->add_flag("--no-prompt", o.no_prompt, "never ask on the terminal: an ask rule without --approve is exit 125");
  sub->add_flag("-v,--verbose", o.verbose, "say what wavebox does");
}

// The subcommands built for this invocation, and what their parsing fills beyond Options.
struct Subcommands {
  CLI::App* run = nullptr;
  CLI::App* wrap = nullptr;
  CLI::App* decide = nullptr;
  CLI::App* connect = nullptr;
  CLI::App* doctor = nullptr;
  CLI::App* serve = nullptr;
  CLI::App* trust = nullptr;
  CLI::Option* learn = nullptr;
  bool revoke = false, list = false;
  std::string connect_host;
  int connect_port = 0;
};

void add_run(CLI::App& app, wb::cli::Options& o, Subcommands& sc) {
  CLI::App* run = sc.run = app.add_subcommand("run", "run a command sandboxed");
  run->footer(
      "Examples:\n  wavebox run -- npm test\n  wavebox run --settings .claude/settings.json -c 'make && make check'\n"
      "  wavebox run --allow-domain registry.npmjs.org -- npm install\n"
      "Exit status: the command's own; 128+N when signal N killed it; 124 on sandbox.resources.timeoutSeconds;\n"
      "125 the command did not run (settings, a deny or ask rule, the sandbox); 126 not executable; 127 not found.");
  add_common(run, o);
  run->add_option("-c", o.shell_command, "run this string through bash (or /bin/sh)");
  sc.learn = run->add_option("--learn", o.learn_file,
                             "after the run, print the settings that would have allowed what was refused "
                             "(--learn=FILE: write them there as a settings file to review)")
                 ->expected(0, 1);
  run->add_option("command", o.command, "the command and its arguments (after --)");
}

void add_wrap(CLI::App& app, wb::cli::Options& o, Subcommands& sc) {
  CLI::App* wrap = sc.wrap = app.add_subcommand("wrap", "print the sandboxed invocation, run nothing");
  wrap->footer(
      "Examples:\n  wavebox wrap -- ls -l\n  HOME=/Users/alice wavebox wrap --platform macos --json --cwd "
      "/Users/alice/project -- make\nExit status: 0; 125 on bad settings.");
  add_common(wrap, o);
  wrap->add_option("--platform", o.platform, "plan for this system instead of the one wavebox runs on")
      ->check(CLI::IsMember({"linux", "macos"}));
  wrap->add_flag("--json", o.json, "print the invocation as JSON (with --platform macos)");
  wrap->add_option("-c", o.shell_command, "a shell string instead of a command");
  wrap->add_option("command", o.command, "the command and its arguments (after --)");
}

void add_decide(CLI::App& app, wb::cli::Options& o, Subcommands& sc) {
  CLI::App* decide = sc.decide = app.add_subcommand("decide", "print the permission decision as JSON, run nothing");
  decide->footer("Example:\n  wavebox decide -- 'git push origin main'\nExit status: 0; 125 on bad settings.");
  add_common(decide, o);
  decide->add_option("-c", o.shell_command, "the command string");
  decide->add_option("command", o.command, "the command string (after --)");
}

void add_connect(CLI::App& app, Subcommands& sc) {
  CLI::App* connect = sc.connect =
      app.add_subcommand("connect", "inside the sandbox: a tunnel through its SOCKS5 proxy (ssh ProxyCommand)");
  connect->footer(
      "Example (inside the sandbox; wavebox sets it as GIT_SSH_COMMAND):\n"
      "  ssh -o ProxyCommand='wavebox connect %h %p' git@github.com\nExit status: 0; 1 when the tunnel fails; 2 on a "
      "bad HOST or PORT.");
  connect->add_option("host", sc.connect_host)->required();
  connect->add_option("port", sc.connect_port)->required();
}

void add_doctor(CLI::App& app, wb::cli::Options& o, Subcommands& sc) {
  CLI::App* doctor = sc.doctor = app.add_subcommand("doctor", "platform and dependency report");
  doctor->footer(
      "Examples:\n  wavebox doctor -v\n  wavebox doctor --json\n"
      "Exit status: 0 when a sandbox can run here; 1 when not (what is missing is named); 125 on bad settings.");
  add_common(doctor, o);
  doctor->add_flag("--json", o.json, "machine-readable output");
}

void add_serve(CLI::App& app, wb::cli::Options& o, Subcommands& sc) {
  CLI::App* serve = sc.serve =
      app.add_subcommand("serve", "many sessions in one process: JSON-RPC on stdin/stdout (man wavebox-serve)");
  serve->footer(
      "Example:\n  printf '%s\\n' '{\"id\":1,\"method\":\"initialize\"}' | wavebox serve --stdio\n"
      "Exit status: 0 after shutdown or the end of stdin; 125 without --stdio.");
  serve->add_flag("--stdio", o.stdio, "speak JSON-RPC 2.0, one object per line, on stdin and stdout");
  serve->add_flag("-v,--verbose", o.verbose, "say more on stderr");
}

void add_trust(CLI::App& app, wb::cli::Options& o, Subcommands& sc) {
  CLI::App* trust = sc.trust = app.add_subcommand(
      "trust", "let a folder's own settings files widen its sandbox (by default they may only narrow it)");
  trust->footer(
      "Examples:\n  wavebox trust            the project the current directory belongs to\n"
      "  wavebox trust ~/src/app\n  wavebox trust --revoke ~/src/app\n  wavebox trust --list\n"
      "Exit status: 0; 125 when the folder is not a directory or the record cannot be written.");
  trust->add_option("dir", o.cwd, "the folder (default: the project of the current directory)");
  trust->add_flag("--revoke", sc.revoke, "no longer trust the folder");
  trust->add_flag("--list", sc.list, "print the trusted folders");
}

// Everything after the first "--" is the command, untouched: CLI11 only sees what comes before
// (its own "--" handling lets a vector option swallow the separator). For run, wrap and decide
// the command also starts at its first word, as with env, sudo and timeout: `wavebox run grep -v
// foo f` runs `grep -v foo f` (-v is grep's, not ours). Returns how many words are ours.
int split_command(int argc, char** argv, const std::string& first, std::vector<std::string>& after) {
  const bool takes_command = first == "run" || first == "wrap" || first == "decide";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      after.assign(argv + i + 1, argv + argc);
      return i;
    }
    if (!takes_command || i < 2) continue;
    if (a.size() > 1 && a[0] == '-') {
      if (a.find('=') == std::string::npos && takes_value(a)) ++i;  // its value is not the command
      continue;
    }
    after.assign(argv + i, argv + argc);
    return i;
  }
  return argc;
}

int dispatch(const Subcommands& sc, wb::cli::Options& o) {
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
  if (argc > 1 && std::strcmp(argv[1], wb::seatbelt::kHelperArg) == 0) return wb::seatbelt::helper_main(argc, argv);
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
  // Only the subcommand named first is built (building all five is CLI11's largest cost at every
  // start); anything else (--help, --version, a typo) gets them all, for the full help.
  const std::string first = argc > 1 ? argv[1] : "";
  const bool known = first == "run" || first == "wrap" || first == "decide" || first == "connect" ||
                     first == "doctor" || first == "serve" || first == "trust";
  auto wanted = [&](const char* name) { return !known || first == name; };
  Subcommands sc;
  if (wanted("run")) add_run(app, o, sc);
  if (wanted("wrap")) add_wrap(app, o, sc);
  if (wanted("decide")) add_decide(app, o, sc);
  if (wanted("connect")) add_connect(app, sc);
  if (wanted("doctor")) add_doctor(app, o, sc);
  if (wanted("serve")) add_serve(app, o, sc);
  if (wanted("trust")) add_trust(app, o, sc);
  std::vector<std::string> after;
  const int ours = split_command(argc, argv, first, after);
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
