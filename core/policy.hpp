#pragma once
// The filesystem policy: which paths the sandbox may write, may not write, may not read.
// Built from settings and the run's context; pure.
#include <string>
#include <vector>

#include "core/settings.hpp"

namespace wb {

enum class LeafType { kFile, kDir };

// A path that must never be written (the protected set) or read (denyRead), with the type a stub for it takes
// when it does not exist yet.
struct GuardedPath {
  std::string path;
  LeafType type = LeafType::kFile;
  bool stub_if_missing = true;  // protect it even if it does not exist (a stub is placed)
  std::string stub_content;     // what a file stub holds (git needs ".\n" in a commondir stub)
  std::string why;              // said when the supervisor refuses to create it
};

struct WritableRoot {
  std::string path;
  bool optional = false;  // a default (package cache): skipped silently when missing
  // Writable even inside a guarded tree: wavebox's own per-workspace cache dir, inside its
  // guarded state (where every other workspace's caches stay read-only).
  bool over_guard = false;
};

struct PolicyContext {
  std::string home;
  std::string workspace;                    // the project (the command starts in it or below)
  bool workspace_holds_home = false;        // the workspace is home or above it: not writable
  std::string home_real;                    // home as the file system resolves it
  bool home_under_writable = false;         // an allowWrite entry lies above home: home is guarded
  std::string tmpdir;                       // wavebox's per-user temp dir, writable, exported as TMPDIR
  std::string cache_dir;                    // this workspace's package caches (beside TMPDIR), writable
  std::string state_dir;                    // wavebox's own state (caches, stubs): never writable inside
  std::string state_base;                   // the directory holding tmpdir and wavebox's other files in /tmp
  std::vector<std::string> state_paths;     // more of ours outside both (the stub registry)
  std::vector<std::string> settings_files;  // read or discoverable: always write-protected
  std::vector<std::string> extra_writable;  // --allow-write
  std::vector<std::string> program_files;   // programs wavebox runs (itself, its shim, bwrap)
  std::vector<std::string> audit_files;     // sandbox.auditLog, --audit-log: evidence, never writable
  // The caller's PATH, as its entries: a directory on it inside a writable root is guarded (the
  // user's shell runs what is left there, before the system's programs).
  std::vector<std::string> path_entries;
  // The writable roots as the file system resolves them (an allowWrite that is a link): a PATH
  // directory under one of these is under the root.
  std::vector<std::string> writable_real;
  // Mode strict: what the backend shows besides the writable roots and allowRead (the system
  // trees, the command wherever it was found, the helper that starts it).
  std::vector<std::string> visible;
};

struct FsPolicy {
  bool enabled = true;  // false: filesystem rules off (network-only)
  // sandbox.enableWeakerNestedSandbox: the host's /proc, read-only, instead of one of the
  // sandbox's own (for containers that refuse a new proc mount).
  bool host_proc = false;
  std::vector<WritableRoot> writable;
  std::vector<GuardedPath> deny_write;  // user denyWrite plus the protected set
  std::vector<GuardedPath> deny_read;   // may hold globs until the probe expands them
  std::vector<std::string> allow_read;  // may hold globs until the probe expands them
  std::vector<std::string> scan_roots;  // trees searched for nested protected names
  // Directories in which nothing new may be created except below a carve-out (wavebox's own
  // base beside TMPDIR; a repository's modules/).
  struct Zone {
    std::string dir;
    std::vector<std::string> carve;
    std::string why;
  };
  std::vector<Zone> zones;
  std::vector<std::string> warnings;
  // Mode strict: only the platform's system trees, the writable roots, allowRead and
  // what the backend adds to `visible` (the command, wavebox's shim) exist inside; the rest of
  // the host (home above all) is not there at all. Otherwise the whole tree is readable.
  bool strict = false;
  std::vector<std::string> visible;
  // Files shown without their credential lines (core/secrets.hpp's credential_config_files),
  // where the backend can replace a file (Linux): the executor makes the copies.
  std::vector<std::string> masked;
};

FsPolicy make_fs_policy(const SandboxSettings& settings, const PolicyContext& ctx, bool network_only);

// What the workspace scan found (its own value: the policy as given is never changed): the
// guards for protected names and repositories it met, the writable trees they need (a worktree's
// main .git), the zones of new repositories' modules/.
struct Findings {
  std::vector<GuardedPath> deny_write;
  std::vector<std::string> writable;
  std::vector<FsPolicy::Zone> zones;
};
// The policy a run is planned with: the given one and what the scan found, as a new value.
FsPolicy with_findings(const FsPolicy& given, const Findings& found);
// Every field of the policy (and of its parts) in one text, for keys that must change when any
// field does (the kept plan's). Each field is taken by a structured binding: a field added to
// FsPolicy, WritableRoot, GuardedPath or Zone fails to compile here until it is in the text.
std::string policy_key(const FsPolicy& policy);

// Why a refused write of path was refused, for the violations block, when a guard covers it:
// "protected: <the deepest guard's reason>; change it outside the sandbox". "" when no guard
// with a reason covers it (a read-only system directory).
std::string protection_reason(const std::vector<GuardedPath>& deny_write, const std::string& path);

// Shell startup files guarded in home and in the workspace root.
const std::vector<std::string>& shell_startup_files();
// Guarded entries relative to any directory that holds `name` (".vscode", ".claude", ...):
// returns the guarded paths below dir for a hit of `name` there. Empty for other names.
std::vector<GuardedPath> guarded_for_entry(const std::string& dir, const std::string& name, bool stub_missing);
// The names the workspace scan looks for at any depth.
bool is_scanned_name(const std::string& name);

}  // namespace wb
