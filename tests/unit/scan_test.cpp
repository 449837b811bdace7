// The workspace scan and its cache, on real directories in a temporary tree.
#include "core/sys/scan.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "core/scan_cache.hpp"

namespace fs = std::filesystem;
using wb::sys::scan_tree;

namespace {

struct Tree {
  fs::path top;
  fs::path root, cache;
  Tree() {
    char tmpl[] = "/tmp/wavebox-scan-test-XXXXXX";
    top = ::mkdtemp(tmpl);
    root = top / "ws";
    cache = top / "cache";
    fs::create_directories(root);
    fs::create_directories(cache);
  }
  ~Tree() {
    std::error_code ec;
    fs::remove_all(top, ec);
  }
  void dir(const std::string& rel) { fs::create_directories(root / rel); }
  void file(const std::string& rel) { std::ofstream(root / rel) << "x"; }
  // A repeat scan may trust the cache for every directory from here on (one changed within two
  // seconds is always read again otherwise).
  void age() {
    // Change times cannot be set back: the window in which a change is distrusted is closed
    // instead, after one clock tick.
    wb::sys::set_scan_racy_window_ns(0);
    ::usleep(20000);
  }
  std::set<std::string> hits(size_t* read = nullptr, size_t* total = nullptr) {
    auto r = scan_tree(root.string(), cache.string());
    REQUIRE(r.ok());
    if (read) *read = r->dirs_read;
    if (total) *total = r->dirs_total;
    std::set<std::string> out;
    for (const auto& h : r->hits) {
      std::string rel = h.dir == root.string() ? "" : h.dir.substr(root.string().size() + 1) + "/";
      out.insert(rel + h.name + (h.is_dir ? "/" : ""));
    }
    return out;
  }
};

}  // namespace

TEST_CASE("scan: finds protected names at any depth, and a repeat scan reads nothing unchanged") {
  Tree t;
  t.dir(".vscode");
  t.dir("a/b/.git/hooks");
  t.file("a/.mcp.json");
  t.dir("a/b/c/d/e");
  t.dir("node_modules/x/.idea");
  const std::set<std::string> want = {".vscode/", "a/b/.git/", "a/.mcp.json", "node_modules/x/.idea/"};
  size_t read = 0, total = 0;
  CHECK(t.hits(&read, &total) == want);
  CHECK(total == 10);  // ws .vscode a a/b a/b/c c/d c/d/e node_modules x x/.idea (.git not entered)
  CHECK(read == total);
  t.age();
  CHECK(t.hits(&read) == want);  // the cache still holds the recent mtimes: read again once
  CHECK(t.hits(&read) == want);
  CHECK(read == 0);
}

TEST_CASE("scan: what appears, deep or new, is found; what vanishes is gone") {
  Tree t;
  t.dir("a/b/c");
  t.dir("z/.claude");
  t.age();
  t.hits();
  t.age();
  size_t read = 0;
  REQUIRE(t.hits(&read) == std::set<std::string>{"z/.claude/"});
  CHECK(read == 0);
  t.dir("a/b/c/.git");        // inside an existing directory, three levels down
  t.dir("new/deeper/.wave");  // a whole new subtree
  fs::remove_all(t.root / "z");
  CHECK(t.hits(&read) == std::set<std::string>{"a/b/c/.git/", "new/deeper/.wave/"});
  CHECK(read == 5);  // a/b/c, the root, new, new/deeper, new/deeper/.wave
}

TEST_CASE("scan: a directory replaced by a symbolic link is not followed, nor anything below it") {
  Tree t;
  t.dir("a/b/.git");
  t.dir("elsewhere/b/.vscode");
  t.age();
  t.hits();
  t.age();
  REQUIRE(t.hits().count("a/b/.git/") == 1);
  fs::remove_all(t.root / "a");
  fs::create_directory_symlink(t.root / "elsewhere", t.root / "a");
  auto h = t.hits();
  CHECK(h == std::set<std::string>{"elsewhere/b/.vscode/"});
}

