#pragma once
// The Linux planner: policy + probed facts -> the bubblewrap argument list. Pure: no system
// calls, no environment, no clock; golden tests pin its output.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/invocation.hpp"
#include "core/policy.hpp"
#include "core/result.hpp"

namespace wb::lnx {

enum class PathKind { kMissing, kFile, kDir, kOther };

struct PathFact {
  PathKind kind = PathKind::kMissing;  // of the resolved target
  bool is_symlink = false;             // the path itself (or a component) is a symlink
  std::string real;                    // resolved path; for a missing path, the path itself
  std::string first_missing;           // for a missing path: its first component that is absent
  bool creatable = true;               // for a missing path: its parent chain could be created
  // For a path that could not be looked at (EACCES, ELOOP, ENOTDIR on the way): the deepest
  // ancestor that exists. Inside a writable tree the sandbox could open it up (chmod), so it is
  // guarded whole instead: a guard is never dropped because a probe failed.
  std::string unreachable_at;
};

struct LinuxFacts {
  std::string bwrap_path;
  int bwrap_version[3] = {0, 0, 0};
  std::string placeholder_file;           // an empty file with mode 0000, bound over unreadable files
  std::map<std::string, PathFact> paths;  // every path the policy names, probed
  std::set<std::string> stubs;            // paths that are this run's stubs (empty, ours)
  // Read masks may be FUSE filesystems that report each lookup (/dev/fuse can be opened).
  bool fuse = false;
  // Files of the host shown as a copy of wavebox's (bound read-only in their place): the
  // sandbox's /etc/hosts (core/etc_hosts.hpp) and FsPolicy::masked's files without their
  // credentials. Real path -> the copy. Each is placed where the file is readable and not
  // writable (a denyRead hides it, a writable root keeps the host's).
  std::map<std::string, std::string> replaced;
};

enum class MountKind { kVisible, kRwBind, kPin, kCarve, kRoBind, kMaskDir, kMaskFile };

// One mount in the sandbox, as bubblewrap's SetupOp list: the order is the semantics.
struct MountOp {
  MountKind kind;
  std::string path;
  bool writable = false;   // for kCarve: re-bound writable
  bool has_inner = false;  // for kMaskDir: something is re-bound below it
  std::string source;      // for kVisible: what is bound read-only at path, or the link's target
  bool link = false;       // for kVisible: path is a symbolic link to source (/lib -> /usr/lib)
};

// A path that does not exist yet but must be guarded: the executor creates an empty stub for the
// run (file or directory), re-probes, and plans again.
struct StubRequest {
  std::string path;
  LeafType type;
  std::string content;  // for a file stub
};

// A protected path that does not exist: nothing is placed on the host for it; the supervisor
// refuses to create it, an ancestor of it, or anything below it (core/protect.hpp).
struct CreateGuard {
  std::string path;
  std::string why;
};

struct Plan {
  bool filesystem_open = false;  // filesystem rules off (--network-only): "/" is bound writable
  bool host_proc = false;        // the host's /proc, read-only, not a new one (FsPolicy::host_proc)
  bool strict = false;           // mode strict: an empty root holding only the kVisible trees
  std::vector<MountOp> mounts;
  std::vector<StubRequest> stubs;  // non-empty: create these, re-probe, plan again (denyRead only)
  std::vector<CreateGuard> create_guards;
  std::vector<std::string> warnings;
};

enum class ShimMounts { kNone, kDevicesReadOnly, kAll };

struct RunSpec {
  std::vector<std::string> command;  // argv of the user command
  std::string cwd;
  std::vector<std::string> env;  // environment for the command, "K=V"
  bool share_net = false;        // network rules off (not used yet: the proxy issue)
  int seccomp_fd = -1;           // fd of a compiled filter, or -1
  bool shim_is_init = false;     // wavebox-shim runs as pid 1 (--as-pid-1)
  // Who places the mounts besides bwrap: kNone (bwrap alone, as `wavebox wrap` prints it),
  // kAll (wavebox-shim places every planned mount, mounts /proc and builds /dev; bwrap binds the
  // host's tree only, and its options do not depend on the plan), kDevicesReadOnly (bwrap places them all; the shim
  // re-mounts the device nodes bwrap bound writable read-only). With a shim role, bwrap keeps CAP_SYS_ADMIN and
  // CAP_SETPCAP for it (the shim drops every capability before the command) and does not load
  // the seccomp filter (the shim does, after the mounts).
  ShimMounts shim_mounts = ShimMounts::kNone;
};

// Mode strict on Linux: the system trees a command needs to run, read-only. The rest
// of the host is absent, except the writable roots and allowRead.
const std::vector<std::string>& strict_system_paths();

// Whether wavebox-shim can place every mount of the plan (ShimMounts::kAll): not when one lies
// in /dev or /proc, which the shim builds or mounts after its sources are taken.
bool shim_can_place(const Plan& plan);

// The shim's mount list for ShimMounts::kAll: records of three NUL-terminated fields, KIND A
// TARGET. First "root" ("ro"|"rw") "/", then "dev" CONSOLE "/dev" (CONSOLE: the terminal to bind
// at /dev/console, or empty), then "proc" ("new"|"host") "/proc" (a new proc for the sandbox's
// pid namespace, or the host's left in place, read-only), then the plan's mounts in order: "rw" SOURCE TARGET and "ro"
// SOURCE TARGET (binds of the host's SOURCE), "tmpfs" MODE TARGET (a directory mask: mode 0000, or 0711 when it holds
// mounts, read-only once they are placed). With facts.fuse, the masks of fuse_masks() are instead "fuse-dir" "0000"
// TARGET and "fuse-file" PLACEHOLDER TARGET (the old mask is the shim's fallback). For kDevicesReadOnly the list is
// the single record "devices-ro" "" "/dev".
std::string render_shim_mounts(const Plan& plan, const LinuxFacts& facts, const std::string& console);

// The read masks the shim is asked to serve by FUSE, in the mount list's order: directory masks
// that hold no mount and file masks, the first WB_MAX_FUSE_MASKS of them (none without
// facts.fuse). The rest keep the tmpfs or the placeholder, reported from stderr only.
struct FuseMask {
  std::string path;
  bool is_dir = false;
};
std::vector<FuseMask> fuse_masks(const Plan& plan, const LinuxFacts& facts);
std::string render_shim_devices_read_only();

// Computes the ordered mount list, or the stubs needed first, or an error for a guard that cannot
// be placed (a guarded symlink inside a writable tree).
Result<Plan> plan_mounts(const FsPolicy& policy, const LinuxFacts& facts);

// Whether the planned sandbox lets the command write at path (the last mount covering it
// decides, as in the kernel). For the observer's reports; the mounts themselves enforce.
bool write_allowed(const Plan& plan, const std::string& path);
// Whether path lies under a read mask of the plan.
bool read_masked(const Plan& plan, const std::string& path);

// Renders the bwrap options for one run (given through `--args FD`; bwrap stops reading an --args
// file at "--", so the command itself follows on the real command line).
std::vector<std::string> render_args(const Plan& plan, const LinuxFacts& facts, const RunSpec& run);

}  // namespace wb::lnx
