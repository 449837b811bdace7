#include "tests/sbpl/sbpl.hpp"

#include <algorithm>
#include <functional>
#include <regex>
#include <set>
#include <stdexcept>

namespace wb::sbpl {

namespace {

class Reader {
 public:
  explicit Reader(const std::string& t) : t_(t) {}
  std::vector<Node> all() {
    std::vector<Node> out;
    for (skip(); i_ < t_.size(); skip()) out.push_back(form());
    return out;
  }

 private:
  const std::string& t_;
  size_t i_ = 0;
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error(what + " at offset " + std::to_string(i_));
  }
  void skip() {
    while (i_ < t_.size()) {
      if (std::isspace(static_cast<unsigned char>(t_[i_]))) {
        ++i_;
      } else if (t_[i_] == ';') {
        while (i_ < t_.size() && t_[i_] != '\n') ++i_;
      } else {
        break;
      }
    }
  }
  std::string quoted() {  // at the opening quote
    ++i_;
    std::string s;
    while (true) {
      if (i_ >= t_.size()) fail("unterminated string");
      char c = t_[i_++];
      if (c == '"') return s;
      if (c == '\\') {
        if (i_ >= t_.size()) fail("unterminated string");
        s += t_[i_++];
        continue;
      }
      s += c;
    }
  }
  Node form() {
    Node n;
    char c = t_[i_];
    if (c == '(') {
      ++i_;
      n.kind = Node::kList;
      for (skip(); i_ < t_.size() && t_[i_] != ')'; skip()) n.items.push_back(form());
      if (i_ >= t_.size()) fail("unbalanced: a form is not closed");
      ++i_;
      return n;
    }
    if (c == ')') fail("unbalanced: ')' closes nothing");
    if (c == '"') {
      n.kind = Node::kString;
      n.text = quoted();
      return n;
    }
    if (c == '#' && i_ + 1 < t_.size() && t_[i_ + 1] == '"') {
      ++i_;
      n.kind = Node::kRegex;
      // A regex literal keeps its backslashes (they are the regex's).
      ++i_;
      while (true) {
        if (i_ >= t_.size()) fail("unterminated regex");
        char d = t_[i_++];
        if (d == '"') break;
        if (d == '\\' && i_ < t_.size()) {
          n.text += d;
          d = t_[i_++];
        }
        n.text += d;
      }
      return n;
    }
    size_t b = i_;
    while (i_ < t_.size() && !std::isspace(static_cast<unsigned char>(t_[i_])) && t_[i_] != '(' && t_[i_] != ')' &&
           t_[i_] != '"' && t_[i_] != ';') {
      ++i_;
    }
    n.text = t_.substr(b, i_ - b);
    n.kind = std::all_of(n.text.begin(), n.text.end(), ::isdigit) ? Node::kNumber : Node::kSymbol;
    return n;
  }
};

bool is_action(const std::string& h) {
  return h == "allow" || h == "deny";
}

void walk(const Node& n, const std::function<void(const Node&)>& f) {
  f(n);
  for (const auto& c : n.items) walk(c, f);
}

// Operation names match with a trailing '*' as a prefix: file-read* covers file-read-data.
bool op_matches(const std::string& rule_op, const std::string& op) {
  if (rule_op == op) return true;
  if (!rule_op.empty() && rule_op.back() == '*') {
    std::string prefix = rule_op.substr(0, rule_op.size() - 1);
    return op.compare(0, prefix.size(), prefix) == 0;
  }
  return false;
}

bool subpath_of(const std::string& p, const std::string& root) {
  if (root == "/") return !p.empty() && p[0] == '/';
  return p == root || (p.size() > root.size() && p.compare(0, root.size(), root) == 0 && p[root.size()] == '/');
}

// "host:port" against a filter's "host:port" where either part may be "*"; "localhost" is the
// loopback addresses.
bool address_matches(const std::string& filter, const std::string& addr) {
  if (addr.empty()) return false;
  auto split = [](const std::string& s) {
    size_t c = s.rfind(':');
    return c == std::string::npos ? std::make_pair(s, std::string("*"))
                                  : std::make_pair(s.substr(0, c), s.substr(c + 1));
  };
  auto [fh, fp] = split(filter);
  auto [ah, ap] = split(addr);
  auto loop = [](const std::string& h) { return h == "localhost" || h == "127.0.0.1" || h == "::1" || h == "[::1]"; };
  bool host = fh == "*" || (fh == "localhost" && loop(ah)) || fh == ah;
  bool port = fp == "*" || fp == ap;
  return host && port;
}

}  // namespace

