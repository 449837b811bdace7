// The JSON-RPC server: a reader on the input, one worker thread per command (the thread that
// prepares a run outlives it, as the keeper's parent-death signal needs), one writer lock.
#include "serve/server.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
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
#include "serve/session.hpp"
#include "serve/standby.hpp"

namespace wb::serve {
namespace {

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
std::atomic<size_t> g_output_kept{0};

// Bytes of the server's budget for kept output, at most want (0 when it is spent).
size_t reserve_output(size_t want) {
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
};

// Writes data to a non-blocking pipe, waiting at most 2 s for the reader: never blocks the
// server longer. An RpcError says how much went in.
void write_stdin(int fd, const std::string& data) {
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

const json* member(const json& p, const char* key) {
  auto it = p.find(key);
  return it == p.end() || it->is_null() ? nullptr : &*it;
}

// Every string a client gives ends up in paths, bwrap's options or the shim's spec, which are
// NUL-separated: a NUL in one is refused, never passed on.
std::string checked(std::string v, const char* key) {
  if (v.find('\0') != std::string::npos) throw RpcError{kInvalidParams, fmt::format("\"{}\" holds a NUL byte", key)};
  return v;
}

std::string need_string(const json& p, const char* key) {
  const json* v = member(p, key);
  if (!v || !v->is_string()) throw RpcError{kInvalidParams, fmt::format("\"{}\" must be a string", key)};
  return checked(v->get<std::string>(), key);
}

std::optional<std::string> opt_string(const json& p, const char* key) {
  const json* v = member(p, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw RpcError{kInvalidParams, fmt::format("\"{}\" must be a string", key)};
  return checked(v->get<std::string>(), key);
}

bool opt_bool(const json& p, const char* key) {
  const json* v = member(p, key);
  if (!v) return false;
  if (!v->is_boolean()) throw RpcError{kInvalidParams, fmt::format("\"{}\" must be true or false", key)};
  return v->get<bool>();
}

std::vector<std::string> opt_strings(const json& p, const char* key) {
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
bool too_deep(const std::string& line, int limit) {
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

double ms_since(Clock::time_point t) {
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

void Server::refresh_others(const std::string& except) {
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, s] : sessions_) {
      if (id != except) ids.push_back(id);
    }
  }
  for (const auto& id : ids) {
    standbys_.drop(id, nullptr, false);
    prepare_next(id);
  }
}

// The session's next command gets a sandbox made ahead, for the session's policy as it is now.
void Server::prepare_next(const std::string& session, bool wait) {
  if (!standbys_.enabled() || !prepare_ahead_ || shutting_down_) return;
  std::shared_ptr<Session> s;
  std::shared_ptr<const SessionPolicy> policy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return;
    s = it->second;
    policy = s->policy;
  }
  try {
    engine::RunRequest req =
        exec_request(json{{"sessionId", session}, {"command", json::array({"true"})}}, *policy, s->cwd);
    req.log = &standby_log_;
    standbys_.refill(session, policy, std::move(req), wait);
  } catch (const RpcError&) {
  }
}

void Server::respond(const json& id, json result) {
  if (id.is_null()) return;  // a notification: no answer
  out_.send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

void Server::respond_error(const json& id, int code, const std::string& message) {
  out_.send({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
}

std::shared_ptr<Session> Server::session(const json& p) {
  std::string id = need_string(p, "sessionId");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) throw RpcError{kUnknownSession, fmt::format("unknown session \"{}\"", id)};
  return it->second;
}

json Server::initialize(const json& p) {
  if (const json* caps = member(p, "capabilities")) {
    if (!caps->is_object()) throw RpcError{kInvalidParams, "\"capabilities\" must be an object"};
    approval_ = opt_bool(*caps, "networkApproval");
    if (const json* pa = member(*caps, "prepareAhead")) {
      if (!pa->is_boolean()) throw RpcError{kInvalidParams, "\"prepareAhead\" must be true or false"};
      prepare_ahead_ = pa->get<bool>();
      if (!prepare_ahead_) refresh_others("");  // turned off: what was made ahead ends now
    }
    if (const json* t = member(*caps, "networkApprovalTimeoutMs")) {
      if (!t->is_number() || t->get<double>() < 1 || t->get<double>() > 600000) {
        throw RpcError{kInvalidParams, "\"networkApprovalTimeoutMs\" must be between 1 and 600000"};
      }
      approval_timeout_s_ = t->get<double>() / 1000;
    }
  }
  return {{"serverInfo", {{"name", "wavebox"}, {"version", "0.1.0"}}},
          {"capabilities",
           {{"sessions", true},
            {"streamOutput", true},
            {"networkApproval", true},
            {"prepareAhead", standbys_.enabled() && prepare_ahead_}}}};
}

// A host on neither of the session's network lists: asked of the client (a request of the
// server's own), unless the client accepted it for the session before. The proxy waits for the
// answer up to the approval timeout, then refuses.
void Server::ask_network(const std::string& session, const std::string& process, const std::string& host, int port,
                         std::function<void(bool)> answer) {
  const bool v6 = host.find(':') != std::string::npos;
  const std::string key = fmt::format("{}:{}", v6 ? "[" + host + "]" : host, port);
  std::shared_ptr<Session> s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(session);
    if (it != sessions_.end()) s = it->second;
  }
  if (!s) return answer(false);
  {
    std::lock_guard<std::mutex> lock(s->approved_mu);
    if (s->approved.count(key)) return answer(true);
  }
  std::string id = fmt::format("wavebox-approval-{}", next_++);
  {
    std::lock_guard<std::mutex> lock(questions_mu_);
    // Bounded: a command asking about host after host, or a client that never answers, gets
    // declines beyond these, not a server that grows.
    size_t mine = 0;
    for (const auto& [qid, q] : questions_) mine += q.process == process;
    if (mine >= kQuestionsPerProcess || questions_.size() >= kQuestions || asker_stop_) {
      answer(false);
      return;
    }
    questions_[id] = {session, process, key, s, std::move(answer)};
    to_ask_.push_back({{"jsonrpc", "2.0"},
                       {"id", id},
                       {"method", "network/requestApproval"},
                       {"params", {{"sessionId", session}, {"processId", process}, {"host", host}, {"port", port}}}});
  }
  ask_cv_.notify_one();
}

void Server::asker() {
  for (;;) {
    json msg;
    {
      std::unique_lock<std::mutex> lock(questions_mu_);
      ask_cv_.wait(lock, [&] { return asker_stop_ || !to_ask_.empty(); });
      if (asker_stop_) return;
      msg = std::move(to_ask_.front());
      to_ask_.pop_front();
    }
    out_.send(msg);
  }
}

// The client's answer to one of our requests: {decision: "accept" | "acceptForSession" |
// "decline"}; anything else (an error, an unknown word) is a decline.
void Server::on_response(const json& msg) {
  if (!msg.contains("id") || !msg["id"].is_string()) return;
  Question q;
  {
    std::lock_guard<std::mutex> lock(questions_mu_);
    auto it = questions_.find(msg["id"].get<std::string>());
    if (it == questions_.end()) return;  // not ours, or answered already
    q = std::move(it->second);
    questions_.erase(it);
  }
  std::string decision;
  // An answer is a result and nothing else: one that also carries an error declines.
  if (!msg.contains("error") && msg.contains("result") && msg["result"].is_object() &&
      msg["result"].contains("decision") && msg["result"]["decision"].is_string()) {
    decision = msg["result"]["decision"].get<std::string>();
  }
  if (decision == "acceptForSession") {
    // The session that was asked, not whatever now has its name (closed and opened again).
    if (std::shared_ptr<Session> s = q.owner.lock()) {
      std::lock_guard<std::mutex> lock(s->approved_mu);
      if (s->approved.size() < 4096) s->approved.insert(q.key);
    }
  }
  q.answer(decision == "accept" || decision == "acceptForSession");
}

// A process ended, or a session closed (then `who` is the session's id): its questions go, each
// a no for a proxy that may still wait.
void Server::forget_questions(const std::string& who) {
  std::vector<std::function<void(bool)>> declined;
  {
    std::lock_guard<std::mutex> lock(questions_mu_);
    for (auto it = questions_.begin(); it != questions_.end();) {
      if (it->second.process == who || it->second.session == who) {
        declined.push_back(std::move(it->second.answer));
        it = questions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& a : declined) a(false);
}

json Server::session_open(const json& p) {
  auto s = std::make_shared<Session>();
  std::string cwd = need_string(p, "cwd");
  s->cwd = paths::resolve(cwd, cfg_.home, here_);
  if (!sys::is_dir(s->cwd)) throw RpcError{kInvalidParams, fmt::format("cwd \"{}\" is not a directory", cwd)};
  s->paths = opt_strings(p, "settingsPaths");
  if (const json* inl = member(p, "settings")) {
    if (!inl->is_object()) throw RpcError{kInvalidParams, "\"settings\" must be an object"};
    s->inline_settings = *inl;
  }
  auto policy = load_session_policy(s->cwd, s->paths, s->inline_settings ? &*s->inline_settings : nullptr, cfg_.home);
  if (!policy.ok()) throw RpcError{kInvalidParams, policy.error().message};
  s->policy = std::make_shared<const SessionPolicy>(std::move(*policy));
  for (const auto& w : s->policy->settings.warnings) cfg_.log->warn(w);
  s->id = opt_string(p, "sessionId").value_or(fmt::format("s-{}", next_++));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (sessions_.count(s->id)) throw RpcError{kInvalidParams, fmt::format("session \"{}\" is open already", s->id)};
    sessions_[s->id] = s;
  }
  prepare_next(s->id, true);
  refresh_others(s->id);
  // Warnings go to the client, which shows them to its user (the server's stderr is nobody's).
  return {{"sessionId", s->id}, {"policyId", s->policy->policy_id}, {"warnings", s->policy->settings.warnings}};
}

// The session's next commands get the new policy; running ones keep theirs; no other session
// is touched.
json Server::session_update(const json& p) {
  auto s = session(p);
  std::vector<std::string> paths = member(p, "settingsPaths") ? opt_strings(p, "settingsPaths") : s->paths;
  std::optional<json> inl = s->inline_settings;
  if (const json* v = member(p, "settings")) {
    if (!v->is_object()) throw RpcError{kInvalidParams, "\"settings\" must be an object"};
    inl = *v;
  }
  auto policy = load_session_policy(s->cwd, paths, inl ? &*inl : nullptr, cfg_.home);
  if (!policy.ok()) throw RpcError{kInvalidParams, policy.error().message};
  std::string id;
  std::shared_ptr<const SessionPolicy> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s->paths = paths;
    s->inline_settings = inl;
    old = std::exchange(s->policy, std::make_shared<const SessionPolicy>(std::move(*policy)));
    id = s->policy->policy_id;
  }
  standbys_.drop(s->id, old);  // a command still running under the old one prepares nothing for it
  prepare_next(s->id);
  return {{"policyId", id}, {"warnings", s->policy->settings.warnings}};
}

json Server::session_close(const json& p) {
  auto s = session(p);
  forget_questions(s->id);
  std::unique_lock<std::mutex> lock(mu_);
  sessions_.erase(s->id);
  for (auto& [id, proc] : procs_) {
    if (proc->session != s->id) continue;
    std::lock_guard<std::mutex> pl(proc->mu);
    proc->terminate = true;
    if (proc->run) proc->run->cancel();
  }
  lock.unlock();
  // After the erase: a command of it ending now finds no session to prepare for, and one that
  // looked before finds its policy retired.
  standbys_.drop(s->id, s->policy);
  refresh_others(s->id);
  return json::object();
}

json Server::decide(const json& p) {
  auto s = session(p);
  std::string command = need_string(p, "command");
  std::shared_ptr<const SessionPolicy> policy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    policy = s->policy;
  }
  return engine::decision_json(engine::decide_here(policy->settings, command, false, *cfg_.log), {});
}

// A request that names a session acts only on that session's processes.
void check_session(const json& p, const std::string& process, const std::string& owner) {
  if (auto sid = opt_string(p, "sessionId"); sid && *sid != owner) {
    throw RpcError{kUnknownProcess, fmt::format("process \"{}\" is not in session \"{}\"", process, *sid)};
  }
}

json Server::exec_write(const json& p) {
  std::string id = need_string(p, "processId");
  std::shared_ptr<Proc> proc;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = procs_.find(id);
    if (it == procs_.end()) throw RpcError{kUnknownProcess, fmt::format("unknown process \"{}\"", id)};
    check_session(p, id, it->second->session);
    proc = it->second;
  }
  std::string data;
  if (auto d = opt_string(p, "deltaBase64")) {
    auto bytes = base64_decode(*d);
    if (!bytes) throw RpcError{kInvalidParams, "\"deltaBase64\" is not base64"};
    data = std::move(*bytes);
  }
  std::lock_guard<std::mutex> pl(proc->mu);
  if (!proc->started) {
    if (!proc->takes_writes) throw RpcError{kInvalidParams, "the process's stdin is closed"};
    if (proc->early_close && !data.empty()) throw RpcError{kInvalidParams, "the process's stdin is closed"};
    if (proc->early_stdin.size() + data.size() > (64u << 10)) {
      throw RpcError{kInvalidParams, "the command has not started yet: at most 64 KiB of stdin is held until it does"};
    }
    proc->early_stdin += data;
    if (opt_bool(p, "closeStdin")) proc->early_close = true;
    return json::object();
  }
  if (!data.empty()) {
    if (!proc->stdin_wr.valid()) throw RpcError{kInvalidParams, "the process's stdin is closed"};
    write_stdin(proc->stdin_wr.get(), data);
  }
  if (opt_bool(p, "closeStdin")) proc->stdin_wr.reset();
  return json::object();
}

json Server::exec_terminate(const json& p) {
  std::string id = need_string(p, "processId");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = procs_.find(id);
  if (it == procs_.end()) throw RpcError{kUnknownProcess, fmt::format("unknown process \"{}\"", id)};
  check_session(p, id, it->second->session);
  std::lock_guard<std::mutex> pl(it->second->mu);
  it->second->terminate = true;
  if (it->second->run) it->second->run->cancel();
  return json::object();
}

// The signals a client may send a command: those a terminal or a supervisor would.
int signal_named(const std::string& name) {
  static const std::pair<const char*, int> k[] = {{"INT", SIGINT},   {"TERM", SIGTERM}, {"HUP", SIGHUP},
                                                  {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
                                                  {"KILL", SIGKILL}, {"CONT", SIGCONT}, {"WINCH", SIGWINCH}};
  std::string n = name.rfind("SIG", 0) == 0 ? name.substr(3) : name;
  for (const auto& [nm, sig] : k) {
    if (n == nm) return sig;
  }
  throw RpcError{kInvalidParams, fmt::format("\"signal\": \"{}\" is not one of SIGINT, SIGTERM, SIGHUP, SIGQUIT, "
                                             "SIGUSR1, SIGUSR2, SIGKILL, SIGCONT, SIGWINCH",
                                             name)};
}

json Server::exec_signal(const json& p) {
  std::string id = need_string(p, "processId");
  const int sig = signal_named(need_string(p, "signal"));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = procs_.find(id);
  if (it == procs_.end()) throw RpcError{kUnknownProcess, fmt::format("unknown process \"{}\"", id)};
  check_session(p, id, it->second->session);
  std::lock_guard<std::mutex> pl(it->second->mu);
  if (it->second->run) {
    it->second->run->signal(sig);
  } else if (sig == SIGKILL) {
    it->second->terminate = true;
  } else {
    it->second->early_signals.push_back(sig);  // given when it starts
  }
  return json::object();
}

json Server::session_policy(const json& p) {
  auto s = session(p);
  std::shared_ptr<const SessionPolicy> policy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    policy = s->policy;
  }
  engine::RunRequest req;
  req.cwd = s->cwd;
  req.home = cfg_.home;
  req.env = cfg_.env;
  req.settings = policy->settings;
  req.settings_files = policy->settings_files;
  engine::MachineProbe probe = engine::probe_machine(policy->settings);
  json j = engine::policy_json(req, probe);
  j["sessionId"] = s->id;
  j["cwd"] = s->cwd;
  j["policyId"] = policy->policy_id;
  j["settingsFiles"] = policy->settings_files;
  j["warnings"] = policy->settings.warnings;
  j["notes"] = policy->settings.notes;
  return j;
}

json Server::doctor(const json& p) {
  Settings none;
  engine::MachineProbe probe = engine::probe_machine(none);
  json j = engine::platform_json(probe);
  if (member(p, "sessionId")) j["session"] = session_policy(p);
  return j;
}

engine::RunRequest Server::exec_request(const json& p, const SessionPolicy& policy, const std::string& session_cwd) {
  engine::RunRequest req;
  const json* command = member(p, "command");
  auto line = opt_string(p, "commandLine");
  if (command && (!command->is_array() || command->empty())) {
    throw RpcError{kInvalidParams, "\"command\" must be a non-empty array of strings"};
  }
  if (command && line) throw RpcError{kInvalidParams, "give \"command\" or \"commandLine\", not both"};
  if (command) {
    req.argv = opt_strings(p, "command");
    req.command_line = shell_join(req.argv);
  } else if (line && !command) {
    req.argv = {sys::exists("/bin/bash") ? "/bin/bash" : "/bin/sh", "-c", *line};
    req.command_line = *line;
  } else {
    throw RpcError{kInvalidParams, "give \"command\" (a non-empty array of strings) or \"commandLine\" (a string)"};
  }
  req.cwd = session_cwd;
  if (auto c = opt_string(p, "cwd")) {
    // Inside the session's workspace, links resolved: a command's workspace is never another
    // session's, nor reached through a link a command planted.
    std::string real = sys::real_path_or_empty(paths::resolve(*c, cfg_.home, session_cwd));
    std::string root = sys::real_path_or_empty(session_cwd);
    if (real.empty() || root.empty() || !paths::is_within(real, root)) {
      throw RpcError{kInvalidParams,
                     fmt::format("cwd \"{}\" is not a directory inside the session's \"{}\"", *c, session_cwd)};
    }
    req.cwd = real;
  }
  if (!sys::is_dir(req.cwd)) throw RpcError{kInvalidParams, fmt::format("cwd \"{}\" is not a directory", req.cwd)};
  req.home = cfg_.home;
  req.env = cfg_.env;
  for (const auto& kv : cfg_.env) {
    if (kv.rfind("PATH=", 0) == 0) req.host_path = kv.substr(5);  // guarded whatever env the client gives
  }
  if (const json* env = member(p, "env")) {
    if (!env->is_object()) throw RpcError{kInvalidParams, "\"env\" must be an object of strings"};
    for (const auto& [k, v] : env->items()) {
      if (!v.is_string() || k.empty() || k.find('=') != std::string::npos) {
        throw RpcError{kInvalidParams, "\"env\" must be an object of strings"};
      }
      checked(k, "env");
      std::erase_if(req.env, [&](const std::string& kv) { return kv.rfind(k + "=", 0) == 0; });
      req.env.push_back(k + "=" + checked(v.get<std::string>(), "env"));
    }
  }
  req.settings = policy.settings;
  if (const json* t = member(p, "timeoutMs")) {
    if (!t->is_number() || t->get<double>() <= 0 || t->get<double>() > 1e10) {
      throw RpcError{kInvalidParams, "\"timeoutMs\" must be a positive number of milliseconds"};
    }
    // Shorter than the settings' timeout, never longer.
    auto& limit = req.settings.sandbox.resources.timeout_seconds;
    const double asked = t->get<double>() / 1000;
    limit = limit ? std::min(*limit, asked) : asked;
  }
  req.settings.warnings
      .clear();  // said once, when the session was opened
                 // Every session's settings files, not only its own: a command of one session must not write
  // what configures another (workspaces may nest).
  req.settings_files = policy.settings_files;
  req.plan_cache = policy.plan_cache;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, other] : sessions_) {
      req.settings_files.insert(req.settings_files.end(), other->policy->settings_files.begin(),
                                other->policy->settings_files.end());
    }
  }
  req.disable_sandbox = opt_bool(p, "dangerouslyDisableSandbox");
  const bool approve = opt_bool(p, "approve");
  req.approve = [approve](const Decision&) { return approve; };
  req.every_ask_needs_approval = true;
  req.log = cfg_.log;
  return req;
}

