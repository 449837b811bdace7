#pragma once
// A terminal of the sandbox's own for an interactive run: a pty whose slave is the command's
// stdin and stdout (and stderr when that is the same terminal) and its controlling terminal, in
// a session of its own, so job control works inside (bash's Ctrl-Z, jobs, fg, bg); wavebox
// relays its master to the caller's terminal, which is raw for the length of the run (Ctrl-C
// and Ctrl-Z are bytes for the sandbox's terminal, which signals its foreground job). The
// command cannot reach the caller's terminal through it (TIOCSTI lands in its own).
#include <termios.h>

#include <memory>
#include <string>

#include "core/sys/fd.hpp"

namespace wb::lnx {

class Terminal {
 public:
  // A pty with the caller's modes and size when in and out are the same terminal, wavebox is
  // its foreground job and WAVEBOX_PTY is not 0; null otherwise (the command then gets the
  // caller's descriptors: a background `wavebox run ... &` never touches the terminal's modes).
  static std::unique_ptr<Terminal> open_for(int in, int out, int err);
  ~Terminal();  // the caller's modes back
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  int slave() const { return slave_.get(); }
  int master() const { return master_.get(); }
  // The caller's terminal, to read from: -1 at its end, or while wavebox is not in the
  // foreground (a background job reading it would only get EIO).
  int in() const { return in_eof_ || !foreground() ? -1 : in_; }
  bool foreground() const;
  bool err_too() const { return err_too_; }
  // The caller's terminal raw (its output processing kept, so wavebox's own lines stay lines)
  // while wavebox is its foreground job, and back as it was. Both idempotent.
  void raw();
  void restore();
  void resize();  // the caller's window size to the sandbox's terminal (after SIGWINCH)
  bool pending_input() const { return !to_master_.empty(); }
  // The supervision loop's: the caller's typing to the master; the master's output to the
  // caller (and what waits for the master, when it can take it).
  void from_caller();
  void to_caller();
  void flush_input();
  void drain();  // what the command wrote, out before wavebox's report

 private:
  Terminal() = default;
  sys::Fd master_, slave_;
  int in_ = -1, out_ = -1;
  bool err_too_ = false, in_eof_ = false, is_raw_ = false;
  struct termios saved_ {};
  std::string to_master_;
};

}  // namespace wb::lnx