std::vector<Node> parse(const std::string& text) {
  return Reader(text).all();
}

std::vector<std::string> check(const CheckInput& in) {
  std::vector<std::string> problems;
  std::vector<Node> forms;
  try {
    forms = parse(in.text);
  } catch (const std::exception& e) {
    return {std::string("does not parse: ") + e.what()};
  }
  if (forms.empty() || forms[0].head() != "version") problems.push_back("the first form is not (version 1)");
  std::set<std::string> used;
  for (const auto& f : forms) {
    if (!f.is_list()) {
      problems.push_back("a top-level atom: " + f.text);
      continue;
    }
    const std::string h = f.head();
    if (h == "version") continue;
    if (!is_action(h)) {
      problems.push_back("unknown top-level form: " + h);
      continue;
    }
    bool any_op = false;
    for (size_t i = 1; i < f.items.size(); ++i) {
      const Node& it = f.items[i];
      if (it.kind == Node::kSymbol) {
        any_op = true;
        if (!known_operation(it.text)) problems.push_back("unknown operation: " + it.text);
      } else if (it.is_list()) {
        walk(it, [&](const Node& n) {
          if (!n.is_list()) return;
          std::string fh = n.head();
          if (fh.empty()) {
            problems.push_back("a filter without a name");
            return;
          }
          if (fh == "with") {
            if (n.items.size() < 2 || (n.items[1].text != "message" && n.items[1].text != "no-log" &&
                                       n.items[1].text != "report" && n.items[1].text != "no-report")) {
              problems.push_back("unknown modifier");
            }
            return;
          }
          if (!known_filter(fh)) problems.push_back("unknown filter: " + fh);
          if (fh == "param") {
            if (n.items.size() != 2 || n.items[1].kind != Node::kString) {
              problems.push_back("(param) takes one string");
            } else {
              used.insert(n.items[1].text);
              if (!in.params.count(n.items[1].text))
                problems.push_back("param used but not defined: " + n.items[1].text);
            }
          }
        });
      } else {
        problems.push_back("a literal where an operation or filter belongs: " + it.text);
      }
    }
    if (!any_op) problems.push_back("a rule without an operation");
  }
  for (const auto& [k, v] : in.params) {
    if (!used.count(k)) problems.push_back("param defined but not used: " + k);
  }
  // Strings: Seatbelt rejects a whole profile over an overlong literal; paths never in the text.
  for (const auto& f : forms) {
    walk(f, [&](const Node& n) {
      if ((n.kind == Node::kString || n.kind == Node::kRegex) && n.text.size() > 1024) {
        problems.push_back("a string literal over 1 KiB");
      }
    });
  }
  for (const auto& p : in.paths) {
    if (p.size() > 1 && in.text.find(p) != std::string::npos) problems.push_back("a path in the profile text: " + p);
  }
  return problems;
}

Profile::Profile(const std::string& text, std::map<std::string, std::string> params)
    : forms_(parse(text)), params_(std::move(params)) {
  for (const auto& f : forms_) {
    if (!f.is_list() || !is_action(f.head())) continue;
    Rule r;
    r.allow = f.head() == "allow";
    for (size_t i = 1; i < f.items.size(); ++i) {
      const Node& it = f.items[i];
      if (it.kind == Node::kSymbol) {
        r.ops.push_back(it.text);
      } else if (it.is_list() && it.head() == "with") {
        if (it.items.size() >= 3 && it.items[1].text == "message") r.message = it.items[2].text;
      } else if (it.is_list()) {
        r.filters.push_back(&it);
      }
    }
    if (r.ops.size() == 1 && r.ops[0] == "default") {
      default_ = r;
      continue;
    }
    rules_.push_back(std::move(r));
  }
}

std::string Profile::value(const Node& n) const {
  if (n.kind == Node::kString || n.kind == Node::kRegex || n.kind == Node::kSymbol || n.kind == Node::kNumber) {
    return n.text;
  }
  if (n.head() == "param" && n.items.size() == 2) {
    auto it = params_.find(n.items[1].text);
    if (it == params_.end()) throw std::runtime_error("undefined param " + n.items[1].text);
    return it->second;
  }
  throw std::runtime_error("not a value: (" + n.head() + " ...)");
}

