// --learn's output: the suggested settings on stderr, or written to --learn=FILE.
#include "core/learn.hpp"

#include <cstdio>
#include <cstdlib>

#include "cli/run_parts.hpp"
#include "core/log.hpp"
#include "core/paths.hpp"
#include "core/sys/fs.hpp"
#include "engine/learn.hpp"

namespace wb::cli {

void print_learned(const Options& o, const std::vector<Violation>& refused, const std::string& home,
                   const std::string& workspace, const std::vector<std::string>& settings_files,
                   const std::vector<std::string>& deny_read) {
  const char* path = std::getenv("PATH");
  Learned l = engine::learned(refused, {home, workspace, settings_files, deny_read}, path ? path : "");
  for (const auto& n : l.not_suggested) std::fprintf(stderr, "wavebox: learn: not suggested: %s\n", n.c_str());
  if (l.empty()) {
    std::fprintf(stderr, "wavebox: learn: %s\n",
                 refused.empty() ? "nothing was refused" : "nothing to suggest (see above)");
    return;
  }
  const std::string text = learned_settings_json(l);
  if (!o.learn_file.empty()) {
    std::string file = paths::resolve(o.learn_file, home, sys::current_dir());
    if (auto st = sys::write_file_atomic(file, text); !st) {
      log::warn("learn: " + st.error().message);
    } else {
      std::fprintf(stderr, "wavebox: learn: wrote %s; review it, then run with --settings <yours> --settings %s\n",
                   file.c_str(), file.c_str());
    }
    return;
  }
  std::fprintf(
      stderr,
      "wavebox: learn: these additions would have allowed what was refused (review each; the command "
      "chose what it tried). Merged after your settings (--settings yours --settings this), arrays add up:\n%s",
      text.c_str());
}

}  // namespace wb::cli
