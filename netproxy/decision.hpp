#pragma once
// The allowlist decision: deniedDomains first, then allowedDomains, default deny; each answer
// carries its reason and the rule that decided. Pure.
#include <string>
#include <vector>

#include "core/domain.hpp"
#include "core/result.hpp"
#include "core/settings.hpp"
#include "core/violations.hpp"

namespace wb::netproxy {

struct NetPolicy {
  std::vector<std::pair<DomainPattern, std::string>> allowed;  // pattern, as written
  std::vector<std::pair<DomainPattern, std::string>> denied;
  bool allow_all = false;  // --dangerously-allow-network: every host not denied (the local-address check still holds)
};

struct NetDecision {
  bool allow = false;
  std::string reason;
  std::string rule;
  RefusalCode code = RefusalCode::kNotAllowed;  // why, when refused
};

Result<NetPolicy> make_net_policy(const NetworkSettings& s);
// host must be canonical (canonical_host).
NetDecision decide_host(const NetPolicy& p, const std::string& host, int port);
// For the sandbox's resolver: whether some connection to the name could be allowed (on 80, 443
// or an allow rule's own port). Refused: the decision that says why (deny list, no rule).
NetDecision decide_name(const NetPolicy& p, const std::string& host);
// After resolution (the local-address check): an allowed name that resolves to a local or special address is
// refused unless that very address literal is allowed. `address` is the canonical text form.
// Only the lists count for that literal, never allow_all; literal_approved: the client approved
// this very host (serve's network approval), and it is the address itself.
NetDecision check_resolved(const NetPolicy& p, const std::string& host, const std::string& address,
                           const std::string& address_bytes, bool is_own_address, int port,
                           bool literal_approved = false);

}  // namespace wb::netproxy
