// pure
#include "core/shell_split.hpp"

#include <algorithm>
#include <cctype>

namespace wb {
namespace {

struct Word {
  std::string text;
  bool quoted = false;  // held a quote or escape (so it is never an operator or assignment)
};

class Parser {
 public:
  explicit Parser(std::string_view s, int depth = 0) : s_(s), depth_(depth) {}

  // Parses until the end, or the closing char of a nested construct: ')' of a subshell or $(...),
  // '}' of a group (only where a word would start). Returns false on error, and past kMaxDepth
  // nested constructs (each one a level of recursion: a command of 30,000 "(" would otherwise
  // overflow the stack, and a crash of an agent host's hook lets the command run).
  bool parse_list(char close, std::vector<std::string>& out) {
    if (depth_ >= kMaxDepth) return false;
    ++depth_;
    const bool ok = parse_list_at_depth(close, out);
    --depth_;
    return ok;
  }

 private:
  static constexpr int kMaxDepth = 64;

  bool parse_list_at_depth(char close, std::vector<std::string>& out) {
    std::vector<Word> words;
    auto flush = [&]() {
      if (!words.empty()) out.push_back(join(words));
      words.clear();
    };
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (close && c == close && (close != '}' || words.empty())) {
        flush();
        ++i_;
        return true;
      }
      if (c == ' ' || c == '\t') {
        ++i_;
        continue;
      }
      if (c == '#') {
        // A comment runs to the end of the line.
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
        continue;
      }
      if (c == '\n' || c == ';') {
        flush();
        ++i_;
        continue;
      }
      if (c == '&' || c == '|') {
        // && || & | |& all separate commands.
        flush();
        ++i_;
        if (i_ < s_.size() && (s_[i_] == '&' || s_[i_] == '|')) ++i_;
        continue;
      }
      if (c == '(' && words.empty()) {
        ++i_;
        if (!parse_list(')', out)) return false;
        continue;
      }
      if (c == '{' && words.empty() && i_ + 1 < s_.size() && (s_[i_ + 1] == ' ' || s_[i_ + 1] == '\n')) {
        ++i_;
        if (!parse_list('}', out)) return false;
        continue;
      }
      if (c == ')') return false;  // unbalanced
      if (is_redirect_start()) {
        if (!skip_redirect()) return false;
        continue;
      }
      Word w;
      if (!read_word(w, out)) return false;
      words.push_back(std::move(w));
    }
    if (close) return false;  // unterminated
    flush();
    return true;
  }

 private:
  static std::string join(const std::vector<Word>& words) {
    std::string s;
    for (const auto& w : words) {
      if (!s.empty()) s += ' ';
      s += w.text;
    }
    return s;
  }

  // A redirection: [n]> [n]>> [n]< &> >& [n]>&m <<< and here-doc markers are not supported.
  bool is_redirect_start() const {
    size_t j = i_;
    while (j < s_.size() && std::isdigit(static_cast<unsigned char>(s_[j]))) ++j;
    if (j < s_.size() && (s_[j] == '>' || s_[j] == '<')) return true;
    return s_[i_] == '&' && i_ + 1 < s_.size() && s_[i_ + 1] == '>';
  }

