// The witness of what a plan read (core/sys/fswitness.hpp), on a real temporary tree: which
// changes count, which do not, and that what it cannot watch is said.
#include "core/sys/fswitness.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/sys/fs.hpp"

namespace fs = std::filesystem;
using wb::sys::FsReads;
using wb::sys::FsWitness;

namespace {

struct Tree {
  fs::path top;
  Tree() {
    char tmpl[] = "/tmp/wavebox-witness-test-XXXXXX";
    top = ::mkdtemp(tmpl);
    fs::create_directories(top / "ws" / "src");
    fs::create_directories(top / "home");
    fs::create_directories(top / "real1");
    fs::create_directories(top / "real2");
    std::ofstream(top / "ws" / "cfg") << "[core]\n";
    fs::create_symlink(top / "real1", top / "ws" / "link");
  }
  ~Tree() {
    std::error_code ec;
    fs::remove_all(top, ec);
  }
  std::string p(const std::string& rel) const { return (top / rel).string(); }
  // A witness of: a missing credential in home, a file read, a scanned workspace, a path
  // through a link.
  std::unique_ptr<FsWitness> watch() const {
    FsReads r;
    r.path(p("home/.ssh/id_rsa"));
    r.content(p("ws/cfg"));
    r.scan_dir(p("ws"));
    r.scan_dir(p("ws/src"));
    r.path(p("ws/link/s.txt"));
    auto w = FsWitness::watch(r);
    REQUIRE(w.ok());
    return std::move(*w);
  }
};

void write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

}  // namespace

TEST_CASE("witness: nothing changed, or only what the plan does not depend on") {
  Tree t;
  auto w = t.watch();
  CHECK(w->unchanged());
  write(t.p("ws/src/main.c"), "int x;\n");  // a plain file in a scanned directory
  write(t.p("home/notes.txt"), "n\n");      // a name in home no lookup was made of
  CHECK(w->unchanged());
}

TEST_CASE("witness: a missing path's directory made") {
  Tree t;
  auto w = t.watch();
  fs::create_directories(t.p("home/.ssh"));
  CHECK_FALSE(w->unchanged());
  CHECK_FALSE(w->unchanged());  // for good
}

TEST_CASE("witness: a subdirectory or a scanned name in a scanned directory") {
  Tree t;
  auto w = t.watch();
  fs::create_directories(t.p("ws/src/new"));
  CHECK_FALSE(w->unchanged());
  Tree u;
  auto v = u.watch();
  write(u.p("ws/src/.envrc"), "x\n");
  CHECK_FALSE(v->unchanged());
  Tree h;
  auto x = h.watch();
  write(h.p("ws/src/HEAD"), "ref: x\n");
  CHECK_FALSE(x->unchanged());
}

TEST_CASE("witness: a read file written, or given another name") {
  Tree t;
  auto w = t.watch();
  write(t.p("ws/cfg"), "[include]\n\tpath = x\n");
  CHECK_FALSE(w->unchanged());
  Tree u;
  auto v = u.watch();
  fs::create_hard_link(u.p("ws/cfg"), u.p("home/other"));
  CHECK_FALSE(v->unchanged());
}

TEST_CASE("witness: a link on the way retargeted, and its target's directory") {
  Tree t;
  auto w = t.watch();
  fs::remove(t.p("ws/link"));
  fs::create_symlink(t.p("real2"), t.p("ws/link"));
  CHECK_FALSE(w->unchanged());
  Tree u;
  auto v = u.watch();
  write(u.p("real1/s.txt"), "secret\n");  // the name looked up behind the link
  CHECK_FALSE(v->unchanged());
}

TEST_CASE("witness: a directory on the way made unsearchable") {
  Tree t;
  auto w = t.watch();
  ::chmod(t.p("home").c_str(), 0700);  // a mode change, even to the same class of access
  CHECK_FALSE(w->unchanged());
}

TEST_CASE("witness: what cannot be watched is an error, not a blind spot") {
  FsReads r;
  r.scan_dir("/proc/self");  // procfs: its changes reach no inotify watch
  CHECK_FALSE(FsWitness::watch(r).ok());
  FsReads gone;
  gone.scan_dir("/nonexistent-wavebox-witness-dir");
  CHECK_FALSE(FsWitness::watch(gone).ok());
}

TEST_CASE("witness: a later plan's reads are vouched for only when watched") {
  FsReads a, b;
  a.path("/x/y");
  a.content("/x/c");
  a.scan_dir("/w");
  b.path("/x/y");
  b.path("/x/c");  // read as a path what was watched as content: covered
  CHECK(a.includes(b));
  b.content("/x/d");
  CHECK_FALSE(a.includes(b));
  FsReads c;
  c.links("/x/c");
  CHECK_FALSE(a.includes(c));  // its link count was never watched for
}
