// `wavebox wrap` and `decide`: options -> a RunRequest or a decision -> what is printed.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/options.hpp"
#include "cli/setup.hpp"
#include "core/decision.hpp"
#include "core/log.hpp"
#include "core/shell_split.hpp"
#include "core/sys/platform.hpp"
#include "engine/engine.hpp"

namespace wb::cli {

std::string command_string(const Options& o) {
  if (o.shell_command) return *o.shell_command;
  return shell_join(o.command);
}

int cmd_wrap(const Options& o) {
  auto env = load_environment(o);
  if (!env.ok()) return report_error(env.error());
  auto req = run_request(o, std::move(*env));
  req.plan_only = true;
  if (o.platform == "macos") req.platform = sys::Platform::kMacos;
  if (o.platform == "linux") req.platform = sys::Platform::kLinux;
  auto prepared = engine::prepare(std::move(req));
  if (!prepared.ok()) return report_error(prepared.error());
  auto text = engine::describe(*prepared, o.json);
  if (!text.ok()) return report_error(text.error());
  std::fwrite(text->data(), 1, text->size(), stdout);
  return 0;
}

int cmd_decide(const Options& o) {
  if (o.command.empty() && !o.shell_command) {
    log::error("no command given: wavebox decide [OPTIONS] -- 'COMMAND STRING'");
    return 125;
  }
  auto env = load_environment(o);
  if (!env.ok()) return report_error(env.error());
  const Settings& s = env->settings;
  for (const auto& w : s.warnings) log::warn(w);
  // A single argument is the command string itself; several are joined like a shell would see them.
  std::string cmd = o.shell_command ? *o.shell_command : (o.command.size() == 1 ? o.command[0] : command_string(o));
  Decision d = engine::decide_here(s, cmd, o.disable_sandbox, log::process());
  std::vector<std::string> adds = o.allow_domains;
  if (o.allow_network) adds.push_back("*");  // every host: never a read-only call
  nlohmann::json j = engine::decision_json(d, adds);
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace wb::cli
