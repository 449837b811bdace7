#pragma once
// Starts a program inside a fresh user + network + pid namespace whose only interface is a
// raised loopback, with the proxy's two listening sockets (127.0.0.1:3128 HTTP,
// 127.0.0.1:1080 SOCKS5) bound in it and handed back to us over SCM_RIGHTS. bubblewrap runs
// there without --unshare-net, so the sandbox's network is that namespace: no route out, the
// listeners the only way, and host processes cannot reach them at all.
//
// Lifetime: wavebox -> keeper (host pid namespace) -> bwrap (pid 1 of the new pid namespace).
// The keeper and bwrap's process arm their parent-death signal before anything else (bwrap's
// before it is exec'd) and then check that their parent still lives, so whenever wavebox dies
// (SIGKILL included, at any moment), the keeper dies, then bwrap, and with pid 1 the kernel
// kills every process of the namespace and of the namespaces below it (bwrap's half-started
// children among them).
#include <string>
#include <utility>
#include <vector>

#include "bwrap/shim/wire.h"
#include "core/result.hpp"
#include "core/sys/fd.hpp"

namespace wb::lnx {

constexpr int kHttpProxyPort = WB_HTTP_PORT;
constexpr int kSocksProxyPort = WB_SOCKS_PORT;

struct NetnsChild {
  pid_t pid = -1;               // the keeper: our child; its exit status is bwrap's
  pid_t bwrap_pid = -1;         // bwrap, pid 1 of the new pid namespace, as seen from here; SIGKILL ends all
  sys::NetListeners listeners;  // the proxies', DNS, transparent TCP (bwrap/shim/wire.h)
  sys::Fd unix_diag;            // NETLINK_SOCK_DIAG in the sandbox's network namespace
  sys::Fd control;              // the listeners, then bwrap's pid
  sys::Fd error_pipe;           // {step, errno} from the keeper's side; closes once bwrap is exec'd
};

// Waits for the keeper's listeners (the namespace is ready then), or its failure.
Status receive_listeners(NetnsChild& child);
// Sets bwrap_pid and waits until bwrap is exec'd there, or reports the step that failed.
Status await_bwrap(NetnsChild& child);

// Starts `wavebox-shim keeper` (see bwrap/shim/keeper.c), which creates the namespaces and execs argv
// (bwrap) in them at once; bwrap then waits for its arguments (`--args` on a pipe the caller
// fills, before or once it has planned). Returns at once. dups: (from, to) pairs applied before; every other
// fd >= close_from closed. join: cgroup.procs descriptors the child writes "0" to first.
Result<NetnsChild> spawn_in_netns(const std::string& shim, const std::vector<std::string>& argv,
                                  const std::vector<std::string>& env, const std::vector<std::pair<int, int>>& dups,
                                  int close_from, const std::vector<int>& join = {});

}  // namespace wb::lnx
