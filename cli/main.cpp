// wavebox: run a shell command in an OS sandbox. Argument parsing (CLI11) lives only here.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "core/log.hpp"

namespace {

void add_common(CLI::App* sub, wb::cli::Options& o) {
  // One value per occurrence: a vector option would otherwise swallow the "--" that ends our
  // options, and the command's own options would be parsed as ours.
  sub->add_option("--settings", o.settings_files, "settings file (repeatable; later files win)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--cwd", o.cwd, "the workspace (default: the current directory)");
  sub->add_flag("--dangerously-disable-sandbox", o.disable_sandbox,
                "run unsandboxed if sandbox.allowUnsandboxedCommands allows it");
  sub->add_option("--allow-write", o.allow_write, "an extra writable path (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_flag("--network-only", o.network_only, "filesystem rules off, network rules on");
  sub->add_option("--report-json", o.report_json, "write a JSON report to FILE or fd:N");
  sub->add_flag("--approve", o.approve, "the caller already has the user's approval for an ask rule");
  sub->add_flag("-v,--verbose", o.verbose, "say what wavebox does");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"wavebox: run shell commands in an OS sandbox (bubblewrap on Linux, Seatbelt on macOS)"};
  app.set_version_flag("--version", "wavebox 0.1.0");
  app.require_subcommand(1);
  wb::cli::Options o;

  auto* run = app.add_subcommand("run", "run a command sandboxed");
  add_common(run, o);
  run->add_option("-c", o.shell_command, "run this string through bash (or /bin/sh)");
  run->add_option("command", o.command, "the command and its arguments (after --)");
  auto* wrap = app.add_subcommand("wrap", "print the sandboxed invocation, run nothing");
  add_common(wrap, o);
  wrap->add_option("-c", o.shell_command, "a shell string instead of a command");
  wrap->add_option("command", o.command, "the command and its arguments (after --)");
  auto* decide = app.add_subcommand("decide", "print the permission decision as JSON, run nothing");
  add_common(decide, o);
  decide->add_option("-c", o.shell_command, "the command string");
  decide->add_option("command", o.command, "the command string (after --)");
  std::string connect_host;
  int connect_port = 0;
  auto* connect = app.add_subcommand("connect", "inside the sandbox: a tunnel through its SOCKS5 proxy (ssh ProxyCommand)");
  connect->add_option("host", connect_host)->required();
  connect->add_option("port", connect_port)->required();
  auto* doctor = app.add_subcommand("doctor", "platform and dependency report");
  add_common(doctor, o);
  doctor->add_flag("--json", o.json, "machine-readable output");

  // Everything after the first "--" is the command, untouched: CLI11 only sees what comes before
  // (its own "--" handling lets a vector option swallow the separator).
  std::vector<std::string> after;
  int ours = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      ours = i;
      after.assign(argv + i + 1, argv + argc);
      break;
    }
  }
  try {
    app.parse(ours, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    wb::log::error(e.what());
    return 125;
  }
  wb::log::set_verbose(o.verbose);
  if (ours != argc) o.command.insert(o.command.end(), after.begin(), after.end());

  if (run->parsed()) return wb::cli::cmd_run(o);
  if (wrap->parsed()) return wb::cli::cmd_wrap(o);
  if (decide->parsed()) return wb::cli::cmd_decide(o);
  if (connect->parsed()) return wb::cli::cmd_connect(connect_host, connect_port);
  if (doctor->parsed()) return wb::cli::cmd_doctor(o);
  return 125;
}