bool Profile::matches(const Node& f, const Request& r) const {
  const std::string h = f.head();
  auto arg = [&](size_t i) { return value(f.items.at(i)); };
  const bool file_op = r.op.rfind("file-", 0) == 0 || r.op == "process-exec";
  if (h == "require-any") {
    for (size_t i = 1; i < f.items.size(); ++i) {
      if (matches(f.items[i], r)) return true;
    }
    return false;
  }
  if (h == "require-all") {
    for (size_t i = 1; i < f.items.size(); ++i) {
      if (!matches(f.items[i], r)) return false;
    }
    return true;
  }
  if (h == "require-not") return !matches(f.items.at(1), r);
  // Path filters: files, and inside (local|remote unix-socket ...) the socket's path.
  if (h == "literal" || h == "path" || h == "path-literal") return (file_op || r.unix_socket) && r.path == arg(1);
  if (h == "subpath") return (file_op || r.unix_socket) && subpath_of(r.path, arg(1));
  if (h == "prefix") return (file_op || r.unix_socket) && r.path.rfind(arg(1), 0) == 0;
  if (h == "regex" || h == "path-regex") {
    return (file_op || r.unix_socket) && std::regex_search(r.path, std::regex(arg(1), std::regex::extended));
  }
  if (h == "remote" || h == "local") {
    const std::string kind = f.items.size() > 1 ? f.items[1].text : "";
    if (kind == "unix-socket") {
      if (!r.unix_socket) return false;
      if (h == "local" && r.op != "network-bind") return false;
      if (h == "remote" && r.op != "network-outbound") return false;
      for (size_t i = 2; i < f.items.size(); ++i) {
        if (!matches(f.items[i], r)) return false;
      }
      return true;
    }
    if (kind == "ip" || kind == "tcp" || kind == "udp") {
      if (r.unix_socket) return false;
      const std::string& addr = h == "remote" ? r.remote : r.local;
      if (f.items.size() < 3) return !addr.empty();
      for (size_t i = 2; i < f.items.size(); ++i) {
        if (address_matches(value(f.items[i]), addr)) return true;
      }
      return false;
    }
    throw std::runtime_error("unknown address family " + kind);
  }
  if (h == "global-name" || h == "sysctl-name" || h == "iokit-registry-entry-class" || h == "iokit-user-client-class" ||
      h == "ipc-posix-name") {
    return r.name == arg(1);
  }
  if (h == "sysctl-name-prefix" || h == "global-name-prefix" || h == "ipc-posix-name-prefix") {
    return r.name.rfind(arg(1), 0) == 0;
  }
  if (h == "target") return r.target == arg(1);
  if (h == "extension") return std::find(r.extensions.begin(), r.extensions.end(), arg(1)) != r.extensions.end();
  if (h == "socket-domain") return r.name == arg(1);
  if (h == "socket-protocol") return true;  // the requests here name the domain only
  if (h == "vnode-type") return true;
  throw std::runtime_error("the evaluator does not know the filter " + h);
}

Verdict Profile::evaluate(const Request& r, Model m) const {
  std::vector<const Rule*> hits;
  for (const auto& rule : rules_) {
    bool op = std::any_of(rule.ops.begin(), rule.ops.end(), [&](const std::string& o) { return op_matches(o, r.op); });
    if (!op) continue;
    bool f = rule.filters.empty() ||
             std::any_of(rule.filters.begin(), rule.filters.end(), [&](const Node* n) { return matches(*n, r); });
    if (f) hits.push_back(&rule);
  }
  auto verdict = [](const Rule& x) { return Verdict{x.allow, x.message}; };
  if (!hits.empty()) {
    switch (m) {
      case Model::kLastMatch:
        return verdict(*hits.back());
      case Model::kFirstMatch:
        return verdict(*hits.front());
      case Model::kDenyWins:
        for (const Rule* x : hits) {
          if (!x->allow) return verdict(*x);
        }
        return verdict(*hits.front());
    }
  }
  if (default_) return verdict(*default_);
  return Verdict{false, ""};
}

}  // namespace wb::sbpl
