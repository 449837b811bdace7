#include "engine/learn.hpp"

#include "core/paths.hpp"
#include "core/sys/fs.hpp"

namespace wb::engine {

// Never a protected path, a credential, a directory on PATH or wavebox's own files.
Learned learned(const std::vector<Violation>& refused, LearnContext ctx, const std::string& path_var) {
  if (auto st = sys::ensure_state_dir(); st.ok()) {
    ctx.never.push_back(st->root);
    ctx.never.push_back(st->base);
  }
  const std::string& list = path_var;
  for (size_t pos = 0; pos <= list.size();) {
    size_t end = list.find(':', pos);
    if (end == std::string::npos) end = list.size();
    std::string dir = list.substr(pos, end - pos);
    if (!dir.empty() && dir[0] == '/' && !paths::is_within(dir, ctx.workspace)) ctx.never.push_back(dir);
    pos = end + 1;
  }
  Learned l = learn_from(refused, ctx);
  // A writable path must exist for the sandbox to bind it: a directory the command could not
  // make is suggested as its nearest existing ancestor, unless that is too broad to name.
  for (auto& w : l.allow_write) {
    std::string at = w;
    while (!sys::exists(at) && at != "/") at = paths::parent(at);
    if (at == w) continue;
    if (at == "/" || at == ctx.home || paths::parent(at) == "/" || holds_guarded(at, ctx)) {
      l.not_suggested.push_back(w + ": does not exist (make it first, then allow it)");
      w.clear();
    } else {
      w = at;
    }
  }
  std::erase_if(l.allow_write, [](const std::string& w) { return w.empty(); });
  return l;
}

}  // namespace wb::engine
