// The compiled-program cache of bwrap/launch/seccomp.cpp: same bytes as a fresh compile, used when
// present, ignored and rewritten when it cannot be a program, one file per recipe.
#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "bwrap/launch/seccomp.hpp"
#include "core/sys/fs.hpp"

using namespace wb;
using namespace wb::lnx;

namespace {

std::string contents(int fd) {
  std::string out;
  char buf[4096];
  ::lseek(fd, 0, SEEK_SET);
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::lseek(fd, 0, SEEK_SET);
  return out;
}

std::set<std::string> files(const std::string& dir) {
  std::set<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  while (struct dirent* e = d ? ::readdir(d) : nullptr) {
    if (e->d_name[0] != '.') out.insert(e->d_name);
  }
  if (d) ::closedir(d);
  return out;
}

}  // namespace

TEST_CASE("seccomp: a cached program is the compiled one, used when present, replaced when implausible") {
  char tmpl[] = "/tmp/wb-bpf-cache-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  std::string dir = tmpl;
  sys::Fd fd(::memfd_create("t", MFD_CLOEXEC));
  REQUIRE(fd.valid());
  auto rules = seccomp_rules({false});

  REQUIRE(compile_seccomp(rules, fd.get()).ok());
  std::string fresh = contents(fd.get());
  REQUIRE(fresh.size() % 8 == 0);
  CHECK(files(dir).empty());

  REQUIRE(compile_seccomp(rules, fd.get(), dir).ok());
  CHECK(contents(fd.get()) == fresh);
  auto after_first = files(dir);
  REQUIRE(after_first.size() == 1);
  std::string file = dir + "/" + *after_first.begin();
  // The file: a first line naming the libseccomp that compiled it (path and identity), then the
  // program.
  std::string stored = sys::read_file(file).value();
  size_t nl = stored.find('\n');
  REQUIRE(nl != std::string::npos);
  std::string first = stored.substr(0, nl + 1);
  CHECK(first.rfind("wavebox-bpf 2 ", 0) == 0);
  CHECK(first.find("libseccomp") != std::string::npos);
  CHECK(stored.substr(nl + 1) == fresh);

  // The file is what a later run takes: a (still plausible) program written there comes back.
  std::string other = fresh;
  other[0] ^= 1;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << first << other;
  REQUIRE(compile_seccomp(rules, fd.get(), dir).ok());
  CHECK(contents(fd.get()) == other);

  // Compiled by another library (or the same one, upgraded since): compiled again, replaced.
  std::string elsewhere = first;
  size_t ino_at = elsewhere.find(' ', 14) + 1;                           // "wavebox-bpf 2 DEV INO ..."
  elsewhere.replace(ino_at, elsewhere.find(' ', ino_at) - ino_at, "0");  // inode 0: no file has it
  std::ofstream(file, std::ios::binary | std::ios::trunc) << elsewhere << other;
  REQUIRE(compile_seccomp(rules, fd.get(), dir).ok());
  CHECK(contents(fd.get()) == fresh);
  CHECK(sys::read_file(file).value() == first + fresh);

  // Not a whole number of instructions: compiled again and replaced.
  std::ofstream(file, std::ios::binary | std::ios::trunc) << first << "1234567";
  REQUIRE(compile_seccomp(rules, fd.get(), dir).ok());
  CHECK(contents(fd.get()) == fresh);
  CHECK(sys::read_file(file).value() == first + fresh);

  // Other rules, other program, other file; the observer has its own.
  REQUIRE(compile_seccomp(seccomp_rules({true}), fd.get(), dir).ok());
  CHECK(contents(fd.get()) != fresh);
  REQUIRE(compile_observer(fd.get(), dir).ok());
  std::string observer = contents(fd.get());
  CHECK(files(dir).size() == 3);
  // The sandbox's one program holds both: longer than either, and a file of its own.
  REQUIRE(compile_sandbox_filter(rules, fd.get(), dir).ok());
  std::string both = contents(fd.get());
  CHECK(both.size() > fresh.size());
  CHECK(both.size() > observer.size());
  CHECK(files(dir).size() == 4);

  for (const auto& f : files(dir)) ::unlink((dir + "/" + f).c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("seccomp: first compilations on several threads at once all succeed, byte for byte") {
  auto rules = seccomp_rules({false});
  sys::Fd ref(::memfd_create("ref", MFD_CLOEXEC));
  REQUIRE(compile_seccomp(rules, ref.get()).ok());
  const std::string want = contents(ref.get());
  std::vector<std::string> got(6);
  std::vector<int> ok(6, 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] {
      sys::Fd fd(::memfd_create("t", MFD_CLOEXEC));
      ok[i] = compile_seccomp(rules, fd.get()).ok();
      got[i] = contents(fd.get());
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(ok[i]);
    CHECK(got[i] == want);
  }
}