  bool skip_redirect() {
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    if (s_[i_] == '&') ++i_;
    if (s_.substr(i_, 2) == "<<") return false;  // here-documents: unparseable here
    bool writes = false;
    while (i_ < s_.size() && (s_[i_] == '>' || s_[i_] == '<' || s_[i_] == '|')) writes |= s_[i_++] == '>';
    if (i_ < s_.size() && s_[i_] == '(') return false;  // <(...) >(...): a command of its own
    if (i_ < s_.size() && s_[i_] == '&') {
      ++i_;  // >&2, >&-; anything else after >& is a file (bash's >&FILE, like &>FILE)
      const size_t at = i_;
      while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '-')) ++i_;
      const bool descriptor = i_ > at && (i_ == s_.size() || s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == ';' ||
                                          s_[i_] == '|' || s_[i_] == '&' || s_[i_] == ')' || s_[i_] == '\n');
      if (descriptor) return true;
      i_ = at;
      while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
      Word target;
      std::vector<std::string> ignored;
      if (!read_word(target, ignored)) return false;
      if (writes && target.text != "/dev/null") writes_file_ = true;
      return true;
    }
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
    Word target;
    std::vector<std::string> ignored;
    if (!read_word(target, ignored)) return false;
    if (writes && target.text != "/dev/null") writes_file_ = true;
    return true;
  }

 public:
  bool writes_file_ = false;

 private:
  // One word, with quotes and escapes kept as written; $(...) and backticks inside it are
  // parsed and their subcommands added to out.
  bool read_word(Word& w, std::vector<std::string>& out) {
    size_t start = i_;
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == ')' || c == '<' || c == '>') {
        break;
      }
      if (c == '(') {
        if (i_ == start) break;
        return false;  // "a(" outside of $( ): not something we parse
      }
      if (c == '\\') {
        w.quoted = true;
        i_ += 2;
        continue;
      }
      // $'...' (ANSI-C quoting) ends where bash says, not at the next quote (\' is inside it):
      // not parsed here.
      if (c == '$' && i_ + 1 < s_.size() && s_[i_ + 1] == '\'') return false;
      if (c == '\'') {
        w.quoted = true;
        auto end = s_.find('\'', i_ + 1);
        if (end == std::string_view::npos) return false;
        i_ = end + 1;
        continue;
      }
      if (c == '"') {
        w.quoted = true;
        ++i_;
        if (!read_double_quoted(out)) return false;
        continue;
      }
      if (at_substitution()) {
        if (!read_substitution(out)) return false;
        continue;
      }
      ++i_;
    }
    w.text = std::string(s_.substr(start, i_ - start));
    return i_ > start || w.quoted;
  }

  bool read_double_quoted(std::vector<std::string>& out) {
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == '\\') {
        i_ += 2;
        continue;
      }
      if (c == '"') {
        ++i_;
        return true;
      }
      if (at_substitution()) {
        if (!read_substitution(out)) return false;
        continue;
      }
      ++i_;
    }
    return false;
  }

  bool at_substitution() const { return s_[i_] == '`' || (s_[i_] == '$' && i_ + 1 < s_.size() && s_[i_ + 1] == '('); }

  // $(...), $((arithmetic)) or `...` at i_: the commands inside are subcommands too.
  bool read_substitution(std::vector<std::string>& out) {
    if (s_[i_] == '`') {
      auto end = s_.find('`', i_ + 1);
      if (end == std::string_view::npos) return false;
      Parser inner(s_.substr(i_ + 1, end - i_ - 1), depth_);
      if (!inner.parse_list(0, out)) return false;
      i_ = end + 1;
      return true;
    }
    bool arith = i_ + 2 < s_.size() && s_[i_ + 2] == '(';
    i_ += 2;
    return arith ? skip_balanced() : parse_list(')', out);
  }

  // Arithmetic: skipped, unless a command could run inside it ($(...) or `...` within $((...))).
  bool skip_balanced() {
    int depth = 1;
    while (i_ < s_.size() && depth > 0) {
      if (s_[i_] == '`' || (s_[i_] == '$' && i_ + 1 < s_.size() && s_[i_ + 1] == '(')) return false;
      if (s_[i_] == '(') ++depth;
      if (s_[i_] == ')') --depth;
      ++i_;
    }
    return depth == 0;
  }

  std::string_view s_;
  size_t i_ = 0;
  int depth_ = 0;
};

bool is_assignment(const std::string& w) {
  auto eq = w.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  if (!(std::isalpha(static_cast<unsigned char>(w[0])) || w[0] == '_')) return false;
  for (size_t i = 1; i < eq; ++i) {
    if (!(std::isalnum(static_cast<unsigned char>(w[i])) || w[i] == '_')) return false;
  }
  return true;
}

bool is_number(const std::string& w) {
  if (w.empty()) return false;
  size_t digits = 0;
  for (char c : w) {
    if (std::isdigit(static_cast<unsigned char>(c)))
      ++digits;
    else if (c != '.' && c != 's' && c != 'm' && c != 'h' && c != 'd')
      return false;
  }
  return digits > 0;
}

