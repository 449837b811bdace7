#pragma once
// Messages wavebox itself prints on stderr, each line prefixed "wavebox:".
#include <string>
#include <string_view>

namespace wb::log {

void set_verbose(bool on);
bool verbose();
void warn(std::string_view message);
void info(std::string_view message);   // printed only with -v
void error(std::string_view message);  // "wavebox: error: ..."
// With -v: "wavebox: +12.34 ms label", time since the process started.
void timing(std::string_view label);
// Escapes control bytes so a path with a newline cannot forge a second line of output.
std::string quote(std::string_view s);

}  // namespace wb::log
