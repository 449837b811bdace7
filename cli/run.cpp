// `wavebox run`: options -> a RunRequest -> the engine -> what is printed.
#include <fmt/format.h>
#include <signal.h>

#include <cstdio>
#include <optional>

#include "cli/options.hpp"
#include "cli/run_parts.hpp"
#include "cli/setup.hpp"
#include "core/log.hpp"
#include "core/violations.hpp"
#include "engine/engine.hpp"
#include "engine/unsandboxed.hpp"

namespace wb::cli {

int cmd_run(const Options& o) {
  ForwardedSignals sigs;
  const ReportTarget report = o.report_json.empty() ? ReportTarget() : ReportTarget(o.report_json);
  Report r;
  r.extra_domains = o.allow_domains;
  if (o.allow_network) r.extra_domains.push_back("*");
  auto write_report = [&] {
    if (!report.wanted()) return;
    if (auto st = report.write(r); !st) log::warn(st.error().message);
  };
  // The sandbox most likely runs: its keeper and bwrap started before the options were parsed,
  // on the other core, while the settings are read and the run planned (prepare drops them when
  // they do not fit; an unsandboxed run here, before its command replaces wavebox).
  std::shared_ptr<engine::EarlyLaunch> early = std::move(early_slot());
  if (o.disable_sandbox) early.reset();
  AuditLines audit(o);
  auto write_audit = [&](std::optional<int> exit_code) { audit.write(r, exit_code); };
  // The command did not run: said on stderr, and in the report (what an agent most needs).
  OutcomeRecord& out = r.outcome;
  auto failed = [&](const Error& e) {
    const int status = report_error(e);
    out.exit_code = status;
    out.error = e.message;
    if (e.kind == ErrorKind::kDenied) out.decision = "deny";
    if (e.kind == ErrorKind::kNeedsApproval) out.decision = "ask";
    write_report();
    write_audit(status);
    return status;
  };
  auto env = load_environment(o);
  if (!env.ok()) return failed(env.error());
  if (const auto& a = env->settings.sandbox.audit_log) audit.add_path(*a);
  const ResourceSettings res = env->settings.sandbox.resources;
  auto req = run_request(o, std::move(*env));
  req.own_terminal = true;  // used when stdin and stdout are one terminal (WAVEBOX_PTY=0: never)
  req.early = std::move(early);
  const std::string learn_home = req.home;
  audit.home = req.home;
  const std::vector<std::string> learn_settings = req.settings_files;
  const std::vector<std::string> learn_deny_read = req.settings.sandbox.filesystem.deny_read;
  req.audit_log = audit.first_path();
  audit.record.argv = req.argv;
  audit.record.cwd = req.cwd;
  audit.record.command_line = req.command_line;
  req.approve = [&o, line = req.command_line](const Decision& d) { return approved(o, d, line); };
  auto prepared = engine::prepare(std::move(req));
  if (!prepared.ok()) return failed(prepared.error());
  out.decision = prepared->decision.decision;
  out.reason = prepared->decision.reason;
  out.rule = prepared->decision.matched_rule;
  if (!prepared->sandboxed) {
    log::info("running the command UNSANDBOXED: " + out.reason);
    if (report.wanted() || audit.wanted()) {
      // A report or a record must carry the command's real exit status: it runs as our child.
      auto outcome = engine::run_here(std::move(*prepared), sigs.fd.get());
      if (!outcome.ok()) return failed(outcome.error());
      out.exit_code = outcome->exit_code;
      out.elapsed_ms = outcome->elapsed_ms;
      write_report();
      write_audit(outcome->exit_code);
      return outcome->exit_code;
    }
    out.exit_code = std::nullopt;  // the command replaces wavebox: its status is not known here
    write_report();
    write_audit(std::nullopt);
    sigs.restore();  // the command gets the signal mask wavebox was given
    return report_error(engine::exec_unsandboxed(o.cwd, prepared->unsandboxed.command));
  }
  // One command in this process: supervised on this thread, the terminal's signals forwarded.
  auto outcome = engine::run_here(std::move(*prepared), sigs.fd.get());
  if (!outcome.ok()) return failed(outcome.error());
  // A limit that ended the command says so, besides the exit status.
  if (outcome->timed_out) {
    log::error(fmt::format("the command was ended after {} s (sandbox.resources.timeoutSeconds); exit status 124",
                           res.timeout_seconds.value_or(0)));
  } else if (res.cpu_seconds && outcome->exit_code == 128 + SIGXCPU) {
    log::error(fmt::format("the command used its {} s of CPU time (sandbox.resources.cpuSeconds) and was ended",
                           *res.cpu_seconds));
  }
  std::string block = render_block(outcome->violations, outcome->more);
  if (!block.empty()) std::fwrite(block.data(), 1, block.size(), stderr);
  out.exit_code = outcome->exit_code;
  out.sandboxed = true;
  out.violations = outcome->violations;
  out.more = outcome->more;
  out.elapsed_ms = outcome->elapsed_ms;
  write_report();
  write_audit(outcome->exit_code);
  if (o.learn) print_learned(o, outcome->violations, learn_home, audit.record.cwd, learn_settings, learn_deny_read);
  return outcome->exit_code;
}

}  // namespace wb::cli