void Server::command_exec(const json& p, const json& id) {
  auto s = session(p);
  auto proc = std::make_shared<Proc>();
  // Only a streamed command given no stdin takes writes (decided now: a write may come first).
  proc->takes_writes = opt_bool(p, "streamOutput") && member(p, "stdin") == nullptr;
  const bool named = member(p, "processId") != nullptr;
  proc->id = opt_string(p, "processId").value_or("");
  proc->session = s->id;
  std::shared_ptr<const SessionPolicy> policy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (!named && (proc->id.empty() || procs_.count(proc->id))) proc->id = fmt::format("p-{}", next_++);
    if (procs_.count(proc->id))
      throw RpcError{kInvalidParams, fmt::format("process \"{}\" is running already", proc->id)};
    if (shutting_down_) throw RpcError{kRunFailed, "the server is shutting down"};
    procs_[proc->id] = proc;
    policy = s->policy;
    ++workers_;
  }
  std::thread([this, proc, policy, cwd = s->cwd, p, id] { exec_worker(proc, policy, cwd, p, id); }).detach();
}

// Reads one of the command's outputs to its end: streamed as notifications, or kept.
// One of a command's outputs: streamed as notifications, or kept.
struct Stream {
  int fd;
  const char* name;
  std::string& kept;
  bool& truncated;
};

