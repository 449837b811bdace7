// pure
#include "core/secrets.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace wb {
namespace {

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool is_credential_variable(const std::string& raw) {
  const std::string n = upper(raw);
  // Agents and sockets that hand out credentials on request.
  static const char* const kExact[] = {
      "SSH_AUTH_SOCK",
      "SSH_AGENT_PID",
      "GPG_AGENT_INFO",
      "GNOME_KEYRING_CONTROL",
      "DOCKER_AUTH_CONFIG",
      "AWS_ACCESS_KEY_ID",
      "AWS_SECRET_ACCESS_KEY",
      "AWS_SESSION_TOKEN",
      "AWS_SECURITY_TOKEN",
      "AZURE_CLIENT_SECRET",
      "GOOGLE_APPLICATION_CREDENTIALS",
      "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE",
      "VAULT_TOKEN",
      "CONSUL_HTTP_TOKEN",
      "NOMAD_TOKEN",
      "PGPASSWORD",
      "MYSQL_PWD",
      "REDISCLI_AUTH",
      "KRB5CCNAME",
      "GIT_ASKPASS",
      "SSH_ASKPASS",
      "SUDO_ASKPASS",
      "OP_SESSION",
      "BW_SESSION",
      "CLAUDE_CODE_OAUTH_TOKEN",
      "HF_TOKEN",
      "HUGGING_FACE_HUB_TOKEN",
      "TWINE_PASSWORD",
      "CARGO_REGISTRY_TOKEN",
      "NPM_TOKEN",
      "NODE_AUTH_TOKEN",
      "YARN_NPM_AUTH_TOKEN",
      "GH_TOKEN",
      "GITHUB_TOKEN",
      "GITLAB_TOKEN",
      "GH_ENTERPRISE_TOKEN",
      "GITHUB_ENTERPRISE_TOKEN",
      "BITBUCKET_TOKEN",
      "DIGITALOCEAN_ACCESS_TOKEN",
      "HEROKU_API_KEY",
      "SLACK_TOKEN",
      "STRIPE_API_KEY",
      "SENTRY_AUTH_TOKEN",
      "CODECOV_TOKEN",
      "GITHUB_PAT",
      "SECRET_KEY",       // Django, Flask
      "SECRET_KEY_BASE",  // Rails
      "ANSIBLE_VAULT_PASSWORD_FILE",
      "DOCKER_PASSWORD",
      "NETRC",
  };
  for (const char* e : kExact) {
    if (n == e) return true;
  }
  if (n.rfind("OP_SESSION_", 0) == 0) return true;
  // Terraform's per-host tokens (TF_TOKEN_app_terraform_io); npm's per-registry settings
  // (npm_config_//registry.example/:_authToken, :_auth, :_password).
  if (n.rfind("TF_TOKEN_", 0) == 0) return true;
  if (n.rfind("NPM_CONFIG_", 0) == 0 &&
      (ends_with(n, "_AUTHTOKEN") || ends_with(n, ":_AUTH") || ends_with(n, "_PASSWORD") || ends_with(n, "_AUTH")))
    return true;
  // A key of something, except what is public by nature (a public key, a key's id).
  if (ends_with(n, "_KEY") && !ends_with(n, "_PUBLIC_KEY") && !ends_with(n, "_PUB_KEY")) return true;
  static const char* const kSuffixes[] = {
      "_TOKEN",         "_SECRET",        "_SECRET_KEY",    "_SECRET_ACCESS_KEY",
      "_API_KEY",       "_APIKEY",        "_ACCESS_KEY",    "_PASSWORD",
      "_PASSWD",        "_PASS",          "_PRIVATE_KEY",   "_CREDENTIALS",
      "_AUTH_TOKEN",    "_CLIENT_SECRET", "_SESSION_TOKEN", "_ACCESS_TOKEN",
      "_REFRESH_TOKEN", "_WEBHOOK_URL",   "_DSN",           "_PAT",
      "_PASSPHRASE",    "_SECRET_TOKEN",  "_KEYFILE",       "_SIGNING_KEY",
  };
  for (const char* s : kSuffixes) {
    if (ends_with(n, s)) return true;
  }
  return n == "TOKEN" || n == "SECRET" || n == "PASSWORD" || n == "API_KEY" || n == "APIKEY";
}

bool is_credential_value(const std::string& value) {
  // A URL with a password in it (postgres://user:secret@db/x, https://user:token@git.example):
  // scheme "://" user ":" password "@", all before the first "/" after the scheme.
  const size_t scheme = value.find("://");
  if (scheme == std::string::npos || scheme == 0) return false;
  const size_t start = scheme + 3;
  const size_t end = value.find_first_of("/?#", start);
  const std::string authority = value.substr(start, end == std::string::npos ? std::string::npos : end - start);
  const size_t at = authority.rfind('@');
  if (at == std::string::npos) return false;
  const size_t colon = authority.find(':');
  return colon != std::string::npos && colon < at && colon + 1 < at;
}

std::vector<std::string> without_credentials(const std::vector<std::string>& env, const std::vector<std::string>& pass,
                                             std::vector<std::string>* removed) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& kv : env) {
    std::string name = kv.substr(0, kv.find('='));
    bool passed = std::any_of(pass.begin(), pass.end(), [&](const std::string& p) {
      if (!p.empty() && p.back() == '*') return name.rfind(p.substr(0, p.size() - 1), 0) == 0;
      return p == name;
    });
    const size_t eq = kv.find('=');
    const bool secret =
        is_credential_variable(name) || (eq != std::string::npos && is_credential_value(kv.substr(eq + 1)));
    if (!passed && secret) {
      if (removed) removed->push_back(name);
      continue;
    }
    out.push_back(kv);
  }
  return out;
}

