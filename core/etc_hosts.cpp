// pure
#include "core/etc_hosts.hpp"

#include <cctype>
#include <sstream>
#include <vector>

namespace wb {
namespace {

std::string lower(std::string_view s) {
  std::string o(s);
  for (auto& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// 127.0.0.0/8 in dotted-quad form, or ::1 (either spelling hosts(5) files use).
bool loopback_address(const std::string& a) {
  if (a == "::1" || a == "0:0:0:0:0:0:0:1") return true;
  if (a.compare(0, 4, "127.") != 0) return false;
  int dots = 0;
  for (char c : a) {
    if (c == '.') {
      ++dots;
    } else if (!std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return dots == 3;
}

bool loopback_name(const std::string& name, const std::string& host) {
  if (name == "localhost" || ends_with(name, ".localhost") || name.compare(0, 10, "localhost.") == 0) return true;
  if (name == "ip6-localhost" || name == "ip6-loopback") return true;
  // The machine's own name (Debian maps it to 127.0.1.1): a program asking for its host's
  // address gets this machine, as outside.
  if (host.empty()) return false;
  return name == host || name.compare(0, host.size() + 1, host + ".") == 0 ||
         (host.find('.') != std::string::npos && name == host.substr(0, host.find('.')));
}

}  // namespace

std::string sandbox_hosts(std::string_view host_file, std::string_view hostname) {
  const std::string host = lower(hostname);
  std::string out =
      "# The sandbox's own: this machine's loopback names from the host's /etc/hosts. Every other name\n"
      "# is answered by the sandbox's resolver, from the network allowlist.\n";
  bool any_localhost = false;
  std::istringstream in{std::string(host_file)};
  for (std::string line; std::getline(in, line);) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string addr;
    if (!(words >> addr) || !loopback_address(addr)) continue;
    std::vector<std::string> kept;
    for (std::string name; words >> name;) {
      std::string n = lower(name);
      if (loopback_name(n, host)) {
        kept.push_back(name);
        if (n == "localhost") any_localhost = true;
      }
    }
    if (kept.empty()) continue;
    out += addr;
    for (const auto& n : kept) out += " " + n;
    out += "\n";
  }
  // A host file without localhost (or none at all): glibc answers it anyway, others may not.
  if (!any_localhost) out += "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n";
  return out;
}

}  // namespace wb
