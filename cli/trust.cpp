// `wavebox trust [DIR]`: the user's word that a folder's own settings files may widen its
// sandbox (turn it off, add writable paths, hosts, variables). Recorded in a file of the user's
// that every sandbox write-protects; `--revoke` takes it back, `--list` shows it.
#include <fmt/format.h>

#include "cli/options.hpp"
#include "cli/setup.hpp"
#include "core/log.hpp"
#include "core/paths.hpp"
#include "core/sys/fs.hpp"
#include "engine/settings_files.hpp"

namespace wb::cli {

int cmd_trust(const Options& o, bool revoke, bool list) {
  const std::string home = sys::home_dir();
  if (list) {
    auto folders = engine::trusted_folders(home);
    if (!folders.ok()) return report_error(folders.error());
    for (const auto& d : *folders) std::printf("%s\n", d.c_str());
    return 0;
  }
  const std::string here = sys::current_dir();
  if (here.empty() && o.cwd.empty()) {
    log::error("the current directory no longer exists; name the folder");
    return 125;
  }
  // Without a folder: the project the current directory belongs to, as a run would find it.
  const std::string dir = o.cwd.empty() ? engine::find_project_root(here, home) : paths::resolve(o.cwd, home, here);
  auto done = engine::set_trusted(home, dir, !revoke);
  if (!done.ok()) return report_error(done.error());
  std::fprintf(stderr, "wavebox: %s %s (%s)\n", revoke ? "no longer trusted:" : "trusted:", done->c_str(),
               engine::trust_file(home).c_str());
  return 0;
}

}  // namespace wb::cli
