// One command's life in the server: its request (cwd, environment, limits, approval), the worker
// that prepares, starts and waits for it, its stdin, signals and output, and its answer.
#include "serve/server_parts.hpp"

namespace wb::serve::detail {

// A request that names a session acts only on that session's processes.
void check_session(const json& p, const std::string& process, const std::string& owner) {
  if (auto sid = opt_string(p, "sessionId"); sid && *sid != owner) {
    throw RpcError{kUnknownProcess, fmt::format("process \"{}\" is not in session \"{}\"", process, *sid)};
  }
}

// "size": {"rows", "cols"} (80x24 when not given).
struct winsize terminal_size(const json& p) {
  struct winsize ws = {24, 80, 0, 0};
  if (const json* size = member(p, "size")) {
    auto dim = [&](const char* key, unsigned short& into) {
      const json* v = size->is_object() ? member(*size, key) : nullptr;
      if (!v || !v->is_number_integer() || v->get<long long>() < 1 || v->get<long long>() > 10000) {
        throw RpcError{kInvalidParams, "\"size\" must be {\"rows\": N, \"cols\": N} with 1 <= N <= 10000"};
      }
      into = static_cast<unsigned short>(v->get<long long>());
    };
    dim("rows", ws.ws_row);
    dim("cols", ws.ws_col);
  }
  return ws;
}

// A pseudo-terminal pair of that size: (master, slave).
std::pair<sys::Fd, sys::Fd> open_terminal(const struct winsize& ws) {
  sys::Fd master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  char name[128];
  if (!master.valid() || ::grantpt(master.get()) != 0 || ::unlockpt(master.get()) != 0 ||
      ::ptsname_r(master.get(), name, sizeof name) != 0) {
    throw RpcError{kRunFailed, "no pseudo-terminal for the command"};
  }
  sys::Fd slave(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!slave.valid() || ::ioctl(master.get(), TIOCSWINSZ, &ws) != 0) {
    throw RpcError{kRunFailed, "no pseudo-terminal for the command"};
  }
  return {std::move(master), std::move(slave)};
}

// The running process a request names (of the session it names, if any).
std::shared_ptr<Proc> Server::process(const json& p, const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = procs_.find(id);
  if (it == procs_.end()) throw RpcError{kUnknownProcess, fmt::format("unknown process \"{}\"", id)};
  check_session(p, id, it->second->session);
  return it->second;
}

json Server::exec_write(const json& p) {
  const std::string id = need_string(p, "processId");
  std::shared_ptr<Proc> proc = process(p, id);
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
  if (opt_bool(p, "closeStdin")) {
    if (proc->tty.valid() && proc->stdin_wr.valid()) write_stdin(proc->stdin_wr.get(), "\x04");
    proc->stdin_wr.reset();
  }
  return json::object();
}

// A terminal's size, as the client's: the kernel keeps it, the command is told by SIGWINCH.
json Server::exec_resize(const json& p) {
  const std::string id = need_string(p, "processId");
  std::shared_ptr<Proc> proc = process(p, id);
  struct winsize ws = terminal_size(p);
  std::lock_guard<std::mutex> pl(proc->mu);
  if (!proc->tty.valid()) throw RpcError{kInvalidParams, fmt::format("process \"{}\" has no terminal (\"tty\")", id)};
  if (::ioctl(proc->tty.get(), TIOCSWINSZ, &ws) != 0)
    throw RpcError{kRunFailed, "the terminal's size could not be set"};
  if (proc->run) proc->run->signal(SIGWINCH);
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
  // The session's directory is the workspace, whatever directory the command starts in: a link
  // a concurrent command plants in place of that directory after the check below changes where
  // the command starts (read-only there), never what is writable.
  req.workspace = session_cwd;
  if (auto c = opt_string(p, "cwd")) {
    // Inside the session's workspace, links resolved: a command never starts in another
    // session's workspace, nor through a link a command planted.
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
    const bool tty = opt_bool(p, "tty");
    if (tty && (!streamed || input)) {
      throw RpcError{kInvalidParams, "\"tty\" needs \"streamOutput\": true and stdin through command/exec/write"};
    }
    int in_pipe[2], out_pipe[2], err_pipe[2];
    if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
      throw RpcError{kRunFailed, "no pipes for the command's output"};
    }
    sys::Fd in_rd(in_pipe[0]), in_wr(in_pipe[1]), out_rd(out_pipe[0]), out_wr(out_pipe[1]), err_rd(err_pipe[0]),
        err_wr(err_pipe[1]);
    if (tty) {
      // A terminal for an interactive command: its three standard descriptors are the terminal,
      // what it writes (both streams, as on a terminal) comes back as stdout, writes are typed.
      auto [master, slave] = open_terminal(terminal_size(p));
      out_rd = std::move(master);
      out_wr = std::move(slave);
      err_wr.reset();  // nothing comes on stderr: the end at once
      in_wr = sys::Fd(::fcntl(out_rd.get(), F_DUPFD_CLOEXEC, 3));
      std::lock_guard<std::mutex> pl(proc->mu);
      proc->tty = sys::Fd(::fcntl(out_rd.get(), F_DUPFD_CLOEXEC, 3));
    }
    sys::Fd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    // stdin: the bytes given (then its end), a pipe for command/exec/write when the output is
    // streamed, else nothing to read (/dev/null).
    const bool interactive = !input && streamed;
    req.stdio[0] = tty ? out_wr.get() : input || interactive ? in_rd.get() : null.get();
    req.stdio[1] = out_wr.get();
    req.stdio[2] = tty ? out_wr.get() : err_wr.get();
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
      proc->tty.reset();
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

}  // namespace wb::serve::detail
