#pragma once
// Secrets by default: which of the caller's environment variables carry credentials and stay
// out of the sandbox. Pure.
#include <string>
#include <vector>

namespace wb {

// Whether a variable name looks like it holds a credential (tokens, keys, passwords, agent
// sockets): exact names and suffixes, case-insensitive.
bool is_credential_variable(const std::string& name);
// A value that holds a secret whatever its name: a URL with a password (user:secret@host).
bool is_credential_value(const std::string& value);

// The environment ("K=V" entries) without credential variables, except those named in pass
// (exact names, or prefixes ending in '*'). removed gets the names dropped.
std::vector<std::string> without_credentials(const std::vector<std::string>& env, const std::vector<std::string>& pass,
                                             std::vector<std::string>* removed = nullptr);

}  // namespace wb
