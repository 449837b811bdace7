#pragma once
// The server's parts shared by its two files: server.cpp (the protocol, sessions, network
// approval, the reader and writer) and server_commands.cpp (one command's life: its request, its
// worker, stdin, signals, output). Internal to serve/.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "core/base64.hpp"
#include "core/outcome.hpp"
#include "core/paths.hpp"
#include "core/shell_split.hpp"
#include "core/sys/fd.hpp"
#include "core/sys/fs.hpp"
#include "engine/audit.hpp"
#include "engine/engine.hpp"
#include "engine/report.hpp"
#include "serve/server.hpp"
#include "serve/session.hpp"
#include "serve/standby.hpp"

namespace wb::serve::detail {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

enum Code {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kUnknownSession = -32001,
  kDenied = -32002,
  kNeedsApproval = -32003,
  kRunFailed = -32004,
  kUnknownProcess = -32005,
};

struct RpcError {
  int code;
  std::string message;
};

constexpr size_t kOutputCap = 16u << 20;  // per stream, when not streamed
// All commands' kept output together: fifty concurrent commands may not hold 1.6 GB.
constexpr size_t kOutputBudget = 256u << 20;
extern std::atomic<size_t> g_output_kept;  // server.cpp

// Bytes of the server's budget for kept output, at most want (0 when it is spent).
inline size_t reserve_output(size_t want) {
  size_t cur = g_output_kept.load();
  for (;;) {
    const size_t grant = cur >= kOutputBudget ? 0 : std::min(want, kOutputBudget - cur);
    if (grant == 0) return 0;
    if (g_output_kept.compare_exchange_weak(cur, cur + grant)) return grant;
  }
}

// What one command holds of the budget, given back when its answer is gone.
struct OutputReservation {
  std::atomic<size_t> n{0};
  ~OutputReservation() { g_output_kept -= n; }
};

// One line per message, from any thread; a client that went away makes every write a no-op.
class Writer {
 public:
  explicit Writer(int fd) : fd_(fd) {}
  void send(const json& j) {
    std::string line = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    std::lock_guard<std::mutex> lock(mu_);
    size_t off = 0;
    while (!broken_ && off < line.size()) {
      ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        broken_ = true;
        break;
      }
      off += static_cast<size_t>(n);
    }
  }
  bool broken() {
    std::lock_guard<std::mutex> lock(mu_);
    return broken_;
  }

 private:
  int fd_;
  std::mutex mu_;
  bool broken_ = false;
};

struct Session {
  std::string id, cwd;
  std::mutex approved_mu;
  std::set<std::string> approved;  // host:port the client accepted for the session
  std::vector<std::string> paths;  // as opened (or last updated): reloaded by an empty update
  std::optional<json> inline_settings;
  std::shared_ptr<const SessionPolicy> policy;
};

struct Proc {
  std::string id, session;
  std::mutex mu;
  engine::Run* run = nullptr;  // once started
  bool terminate = false;      // asked before the run started
  sys::Fd stdin_wr;            // open for command/exec/write
  // Written before the sandbox was ready (a client writes right after command/exec): held,
  // then given to the command first thing.
  bool started = false;
  std::vector<int> early_signals;  // command/exec/signal before the run started
  bool takes_writes = false;
  std::string early_stdin;
  bool early_close = false;
  // tty: the command's terminal (its master side): resized by command/exec/resize; closing
  // stdin sends the end-of-file character, as a user at the terminal would.
  sys::Fd tty;
};

// Writes data to a non-blocking pipe, waiting at most 2 s for the reader: never blocks the
// server longer. An RpcError says how much went in.
inline void write_stdin(int fd, const std::string& data) {
  size_t off = 0;
  const auto until = Clock::now() + std::chrono::seconds(2);
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN && Clock::now() < until) {
      struct pollfd pf = {fd, POLLOUT, 0};
      (void)::poll(&pf, 1, 100);
      continue;
    }
    if (n <= 0) {
      throw RpcError{kInvalidParams,
                     fmt::format("the process does not read its stdin ({} of {} bytes written)", off, data.size())};
    }
    off += static_cast<size_t>(n);
  }
}

inline const json* member(const json& p, const char* key) {
  auto it = p.find(key);
  return it == p.end() || it->is_null() ? nullptr : &*it;
}

// Every string a client gives ends up in paths, bwrap's options or the shim's spec, which are
// NUL-separated: a NUL in one is refused, never passed on.
inline std::string checked(std::string v, const char* key) {
  if (v.find('\0') != std::string::npos) throw RpcError{kInvalidParams, fmt::format("\"{}\" holds a NUL byte", key)};
  return v;
}

inline std::string need_string(const json& p, const char* key) {
  const json* v = member(p, key);
  if (!v || !v->is_string()) throw RpcError{kInvalidParams, fmt::format("\"{}\" must be a string", key)};
  return checked(v->get<std::string>(), key);
}

