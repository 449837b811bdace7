#include "engine/audit.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/paths.hpp"
#include "core/policy.hpp"
#include "core/protect.hpp"
#include "core/sys/fd.hpp"

namespace wb::engine {

std::string audit_line(const AuditRecord& r, double unix_time) {
  nlohmann::json j = outcome_json(r.outcome);
  time_t secs = static_cast<time_t>(unix_time);
  struct tm tm {};
  ::gmtime_r(&secs, &tm);
  char when[40];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  j["time"] = fmt::format("{}.{:03d}Z", when, static_cast<int>((unix_time - static_cast<double>(secs)) * 1000));
  j["cwd"] = r.cwd;
  j["command"] = r.argv;
  j["commandLine"] = r.command_line;
  j["durationMs"] = r.outcome.elapsed_ms;  // the name this log had before elapsedMs
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

// Why wavebox must not append to path ("" when it may): what a host tool runs or reads.
std::string not_a_log(const std::string& path, const std::string& home) {
  for (std::string p = path; p != "/" && !p.empty(); p = paths::parent(p)) {
    const std::string part = paths::basename(p);
    if (part == ".git" || is_protected_name(part)) return "it lies in " + part;
  }
  for (const auto& e : protected_table()) {
    if (e.scope == ProtectScope::kHome && !home.empty() && paths::is_within(path, paths::join(home, e.rel))) {
      return std::string("it is ") + e.runs_it + "'s";
    }
  }
  for (const auto& rc : shell_startup_files()) {
    if (paths::basename(path) == rc) return "it is a shell's startup file";
  }
  return "";
}

}  // namespace

Status append_audit(const std::string& path, const AuditRecord& r, const std::string& home) {
  if (std::string why = not_a_log(path, home); !why.empty()) {
    return make_error(ErrorKind::kSettings, fmt::format("audit log \"{}\" not written: {}", path, why));
  }
  struct timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  const std::string line = audit_line(r, static_cast<double>(now.tv_sec) + now.tv_nsec / 1e9);
  // O_NONBLOCK: a FIFO planted in its place must not hold the run; it is refused below.
  sys::Fd fd(::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0600));
  if (!fd.valid()) {
    return make_error(ErrorKind::kSystem, fmt::format("audit log \"{}\": {}", path, std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return make_error(ErrorKind::kSystem, fmt::format("audit log \"{}\" is not a regular file; not written", path));
  }
  if (st.st_size > 0) {
    // Ours holds JSON lines only: anything else is somebody's file (a script, a config).
    char first = 0;
    if (::pread(fd.get(), &first, 1, 0) != 1 || first != '{') {
      return make_error(ErrorKind::kSettings,
                        fmt::format("audit log \"{}\" holds something else than wavebox's records; not written", path));
    }
  }
  ssize_t n = ::write(fd.get(), line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) {
    return make_error(ErrorKind::kSystem, fmt::format("audit log \"{}\": short write", path));
  }
  return ok_status();
}

}  // namespace wb::engine