// Reads both of the command's outputs to their end, on one thread (one hand-over less than a
// thread each when the command ends).
std::thread pump(Stream out_s, Stream err_s, const std::string& process, bool streamed, Writer& out,
                 OutputReservation& held) {
  return std::thread([out_s, err_s, process, streamed, &out, &held] {
    char buf[65536];
    Stream streams[2] = {out_s, err_s};
    bool open[2] = {true, true};
    while (open[0] || open[1]) {
      struct pollfd p[2] = {{open[0] ? streams[0].fd : -1, POLLIN, 0}, {open[1] ? streams[1].fd : -1, POLLIN, 0}};
      if (::poll(p, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      for (int k = 0; k < 2; ++k) {
        if (!p[k].revents) continue;
        Stream& st = streams[k];
        ssize_t n = ::read(st.fd, buf, sizeof buf);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) {
          open[k] = false;
          continue;
        }
        std::string_view chunk(buf, static_cast<size_t>(n));
        if (streamed) {
          out.send({{"jsonrpc", "2.0"},
                    {"method", "command/exec/outputDelta"},
                    {"params", {{"processId", process}, {"stream", st.name}, {"deltaBase64", base64_encode(chunk)}}}});
        } else if (st.kept.size() < kOutputCap) {
          const size_t got = reserve_output(std::min(chunk.size(), kOutputCap - st.kept.size()));
          held.n += got;
          st.kept.append(chunk.substr(0, got));
          st.truncated = st.truncated || got < chunk.size();
        } else {
          st.truncated = true;
        }
      }
    }
  });
}

void Server::exec_worker(std::shared_ptr<Proc> proc, std::shared_ptr<const SessionPolicy> policy, std::string cwd,
                         json p, json id) {
  const auto t0 = Clock::now();
  auto finish = [&] {
    forget_questions(proc->id);
    std::lock_guard<std::mutex> lock(mu_);
    procs_.erase(proc->id);
    if (--workers_ == 0) workers_done_.notify_all();
  };
  // What wavebox says while it runs the command reaches the client too, as
  // command/exec/message {processId, level, message}, not only the server's stderr.
  const Logger exec_log{cfg_.log->verbose(), [this, pid = proc->id](std::string_view line) {
                          std::fwrite(line.data(), 1, line.size(), stderr);
                          std::fflush(stderr);
                          std::string_view m = line;
                          if (m.rfind("wavebox: ", 0) == 0) m.remove_prefix(9);
                          if (!m.empty() && m.back() == '\n') m.remove_suffix(1);
                          std::string level = "info";
                          for (const char* lv : {"warning", "error"}) {
                            const std::string pre = std::string(lv) + ": ";
                            if (m.rfind(pre, 0) == 0) {
                              level = lv;
                              m.remove_prefix(pre.size());
                            }
                          }
                          if (level == "info") return;  // -v's lines: the server's stderr only
                          out_.send({{"jsonrpc", "2.0"},
                                     {"method", "command/exec/message"},
                                     {"params", {{"processId", pid}, {"level", level}, {"message", std::string(m)}}}});
                        }};
  // sandbox.auditLog of the session's settings: one line for every command, as for `run`.
  engine::AuditRecord audit;
  auto write_audit = [&](std::optional<int> exit_code, const std::string& error) {
    const auto& path = policy->settings.sandbox.audit_log;
    if (!path) return;
    audit.outcome.exit_code = exit_code;
    audit.outcome.error = error;
    audit.outcome.elapsed_ms = ms_since(t0);
    if (auto st = engine::append_audit(*path, audit, cfg_.home); !st) cfg_.log->warn(st.error().message);
  };
  try {
    engine::RunRequest req = exec_request(p, *policy, cwd);
    req.log = &exec_log;
    // Each refusal as it happens, in the answer's typed form (ignoreViolations applies).
    req.on_refusal = [this, pid = proc->id, ignore = policy->settings.sandbox.ignore_violations,
                      line = req.command_line.empty() ? shell_join(req.argv) : req.command_line](const Violation& v) {
      if (filter_ignored({v}, ignore, line).empty()) return;
      out_.send({{"jsonrpc", "2.0"},
                 {"method", "command/exec/violation"},
                 {"params", {{"processId", pid}, {"violation", refusal_json(v)}}}});
    };
    req.shared_proxy = proxy_.get();
    audit.cwd = req.cwd;
    audit.argv = req.argv;
    audit.command_line = req.command_line;
    if (approval_) {
      req.ask_network = [this, session = proc->session, process = proc->id](const std::string& host, int port,
                                                                            std::function<void(bool)> answer) {
        ask_network(session, process, host, port, std::move(answer));
      };
      req.network_approval_timeout_s = approval_timeout_s_;
    }
    const bool streamed = opt_bool(p, "streamOutput");
    std::optional<std::string> input;
    if (auto in = opt_string(p, "stdin")) {
      input = base64_decode(*in);
      if (!input) throw RpcError{kInvalidParams, "\"stdin\" is not base64"};
    }
    int in_pipe[2], out_pipe[2], err_pipe[2];
    if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
      throw RpcError{kRunFailed, "no pipes for the command's output"};
    }
    sys::Fd in_rd(in_pipe[0]), in_wr(in_pipe[1]), out_rd(out_pipe[0]), out_wr(out_pipe[1]), err_rd(err_pipe[0]),
        err_wr(err_pipe[1]);
    sys::Fd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    // stdin: the bytes given (then its end), a pipe for command/exec/write when the output is
    // streamed, else nothing to read (/dev/null).
    const bool interactive = !input && streamed;
    req.stdio[0] = input || interactive ? in_rd.get() : null.get();
    req.stdio[1] = out_wr.get();
    req.stdio[2] = err_wr.get();
    if (prepare_ahead_) req.standby = standbys_.take(proc->session, policy.get());
    auto prepared = engine::prepare(std::move(req));
    if (!prepared.ok()) {
      const Error& e = prepared.error();
      if (e.kind == ErrorKind::kDenied) audit.outcome.decision = "deny";
      if (e.kind == ErrorKind::kNeedsApproval) audit.outcome.decision = "ask";
      if (e.kind == ErrorKind::kNotFound || e.kind == ErrorKind::kNotExecutable) {
        write_audit(e.kind == ErrorKind::kNotFound ? 127 : 126, e.message);
        OutcomeRecord rec = audit.outcome;
        rec.exit_code = e.kind == ErrorKind::kNotFound ? 127 : 126;
        rec.error = e.message;
        rec.elapsed_ms = ms_since(t0);
        json r = outcome_json(rec);
        r["processId"] = proc->id;
        r["stdout"] = "";
        r["stderr"] = base64_encode("wavebox: " + e.message + "\n");
        r["policyId"] = policy->policy_id;
        respond(id, std::move(r));
        finish();
        return;
      }
      int code = e.kind == ErrorKind::kNeedsApproval ? kNeedsApproval
                 : e.kind == ErrorKind::kDenied      ? kDenied
                                                     : kRunFailed;
      write_audit(std::nullopt, e.message);
      throw RpcError{code, e.message};
    }
    const std::string decision = prepared->decision.decision;
    const bool sandboxed = prepared->sandboxed;
    audit.outcome.decision = decision;
    audit.outcome.rule = prepared->decision.matched_rule;
    audit.outcome.reason = prepared->decision.reason;
    audit.outcome.sandboxed = sandboxed;
    const double prepare_ms = ms_since(t0);
    OutputReservation held;  // declared before the texts: given back after they are gone
    std::string out_text, err_text;
    bool out_cut = false, err_cut = false;
    std::thread pumps = pump({out_rd.get(), "stdout", out_text, out_cut}, {err_rd.get(), "stderr", err_text, err_cut},
                             proc->id, streamed, out_, held);
    auto run = engine::start(std::move(*prepared), true);
    {
      std::lock_guard<std::mutex> pl(proc->mu);
      if (run.ok()) {
        proc->run = run->get();
        if (proc->terminate) proc->run->cancel();
        for (int sig : proc->early_signals) proc->run->signal(sig);
      }
      if (interactive) {
        (void)::fcntl(in_wr.get(), F_SETFL, ::fcntl(in_wr.get(), F_GETFL) | O_NONBLOCK);
        proc->stdin_wr = std::move(in_wr);
        if (!proc->early_stdin.empty() && run.ok()) {
          try {
            write_stdin(proc->stdin_wr.get(), proc->early_stdin);
          } catch (const RpcError&) {
            // The command did not take it: as a write it would not have taken.
          }
        }
        if (proc->early_close) proc->stdin_wr.reset();
      }
      proc->started = true;
    }
    std::thread feeder;
    if (input && run.ok()) {
      feeder = std::thread([fd = in_wr.release(), data = std::move(*input)] {
        size_t off = 0;
        while (off < data.size()) {
          ssize_t n = ::write(fd, data.data() + off, data.size() - off);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) break;
          off += static_cast<size_t>(n);
        }
        ::close(fd);
      });
    }
    in_wr.reset();
    Result<engine::Outcome> outcome = run.ok() ? (*run)->wait() : Result<engine::Outcome>(run.error());
    {
      std::lock_guard<std::mutex> pl(proc->mu);
      proc->run = nullptr;
      proc->stdin_wr.reset();
    }
    // The command's copies are gone: ours closed, the pumps see the end of what it wrote.
    in_rd.reset();
    out_wr.reset();
    err_wr.reset();
    if (feeder.joinable()) feeder.join();
    pumps.join();
    if (!outcome.ok()) {
      write_audit(std::nullopt, outcome.error().message);
      throw RpcError{kRunFailed, outcome.error().message};
    }
    OutcomeRecord rec = audit.outcome;
    rec.exit_code = outcome->exit_code;
    rec.violations = outcome->violations;
    rec.more = outcome->more;
    rec.elapsed_ms = ms_since(t0);
    json r = outcome_json(rec);
    r["processId"] = proc->id;
    r["policyId"] = policy->policy_id;
    r.update(json{{"timings",
                   {{"prepareMs", prepare_ms},
                    {"totalMs", ms_since(t0)},
                    {"serverPid", static_cast<long>(::getpid())},
                    {"preparedAhead", outcome->prepared_ahead},
                    {"planKept", outcome->plan_kept},
                    {"proxyThread", proxy_ ? engine::proxy_thread_id(*proxy_) : 0L}}}});
    if (outcome->exit_code > 128 && outcome->exit_code < 128 + 65) r["signal"] = outcome->exit_code - 128;
    if (!streamed) {
      r["stdout"] = base64_encode(out_text);
      r["stderr"] = base64_encode(err_text);
      if (out_cut || err_cut) r["outputTruncated"] = true;
    }
    audit.outcome.violations = outcome->violations;
    audit.outcome.more = outcome->more;
    write_audit(outcome->exit_code, "");
    respond(id, std::move(r));
    // The session's next sandbox, made while the client reads the answer.
    if (sandboxed) prepare_next(proc->session);
  } catch (const RpcError& e) {
    respond_error(id, e.code, e.message);
  } catch (const std::exception& e) {
    respond_error(id, kInvalidParams, e.what());
  }
  finish();
}

