#pragma once
// The seccomp rule list, as data: what the sandboxed command may not call, and why. Pure; the
// golden test pins it. bwrap/launch/seccomp.cpp compiles it with libseccomp.
#include <cstdint>
#include <string>
#include <vector>

namespace wb::lnx {

struct ArgCheck {
  enum class Op { kEq, kMaskedEq };
  unsigned arg;  // 0-5
  Op op;
  std::uint64_t mask = 0;  // for kMaskedEq
  std::uint64_t value = 0;
  // Compare only the low 32 bits: the kernel reads an int there, so socket(0x100000001, ...) is
  // socket(AF_UNIX, ...) to the kernel and must be to the filter too.
  bool low32 = true;
};

struct SeccompRule {
  std::string syscall;
  int errno_value;             // returned instead of running the call
  std::vector<ArgCheck> args;  // all must hold (AND); empty: always
  std::string why;
};

struct SeccompOptions {
  bool allow_unix_sockets = false;  // network.allowAllUnixSockets
};

std::vector<SeccompRule> seccomp_rules(const SeccompOptions& o);
// One line per rule, for the golden file and `wavebox doctor`.
std::string describe_rules(const std::vector<SeccompRule>& rules);

}  // namespace wb::lnx
