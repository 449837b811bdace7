// pure
#include "core/paths.hpp"

namespace wb::paths {

std::string normalize(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = i;
    while (j < path.size() && path[j] != '/') ++j;
    std::string_view part = path.substr(i, j - i);
    if (part.empty() || part == ".") {
      // skip
    } else if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else {
      parts.push_back(part);
    }
    i = j;
  }
  if (parts.empty()) return "/";
  std::string out;
  for (auto p : parts) {
    out += '/';
    out += p;
  }
  return out;
}

std::string resolve(std::string_view raw, std::string_view home, std::string_view base_dir) {
  if (raw == "~") return normalize(home);
  if (raw.substr(0, 2) == "~/") return normalize(std::string(home) + "/" + std::string(raw.substr(2)));
  if (!raw.empty() && raw[0] == '/') return normalize(raw);  // "//x" is "/x" too
  return normalize(std::string(base_dir) + "/" + std::string(raw));
}

bool is_within(std::string_view path, std::string_view root) {
  if (root == "/") return !path.empty() && path[0] == '/';
  if (path.size() < root.size() || path.substr(0, root.size()) != root) return false;
  return path.size() == root.size() || path[root.size()] == '/';
}

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

bool is_within_any_case(std::string_view path, std::string_view root) {
  if (root == "/") return !path.empty() && path[0] == '/';
  if (path.size() < root.size() || !same_name(path.substr(0, root.size()), root)) return false;
  return path.size() == root.size() || path[root.size()] == '/';
}

int depth(std::string_view path) {
  int n = 0;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '/' && i + 1 < path.size()) ++n;
  }
  return n;
}

std::string parent(std::string_view path) {
  auto pos = path.rfind('/');
  if (pos == std::string_view::npos || pos == 0) return "/";
  return std::string(path.substr(0, pos));
}

std::string basename(std::string_view path) {
  auto pos = path.rfind('/');
  return std::string(pos == std::string_view::npos ? path : path.substr(pos + 1));
}

std::string join(std::string_view dir, std::string_view name) {
  if (dir == "/") return "/" + std::string(name);
  return std::string(dir) + "/" + std::string(name);
}

std::vector<std::string> ancestors(std::string_view path) {
  std::vector<std::string> out;
  if (path == "/") return out;
  out.push_back("/");
  for (size_t i = 1; i < path.size(); ++i) {
    if (path[i] == '/') out.emplace_back(path.substr(0, i));
  }
  return out;
}

bool has_glob(std::string_view path) {
  return path.find_first_of("*?[") != std::string_view::npos;
}

std::vector<std::string> path_entries(const std::vector<std::string>& env) {
  std::vector<std::string> out;
  for (const auto& kv : env) {
    if (kv.rfind("PATH=", 0) != 0) continue;
    out.clear();  // the last one is the one a program sees
    std::string_view rest = std::string_view(kv).substr(5);
    while (true) {
      auto colon = rest.find(':');
      out.emplace_back(rest.substr(0, colon));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  return out;
}

std::vector<std::string_view> components(std::string_view p) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    if (j > i) out.push_back(p.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

namespace {

// One component against one pattern component (fnmatch without slashes; a leading dot is
// matched by wildcards too, as the settings' globs mean paths, not shell words).
char fold(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool component_matches(std::string_view pat, std::string_view name) {
  size_t p = 0, n = 0, star_p = std::string_view::npos, star_n = 0;
  while (n < name.size()) {
    if (p < pat.size() && pat[p] == '*') {
      star_p = p++;
      star_n = n;
      continue;
    }
    if (p < pat.size() && pat[p] == '[') {
      size_t close = pat.find(']', p + 2);
      if (close != std::string_view::npos) {
        bool negate = pat[p + 1] == '!' || pat[p + 1] == '^';
        bool hit = false;
        for (size_t k = p + 1 + (negate ? 1 : 0); k < close; ++k) {
          if (k + 2 < close && pat[k + 1] == '-') {
            hit |= fold(name[n]) >= fold(pat[k]) && fold(name[n]) <= fold(pat[k + 2]);
            k += 2;
          } else {
            hit |= fold(name[n]) == fold(pat[k]);
          }
        }
        if (hit != negate) {
          p = close + 1;
          ++n;
          continue;
        }
      } else if (name[n] == '[') {
        ++p;
        ++n;
        continue;
      }
    } else if (p < pat.size() && (pat[p] == '?' || fold(pat[p]) == fold(name[n]))) {
      ++p;
      ++n;
      continue;
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p + 1;
    n = ++star_n;
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

bool match_from(const std::vector<std::string_view>& pat, size_t i, const std::vector<std::string_view>& path,
                size_t j) {
  if (i == pat.size()) return j == path.size();
  if (pat[i] == "**") {
    for (size_t k = j; k <= path.size(); ++k) {
      if (match_from(pat, i + 1, path, k)) return true;
    }
    return false;
  }
  return j < path.size() && component_matches(pat[i], path[j]) && match_from(pat, i + 1, path, j + 1);
}

}  // namespace

bool glob_matches(std::string_view pattern, std::string_view path) {
  auto pat = components(pattern), got = components(path);
  if (pat.size() > 64 || got.size() > 4096) return false;
  return match_from(pat, 0, got, 0);
}

}  // namespace wb::paths
