#pragma once
// Starts a program inside a fresh user + network namespace whose only interface is a raised
// loopback, with the proxy's two listening sockets (127.0.0.1:3128 HTTP, 127.0.0.1:1080 SOCKS5)
// bound in it and handed back to us over SCM_RIGHTS. bubblewrap runs there without
// --unshare-net, so the sandbox's network is that namespace: no route out, the listeners the
// only way, and host processes cannot reach them at all.
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "core/sys/fd.hpp"

namespace wb::lnx {

constexpr int kHttpProxyPort = 3128;
constexpr int kSocksProxyPort = 1080;

struct NetnsChild {
  pid_t pid = -1;
  sys::Fd http_listener;
  sys::Fd socks_listener;
};

// dups: (from, to) pairs applied in the child before exec; every fd >= close_from is closed.
Result<NetnsChild> spawn_in_netns(const std::string& path, const std::vector<std::string>& argv,
                                  const std::vector<std::string>& env, const std::vector<std::pair<int, int>>& dups,
                                  int close_from);

}  // namespace wb::lnx
