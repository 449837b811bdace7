// `wavebox hook HOST`: the program an agent host runs before each shell command (docs/guides/).
// It reads the host's JSON on stdin and answers in the host's form (core/hook_reply.hpp). It
// never lets a command run unwrapped because something failed: every failure blocks.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cli/options.hpp"
#include "cli/setup.hpp"
#include "core/hook_reply.hpp"
#include "core/hooks.hpp"
#include "core/log.hpp"
#include "core/sys/fs.hpp"
#include "engine/engine.hpp"
#include "engine/hook_files.hpp"

namespace wb::cli {
namespace {

using hooks::Answer;
using hooks::Host;

int said(const hooks::Reply& r) {
  if (!r.out.empty()) std::fwrite(r.out.data(), 1, r.out.size(), stdout);
  if (!r.err.empty()) std::fwrite(r.err.data(), 1, r.err.size(), stderr);
  return r.status;
}

// A crash must block too: Claude Code and Codex run the command unchanged after any exit but 2
// (and Cursor after no answer), so a hook killed by a signal would let it run unwrapped.
char g_crash_answer[512];
size_t g_crash_len = 0;
int g_crash_status = 2;
void on_crash(int) {
  ssize_t ignored = ::write(g_crash_status == 2 ? 2 : 1, g_crash_answer, g_crash_len);
  (void)ignored;
  ::_exit(g_crash_status);
}
void block_on_crash(Host h) {
  const hooks::Reply r = hooks::crash_reply(h);
  const std::string& answer = r.out.empty() ? r.err : r.out;
  g_crash_status = r.status;
  g_crash_len = std::min(answer.size(), sizeof g_crash_answer);
  std::memcpy(g_crash_answer, answer.data(), g_crash_len);
  static char alt[64 * 1024];
  stack_t ss{};
  ss.ss_sp = alt;
  ss.ss_size = sizeof alt;
  ::sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_crash;
  sa.sa_flags = SA_ONSTACK;
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) ::sigaction(sig, &sa, nullptr);
}

int hook(Host h, const std::string& wavebox) {
  block_on_crash(h);
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) {
    text.append(buf, n);
    if (text.size() > (4u << 20)) return said(hooks::failure(h, "the host's input is larger than 4 MiB"));
  }
  hooks::Input in = hooks::read_input(h, text);
  if (!in.error.empty()) return said(hooks::failure(h, in.error));
  if (!in.shell) return 0;  // not a shell command: nothing of ours
  const std::string& command = in.command;
  if (command.size() > (64u << 10)) return said(hooks::failure(h, "the command is longer than 64 KiB"));
  if (engine::inside_sandbox(std::getenv("WAVEBOX_SANDBOX"))) return said(hooks::reply(h, {}, in.doc));

  const hooks::Classified c = hooks::classify(command, wavebox);
  if (c.shape == hooks::Shape::kPolicyChange)
    return said(hooks::reply(h, hooks::policy_change_answer(h, c, command), in.doc));
  Options o;
  o.cwd = in.cwd.empty() ? sys::current_dir() : in.cwd;
  auto env = load_environment(o);
  if (!env.ok()) return said(hooks::failure(h, env.error().message));
  const bool auto_allow = env->settings.sandbox.auto_allow_bash_if_sandboxed;
  if (c.shape == hooks::Shape::kWrapped)
    return said(hooks::reply(h, hooks::wrapped_answer(h, command, auto_allow), in.doc));
  Decision d = engine::decide_here(env->settings, command, false, log::process());
  if (d.decision != "deny") {
    if (std::string why = engine::wont_run_here(env->settings, d); !why.empty()) return said(hooks::failure(h, why));
  }
  return said(hooks::reply(h, hooks::decided_answer(h, d, command, wavebox, auto_allow), in.doc));
}

}  // namespace

int cmd_hook(int argc, char** argv, const char* argv0) {
  std::optional<Host> h = argc >= 1 ? hooks::host_named(argv[0]) : std::nullopt;
  if (!h) {
    std::fprintf(stderr, "usage: wavebox hook (claude | cursor | opencode | codex)  (run by the agent host)\n");
    return 2;
  }
  log::set_verbose(false);
  const char* path = std::getenv("PATH");
  return hook(*h, engine::program_path(argv0, path ? path : "", sys::current_dir()));
}

}  // namespace wb::cli
