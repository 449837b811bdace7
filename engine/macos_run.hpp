#pragma once
// The engine's macOS run: planned from the request alone (cwd, home, settings; nothing
// macOS-specific probed, so `wrap --platform macos` works anywhere), started with the proxy on
// loopback ports with a per-run credential, supervised by macos::Process.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/policy.hpp"
#include "core/result.hpp"
#include "macos/launch.hpp"
#include "macos/plan.hpp"
#include "macos/profile.hpp"
#include "netproxy/decision.hpp"

namespace wb::netproxy {
class Proxy;
}

namespace wb::engine {

struct RunRequest;

struct MacRun {
  macos::Facts facts;
  macos::ProfileInput input;
  std::string exe;
  std::vector<std::string> argv;
  std::vector<std::string> env;  // before the proxy's variables
  std::string state_dir, cache_dir, tmpdir;
  bool network_off = false;
  bool plan_only = false;
  std::optional<double> timeout_s;
  netproxy::NetPolicy net_policy;
};

Result<MacRun> plan_macos(const RunRequest& req);
// `wavebox wrap --platform macos [--json]`.
std::string describe_macos(const MacRun& run, bool json);

// A started macOS run: the process and the proxy it talks to.
struct MacStarted {
  std::unique_ptr<netproxy::Proxy> proxy;
  std::unique_ptr<macos::Process> process;
  ~MacStarted();
};
Result<std::unique_ptr<MacStarted>> start_macos(MacRun run, const RunRequest& req,
                                                std::function<void(const Violation&)> on_refusal);

}  // namespace wb::engine
