#pragma once
// sandbox.auditLog / --audit-log: one JSON line per run, for CI evidence. The file is a
// protected path in every sandbox (engine/engine.cpp, policy_context), so a command can neither
// forge nor erase its own record.
#include <optional>
#include <string>
#include <vector>

#include "core/outcome.hpp"
#include "core/result.hpp"
#include "core/violations.hpp"

namespace wb::engine {

struct AuditRecord {
  std::string cwd;
  std::vector<std::string> argv;
  std::string command_line;
  OutcomeRecord outcome;  // core/outcome.hpp; exit_code none when the command replaced wavebox
};

std::string audit_line(const AuditRecord& r, double unix_time);
// Appends the record with one write (O_APPEND), never through a symbolic link, only to a
// regular file (created 0600) that holds nothing but such lines: a settings file (a project's
// own) could otherwise point the log at ~/.bashrc, and a command line holding $(...) would run
// in the user's next shell. Refused as well: a path of the protected table (shell and tool
// startup files, anything in a git directory), whether it exists or not.
Status append_audit(const std::string& path, const AuditRecord& r, const std::string& home);

}  // namespace wb::engine
