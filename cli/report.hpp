#pragma once
// --report-json: the outcome of one run as JSON, for every outcome (a run, a deny, a command
// not found, bad settings, an unavailable sandbox), written through the path the caller named.
#include <string>
#include <vector>

#include "core/outcome.hpp"
#include "core/result.hpp"
#include "core/violations.hpp"

namespace wb::cli {

struct Report {
  OutcomeRecord outcome;                   // core/outcome.hpp: the form every face writes
  std::vector<std::string> extra_domains;  // --allow-domain
};

// Where the report goes, looked at before the run: "-" is stdout, "fd:N" that descriptor,
// anything else a path. A path is written through as a file, never replaced (a FIFO, a device,
// a link the caller made are kept); what the sandboxed command could have planted there during
// the run (a symbolic link, a hard link, a directory made a link) is not followed: the report is
// then not written, with a warning.
class ReportTarget {
 public:
  ReportTarget() = default;
  explicit ReportTarget(std::string spec);
  bool wanted() const { return !spec_.empty(); }
  Status write(const Report& r) const;

 private:
  Status write_path(const std::string& text) const;
  std::string spec_;
  bool existed_ = false, was_link_ = false;
  std::string real_before_, parent_real_before_, link_text_before_;
};

}  // namespace wb::cli