json Server::dispatch(const std::string& method, const json& params, const json& id, bool* responded) {
  if (method == "initialize") return initialize(params);
  if (method == "session/open") return session_open(params);
  if (method == "session/update") return session_update(params);
  if (method == "session/close") return session_close(params);
  if (method == "decide") return decide(params);
  if (method == "command/exec/write") return exec_write(params);
  if (method == "command/exec/terminate") return exec_terminate(params);
  if (method == "command/exec/signal") return exec_signal(params);
  if (method == "session/policy") return session_policy(params);
  if (method == "doctor") return doctor(params);
  if (method == "command/exec") {
    command_exec(params, id);
    *responded = true;  // by its worker, when the process ends
    return nullptr;
  }
  if (method == "shutdown") return shutdown(params);
  throw RpcError{kMethodNotFound, fmt::format("unknown method \"{}\"", method)};
}

void Server::handle_line(const std::string& line) {
  if (line.find_first_not_of(" \t\r") == std::string::npos) return;
  if (too_deep(line, 64)) return respond_error(nullptr, kInvalidRequest, "the request nests deeper than 64 levels");
  json msg = json::parse(line, nullptr, false);
  if (msg.is_discarded()) return respond_error(nullptr, kParseError, "parse error: not a JSON object");
  if (!msg.is_object()) return respond_error(nullptr, kInvalidRequest, "a request is a JSON object");
  json id = msg.contains("id") ? msg["id"] : json(nullptr);
  if (!id.is_null() && !id.is_string() && !id.is_number_integer()) {
    return respond_error(nullptr, kInvalidRequest, "\"id\" must be a string or an integer");
  }
  if (msg.contains("jsonrpc") && msg["jsonrpc"] != "2.0") {
    return respond_error(id, kInvalidRequest, "\"jsonrpc\" must be \"2.0\"");
  }
  if (!msg.contains("method")) return on_response(msg);  // the client's answer to a request of ours
  if (!msg["method"].is_string()) return respond_error(id, kInvalidRequest, "\"method\" must be a string");
  json params = msg.contains("params") ? msg["params"] : json::object();
  if (params.is_null()) params = json::object();
  if (!params.is_object()) return respond_error(id, kInvalidParams, "\"params\" must be an object");
  bool responded = false;
  try {
    json result = dispatch(msg["method"].get<std::string>(), params, id, &responded);
    if (!responded) respond(id, std::move(result));
  } catch (const RpcError& e) {
    respond_error(id, e.code, e.message);
  } catch (const std::exception& e) {
    respond_error(id, kInvalidParams, e.what());
  }
}

