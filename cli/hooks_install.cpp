// What `wavebox hooks` did or found, one line per host and hook file.
#include "cli/hooks_install.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "core/hooks.hpp"
#include "core/log.hpp"

namespace wb::cli {

using hooks::Host;

int say_changes(const engine::HookChanges& changes, bool install) {
  int rc = 0;
  for (const auto& c : changes.files) {
    const std::string name = hooks::host_name(c.host);
    if (!c.error.empty()) {
      log::error(c.error);
      rc = 125;
    } else if (!install) {
      std::printf("%s: %s %s\n", name.c_str(), c.done ? "removed from" : "not installed in", c.file.c_str());
    } else if (!c.done) {
      std::printf("%s: already installed in %s\n", name.c_str(), c.file.c_str());
    } else {
      std::printf("%s: installed in %s\n", name.c_str(), c.file.c_str());
      if (c.host == Host::kCodex) std::printf("  Codex runs it once you trust it: /hooks in Codex\n");
      if (c.host == Host::kCursor) std::printf("  restart Cursor to load it\n");
    }
  }
  if (!changes.record_error.empty()) log::error(changes.record_error);
  return rc;
}

int say_states(const std::vector<engine::HookFileState>& states, bool json) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& s : states) {
    nlohmann::ordered_json row = {{"host", hooks::host_name(s.host)},
                                  {"scope", s.project ? "project" : "user"},
                                  {"file", s.file},
                                  {"state", s.state}};
    if (!s.command.empty()) row["command"] = s.command;
    out.push_back(row);
    if (!json) {
      std::printf("%-9s %-8s %-14s %s%s\n", hooks::host_name(s.host).c_str(), s.project ? "project" : "user",
                  s.state.c_str(), s.file.c_str(),
                  s.state == "stale" ? "  (names another wavebox: install again)" : "");
    }
  }
  if (json) std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

}  // namespace wb::cli
