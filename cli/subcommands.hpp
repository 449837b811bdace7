#pragma once
// The subcommands CLI11 parses (run, wrap, decide, connect, doctor, serve, trust) and where the
// command after our options begins.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/options.hpp"

namespace wb::cli {

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

// Only the subcommand named first is built (building all five is CLI11's largest cost at every
// start); anything else (--help, --version, a typo) gets them all, for the full help.
void add_subcommands(CLI::App& app, Options& o, Subcommands& sc, const std::string& first);
// The options of run, wrap, decide and doctor that every one of them takes.
void add_common(CLI::App* sub, Options& o);
// Everything after the first "--" is the command, untouched: CLI11 only sees what comes before
// (its own "--" handling lets a vector option swallow the separator). For run, wrap and decide
// the command also starts at its first word, as with env, sudo and timeout: `wavebox run grep -v
// foo f` runs `grep -v foo f` (-v is grep's, not ours). Returns how many words are ours.
int split_command(int argc, char** argv, const std::string& first, std::vector<std::string>& after);

}  // namespace wb::cli
