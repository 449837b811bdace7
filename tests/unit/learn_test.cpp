#include "core/learn.hpp"

#include <catch2/catch.hpp>

using wb::learn_from;
using wb::LearnContext;
using wb::Violation;

TEST_CASE("learn: refused writes, reads and hosts become the smallest additions") {
  LearnContext ctx{"/home/u", "/home/u/proj", {"/tmp/wavebox-1000"}};
  std::vector<Violation> v = {
      {"file-write", "/home/u/.cache/x/a.o", ""},
      {"file-write", "/home/u/.cache/x/sub/b.o", ""},
      {"file-write", "/home/u/notes.txt", ""},
      {"file-read", "/etc/app/secret.conf", ""},
      {"network-outbound", "registry.npmjs.org:443", "host is not on the allow list"},
      {"network-outbound", "db.example.test:5432", "host is not on the allow list"},
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
      {"file-write", "/home/u/proj/.git/hooks/pre-commit", ""},
      {"file-write", "/home/u/other/.git/config", ""},
      {"file-write", "/home/u/.bashrc", ""},
      {"file-write", "/home/u/proj/src/x.vscode/../.vscode/tasks.json", ""},
      {"file-write", "/home/u/proj/bare.git/hooks/post-update", ""},
      {"file-write", "/tmp/wavebox-1000/scan/abc", ""},
      {"file-read", "/home/u/.ssh/id_ed25519", ""},
      {"file-read", "/home/u/.aws/credentials", ""},
      {"network-outbound", "evil.test:443", "host is on the deny list: evil.test"},
      {"network-outbound", "10.0.0.1:80", "direct connection; use the proxy"},
      {"network-outbound", "unix:/run/docker.sock", "a host socket"},
  };
  ctx.deny_read = {"/etc/app/exact.conf"};
  v.push_back({"file-read", "/etc/app/exact.conf", ""});
  auto l = learn_from(v, ctx);
  CHECK(l.empty());
  CHECK(l.not_suggested.size() == v.size());
}
