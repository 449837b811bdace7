#pragma once
// A terminal of the sandbox's own for an interactive run: a pty whose slave is the command's
// stdin and stdout (and stderr when that is the same terminal) and its controlling terminal, in
// a session of its own, so job control works inside (bash's Ctrl-Z, jobs, fg, bg); wavebox
// relays its master to the caller's terminal, which is raw while wavebox is its foreground job
// (Ctrl-C and Ctrl-Z are then bytes for the sandbox's terminal, which signals its foreground
// job). The command cannot reach the caller's terminal through it (TIOCSTI, TIOCSETD, stty land
// in its own). Where only some of the standard descriptors are the terminal (a pipe to less),
// the command gets the caller's terminal as before, and TerminalModes puts its modes back.
#include <termios.h>

#include <memory>
#include <string>

#include "core/sys/fd.hpp"

namespace wb::lnx {

class Terminal {
 public:
  // A pty with the caller's modes and size when in and out are the same terminal, or when any
  // of the three is a terminal wavebox is a background job of (the pty then stands for each of
  // them that is), and WAVEBOX_PTY is not 0; null otherwise (the command then gets the caller's
  // descriptors).
  static std::unique_ptr<Terminal> open_for(int in, int out, int err);
  ~Terminal();  // the caller's modes back
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  int slave() const { return slave_.get(); }
  // -1 once the caller's terminal hung up (the sandbox's was hung up in turn).
  int master() const { return master_.get(); }
  // The caller's terminal, to read from: -1 after its hang-up, while what was typed waits for
  // the sandbox's terminal, or while wavebox is not its foreground job (a background job
  // reading it would take what the user types for the shell).
  int in() const { return in_ < 0 || hung_up_ || !to_master_.empty() || !foreground() ? -1 : in_; }
  // The caller's terminal, to write to when output waits (-1 otherwise).
  int out_waiting() const { return to_caller_.empty() ? -1 : out_.get(); }
  // Which of the command's standard descriptors are the sandbox's terminal (those that were the
  // caller's). With stdin among them it is the command's controlling terminal.
  bool in_too() const { return in_too_; }
  bool out_too() const { return out_too_; }
  bool err_too() const { return err_too_; }
  bool foreground() const;
  // The caller's terminal raw while wavebox is its foreground job (looked at again on each
  // wake-up: `bg` then `fg` sends no signal), and back as it was. Both idempotent.
  void raw();
  void restore();
  // Whether the loop should look again soon: input is relayed, and the terminal is not raw yet.
  bool waiting_for_foreground() const { return in_too_ && !hung_up_ && !is_raw_; }
  void resize();  // the caller's window size to the sandbox's terminal (after SIGWINCH)
  bool pending_input() const { return !to_master_.empty(); }
  bool wants_output() const { return master_.valid() && to_caller_.size() < (1u << 16); }
  // The supervision loop's: the caller's typing to the master; the master's output to the
  // caller (without blocking: a terminal nobody reads must not stall the loop).
  void from_caller();
  void flush_input();
  void from_master();
  void to_caller();
  void drain();  // what the command wrote, out before wavebox's report (bounded)

 private:
  Terminal() = default;
  void hang_up();
  sys::Fd master_, slave_;
  sys::Fd out_;    // the caller's terminal opened anew, non-blocking (its own descriptor untouched)
  int in_ = -1;    // the caller's terminal to read from (-1: the command's stdin is not the terminal)
  int term_ = -1;  // the caller's terminal: its foreground, modes and size
  bool in_too_ = true, out_too_ = true, err_too_ = false, hung_up_ = false, is_raw_ = false, ctty_ = true;
  bool saved_taken_ = false;  // saved_ holds the caller's modes (taken in the foreground)
  struct termios saved_ {};
  std::string to_master_, to_caller_;
};

// The modes of a caller's terminal the command was handed as it is (some of its standard
// descriptors are it, not both stdin and stdout): put back after the run if the command changed
// them (stty -echo), while wavebox is its foreground job.
class TerminalModes {
 public:
  explicit TerminalModes(const int* stdio);
  ~TerminalModes();
  TerminalModes(const TerminalModes&) = delete;
  TerminalModes& operator=(const TerminalModes&) = delete;

 private:
  int fd_ = -1;
  struct termios saved_ {};
};

}  // namespace wb::lnx