TEST_CASE("scan: a directory replaced by another of the same name is read whole again") {
  Tree t;
  t.dir("a/b");
  t.dir("a/c/.idea");
  t.age();
  t.hits();
  t.age();
  REQUIRE(t.hits() == std::set<std::string>{"a/c/.idea/"});
  fs::rename(t.root / "a", t.root / "old");
  t.dir("a/b/.git");
  t.dir("a/c");
  size_t total = 0;
  CHECK(t.hits(nullptr, &total) == std::set<std::string>{"a/b/.git/", "old/c/.idea/"});
  CHECK(total == 8);  // ws, a, a/b, a/c, old, old/b, old/c, old/c/.idea: none twice
}

TEST_CASE("scan: a damaged cache is rebuilt") {
  Tree t;
  t.dir("x/.mcp.json");
  t.file("y");
  t.hits();
  for (auto& e : fs::directory_iterator(t.cache)) {
    auto size = fs::file_size(e.path());
    fs::resize_file(e.path(), size / 2);
  }
  CHECK(t.hits() == std::set<std::string>{"x/.mcp.json/"});
  for (auto& e : fs::directory_iterator(t.cache)) std::ofstream(e.path(), std::ios::trunc) << "wavebox-scan-3";
  CHECK(t.hits() == std::set<std::string>{"x/.mcp.json/"});
}

TEST_CASE("scan cache format: round trip, and anything inconsistent refused") {
  std::vector<wb::ScanRecord> recs(3);
  recs[0].f.ino = 7;
  recs[0].subdirs = std::string_view("a\0", 2);
  recs[1].rel = "a";
  recs[1].f.parent = 0;
  recs[1].f.mtime_s = -1;
  recs[1].subdirs = std::string_view("b\0", 2);
  recs[1].hits = std::string_view("D.git\0", 6);
  recs[2].rel = "a/b";
  recs[2].f.parent = 1;
  const std::string bytes = wb::serialize_scan_cache("/ws", recs);
  std::vector<wb::ScanRecord> back;
  REQUIRE(wb::parse_scan_cache(bytes, "/ws", back));
  REQUIRE(back.size() == 3);
  CHECK(back[1].rel == "a");
  CHECK(back[1].hits == std::string_view("D.git\0", 6));
  CHECK(back[1].f.mtime_s == -1);
  CHECK(back[2].f.parent == 1);
  CHECK(back[0].f.ino == 7);
  CHECK_FALSE(wb::parse_scan_cache(bytes, "/other", back));                           // another workspace's
  CHECK_FALSE(wb::parse_scan_cache(bytes.substr(0, bytes.size() - 1), "/ws", back));  // cut short
  CHECK_FALSE(wb::parse_scan_cache(bytes + "x", "/ws", back));                        // trailing bytes
  auto bad = recs;
  bad[2].f.parent = 2;  // its own parent
  CHECK_FALSE(wb::parse_scan_cache(wb::serialize_scan_cache("/ws", bad), "/ws", back));
  bad = recs;
  bad[1].f.parent = -1;  // a second root
  CHECK_FALSE(wb::parse_scan_cache(wb::serialize_scan_cache("/ws", bad), "/ws", back));
  bad = recs;
  bad[1].rel = std::string_view("a\0b", 3);  // a NUL inside a path
  CHECK_FALSE(wb::parse_scan_cache(wb::serialize_scan_cache("/ws", bad), "/ws", back));
}

TEST_CASE("scan: a large new tree, read over several threads, is recorded whole and in order") {
  Tree t;
  std::set<std::string> want;
  for (int i = 0; i < 40; ++i) {
    for (int j = 0; j < 50; ++j) {
      std::string d = "p" + std::to_string(i) + "/q" + std::to_string(j);
      t.dir(d);
      if ((i * 50 + j) % 97 == 0) {
        t.dir(d + "/.git");
        want.insert(d + "/.git/");
      }
    }
  }
  size_t read = 0, total = 0;
  CHECK(t.hits(&read, &total) == want);
  CHECK(total == 1 + 40 + 40 * 50);
  CHECK(read == total);
  t.age();
  t.hits();
  CHECK(t.hits(&read, &total) == want);  // the saved order (parents first) parses back
  CHECK(read == 0);
  CHECK(total == 1 + 40 + 40 * 50);
}
