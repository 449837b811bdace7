// Plain stderr logging. Uses fmt's fd-less API through std::fwrite to keep one write per line.
#include "core/log.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>

namespace wb::log {
namespace {
bool g_verbose = false;

void emit(std::string_view prefix, std::string_view message) {
  std::string line = fmt::format("wavebox: {}{}\n", prefix, message);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}
}  // namespace

const auto g_start = std::chrono::steady_clock::now();

void set_verbose(bool on) { g_verbose = on; }
void timing(std::string_view label) {
  if (!g_verbose) return;
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - g_start).count();
  emit("", fmt::format("+{:.2f} ms {}", ms, label));
}
bool verbose() { return g_verbose; }
void warn(std::string_view message) { emit("warning: ", message); }
void info(std::string_view message) {
  if (g_verbose) emit("", message);
}
void error(std::string_view message) { emit("error: ", message); }

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

}  // namespace wb::log
