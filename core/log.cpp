// Plain stderr logging: one write per line, so lines of concurrent runs never interleave.
#include "core/log.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace wb {

Logger::Logger(bool verbose, Sink sink)
    : verbose_(verbose), sink_(std::move(sink)), start_(std::chrono::steady_clock::now()) {}

void Logger::emit(std::string_view prefix, std::string_view message) const {
  std::string line = fmt::format("wavebox: {}{}\n", prefix, message);
  if (sink_) {
    sink_(line);
    return;
  }
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

void Logger::warn(std::string_view message) const {
  emit("warning: ", message);
}
void Logger::info(std::string_view message) const {
  if (verbose_) emit("", message);
}
void Logger::error(std::string_view message) const {
  emit("error: ", message);
}
void Logger::timing(std::string_view label) const {
  if (!verbose_) return;
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  emit("", fmt::format("+{:.2f} ms {}", ms, label));
}

namespace log {

Logger& process() {
  static Logger logger;
  return logger;
}
// Made with the program (its timings count from the start), not at its first use.
[[maybe_unused]] static Logger& g_made_at_start = process();

void set_verbose(bool on) {
  process().set_verbose(on);
}
bool verbose() {
  return process().verbose();
}
void warn(std::string_view message) {
  process().warn(message);
}
void info(std::string_view message) {
  process().info(message);
}
void error(std::string_view message) {
  process().error(message);
}
void timing(std::string_view label) {
  process().timing(label);
}

std::string quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace log
}  // namespace wb
