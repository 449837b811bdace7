#pragma once
// macOS: what a run executes, as a value (pure). sandbox-exec by absolute path with the profile
// and its parameters, then wavebox's helper inside the sandbox, then the command:
//   /usr/bin/sandbox-exec -p PROFILE -DKEY=VALUE... HELPER __sandbox-helper 3 EXE ARGV...
// The helper reports on descriptor 3 that it runs inside (or why the command could not be
// executed), so a profile Seatbelt refused is exit 125, never an unsandboxed command.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/invocation.hpp"
#include "seatbelt/profile.hpp"

namespace wb::seatbelt {

// The platform's programs: found on the Mac, or given (tests point them at fakes; `wrap` on
// another system plans with the defaults and runs nothing).
struct Facts {
  std::string sandbox_exec = "/usr/bin/sandbox-exec";
  std::string log = "/usr/bin/log";
  std::string helper;  // wavebox's own executable, run as its helper inside
};

inline constexpr const char* kHelperArg = "__sandbox-helper";
inline constexpr int kReportFd = 3;
// What the helper writes on kReportFd: kStarted once it runs inside the sandbox; kExecFailed and
// errno (4 bytes, native order) when the command could not be executed.
inline constexpr char kStarted = 'S';
inline constexpr char kExecFailed = 'E';

// The proxy's URLs carry a per-run credential: on macOS the listeners are on the host's loopback,
// where every local process can reach them.
struct ProxyEndpoints {
  int http_port = 0;
  int socks_port = 0;
  std::string user, password;
};

// The command's environment on macOS: the proxy variables (every client through the proxy, no
// NO_PROXY: loopback is the host's) and WAVEBOX_SANDBOX=1 over the given one.
std::vector<std::string> sandbox_environment(const std::vector<std::string>& base, const ProxyEndpoints& proxy,
                                             bool network_off);

Invocation invocation(const Facts& facts, const Profile& profile, const std::string& exe,
                      const std::vector<std::string>& argv, const std::vector<std::string>& env);

// `wavebox wrap --platform macos --json`: {"program", "args", "profile", "params", "env"}.
nlohmann::json invocation_json(const Invocation& inv, const Profile& profile);

// The log stream that reports this run's refusals: `log stream --style ndjson --predicate ...`.
std::vector<std::string> log_stream_args(const std::string& tag);

}  // namespace wb::seatbelt
