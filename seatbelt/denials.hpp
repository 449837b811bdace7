#pragma once
// macOS: Seatbelt's refusals as the system log reports them (pure). Every deny of a wavebox
// profile carries the run's tag ((with message TAG)); `log stream --style ndjson` prints one JSON
// object per event, whose eventMessage reads "Sandbox: NAME(PID) deny(N) OPERATION TARGET" with
// the tag. Events of other runs (another tag, no tag) are not this run's.
#include <optional>
#include <string>
#include <string_view>

#include "core/violations.hpp"

namespace wb::seatbelt {

std::optional<Violation> parse_denial(std::string_view ndjson_line, const std::string& tag);

// Seatbelt's operation as a refusal: file-read-data -> file-read, file-write-create -> file-write,
// network-outbound a connection; the rest kept by name (mach-lookup, process-exec, ...).
Violation violation_of(std::string_view seatbelt_op, std::string target);

}  // namespace wb::seatbelt