// Words of a subcommand as produced by split_command (quotes kept, single spaces): a split on
// spaces outside quotes.
std::vector<std::string> words_of(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  char q = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (q) {
      cur += c;
      if (c == '\\' && q == '"' && i + 1 < s.size())
        cur += s[++i];
      else if (c == q)
        q = 0;
    } else if (c == '\'' || c == '"') {
      q = c;
      cur += c;
    } else if (c == '\\' && i + 1 < s.size()) {
      cur += c;
      cur += s[++i];
    } else if (c == ' ') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// Strips one leading layer (assignments or one wrapper with its options); false if none.
bool strip_one(std::vector<std::string>& w) {
  size_t i = 0;
  while (i < w.size() && is_assignment(w[i])) ++i;
  if (i > 0 && i < w.size()) {
    w.erase(w.begin(), w.begin() + static_cast<long>(i));
    return true;
  }
  if (w.empty()) return false;
  const std::string& cmd = w[0];
  size_t j = 1;
  if (cmd == "nohup" || cmd == "time" || cmd == "command" || cmd == "builtin") {
    while (j < w.size() && (w[j] == "-p" || w[j] == "--")) ++j;
  } else if (cmd == "exec") {
    while (j < w.size() && !w[j].empty() && w[j][0] == '-') {
      if (w[j] == "-a" && j + 1 < w.size()) ++j;
      ++j;
    }
  } else if (cmd == "nice") {
    while (j < w.size() && !w[j].empty() && w[j][0] == '-') {
      if ((w[j] == "-n" || w[j] == "--adjustment") && j + 1 < w.size()) ++j;
      ++j;
    }
  } else if (cmd == "timeout") {
    while (j < w.size() && !w[j].empty() && w[j][0] == '-') {
      if ((w[j] == "-s" || w[j] == "-k" || w[j] == "--signal" || w[j] == "--kill-after") && j + 1 < w.size()) ++j;
      ++j;
    }
    if (j < w.size() && is_number(w[j]))
      ++j;
    else
      return false;
  } else if (cmd == "stdbuf") {
    while (j < w.size() && !w[j].empty() && w[j][0] == '-') {
      if ((w[j] == "-o" || w[j] == "-e" || w[j] == "-i") && j + 1 < w.size()) ++j;
      ++j;
    }
  } else if (cmd == "env") {
    while (j < w.size() &&
           ((!w[j].empty() && w[j][0] == '-' && w[j] != "-S" && w[j] != "--split-string") || is_assignment(w[j]))) {
      if ((w[j] == "-u" || w[j] == "--unset" || w[j] == "-C" || w[j] == "--chdir") && j + 1 < w.size()) ++j;
      ++j;
    }
  } else {
    return false;
  }
  if (j >= w.size()) return false;
  w.erase(w.begin(), w.begin() + static_cast<long>(j));
  return true;
}

}  // namespace

SplitResult split_command(std::string_view command) {
  SplitResult r;
  Parser p(command);
  const bool ok = p.parse_list(0, r.subcommands);
  r.writes_file = p.writes_file_;
  if (!ok) {
    r.parsed = false;
    r.subcommands.clear();
    std::string whole(command);
    while (!whole.empty() && std::isspace(static_cast<unsigned char>(whole.back()))) whole.pop_back();
    size_t b = 0;
    while (b < whole.size() && std::isspace(static_cast<unsigned char>(whole[b]))) ++b;
    r.subcommands.push_back(whole.substr(b));
  }
  return r;
}

namespace {

// The command word as the shell runs it: quotes and backslashes removed ("r"m, r\m, 'rm').
std::string unquoted(const std::string& word) {
  std::string out;
  char q = 0;
  for (size_t i = 0; i < word.size(); ++i) {
    char c = word[i];
    if (q) {
      if (c == q)
        q = 0;
      else if (c == '\\' && q == '"' && i + 1 < word.size())
        out += word[++i];
      else
        out += c;
    } else if (c == '\'' || c == '"') {
      q = c;
    } else if (c == '\\' && i + 1 < word.size()) {
      out += word[++i];
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> match_candidates(const std::string& subcommand) {
  std::vector<std::string> out = {subcommand};
  auto w = words_of(subcommand);
  auto add = [&](std::vector<std::string> words) {
    // Best effort, so that a deny rule for X also matches the spellings that run X: quoted or
    // escaped (\rm, "rm"), by path (/usr/bin/rm).
    std::string first = words.empty() ? "" : unquoted(words[0]);
    if (!words.empty() && first != words[0] && !first.empty()) {
      words[0] = first;
    }
    if (!words.empty() && words[0].find('/') != std::string::npos && words[0].back() != '/') {
      words[0] = words[0].substr(words[0].rfind('/') + 1);
    }
    std::string s;
    for (const auto& x : words) s += (s.empty() ? "" : " ") + x;
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  add(w);
  for (int guard = 0; guard < 16 && strip_one(w); ++guard) {
    std::string s;
    for (const auto& x : w) s += (s.empty() ? "" : " ") + x;
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    add(w);
  }
  return out;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    bool plain = !a.empty() &&
                 a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%^") ==
                     std::string::npos;
    std::string q = a;
    if (!plain) {
      q = "'";
      for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      q += "'";
    }
    out += (out.empty() ? "" : " ") + q;
  }
  return out;
}

}  // namespace wb
