#include "core/paths.hpp"

#include <catch2/catch.hpp>

using namespace wb::paths;

TEST_CASE("normalize collapses dots, double slashes and parent references") {
  CHECK(normalize("/a//b/./c/") == "/a/b/c");
  CHECK(normalize("/a/b/../c") == "/a/c");
  CHECK(normalize("/../..") == "/");
  CHECK(normalize("/") == "/");
}

TEST_CASE("settings paths resolve against home, root or the settings file's directory") {
  CHECK(resolve("~", "/home/u", "/w") == "/home/u");
  CHECK(resolve("~/x/y", "/home/u", "/w") == "/home/u/x/y");
  CHECK(resolve("//etc/x", "/home/u", "/w") == "/etc/x");
  CHECK(resolve("/etc/x", "/home/u", "/w") == "/etc/x");
  CHECK(resolve("build/out", "/home/u", "/w/.wave") == "/w/.wave/build/out");
  CHECK(resolve("../out", "/home/u", "/w/.wave") == "/w/out");
  CHECK(resolve("~user", "/home/u", "/w") == "/w/~user");
}

TEST_CASE("is_within respects component boundaries") {
  CHECK(is_within("/a/b", "/a"));
  CHECK(is_within("/a", "/a"));
  CHECK_FALSE(is_within("/ab", "/a"));
  CHECK(is_within("/x", "/"));
}

TEST_CASE("ancestors, depth, parent and basename") {
  CHECK(ancestors("/a/b/c") == std::vector<std::string>{"/", "/a", "/a/b"});
  CHECK(depth("/") == 0);
  CHECK(depth("/a/b") == 2);
  CHECK(parent("/a/b") == "/a");
  CHECK(parent("/a") == "/");
  CHECK(basename("/a/b c") == "b c");
  CHECK(has_glob("/a/*.pem"));
  CHECK_FALSE(has_glob("/a/b"));
}
