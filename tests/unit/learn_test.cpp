#include "core/learn.hpp"

#include <catch2/catch.hpp>

using wb::learn_from;
using wb::LearnContext;
using wb::Violation;

TEST_CASE("learn: refused writes, reads and hosts become the smallest additions") {
  LearnContext ctx{"/home/u", "/home/u/proj", {"/tmp/wavebox-1000"}};
  std::vector<Violation> v = {
      {wb::Refused::kFileWrite, "/home/u/.cache/x/a.o", ""},
      {wb::Refused::kFileWrite, "/home/u/.cache/x/sub/b.o", ""},
      {wb::Refused::kFileWrite, "/home/u/notes.txt", ""},
      {wb::Refused::kFileRead, "/etc/app/secret.conf", ""},
      {wb::Refused::kConnect, "registry.npmjs.org:443", "host is not on the allow list", wb::RefusalCode::kNotAllowed},
      {wb::Refused::kConnect, "db.example.test:5432", "host is not on the allow list", wb::RefusalCode::kNotAllowed},
  };
  auto l = learn_from(v, ctx);
  CHECK(l.allow_write == std::vector<std::string>{"/home/u/.cache/x", "/home/u/notes.txt"});
  CHECK(l.allow_read == std::vector<std::string>{"/etc/app/secret.conf"});
  CHECK(l.allowed_domains == std::vector<std::string>{"registry.npmjs.org", "db.example.test:5432"});
  CHECK(l.not_suggested.empty());
  auto json = wb::learned_settings_json(l);
  CHECK(json.find("\"allowWrite\"") != std::string::npos);
}

TEST_CASE("learn: never a protected path, a repository's insides, a credential, the workspace's guards") {
  LearnContext ctx{"/home/u", "/home/u/proj", {"/tmp/wavebox-1000"}};
  std::vector<Violation> v = {
      {wb::Refused::kFileWrite, "/home/u/proj/.git/hooks/pre-commit", ""},
      {wb::Refused::kFileWrite, "/home/u/other/.git/config", ""},
      {wb::Refused::kFileWrite, "/home/u/.bashrc", ""},
      {wb::Refused::kFileWrite, "/home/u/proj/src/x.vscode/../.vscode/tasks.json", ""},
      {wb::Refused::kFileWrite, "/home/u/proj/bare.git/hooks/post-update", ""},
      {wb::Refused::kFileWrite, "/tmp/wavebox-1000/scan/abc", ""},
      {wb::Refused::kFileRead, "/home/u/.ssh/id_ed25519", ""},
      {wb::Refused::kFileRead, "/home/u/.aws/credentials", ""},
      {wb::Refused::kConnect, "evil.test:443", "host is on the deny list: evil.test", wb::RefusalCode::kDeniedHost},
      {wb::Refused::kConnect, "10.0.0.1:80", "direct connection; use the proxy", wb::RefusalCode::kDirect},
      {wb::Refused::kConnect, "unix:/run/docker.sock", "a host socket", wb::RefusalCode::kHostSocket},
  };
  ctx.deny_read = {"/etc/app/exact.conf"};
  v.push_back({wb::Refused::kFileRead, "/etc/app/exact.conf", ""});
  auto l = learn_from(v, ctx);
  CHECK(l.empty());
  CHECK(l.not_suggested.size() == v.size());
}

TEST_CASE("learn: a refused lookup is a host to allow, unless a rule or a limit refused it") {
  LearnContext ctx{"/home/u", "/home/u/proj", {}};
  std::vector<Violation> v = {
      {wb::Refused::kDns, "api.example.test", "not on the allow list", wb::RefusalCode::kNotAllowed},
      {wb::Refused::kDns, "evil.test", "host is on the deny list: evil.test", wb::RefusalCode::kDeniedHost,
       "evil.test"},
      {wb::Refused::kDns, "many.test", "the run's names are used up (4096)", wb::RefusalCode::kLimit},
      {wb::Refused::kConnect, "127.0.0.1.nip.test:443", "resolves to a local address (127.0.0.1)",
       wb::RefusalCode::kLocalAddress},
      {wb::Refused::kConnect, "late.test:443", "declined through the approval request", wb::RefusalCode::kDeclined},
  };
  auto l = learn_from(v, ctx);
  CHECK(l.allowed_domains == std::vector<std::string>{"api.example.test"});
  CHECK(l.not_suggested.size() == 4);
}

TEST_CASE("learn: every kind of refusal is answered: limits and other platforms' operations are said, not suggested") {
  LearnContext ctx{"/home/u", "/home/u/proj", {"/tmp/wavebox-1000"}};
  Violation mach{wb::Refused::kOther, "com.apple.pasteboard.1", ""};
  mach.other = "mach-lookup";
  std::vector<Violation> v = {
      {wb::Refused::kMemory, "512 MiB", "sandbox.resources.memoryMB"},
      {wb::Refused::kProcesses, "64", "sandbox.resources.pids"},
      {wb::Refused::kCpu, "0.5 CPUs", "sandbox.resources.cpus"},
      mach,
      {wb::Refused::kFileRead, "/home/u/.ssh/...", "12 more names looked up"},
      {wb::Refused::kFileRead, "/etc/shadow-like", "protected", wb::RefusalCode::kProtected},
  };
  auto l = learn_from(v, ctx);
  CHECK(l.allow_write.empty());
  CHECK(l.allow_read.empty());
  CHECK(l.allowed_domains.empty());
  REQUIRE(l.not_suggested.size() == 6);
  CHECK(l.not_suggested[0].find("sandbox.resources.memoryMB") != std::string::npos);
  CHECK(l.not_suggested[3].find("mach-lookup") != std::string::npos);
}

TEST_CASE("learn: a suggested directory never holds a guarded path or a PATH directory: the file itself instead") {
  LearnContext ctx{"/home/u", "/home/u/proj", {"/tmp/wavebox-1000", "/home/u/tools/bin"}};
  std::vector<Violation> v = {
      {wb::Refused::kFileWrite, "/home/u/.config/new.json", ""},  // ~/.config holds ~/.config/git
      {wb::Refused::kFileWrite, "/home/u/tools/notes.txt", ""},   // ~/tools holds a PATH directory
      {wb::Refused::kFileWrite, "/home/u/data/app/out.log", ""},  // nothing guarded below
  };
  auto l = learn_from(v, ctx);
  CHECK(l.allow_write ==
        std::vector<std::string>{"/home/u/.config/new.json", "/home/u/tools/notes.txt", "/home/u/data/app"});
  CHECK(wb::holds_guarded("/home/u/.config", ctx));
  CHECK(wb::holds_guarded("/home/u/tools", ctx));
  CHECK_FALSE(wb::holds_guarded("/home/u/data/app", ctx));
}
