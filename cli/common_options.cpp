// The options run, wrap, decide and doctor share, and where the command after them begins.
#include <string>
#include <vector>

#include "cli/subcommands.hpp"

namespace wb::cli {
namespace {

// The options of run, wrap and decide that take a value (the next word when not --opt=value).
bool takes_value(const std::string& opt) {
  for (const char* o : {"--settings", "--cwd", "--pass-env", "--allow-domain", "--network", "--allow-write",
                        "--report-json", "--audit-log", "--platform", "-c"}) {
    if (opt == o) return true;
  }
  return false;
}

}  // namespace

void add_common(CLI::App* sub, Options& o) {
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

}  // namespace wb::cli
