// pure
#include "seatbelt/plan.hpp"

#include <fmt/format.h>

#include <cctype>

namespace wb::seatbelt {

std::vector<std::string> sandbox_environment(const std::vector<std::string>& base, const ProxyEndpoints& proxy,
                                             bool network_off) {
  std::vector<std::string> env;
  for (const auto& kv : base) {
    std::string lname = kv.substr(0, kv.find('='));
    for (auto& ch : lname) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lname == "http_proxy" || lname == "https_proxy" || lname == "all_proxy" || lname == "no_proxy" ||
        lname == "ftp_proxy" || lname == "wavebox_sandbox") {
      continue;
    }
    env.push_back(kv);
  }
  if (!network_off) {
    std::string cred = proxy.user.empty() ? "" : proxy.user + ":" + proxy.password + "@";
    std::string http = fmt::format("http://{}127.0.0.1:{}", cred, proxy.http_port);
    std::string socks = fmt::format("socks5h://{}127.0.0.1:{}", cred, proxy.socks_port);
    for (const char* n : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"})
      env.push_back(std::string(n) + "=" + http);
    for (const char* n : {"ALL_PROXY", "all_proxy"}) env.push_back(std::string(n) + "=" + socks);
  }
  env.push_back("WAVEBOX_SANDBOX=1");
  return env;
}

Invocation invocation(const Facts& facts, const Profile& profile, const std::string& exe,
                      const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  Invocation inv;
  inv.program = facts.sandbox_exec;
  inv.args = {"-p", profile.text};
  for (const auto& [k, v] : profile.params) inv.args.push_back("-D" + k + "=" + v);
  // "--": whatever the helper's path, nothing after it is read as sandbox-exec's option.
  inv.args.push_back("--");
  inv.args.push_back(facts.helper);
  inv.args.push_back(kHelperArg);
  inv.args.push_back(std::to_string(kReportFd));
  inv.args.push_back(exe);
  inv.args.insert(inv.args.end(), argv.begin(), argv.end());
  inv.env = env;
  inv.command = argv;
  return inv;
}

nlohmann::json invocation_json(const Invocation& inv, const Profile& profile) {
  nlohmann::json j;
  j["program"] = inv.program;
  j["args"] = inv.args;
  j["profile"] = profile.text;
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [k, v] : profile.params) params[k] = v;
  j["params"] = params;
  nlohmann::json env = nlohmann::json::object();
  for (const auto& kv : inv.env) {
    size_t eq = kv.find('=');
    env[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
  }
  j["env"] = env;
  return j;
}

std::vector<std::string> log_stream_args(const std::string& tag) {
  // The tag is ours (letters, digits, '-', '_': render_profile checks it), safe inside quotes.
  return {"stream", "--style", "ndjson", "--predicate", fmt::format("eventMessage CONTAINS \"{}\"", tag)};
}

}  // namespace wb::seatbelt
