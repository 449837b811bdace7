#include "bwrap/supervise/fuse_masks.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/fuse.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "bwrap/shim/wire.h"
#include "core/paths.hpp"

namespace wb::lnx {

bool FuseMasks::adopt(const char* flags, size_t nflags, const int* fds, size_t nfds) {
  std::vector<sys::Fd> held;
  for (size_t i = 0; i < nfds; ++i) held.emplace_back(fds[i]);
  if (nflags != expected_.size()) return false;
  size_t next = 0;
  std::vector<Served> served;
  for (size_t i = 0; i < nflags; ++i) {
    if (flags[i] == WB_FUSE_NOT) continue;
    if (flags[i] != WB_FUSE_SERVED || next == held.size()) return false;
    served.push_back({expected_[i].path, expected_[i].is_dir, std::move(held[next++])});
  }
  if (next != held.size()) return false;
  for (auto& s : served) {
    // Drained without blocking: the supervision loop polls it among its other descriptors.
    int fl = ::fcntl(s.dev.get(), F_GETFL);
    if (fl < 0 || ::fcntl(s.dev.get(), F_SETFL, fl | O_NONBLOCK) != 0) return false;
  }
  served_ = std::move(served);
  if (!served_.empty()) buf_.resize(FUSE_MIN_READ_BUFFER + 4096);
  // The shim's ids in the sandbox are the caller's (bwrap maps them unchanged).
  uid_ = ::getuid();
  gid_ = ::getgid();
  started_ = static_cast<long long>(::time(nullptr));
  return true;
}

void FuseMasks::finish(const std::function<void(const Violation&)>& sink) {
  for (auto& s : served_) {
    if (s.more == 0) continue;
    sink({Refused::kFileRead, s.path + "/...", fmt::format("{} more names looked up", s.more)});
    s.more = 0;
  }
}

bool FuseMasks::covers(const std::string& path) const {
  for (const auto& s : served_) {
    if (paths::is_within(path, s.path)) return true;  // (also once the sandbox is gone)
  }
  return false;
}

namespace {

// FUSE_STATX (Linux 6.6; protocol 7.39), newer than some headers: answered ENOSYS, so the
// kernel asks GETATTR instead (stat and statx of a mask then work as before).
constexpr uint32_t kFuseStatx = 52;
// Names of one directory mask listed one by one; beyond, counted (a command looking up names by
// the hundred thousand would otherwise push every other refusal out of the block).
constexpr size_t kNamesListed = 16;

void reply(int dev, uint64_t unique, int error, const void* body, size_t len) {
  struct fuse_out_header h {};
  h.len = static_cast<uint32_t>(sizeof h + len);
  h.error = error;
  h.unique = unique;
  struct iovec iov[2] = {{&h, sizeof h}, {const_cast<void*>(body), len}};
  // ENOENT: the request was interrupted meanwhile; nothing to do.
  (void)!::writev(dev, iov, body ? 2 : 1);
}

}  // namespace

bool FuseMasks::serve(size_t i, const std::function<void(const Violation&)>& sink) {
  Served& s = served_[i];
  for (int round = 0; round < 64 && s.dev.valid(); ++round) {
    ssize_t n = ::read(s.dev.get(), buf_.data(), buf_.size());
    if (n < 0) {
      if (errno == EINTR || errno == ENOENT) continue;  // ENOENT: a request withdrawn
      if (errno == EAGAIN) return true;
      s.dev.reset();  // ENODEV: unmounted, the sandbox is gone
      return false;
    }
    if (static_cast<size_t>(n) < sizeof(struct fuse_in_header)) continue;
    struct fuse_in_header h;
    std::memcpy(&h, buf_.data(), sizeof h);
    const char* arg = buf_.data() + sizeof h;
    const size_t arg_len = static_cast<size_t>(n) - sizeof h;
    switch (h.opcode) {
      case FUSE_LOOKUP: {
        // A name looked up in a directory mask: what the command tried to reach in it.
        std::string name(arg, strnlen(arg, arg_len));
        if (s.is_dir && !name.empty()) {
          ++refused_;
          if (s.names.count(name) || s.names.size() < kNamesListed) {
            s.names.insert(name);
            sink({Refused::kFileRead, s.path + "/" + name, ""});
          } else {
            ++s.more;
          }
        }
        reply(s.dev.get(), h.unique, -EACCES, nullptr, 0);
        break;
      }
      case FUSE_ACCESS: {
        // access(F_OK): the mask exists, as the old one did (existsSync, os.path.exists). Any
        // other use (cd, test -r, access(R_OK)) is refused, and is an attempt to read it.
        struct fuse_access_in in {};
        std::memcpy(&in, arg, std::min(arg_len, sizeof in));
        if (in.mask == 0) {
          reply(s.dev.get(), h.unique, 0, nullptr, 0);
        } else {
          ++refused_;
          sink({Refused::kFileRead, s.path, ""});
          reply(s.dev.get(), h.unique, -EACCES, nullptr, 0);
        }
        break;
      }
      case FUSE_OPEN:
      case FUSE_OPENDIR:
        ++refused_;
        sink({Refused::kFileRead, s.path, ""});
        reply(s.dev.get(), h.unique, -EACCES, nullptr, 0);
        break;
      case FUSE_GETATTR: {
        struct fuse_attr_out out {};
        out.attr_valid = 3600;
        out.attr.ino = FUSE_ROOT_ID;
        out.attr.mode = s.is_dir ? S_IFDIR : S_IFREG;  // mode 0000, as the old masks
        out.attr.nlink = s.is_dir ? 2 : 1;
        out.attr.uid = uid_;
        out.attr.gid = gid_;
        out.attr.blksize = 4096;
        out.attr.atime = out.attr.mtime = out.attr.ctime = static_cast<uint64_t>(started_);
        reply(s.dev.get(), h.unique, 0, &out, sizeof out);
        break;
      }
      case FUSE_STATFS: {
        struct fuse_statfs_out out {};
        out.st.bsize = out.st.frsize = 4096;
        out.st.namelen = 255;
        reply(s.dev.get(), h.unique, 0, &out, sizeof out);
        break;
      }
      case FUSE_FORGET:
      case FUSE_BATCH_FORGET:
      case FUSE_INTERRUPT:
        break;  // no answer is expected
      case kFuseStatx:
      case FUSE_GETXATTR:
      case FUSE_LISTXATTR:
        // ENOSYS: the kernel stops asking, and answers "not supported" itself.
        reply(s.dev.get(), h.unique, -ENOSYS, nullptr, 0);
        break;
      default:
        // Never ENOSYS for what the kernel would then allow by itself (FUSE_ACCESS, above).
        reply(s.dev.get(), h.unique, -EACCES, nullptr, 0);
        break;
    }
  }
  return true;
}

}  // namespace wb::lnx
