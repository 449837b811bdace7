// pure
#include "core/learn.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/paths.hpp"
#include "core/protect.hpp"
#include "core/settings.hpp"

namespace wb {
namespace {

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

// Why a path is never suggested ("" when it may be): what runs or trusts it later (the
// persistence table, any repository's insides), wavebox's own files, credential locations.
std::string never_why(const std::string& path, const LearnContext& ctx, bool read) {
  for (std::string p = path; p != "/" && !p.empty(); p = paths::parent(p)) {
    const std::string part = paths::basename(p);
    if (part == ".git") return "inside a repository's git directory (git runs or trusts what is there)";
    if (is_protected_name(part)) return "a protected name (" + part + ")";
  }
  for (const auto& e : protected_table()) {
    std::string base = e.scope == ProtectScope::kHome        ? ctx.home
                       : e.scope == ProtectScope::kWorkspace ? ctx.workspace
                                                             : "";
    if (base.empty()) continue;
    std::string p = paths::join(base, e.rel);
    if (paths::is_within(path, p)) return std::string("protected: ") + e.runs_it;
  }
  for (const auto& n : ctx.never) {
    if (paths::is_within(path, n) || paths::is_within(n, path)) return "wavebox's own files or settings";
  }
  if (read) {
    for (const auto& rel : sensitive_home_paths()) {
      if (paths::is_within(path, paths::join(ctx.home, rel))) return "a credential location";
    }
  }
  return "";
}

// Where a refused write should be allowed: the directory it was made in, unless that is too
// broad to name (the root, home, a top-level system directory): then the file itself.
std::string write_root(const std::string& path, const LearnContext& ctx) {
  std::string dir = paths::parent(path);
  if (dir == "/" || dir == ctx.home || paths::parent(dir) == "/" || dir.empty()) return path;
  return dir;
}

}  // namespace

bool holds_guarded(const std::string& root, const LearnContext& ctx) {
  for (const auto& e : protected_table()) {
    const std::string& base = e.scope == ProtectScope::kHome        ? ctx.home
                              : e.scope == ProtectScope::kWorkspace ? ctx.workspace
                                                                    : std::string();
    if (!base.empty() && paths::is_within(paths::join(base, e.rel), root)) return true;
  }
  return std::any_of(ctx.never.begin(), ctx.never.end(),
                     [&](const std::string& n) { return paths::is_within(n, root); });
}

Learned learn_from(const std::vector<Violation>& refused, const LearnContext& ctx) {
  Learned l;
  for (const auto& v : refused) {
    // Every kind is decided here (no default: a new kind fails to compile until it is).
    switch (v.kind) {
      case Refused::kMemory:
      case Refused::kProcesses:
      case Refused::kCpu:
        // A limit of the settings (the reason names its key): raised by hand, never suggested.
        add_unique(l.not_suggested, fmt::format("{} ({}): a limit reached; raise {} if the command needs more",
                                                operation_name(v.kind), v.target, v.reason));
        continue;
      case Refused::kOther:
        add_unique(l.not_suggested, fmt::format("{} {}: no setting of wavebox's allows it", v.operation(), v.target));
        continue;
      case Refused::kFileWrite:
      case Refused::kFileRead:
      case Refused::kConnect:
      case Refused::kDns:
        break;
    }
    if (v.kind == Refused::kFileWrite || v.kind == Refused::kFileRead) {
      const bool read = v.kind == Refused::kFileRead;
      if (v.target.empty() || v.target[0] != '/') continue;
      if (v.target.size() > 4 && v.target.compare(v.target.size() - 4, 4, "/...") == 0) {
        // The count of names a read mask saw beyond those listed: no one path to allow.
        add_unique(l.not_suggested, v.target + ": " + v.reason);
        continue;
      }
      if (std::string why = never_why(v.target, ctx, read); !why.empty()) {
        add_unique(l.not_suggested, v.target + ": " + why);
        continue;
      }
      if (!read && !ctx.workspace.empty() && paths::is_within(v.target, ctx.workspace)) {
        // The workspace is writable: what was refused there was refused by a guard (a
        // repository's files, a protected name, denyWrite), which no suggestion lifts.
        add_unique(l.not_suggested, v.target + ": guarded inside the workspace");
        continue;
      }
      if (v.code != RefusalCode::kPolicy) {
        // Refused by a rule of its own (a protected file found in the tree, a FIFO of the host):
        // not a question of where the sandbox may write or read.
        add_unique(l.not_suggested, v.target + ": " + v.reason);
        continue;
      }
      if (read && std::find(ctx.deny_read.begin(), ctx.deny_read.end(), v.target) != ctx.deny_read.end()) {
        // At one path a denyRead beats an allowRead: no addition lifts it.
        add_unique(l.not_suggested, v.target + ": named by denyRead itself (remove it there to read it)");
        continue;
      }
      if (read) {
        add_unique(l.allow_read, v.target);
      } else {
        // The narrowest that would have allowed it: its directory, unless that holds a guarded
        // path (a protected file, a PATH directory, wavebox's own): then the file itself.
        std::string root = write_root(v.target, ctx);
        if (root != v.target && holds_guarded(root, ctx)) root = v.target;
        add_unique(l.allow_write, root);
      }
    } else if (v.kind == Refused::kConnect || v.kind == Refused::kDns) {
      if (v.code == RefusalCode::kHostSocket) {
        add_unique(l.not_suggested, v.target + ": a host socket (allowUnixSockets, if you trust it)");
        continue;
      }
      // Only a host on neither list is the settings' to allow: a deny rule, a local address, a
      // direct connection, a declined approval and a limit stay as they are.
      if (v.code != RefusalCode::kNotAllowed) {
        add_unique(l.not_suggested, v.target + (v.reason.empty() ? "" : ": " + v.reason));
        continue;
      }
      std::string host = v.target;
      std::string port;
      // A name looked up (dns) has no port: what it was wanted for came next, on 80 or 443.
      if (auto c = host.rfind(':'); v.kind == Refused::kConnect && c != std::string::npos && host.back() != ']') {
        port = host.substr(c + 1);
        host = host.substr(0, c);
      }
      // A host's usual ports need none; another is named (the grammar's host:port).
      add_unique(l.allowed_domains, port.empty() || port == "443" || port == "80" ? host : host + ":" + port);
    }
  }
  // A directory suggested covers what lies below it.
  std::vector<std::string> kept;
  for (const auto& w : l.allow_write) {
    bool covered = std::any_of(l.allow_write.begin(), l.allow_write.end(),
                               [&](const std::string& o) { return o != w && paths::is_within(w, o); });
    if (!covered) kept.push_back(w);
  }
  l.allow_write = kept;
  return l;
}

std::string learned_settings_json(const Learned& l) {
  nlohmann::json j;
  j["sandbox"]["enabled"] = true;
  if (!l.allow_write.empty()) j["sandbox"]["filesystem"]["allowWrite"] = l.allow_write;
  if (!l.allow_read.empty()) j["sandbox"]["filesystem"]["allowRead"] = l.allow_read;
  if (!l.allowed_domains.empty()) j["sandbox"]["network"]["allowedDomains"] = l.allowed_domains;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace wb
