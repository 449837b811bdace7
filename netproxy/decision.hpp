#pragma once
// The allowlist decision: deniedDomains first, then allowedDomains, default deny; each answer
// carries its reason and the rule that decided. Pure.
#include <string>
#include <vector>

#include "core/domain.hpp"
#include "core/result.hpp"
#include "core/settings.hpp"

namespace wb::netproxy {

struct NetPolicy {
  std::vector<std::pair<DomainPattern, std::string>> allowed;  // pattern, as written
  std::vector<std::pair<DomainPattern, std::string>> denied;
};

struct NetDecision {
  bool allow = false;
  std::string reason;
  std::string rule;
};

Result<NetPolicy> make_net_policy(const NetworkSettings& s);
// host must be canonical (canonical_host).
NetDecision decide_host(const NetPolicy& p, const std::string& host, int port);
// After resolution (NET-7): an allowed name that resolves to a local or special address is
// refused unless that very address literal is allowed. `address` is the canonical text form.
NetDecision check_resolved(const NetPolicy& p, const std::string& host, const std::string& address,
                           const std::string& address_bytes, bool is_own_address, int port);

}  // namespace wb::netproxy
