#pragma once
// The /etc/hosts a sandbox with a network of its own sees. Pure.
#include <string>
#include <string_view>

namespace wb {

// The host's file keeps only the names of this machine's loopback (localhost and its spellings,
// the machine's own host name) on loopback addresses. Every other name a client would find there
// gets its address from the sandbox's resolver instead, so the allowlist decides it by name: an
// address from the host's file is a direct connection, refused without the name.
std::string sandbox_hosts(std::string_view host_file, std::string_view hostname);

}  // namespace wb
