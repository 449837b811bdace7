#pragma once
// The engine's macOS run: planned from the request alone (cwd, home, settings; nothing
// macOS-specific probed, so `wrap --platform macos` works anywhere), started with the proxy on
// loopback ports with a per-run credential, supervised by seatbelt::Process.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/policy.hpp"
#include "core/result.hpp"
#include "netproxy/decision.hpp"
#include "seatbelt/launch.hpp"
#include "seatbelt/plan.hpp"
#include "seatbelt/profile.hpp"

namespace wb::netproxy {
class Proxy;
}

namespace wb::engine {

struct RunRequest;

struct MacRun {
  seatbelt::Facts facts;
  seatbelt::ProfileInput input;
  std::string exe;
  std::vector<std::string> argv;
  std::vector<std::string> env;  // before the proxy's variables
  std::string state_dir, cache_dir, tmpdir;
  bool network_off = false;
  bool plan_only = false;
  std::optional<double> timeout_s;
  netproxy::NetPolicy net_policy;
  std::vector<std::string> scan_roots;  // scanned at the start, and again after the run
  std::vector<std::string> git_dirs;    // the repositories found at the start
};

Result<MacRun> plan_macos(const RunRequest& req);
// `wavebox wrap --platform macos [--json]`.
std::string describe_macos(const MacRun& run, bool json);

// A started macOS run: the process and the proxy it talks to.
struct MacStarted {
  std::unique_ptr<netproxy::Proxy> proxy;
  std::unique_ptr<seatbelt::Process> process;
  std::string state_dir, home, workspace;
  std::vector<std::string> scan_roots, git_dirs;
  std::vector<GuardedPath> protections;  // the run's write guards: a refusal says which protects it
  // After the run: a repository the command made (git init, a clone, a bare layout moved into
  // place) was writable during it; said, as on Linux (guarded from the next run on).
  void warn_new_repositories(const Logger& log) const;
  ~MacStarted();
};
Result<std::unique_ptr<MacStarted>> start_macos(MacRun run, const RunRequest& req,
                                                std::function<void(const Violation&)> on_refusal);

}  // namespace wb::engine
