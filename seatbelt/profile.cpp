// pure
#include "seatbelt/profile.hpp"

#include <fmt/format.h>

#include "core/protect.hpp"

namespace wb::seatbelt {

const std::vector<std::string>& strict_system_paths() {
  static const std::vector<std::string> paths = {"/usr",
                                                 "/bin",
                                                 "/sbin",
                                                 "/System",
                                                 "/Library",
                                                 "/opt",
                                                 "/private/etc",
                                                 "/dev",
                                                 "/private/var/select",
                                                 "/private/var/db/timezone"};
  return paths;
}

Profile render_profile(const FsPolicy& policy, const std::string& command) {
  Profile p;
  std::string& t = p.text;
  t += "(version 1)\n(deny default)\n";
  if (policy.strict) {
    // Mode strict (seed 004): the command itself is the only program that may be executed.
    p.params.emplace_back("COMMAND", command);
    t += "(allow process-fork signal (target same-sandbox))\n";
    t += "(allow process-exec (literal (param \"COMMAND\")))\n";
  } else {
    t += "(allow process-exec process-fork signal (target same-sandbox))\n";
  }
  t += "(allow sysctl-read mach-lookup ipc-posix-shm iokit-open pseudo-tty)\n";
  t += "(allow file-ioctl (literal \"/dev/null\") (literal \"/dev/tty\"))\n";
  int i = 0;
  if (policy.strict) {
    // Names resolve (metadata) everywhere; contents only in the system trees, the writable
    // roots, allowRead and what the backend adds.
    t += "(allow file-read-metadata)\n";
    std::vector<std::string> trees = strict_system_paths();
    for (const auto& w : policy.writable) trees.push_back(w.path);
    trees.insert(trees.end(), policy.allow_read.begin(), policy.allow_read.end());
    trees.insert(trees.end(), policy.visible.begin(), policy.visible.end());
    for (const auto& v : trees) {
      std::string key = fmt::format("VISIBLE_{}", i++);
      p.params.emplace_back(key, v);
      t += fmt::format("(allow file-read* (subpath (param \"{}\")))\n", key);
    }
  } else {
    t += "(allow file-read*)\n";
  }
  i = 0;
  for (const auto& g : policy.deny_read) {
    std::string key = fmt::format("DENY_READ_{}", i++);
    p.params.emplace_back(key, g.path);
    t += fmt::format("(deny file-read* (subpath (param \"{}\")))\n", key);
  }
  i = 0;
  for (const auto& a : policy.allow_read) {
    std::string key = fmt::format("ALLOW_READ_{}", i++);
    p.params.emplace_back(key, a);
    t += fmt::format("(allow file-read* (subpath (param \"{}\")))\n", key);
  }
  i = 0;
  for (const auto& w : policy.writable) {
    std::string key = fmt::format("WRITABLE_ROOT_{}", i++);
    p.params.emplace_back(key, w.path);
    t += fmt::format("(allow file-write* (subpath (param \"{}\")))\n", key);
  }
  i = 0;
  for (const auto& g : policy.deny_write) {
    std::string key = fmt::format("DENY_WRITE_{}", i++);
    p.params.emplace_back(key, g.path);
    t += fmt::format("(deny file-write* (subpath (param \"{}\")))\n", key);
  }
  // The protected names at any depth (core/protect.hpp, the same table as Linux): constants of
  // ours, so they may stand in the text. Seatbelt keeps no state, so a directory made during the
  // run gets no exception here: the names are refused everywhere.
  for (const auto& e : protected_table()) {
    if (e.scope != ProtectScope::kAnyDepth) continue;
    std::string re;
    for (const char* c = e.rel; *c; ++c) {
      if (std::string(".^$*+?()[]{}|\\").find(*c) != std::string::npos) re += '\\';
      re += *c;
    }
    t += fmt::format("(deny file-write* (regex #\"/{}(/|$)\"))\n", re);
  }
  t += "(allow file-write-data (literal \"/dev/null\"))\n";
  t += "(allow network-outbound (remote ip \"localhost:*\"))\n";
  return p;
}

}  // namespace wb::seatbelt
