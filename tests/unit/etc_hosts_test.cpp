// The sandbox's /etc/hosts: loopback names only, the rest left to the sandbox's resolver.
#include "core/etc_hosts.hpp"

#include <catch2/catch.hpp>

using wb::sandbox_hosts;

TEST_CASE("the sandbox's hosts file keeps this machine's loopback names only") {
  const char* host =
      "127.0.0.1\tlocalhost\n"
      "127.0.1.1 build-box.example.org build-box  # the machine's own name\n"
      "::1 localhost ip6-localhost ip6-loopback\n"
      "ff02::1 ip6-allnodes\n"
      "198.18.0.2 allowed.test other.test\n"
      "127.0.0.1 loopname.test app.localhost\n"
      "# 127.0.0.1 commented.test\n"
      "10.0.0.1 localhost-but-not.test\n";
  std::string out = sandbox_hosts(host, "build-box");
  CHECK(out.find("127.0.0.1\tlocalhost") == std::string::npos);  // rewritten with single spaces
  CHECK(out.find("127.0.0.1 localhost\n") != std::string::npos);
  CHECK(out.find("127.0.1.1 build-box.example.org build-box\n") != std::string::npos);
  CHECK(out.find("::1 localhost ip6-localhost ip6-loopback\n") != std::string::npos);
  CHECK(out.find("127.0.0.1 app.localhost\n") != std::string::npos);
  // A name the host maps elsewhere, or to its loopback without being this machine's: asked of
  // the resolver inside, so the allowlist decides it by name.
  for (const char* gone :
       {"allowed.test", "other.test", "loopname.test", "ip6-allnodes", "commented.test", "localhost-but-not.test"}) {
    INFO(gone);
    CHECK(out.find(gone) == std::string::npos);
  }
}

TEST_CASE("a hosts file without localhost still gets it") {
  std::string out = sandbox_hosts("198.18.0.2 a.test\n", "");
  CHECK(out.find("127.0.0.1 localhost\n") != std::string::npos);
  CHECK(out.find("a.test") == std::string::npos);
  CHECK(sandbox_hosts("", "h").find("127.0.0.1 localhost\n") != std::string::npos);
  // The machine's short name, when the host name is a full one.
  CHECK(sandbox_hosts("127.0.1.1 box\n", "box.example.org").find("127.0.1.1 box\n") != std::string::npos);
}
