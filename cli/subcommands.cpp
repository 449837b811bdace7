// The subcommands CLI11 parses: each one's options, help and examples.
#include "cli/subcommands.hpp"

namespace wb::cli {
namespace {

void add_run(CLI::App& app, Options& o, Subcommands& sc) {
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

void add_wrap(CLI::App& app, Options& o, Subcommands& sc) {
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

void add_decide(CLI::App& app, Options& o, Subcommands& sc) {
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

void add_doctor(CLI::App& app, Options& o, Subcommands& sc) {
  CLI::App* doctor = sc.doctor = app.add_subcommand("doctor", "platform and dependency report");
  doctor->footer(
      "Examples:\n  wavebox doctor -v\n  wavebox doctor --json\n"
      "Exit status: 0 when a sandbox can run here; 1 when not (what is missing is named); 125 on bad settings.");
  add_common(doctor, o);
  doctor->add_flag("--json", o.json, "machine-readable output");
}

void add_serve(CLI::App& app, Options& o, Subcommands& sc) {
  CLI::App* serve = sc.serve =
      app.add_subcommand("serve", "many sessions in one process: JSON-RPC on stdin/stdout (man wavebox-serve)");
  serve->footer(
      "Example:\n  printf '%s\\n' '{\"id\":1,\"method\":\"initialize\"}' | wavebox serve --stdio\n"
      "Exit status: 0 after shutdown or the end of stdin; 125 without --stdio.");
  serve->add_flag("--stdio", o.stdio, "speak JSON-RPC 2.0, one object per line, on stdin and stdout");
  serve->add_flag("-v,--verbose", o.verbose, "say more on stderr");
}

void add_trust(CLI::App& app, Options& o, Subcommands& sc) {
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

}  // namespace

void add_subcommands(CLI::App& app, Options& o, Subcommands& sc, const std::string& first) {
  const bool known = first == "run" || first == "wrap" || first == "decide" || first == "connect" ||
                     first == "doctor" || first == "serve" || first == "trust";
  auto wanted = [&](const char* name) { return !known || first == name; };
  if (wanted("run")) add_run(app, o, sc);
  if (wanted("wrap")) add_wrap(app, o, sc);
  if (wanted("decide")) add_decide(app, o, sc);
  if (wanted("connect")) add_connect(app, sc);
  if (wanted("doctor")) add_doctor(app, o, sc);
  if (wanted("serve")) add_serve(app, o, sc);
  if (wanted("trust")) add_trust(app, o, sc);
}

}  // namespace wb::cli
