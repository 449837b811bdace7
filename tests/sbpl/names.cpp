// The operation and filter names a wavebox profile may use: each was seen in a public profile
// (Apple's shipping ones, as mirrored from macOS 10.9-10.15; Codex's and sandbox-runtime's
// generators; Chromium's). A name outside this list fails the check: Seatbelt rejects a whole
// profile over one unknown name, so a typo would be a run that never starts.
#include <set>
#include <string>

#include "tests/sbpl/sbpl.hpp"

namespace wb::sbpl {

bool known_operation(const std::string& name) {
  static const std::set<std::string> k = {
      "default",
      "file*",
      "file-read*",
      "file-read-data",
      "file-read-metadata",
      "file-read-xattr",
      "file-test-existence",
      "file-write*",
      "file-write-create",
      "file-write-data",
      "file-write-unlink",
      "file-write-mode",
      "file-write-owner",
      "file-write-flags",
      "file-write-xattr",
      "file-write-setugid",
      "file-link",
      "file-ioctl",
      "file-map-executable",
      "file-issue-extension",
      "process-exec",
      "process-exec*",
      "process-fork",
      "process-info*",
      "process-info-pidinfo",
      "process-info-setcontrol",
      "signal",
      "sysctl-read",
      "sysctl-write",
      "mach-lookup",
      "mach-register",
      "mach-priv-task-port",
      "ipc-posix-sem",
      "ipc-posix-shm",
      "ipc-posix-shm*",
      "ipc-posix-shm-read*",
      "ipc-posix-shm-read-data",
      "ipc-posix-shm-read-metadata",
      "ipc-posix-shm-write-data",
      "ipc-posix-shm-write-create",
      "ipc-posix-shm-write-unlink",
      "iokit-open",
      "iokit-get-properties",
      "network*",
      "network-outbound",
      "network-inbound",
      "network-bind",
      "system-socket",
      "pseudo-tty",
      "user-preference-read",
      "distributed-notification-post",
  };
  return k.count(name) > 0;
}

bool known_filter(const std::string& name) {
  static const std::set<std::string> k = {
      "literal",
      "path",
      "subpath",
      "regex",
      "prefix",
      "path-literal",
      "path-regex",
      "vnode-type",
      "extension",
      "param",
      "require-all",
      "require-any",
      "require-not",
      "global-name",
      "global-name-prefix",
      "local-name",
      "sysctl-name",
      "sysctl-name-prefix",
      "iokit-user-client-class",
      "iokit-registry-entry-class",
      "ipc-posix-name",
      "ipc-posix-name-prefix",
      "remote",
      "local",
      "socket-domain",
      "socket-protocol",
      "target",
  };
  return k.count(name) > 0;
}

}  // namespace wb::sbpl
