#include "cli/report.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/outcome.hpp"
#include "core/paths.hpp"
#include "core/sys/fd.hpp"
#include "core/sys/fs.hpp"

namespace wb::cli {
namespace {

std::string read_link(const std::string& path) {
  char buf[4096];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

Status write_all(int fd, const std::string& text, const std::string& what) {
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(ErrorKind::kSystem, fmt::format("--report-json: cannot write to {}", what));
    off += static_cast<size_t>(n);
  }
  return ok_status();
}

std::string render(const Report& r) {
  nlohmann::json j = outcome_json(r.outcome);
  j["extraDomains"] = r.extra_domains;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

ReportTarget::ReportTarget(std::string spec) : spec_(std::move(spec)) {
  if (spec_ == "-" || spec_.rfind("fd:", 0) == 0) return;
  spec_ = paths::normalize(spec_[0] == '/' ? spec_ : paths::join(sys::current_dir(), spec_));
  struct stat st;
  existed_ = ::lstat(spec_.c_str(), &st) == 0;
  was_link_ = existed_ && S_ISLNK(st.st_mode);
  real_before_ = sys::real_path_or_empty(spec_);
  parent_real_before_ = sys::real_path_or_empty(paths::parent(spec_));
  if (was_link_) link_text_before_ = read_link(spec_);
}

Status ReportTarget::write(const Report& r) const {
  const std::string text = render(r);
  if (spec_ == "-") return write_all(1, text, "stdout");
  if (spec_.rfind("fd:", 0) == 0) {
    char* end = nullptr;
    long fd = std::strtol(spec_.c_str() + 3, &end, 10);
    if (end == spec_.c_str() + 3 || *end || fd < 0) {
      return make_error(ErrorKind::kUsage, fmt::format("--report-json {}: not a descriptor number", spec_));
    }
    return write_all(static_cast<int>(fd), text, fmt::format("fd {}", fd));
  }
  return write_path(text);
}

Status ReportTarget::write_path(const std::string& text) const {
  auto refuse = [&](const std::string& why) {
    return make_error(ErrorKind::kSystem, fmt::format("--report-json \"{}\" not written: {}", spec_, why));
  };
  // The sandbox is gone by now: what is at the path stays as it is until we are done.
  if (sys::real_path_or_empty(paths::parent(spec_)) != parent_real_before_) {
    return refuse("its directory is not the one it was before the run (a symbolic link made during it?)");
  }
  std::string target = spec_;
  struct stat st;
  const bool exists = ::lstat(spec_.c_str(), &st) == 0;
  if (exists && S_ISLNK(st.st_mode)) {
    // Followed only when it is the caller's own link, unchanged, to the same file.
    if (!was_link_ || read_link(spec_) != link_text_before_ || sys::real_path_or_empty(spec_) != real_before_) {
      return refuse("it is a symbolic link that was not there, or pointed elsewhere, before the run");
    }
    // /dev/stdout and friends lead to a descriptor, not a file: opened as they are.
    if (!real_before_.empty() && !paths::is_within(spec_, "/dev") && !paths::is_within(spec_, "/proc")) {
      target = real_before_;
    }
  } else if (exists && S_ISREG(st.st_mode) && !existed_ && st.st_nlink > 1) {
    return refuse("a file with other names (hard links) appeared there during the run");
  } else if (exists && S_ISDIR(st.st_mode)) {
    return refuse("it is a directory");
  }
  const bool follow = target == spec_ && exists && S_ISLNK(st.st_mode);  // /dev/stdout and friends
  // Never blocks: a FIFO without a reader is an error, not a wait.
  int flags = O_WRONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (follow ? 0 : O_NOFOLLOW);
  if (!exists || S_ISREG(st.st_mode)) flags |= O_CREAT | O_TRUNC;
  sys::Fd fd(::open(target.c_str(), flags, 0644));
  if (!fd.valid()) return refuse(errno == ENXIO ? "a FIFO nobody reads" : std::strerror(errno));
  (void)::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  return write_all(fd.get(), text, fmt::format("\"{}\"", spec_));
}

}  // namespace wb::cli
