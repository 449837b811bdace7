// pure
#include "netproxy/http_parse.hpp"

#include <algorithm>
#include <cctype>

#include "core/domain.hpp"

namespace wb::netproxy {
namespace {

std::string lower(std::string_view s) {
  std::string o(s);
  for (auto& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

// "host:port" or "[v6]:port"; default_port when absent (and allowed).
bool split_authority(std::string_view a, int default_port, std::string& host, int& port) {
  std::string_view h = a;
  port = default_port;
  size_t colon = std::string_view::npos;
  if (!a.empty() && a.front() == '[') {
    auto close = a.find(']');
    if (close == std::string_view::npos) return false;
    if (close + 1 < a.size()) {
      if (a[close + 1] != ':') return false;
      colon = close + 1;
    }
  } else {
    colon = a.rfind(':');
    if (colon != std::string_view::npos && a.find(':') != colon) return false;
  }
  if (colon != std::string_view::npos) {
    std::string_view p = a.substr(colon + 1);
    if (p.empty() || p.size() > 5 || !std::all_of(p.begin(), p.end(), ::isdigit)) return false;
    port = std::stoi(std::string(p));
    h = a.substr(0, colon);
  }
  if (port < 1 || port > 65535) return false;
  auto c = canonical_host(h);
  if (!c) return false;
  host = *c;
  return true;
}

HttpParse fail(int code, std::string why) {
  HttpParse p;
  p.status = ParseStatus::kError;
  p.error_code = code;
  p.error = std::move(why);
  return p;
}

}  // namespace

HttpParse parse_http_request(std::string_view buf, size_t max_head, bool origin_form) {
  HttpParse out;
  size_t end = buf.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (buf.size() > max_head) return fail(431, "request head too large");
    return out;
  }
  if (end + 4 > max_head) return fail(431, "request head too large");
  std::string_view head = buf.substr(0, end);
  for (unsigned char c : head) {
    if (c == 0 || (c < 0x20 && c != '\r' && c != '\n' && c != '\t') || c == 0x7f) {
      return fail(400, "control byte in request head");
    }
  }
  size_t line_end = head.find("\r\n");
  std::string_view line = head.substr(0, line_end);
  auto sp1 = line.find(' ');
  auto sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1) return fail(400, "malformed request line");
  HttpRequest& r = out.req;
  r.method = std::string(line.substr(0, sp1));
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return fail(400, "unsupported HTTP version");
  if (!std::all_of(r.method.begin(), r.method.end(),
                   [](char c) { return std::isupper(static_cast<unsigned char>(c)); })) {
    return fail(400, "malformed method");
  }
  if (origin_form) {
    if (r.method == "CONNECT" || target.empty() || (target[0] != '/' && target != "*")) {
      return fail(400, "a request to a host needs an origin-form target (/path)");
    }
    r.path = std::string(target);
  } else if (r.method == "CONNECT") {
    r.connect = true;
    if (!split_authority(target, 0, r.host, r.port) || r.port == 0) return fail(400, "malformed CONNECT target");
  } else {
    if (lower(target.substr(0, 7)) != "http://") return fail(400, "a proxy request needs an absolute http:// URI");
    std::string_view rest = target.substr(7);
    size_t slash = rest.find_first_of("/?#");
    std::string_view auth = rest.substr(0, slash);
    if (auth.find('@') != std::string_view::npos) return fail(400, "credentials in the URI are not supported");
    if (!split_authority(auth, 80, r.host, r.port)) return fail(400, "malformed host in URI");
    r.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
    if (r.path[0] != '/') r.path = "/" + r.path;
    auto hash = r.path.find('#');
    if (hash != std::string::npos) r.path.erase(hash);
  }
  size_t pos = line_end == std::string_view::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    if (e == std::string_view::npos) e = head.size();
    std::string_view h = head.substr(pos, e - pos);
    pos = e + 2;
    if (h.empty()) continue;
    if (h[0] == ' ' || h[0] == '\t') return fail(400, "folded header");
    auto colon = h.find(':');
    if (colon == std::string_view::npos || colon == 0) return fail(400, "malformed header");
    std::string_view name = h.substr(0, colon);
    if (name.find_first_of(" \t") != std::string_view::npos) return fail(400, "malformed header name");
    std::string_view value = h.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    r.headers.emplace_back(std::string(name), std::string(value));
  }
  r.header_bytes = end + 4;
  out.status = ParseStatus::kDone;
  return out;
}

Framing check_framing(const HttpRequest& r, std::string_view host, int port, std::string_view also) {
  Framing f;
  auto refuse = [&f](int code, std::string why, bool other = false) {
    f.ok = false;
    f.code = code;
    f.error = std::move(why);
    f.names_other_host = other;
    return f;
  };
  bool seen_length = false, seen_host = false;
  for (const auto& [name, value] : r.headers) {
    std::string n = lower(name);
    if (n == "transfer-encoding") {
      return refuse(411,
                    "chunked request bodies are not relayed over plain HTTP (use https, or send a Content-Length)");
    }
    if (n == "content-length") {
      if (seen_length) return refuse(400, "more than one Content-Length");
      if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string::npos) {
        return refuse(400, "malformed Content-Length");
      }
      seen_length = true;
      f.length = std::stoll(value);
    }
    if (n == "host") {
      if (seen_host) return refuse(400, "more than one Host header", true);
      seen_host = true;
      std::string h;
      int p = 0;
      if (!split_authority(value, 80, h, p)) return refuse(400, "malformed Host header", true);
      if ((h != host && (also.empty() || h != also)) || p != port) {
        return refuse(400, "the Host header names " + value + ", not the host the request was decided for", true);
      }
    }
  }
  return f;
}

std::string upstream_head(const HttpRequest& r) {
  std::string out = r.method + " " + r.path + " HTTP/1.1\r\n";
  for (const auto& [name, value] : r.headers) {
    std::string n = lower(name);
    if (n == "connection" || n == "proxy-connection" || n == "keep-alive" || n == "proxy-authorization" ||
        n == "proxy-authenticate" || n == "te" || n == "trailer" || n == "upgrade") {
      continue;
    }
    // The Host is the one the allowlist decided (the request target's), never the client's
    // own: a shared server or CDN would route by it to a host nobody allowed.
    if (n == "host") continue;
    out += name + ": " + value + "\r\n";
  }
  bool v6 = r.host.find(':') != std::string::npos;
  std::string h = v6 ? "[" + r.host + "]" : r.host;
  out += "Host: " + h + (r.port == 80 ? "" : ":" + std::to_string(r.port)) + "\r\n";
  out += "Connection: close\r\n\r\n";
  return out;
}

}  // namespace wb::netproxy