inline std::optional<std::string> opt_string(const json& p, const char* key) {
  const json* v = member(p, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw RpcError{kInvalidParams, fmt::format("\"{}\" must be a string", key)};
  return checked(v->get<std::string>(), key);
}

inline bool opt_bool(const json& p, const char* key) {
  const json* v = member(p, key);
  if (!v) return false;
  if (!v->is_boolean()) throw RpcError{kInvalidParams, fmt::format("\"{}\" must be true or false", key)};
  return v->get<bool>();
}

inline std::vector<std::string> opt_strings(const json& p, const char* key) {
  const json* v = member(p, key);
  std::vector<std::string> out;
  if (!v) return out;
  if (!v->is_array()) throw RpcError{kInvalidParams, fmt::format("\"{}\" must be an array of strings", key)};
  for (const auto& e : *v) {
    if (!e.is_string()) throw RpcError{kInvalidParams, fmt::format("\"{}\" must be an array of strings", key)};
    out.push_back(checked(e.get<std::string>(), key));
  }
  return out;
}

// How deep a JSON text nests (outside strings): a line nesting deeper than a request ever needs
// is refused before it is parsed (the parse and its copies recurse).
inline bool too_deep(const std::string& line, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : line) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

class Server {
 public:
  explicit Server(const ServerConfig& c) : cfg_(c), out_(c.out), here_(sys::current_dir()) {}
  int run();

 private:
  void handle_line(const std::string& line);
  json dispatch(const std::string& method, const json& params, const json& id, bool* responded);
  json initialize(const json& p);
  json session_open(const json& p);
  json session_update(const json& p);
  json session_close(const json& p);
  json decide(const json& p);
  json exec_write(const json& p);
  json exec_terminate(const json& p);
  json exec_signal(const json& p);
  json exec_resize(const json& p);
  std::shared_ptr<Proc> process(const json& p, const std::string& id);
  json session_policy(const json& p);
  json doctor(const json& p);
  void command_exec(const json& p, const json& id);
  void exec_worker(std::shared_ptr<Proc> proc, std::shared_ptr<const SessionPolicy> policy, std::string cwd,
                   json params, json id);
  engine::RunRequest exec_request(const json& p, const SessionPolicy& policy, const std::string& session_cwd);
  std::shared_ptr<Session> session(const json& p);
  void respond(const json& id, json result);
  void respond_error(const json& id, int code, const std::string& message);
  void end_all();
  json shutdown(const json& p);
  // Network approval (the client declared capabilities.networkApproval).
  void ask_network(const std::string& session, const std::string& process, const std::string& host, int port,
                   std::function<void(bool)> answer);
  void on_response(const json& msg);
  void forget_questions(const std::string& process);
  struct Question {
    std::string session, process, key;
    std::weak_ptr<Session> owner;  // the session as it was asked for (a reopened name is another)
    std::function<void(bool)> answer;
  };
  // Questions are written by a thread of their own: the proxy's loop (which asks) must never
  // wait for a client that does not read.
  void asker();
  std::deque<json> to_ask_;
  std::condition_variable ask_cv_;
  std::thread asker_;
  bool asker_stop_ = false;  // under questions_mu_
  static constexpr size_t kQuestionsPerProcess = 64, kQuestions = 1024;
  std::shared_ptr<netproxy::Proxy> proxy_;  // one loop for every session's runs
  std::atomic<bool> approval_{false};
  std::atomic<double> approval_timeout_s_{30};
  std::mutex questions_mu_;
  std::map<std::string, Question> questions_;  // by the id of the request sent

  const ServerConfig& cfg_;
  Writer out_;
  const std::string here_;
  std::mutex mu_;  // sessions_, procs_, workers_
  std::map<std::string, std::shared_ptr<Session>> sessions_;
  std::map<std::string, std::shared_ptr<Proc>> procs_;
  size_t workers_ = 0;
  std::condition_variable workers_done_;
  std::atomic<unsigned> next_{1};
  std::atomic<bool> shutting_down_{false};
  // A sandbox prepared ahead per session (WAVEBOX_STANDBY=0: none).
  void prepare_next(const std::string& session, bool wait = false);
  // Every session's runs protect every session's settings files: one opened or closed changes
  // the others' plans, so their standbys are made again.
  void refresh_others(const std::string& except);
  std::atomic<bool> prepare_ahead_{true};  // initialize's capabilities.prepareAhead
  // What making a standby says repeats what its command's own planning says: shown with -v only.
  Logger standby_log_{cfg_.log->verbose(), [this](std::string_view line) {
                        if (!cfg_.log->verbose()) return;
                        if (line.rfind("wavebox: ", 0) == 0) line.remove_prefix(9);
                        if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
                        cfg_.log->info("(ahead) " + std::string(line));
                      }};
  Standbys standbys_{!(std::getenv("WAVEBOX_STANDBY") && std::string(std::getenv("WAVEBOX_STANDBY")) == "0")};
};

}  // namespace wb::serve::detail
