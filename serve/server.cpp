// The JSON-RPC server: a reader on the input, one worker thread per command (the thread that
// prepares a run outlives it, as the keeper's parent-death signal needs), one writer lock.
#include "serve/server_parts.hpp"

namespace wb::serve {
namespace detail {

std::atomic<size_t> g_output_kept{0};

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

json Server::dispatch(const std::string& method, const json& params, const json& id, bool* responded) {
  if (method == "initialize") return initialize(params);
  if (method == "session/open") return session_open(params);
  if (method == "session/update") return session_update(params);
  if (method == "session/close") return session_close(params);
  if (method == "decide") return decide(params);
  if (method == "command/exec/write") return exec_write(params);
  if (method == "command/exec/terminate") return exec_terminate(params);
  if (method == "command/exec/signal") return exec_signal(params);
  if (method == "command/exec/resize") return exec_resize(params);
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

}  // namespace detail

int serve(const ServerConfig& config) {
  // A client that goes away must not end the server with SIGPIPE before it ends its commands:
  // blocked in every thread of ours (the sandbox's keeper unblocks all before its exec; an
  // unsandboxed command is spawned with an empty mask).
  sigset_t pipe_only;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_only, nullptr);
  detail::Server server(config);
  return server.run();
}

}  // namespace wb::serve
