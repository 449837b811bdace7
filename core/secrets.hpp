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

// Configuration files that hold a tool's credentials beside settings the tool needs (npm's
// registry, yarn's scopes, pip's index): the sandbox sees them without their credentials, so
// the tool still works and the token stays out. Relative to the home directory. Sources: npm's
// npmrc(5) (_auth, _authToken, _password, per-registry "//host/:_authToken"), yarn's
// configuration reference (npmAuthToken, npmAuthIdent), pip's configuration (index-url with
// user:password@).
const std::vector<std::string>& credential_config_files();
// content without its credential lines (replaced by a comment saying why) and with the
// passwords of URLs removed (user:secret@host becomes host). name: the file's base name, which
// says its format (".yarnrc.yml" is YAML, the others are "key = value").
std::string without_credential_lines(const std::string& content, const std::string& name);

}  // namespace wb
