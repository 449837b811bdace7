#pragma once
// The parsed command line shared by the subcommands.
#include <optional>
#include <string>
#include <vector>

namespace wb::cli {

struct Options {
  std::vector<std::string> settings_files;
  std::string cwd;
  bool disable_sandbox = false;
  std::vector<std::string> allow_write;
  std::vector<std::string> pass_env;       // credential variables passed through anyway
  std::vector<std::string> allow_domains;  // --allow-domain: hosts for this run only
  bool allow_network = false;              // --dangerously-allow-network: every host, this run only
  std::string network;                     // --network: "" (as the settings say), "off", "allowlist"
  bool network_only = false;
  std::string report_json;
  std::string audit_log;   // --audit-log FILE
  bool learn = false;      // --learn[=FILE]
  std::string learn_file;  // where --learn=FILE writes the settings ("" : printed on stderr)
  bool approve = false;
  bool no_prompt = false;  // --no-prompt: never ask on the terminal
  bool srt = false;        // the srt front (cli/srt.cpp): the sandbox is always on
  bool verbose = false;
  bool json = false;                         // doctor --json, wrap --json
  std::string platform;                      // wrap --platform: "" (this one), "linux", "macos"
  bool stdio = false;                        // serve --stdio
  std::optional<std::string> shell_command;  // -c
  std::vector<std::string> command;
};

std::string command_string(const Options& o);
// `wavebox run`: the sandbox's keeper and bwrap are started first thing (before the options are
// parsed), for cmd_run to take or drop.
void start_run_early(const std::string& inherited);  // engine::take_inherited_launch's
void drop_run_early();                               // when cmd_run does not run after all
int cmd_run(const Options& o);
int cmd_decide(const Options& o);
int cmd_connect(const std::string& host, int port);
int cmd_wrap(const Options& o);
int cmd_doctor(const Options& o);
int cmd_serve(const Options& o);
// `wavebox srt ARGS` or `srt ARGS` through a link: srt's command line (argv after "srt").
int cmd_srt(int argc, char** argv);
// `wavebox trust [DIR]` (o.cwd: DIR), --revoke, --list.
int cmd_trust(const Options& o, bool revoke, bool list);
// `wavebox hooks install|uninstall|status ...` (argv after "hooks") and `wavebox hook HOST`, the
// program an agent host runs before each shell command. argv0: how this program was started.
int cmd_hooks(int argc, char** argv, const char* argv0);
int cmd_hook(int argc, char** argv, const char* argv0);

}  // namespace wb::cli