// No new command; the running ones may end by themselves within graceMs (default 10 s), then
// the rest are ended; the answer comes after them.
json Server::shutdown(const json& p) {
  double grace_ms = 10000;
  if (const json* g = member(p, "graceMs")) {
    if (!g->is_number() || g->get<double>() < 0) throw RpcError{kInvalidParams, "\"graceMs\" must be a number >= 0"};
    grace_ms = g->get<double>();
  }
  std::unique_lock<std::mutex> lock(mu_);
  shutting_down_ = true;
  workers_done_.wait_for(lock, std::chrono::duration<double, std::milli>(grace_ms), [&] { return workers_ == 0; });
  lock.unlock();
  end_all();
  return json::object();
}

void Server::end_all() {
  std::unique_lock<std::mutex> lock(mu_);
  shutting_down_ = true;
  for (auto& [id, proc] : procs_) {
    std::lock_guard<std::mutex> pl(proc->mu);
    proc->terminate = true;
    if (proc->run) proc->run->cancel();
  }
  workers_done_.wait(lock, [&] { return workers_ == 0; });
}

int Server::run() {
  // One proxy for the server's life: every command attaches the listeners of its own network
  // namespace to it (a connection is that command's session's by where it arrived), so no
  // command starts or restarts one.
  asker_ = std::thread([this] { asker(); });
  if (auto p = engine::start_shared_proxy(); p.ok()) {
    proxy_ = std::move(*p);
  } else {
    cfg_.log->warn("no shared proxy (" + p.error().message + "); each command starts its own");
  }
  std::string buf;
  char chunk[65536];
  for (;;) {
    ssize_t n = ::read(cfg_.in, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: every command ends, and so does the server
    buf.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      handle_line(line);
      if (shutting_down_) break;
    }
    if (shutting_down_ || out_.broken()) break;
  }
  end_all();
  standbys_.stop();
  {
    std::lock_guard<std::mutex> lock(questions_mu_);
    asker_stop_ = true;
  }
  ask_cv_.notify_all();
  if (asker_.joinable()) asker_.join();
  return 0;
}

}  // namespace

int serve(const ServerConfig& config) {
  // A client that goes away must not end the server with SIGPIPE before it ends its commands:
  // blocked in every thread of ours (the sandbox's keeper unblocks all before its exec; an
  // unsandboxed command is spawned with an empty mask).
  sigset_t pipe_only;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_only, nullptr);
  Server server(config);
  return server.run();
}

}  // namespace wb::serve
