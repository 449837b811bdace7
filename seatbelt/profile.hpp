#pragma once
// macOS: the Seatbelt (SBPL) profile for a run's policy. Pure text from the same Policy value the
// Linux planner takes; every path travels as a parameter (-D KEY=VALUE), never spliced into the
// text. The profile holds allow rules only, under `(deny default (with message TAG))`: whatever
// the order in which Seatbelt weighs rules, a request is allowed exactly when one allow rule
// matches, and every refusal carries the run's tag into the system log.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/policy.hpp"
#include "core/result.hpp"

namespace wb::seatbelt {

// A path as Seatbelt matches it: the kernel hands it resolved vnode paths, so /tmp, /var and /etc
// (symbolic links to /private/...) are spelled under /private. Relative paths and ".." are
// refused: a rule would not mean what it says.
Result<std::string> canonical_path(std::string_view path);

struct NetRules {
  bool open = false;  // network rules off (filesystem-only settings): every connection
  bool off = false;   // --network off: no connection at all, not even to the proxy
  // The proxy's loopback listeners, the only addresses the command may connect to (Seatbelt's
  // address filters name only "localhost" or "*" hosts). 0: none. Chosen when the run starts.
  int http_port = 0;
  int socks_port = 0;
  bool allow_local_binding = false;       // bind and accept on any local address
  std::vector<std::string> unix_sockets;  // network.allowUnixSockets: connect to these only
  bool all_unix_sockets = false;          // network.allowAllUnixSockets
};

struct ProfileInput {
  FsPolicy fs;
  NetRules net;
  std::string tag;      // per-run: every refusal's log line ends with it
  std::string command;  // the program the run executes (absolute); in mode strict the only one
  std::string helper;   // wavebox's helper, executed first inside (reports "started")
  std::string tmpdir;   // the sandbox's TMPDIR: Unix sockets the command makes itself live there
  std::string home;     // its home rows are refused at any depth when home itself is writable
  std::string own_tty;  // the terminal the command was given (/dev/ttysNNN), when it was
  // Protected paths found by the workspace scan (a nested repository's hooks and config): the
  // profile cannot learn them later, so they come from the plan.
  std::vector<GuardedPath> found;
  std::vector<std::string> repositories;  // git directories known (HEAD is written there)
};

struct Profile {
  std::string text;
  std::vector<std::pair<std::string, std::string>> params;  // -D KEY=VALUE, in order
};

Result<Profile> render_profile(const ProfileInput& in);

// Mode strict on macOS: the system trees a command reads to run at all (dyld's shared cache
// lives under /System), read-only; nothing of home.
const std::vector<std::string>& strict_system_paths();

// The Mach services, sysctls and IOKit classes a command may reach, each with the reason (the
// man page and `doctor -v` print them).
struct Allowance {
  const char* name;
  const char* why;
};
const std::vector<Allowance>& mach_services();
const std::vector<Allowance>& sysctls();

}  // namespace wb::seatbelt