const std::vector<std::string>& credential_config_files() {
  static const std::vector<std::string> k = {".npmrc", ".yarnrc.yml", ".config/pip/pip.conf", ".pip/pip.conf"};
  return k;
}

namespace {

// "scheme://user:secret@host..." -> "scheme://host...", for every URL in the line.
std::string without_url_passwords(const std::string& line) {
  std::string out;
  size_t pos = 0;
  for (size_t at; (at = line.find("://", pos)) != std::string::npos;) {
    out += line.substr(pos, at + 3 - pos);
    size_t start = at + 3;
    size_t end = line.find_first_of("/ \t\"'?#", start);
    if (end == std::string::npos) end = line.size();
    size_t amp = line.rfind('@', end == 0 ? 0 : end - 1);
    if (amp != std::string::npos && amp >= start && amp < end) start = amp + 1;
    pos = start;
  }
  return out + line.substr(pos);
}

std::string lower_trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  std::string o(s);
  for (auto& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

bool credential_key(const std::string& key, bool yaml) {
  if (yaml) return key == "npmauthtoken" || key == "npmauthident" || key == "npmpassword";
  for (const char* k : {"_authtoken", "_auth", "_password", "password"}) {
    std::string suffix = k;
    if (key == suffix || ends_with(key, ":" + suffix) || (suffix[0] == '_' && ends_with(key, suffix))) return true;
  }
  return false;
}

}  // namespace

std::string without_credential_lines(const std::string& content, const std::string& name) {
  const bool yaml = ends_with(name, ".yml") || ends_with(name, ".yaml");
  const std::string note = "a credential, kept out of the sandbox (wavebox: allowRead this file to pass it)";
  std::string out;
  size_t pos = 0;
  size_t block_indent = std::string::npos;  // inside a removed YAML value's continuation lines
  bool residue = false;                     // a credential key left in a form the lines above do not take out
  while (pos < content.size()) {
    size_t nl = content.find('\n', pos);
    std::string line = content.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? content.size() : nl + 1;
    std::string_view body = line;
    size_t indent = body.find_first_not_of(" \t");
    if (block_indent != std::string::npos) {
      // A removed key's block or folded value goes on while lines are indented deeper.
      if (indent == std::string::npos || indent > block_indent) {
        if (nl != std::string::npos) out += '\n';
        continue;
      }
      block_indent = std::string::npos;
    }
    bool comment = indent == std::string::npos || body[indent] == '#' || body[indent] == ';';
    size_t sep = comment ? std::string::npos : body.find(yaml ? ':' : '=');
    std::string key = sep == std::string::npos ? "" : lower_trimmed(body.substr(0, sep));
    // A quoted key ("//host/:_authToken" = x, "npmAuthToken": x) is the same key.
    if (key.size() >= 2 && (key.front() == '"' || key.front() == '\'') && key.back() == key.front()) {
      key = key.substr(1, key.size() - 2);
    }
    if (sep != std::string::npos && credential_key(key, yaml)) {
      out += line.substr(0, indent) + (yaml ? "# " : "; ") + note;
      if (yaml) {
        const std::string value = lower_trimmed(body.substr(sep + 1));
        if (value.empty() || value[0] == '|' || value[0] == '>') block_indent = indent;
      }
    } else {
      const std::string shown = comment ? line : without_url_passwords(line);
      if (!comment) {
        const std::string low = lower_trimmed(shown);
        for (const char* k : {"authtoken", "_auth", "_password", "npmauthident", "npmpassword", "password"}) {
          residue = residue || low.find(k) != std::string::npos;
        }
      }
      out += shown;
    }
    if (nl != std::string::npos) out += '\n';
  }
  // A credential in a form not taken out line by line (a flow mapping, a key split over lines):
  // none of the file, rather than the secret.
  if (residue) {
    return std::string(yaml ? "# " : "; ") +
           "wavebox: this file holds credentials in a form it cannot take out line by line, so none of it is "
           "shown (allowRead the file to pass it)\n";
  }
  return out;
}

}  // namespace wb
