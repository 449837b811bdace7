#include "seatbelt/helper.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "seatbelt/plan.hpp"

namespace wb::seatbelt {

int helper_main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "wavebox: %s is started by wavebox itself\n", kHelperArg);
    return 125;
  }
  char* end = nullptr;
  long fd = std::strtol(argv[2], &end, 10);
  if (*end != '\0' || fd < 3 || fd > 1024) return 125;
  const int report = static_cast<int>(fd);
  // The command must not inherit the report descriptor: its end closing is the "exec worked".
  if (::fcntl(report, F_SETFD, FD_CLOEXEC) != 0) return 125;
  const char started = kStarted;
  if (::write(report, &started, 1) != 1) return 125;
  ::execv(argv[3], argv + 4);
  const int err = errno;
  char msg[1 + sizeof err];
  msg[0] = kExecFailed;
  std::memcpy(msg + 1, &err, sizeof err);
  (void)!::write(report, msg, sizeof msg);
  std::fprintf(stderr, "wavebox: %s: %s\n", argv[4], std::strerror(err));
  return err == ENOENT ? 127 : 126;
}

}  // namespace wb::seatbelt
