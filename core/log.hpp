#pragma once
// Messages wavebox itself prints, each line prefixed "wavebox:". A Logger is a value handed to
// whatever runs on a run's behalf (engine/, bwrap/): two runs in one process may log to two
// places. The free functions below are the command line's own logger (stderr), for cli/ only.
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace wb {

class Logger {
 public:
  // Receives each whole line, "wavebox: ...\n"; from any thread, one call per line.
  using Sink = std::function<void(std::string_view line)>;
  explicit Logger(bool verbose = false, Sink sink = {});
  void warn(std::string_view message) const;
  void info(std::string_view message) const;   // only when verbose
  void error(std::string_view message) const;  // "wavebox: error: ..."
  // When verbose: "wavebox: +12.34 ms label", time since the logger was made.
  void timing(std::string_view label) const;
  bool verbose() const { return verbose_; }
  void set_verbose(bool on) { verbose_ = on; }

 private:
  void emit(std::string_view prefix, std::string_view message) const;
  bool verbose_;
  Sink sink_;  // empty: stderr
  std::chrono::steady_clock::time_point start_;
};

namespace log {

// The process's logger: stderr, made when the program starts. cli/ passes it to the engine.
Logger& process();
void set_verbose(bool on);
bool verbose();
void warn(std::string_view message);
void info(std::string_view message);
void error(std::string_view message);
void timing(std::string_view label);
// Escapes control bytes so a path with a newline cannot forge a second line of output.
std::string quote(std::string_view s);

}  // namespace log
}  // namespace wb
