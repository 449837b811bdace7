#!/usr/bin/env bash
# A terminal stays a terminal: an interactive command reads what is typed, and Ctrl-C reaches it
# (wavebox forwards the signal into the sandbox's own session). Driven through tmux.
. "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null || { echo "no tmux"; exit 77; }
sock="$SCRATCH/tmux.sock"
# The pane's shell is bash whatever the user's login shell: dash, as a plain `sh -c`, dies of
# the Ctrl-C meant for the command (it does not wait to see whether its child handled it).
# The server outlives its sessions: a new-session right after the last kill-session would
# otherwise meet a server on its way out ("server exited unexpectedly").
printf 'set -g default-shell /bin/bash\nset -s exit-empty off\n' > "$SCRATCH/tmux.conf"
T() { tmux -S "$sock" -f "$SCRATCH/tmux.conf" "$@"; }
trap 'T kill-server 2>/dev/null; cleanup' EXIT
T new-session -d -s wb -x 120 -y 20 "cd '$WS' && '$WAVEBOX' run -- python3 -c 'import sys,time; print(\"ready\", flush=True); x=input(\"name? \"); print(\"hello\", x, \"tty\" if sys.stdin.isatty() else \"notty\", flush=True); time.sleep(30)'; echo EXIT=\$?; sleep 30"
for i in $(seq 1 50); do T capture-pane -t wb -p | grep -q "name?" && break; sleep 0.1; done
T send-keys -t wb "bob" Enter
for i in $(seq 1 50); do T capture-pane -t wb -p | grep -q "hello bob" && break; sleep 0.1; done
T send-keys -t wb C-c
for i in $(seq 1 50); do T capture-pane -t wb -p | grep -q "EXIT=[0-9]" && break; sleep 0.1; done
screen=$(T capture-pane -t wb -p)
check "typed input reaches the sandboxed command" grep -q "hello bob" <<<"$screen"
check "stdin is still a terminal inside" grep -q "hello bob tty" <<<"$screen"
check "Ctrl-C reaches the command (exit 130)" grep -q "EXIT=130" <<<"$screen"
T kill-session -t wb 2>/dev/null

# Job control: Ctrl-Z stops the command and wavebox together (the shell gets its prompt back),
# fg resumes both. The command prints to the terminal, which needs no supervised call: were it
# not stopped, it would go on printing behind the prompt.
state_of() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null; }
last_tick() { T capture-pane -t jc -p -S -200 | grep -o 'tick[0-9][0-9]*' | tail -1 | tr -dc 0-9; }
T new-session -d -s jc -x 120 -y 20 "cd '$WS' && exec bash --norc --noprofile -i"
T send-keys -t jc "'$WAVEBOX' run -- sh -c 'i=0; while [ \$i -lt 600 ]; do echo tick\$i; i=\$((i+1)); sleep 0.05; done'" Enter
for i in $(seq 1 100); do [ -n "$(last_tick)" ] && break; sleep 0.1; done
T send-keys -t jc C-z
for i in $(seq 1 50); do T capture-pane -t jc -p | grep -q "Stopped" && break; sleep 0.1; done
check "job control: Ctrl-Z gives the shell its prompt back (wavebox stopped)" bash -c 'grep -q Stopped <<<"$0"' "$(T capture-pane -t jc -p)"
wbpid=$(pgrep -f "wavebox run -- sh -c i=0" | head -1)
cmdpid=""
# The sandboxed sh of this test (other tests' commands may run meanwhile): its own script.
for p in $(pgrep -f "do echo tick"); do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = sh ] && cmdpid=$p; done
sleep 0.3
a=$(last_tick); sleep 1; b=$(last_tick)
check "job control: wavebox is stopped" [ "$(state_of "$wbpid")" = T ]
check "job control: the command is stopped" bash -c '[ -n "$0" ] && [ "$(awk "{print \$3}" /proc/$0/stat)" = T ]' "$cmdpid"
check "job control: nothing printed while stopped ($a, $b)" bash -c '[ -n "$0" ] && [ "$0" = "$1" ]' "$a" "$b"
T send-keys -t jc "fg" Enter
sleep 1.5
c=$(last_tick)
check "job control: fg resumes the command ($b -> $c)" bash -c '[ -n "$0" ] && [ "$0" -gt "$1" ]' "$c" "$b"
check "job control: and wavebox (not stopped)" bash -c '[ "$(awk "{print \$3}" /proc/$0/stat)" != T ]' "$wbpid"
T send-keys -t jc C-c
for i in $(seq 1 50); do [ -d "/proc/$wbpid" ] || break; sleep 0.1; done
check "job control: Ctrl-C after fg still ends it" [ ! -d "/proc/$wbpid" ]
check "job control: and the command" bash -c '[ -n "$0" ] && [ ! -d "/proc/$0" ]' "$cmdpid"
T kill-session -t jc 2>/dev/null

# An interactive shell inside has job control: the command's terminal is a pty of its own, whose
# Ctrl-Z stops the shell's foreground job (not wavebox); jobs, fg, Ctrl-C work; the caller's
# terminal is as it was afterwards.
T new-session -d -s sh -x 120 -y 30 "cd '$WS' && exec bash --norc --noprofile -i"
T send-keys -t sh "stty -a | grep -o -- '-*icanon' > '$SCRATCH/before.txt'; PS1='outer\$ '" Enter
T send-keys -t sh "'$WAVEBOX' run -- bash --norc --noprofile -i; echo EXIT=\$?" Enter
for i in $(seq 1 50); do T capture-pane -t sh -p | grep -q "bash-.*[#$] *$" && break; sleep 0.1; done
T send-keys -t sh "sleep 47" Enter
sleep 0.5
T send-keys -t sh C-z
for i in $(seq 1 50); do T capture-pane -t sh -p | grep -q "Stopped.*sleep 47" && break; sleep 0.1; done
screen=$(T capture-pane -t sh -p -S -50)
check "interactive bash: no 'no job control' warning" bash -c '! grep -qi "no job control" <<<"$0"' "$screen"
check "interactive bash: Ctrl-Z stops its job (bash says Stopped)" grep -q "Stopped.*sleep 47" <<<"$screen"
wbpid=$(pgrep -f "wavebox run -- bash --norc" | head -1)
check "interactive bash: wavebox itself runs on" bash -c '[ -n "$0" ] && [ "$(awk "{print \$3}" /proc/$0/stat)" != T ]' "$wbpid"
T send-keys -t sh "jobs; fg" Enter
sleep 0.5
T send-keys -t sh C-c
T send-keys -t sh "echo after=\$?; exit 3" Enter
for i in $(seq 1 50); do T capture-pane -t sh -p | grep -q "EXIT=[0-9]" && break; sleep 0.1; done
screen=$(T capture-pane -t sh -p -S -50)
check "interactive bash: jobs lists the stopped job" grep -q "\[1\]+ *Stopped *sleep 47" <<<"$screen"
check "interactive bash: fg, then Ctrl-C ends the job (130)" grep -q "after=130" <<<"$screen"
check "interactive bash: its exit status is wavebox's" grep -q "EXIT=3" <<<"$screen"
T send-keys -t sh "stty -a | grep -o -- '-*icanon' > '$SCRATCH/after.txt'" Enter
for i in $(seq 1 30); do [ -s "$SCRATCH/after.txt" ] && break; sleep 0.1; done
check "the caller's terminal is back as it was (canonical mode)" bash -c '[ -s "$0" ] && cmp -s "$0" "$1"' "$SCRATCH/before.txt" "$SCRATCH/after.txt"
T kill-session -t sh 2>/dev/null

# The caller's terminal when only some of the descriptors are it (a pipe to cat): handed over
# as it is, but its line discipline stays (TIOCSETD refused) and its modes come back.
T new-session -d -s md -x 120 -y 20 "cd '$WS' && exec bash --norc --noprofile -i"
T send-keys -t md "'$WAVEBOX' run -- python3 -c 'import fcntl, struct, termios, subprocess
try: fcntl.ioctl(0, termios.TIOCSETD, struct.pack(\"i\", 27)); print(\"setd-done\")
except OSError: print(\"setd-refused\")
subprocess.run([\"stty\", \"-echo\"])' | cat; stty -a | grep -o -- ' -*echo ' | head -1 > '$SCRATCH/echo.txt'" Enter
for i in $(seq 1 50); do [ -s "$SCRATCH/echo.txt" ] && break; sleep 0.1; done
check "a handed-over terminal: its line discipline cannot be changed" grep -q "setd-refused" <<<"$(T capture-pane -t md -p)"
check "a handed-over terminal: stty -echo inside is undone after the run" grep -qx " echo " "$SCRATCH/echo.txt"
T kill-session -t md 2>/dev/null

# The command stopping itself (SIGSTOP): under a timeout wavebox does not stop with it, and the
# timeout ends the run.
printf '{"sandbox":{"enabled":true,"resources":{"timeoutSeconds":2}}}' > "$SCRATCH/to.json"
T new-session -d -s st -x 120 -y 20 "cd '$WS' && exec bash --norc --noprofile -i"
T send-keys -t st "'$WAVEBOX' run --settings '$SCRATCH/to.json' -- sh -c 'kill -STOP \$\$'; echo EXIT=\$?" Enter
for i in $(seq 1 100); do T capture-pane -t st -p | grep -q "EXIT=[0-9]" && break; sleep 0.1; done
check "a command that stops itself under a timeout: the timeout still ends it (124)" grep -q "EXIT=124" <<<"$(T capture-pane -t st -p)"
T kill-session -t st 2>/dev/null

# Ctrl-Z, bg, fg: the terminal is raw again (no signal says so): a typed line is echoed once.
T new-session -d -s bf -x 120 -y 20 "cd '$WS' && exec bash --norc --noprofile -i"
T send-keys -t bf "'$WAVEBOX' run -- cat" Enter
sleep 1
T send-keys -t bf C-z
for i in $(seq 1 50); do T capture-pane -t bf -p | grep -q "Stopped" && break; sleep 0.1; done
T send-keys -t bf "bg" Enter
sleep 0.3
T send-keys -t bf "fg" Enter
sleep 0.6
T send-keys -t bf "zqx" Enter
sleep 0.6
check "Ctrl-Z, bg, fg: typing reaches the command and is echoed once (raw again)" \
  [ "$(T capture-pane -t bf -p | grep -o zqx | wc -l)" -eq 2 ]
T send-keys -t bf C-d
for i in $(seq 1 30); do pgrep -f "wavebox run -- ca[t]" >/dev/null || break; sleep 0.1; done
check "and Ctrl-D ends it" bash -c '! pgrep -f "wavebox run -- ca[t]" >/dev/null'
T kill-session -t bf 2>/dev/null

# The window closes: the sandbox's terminal hangs up too; a command that ignores SIGHUP and
# reads its stdin ends (its read ends), and wavebox with it.
T new-session -d -s hu -x 120 -y 20 "cd '$WS' && exec bash --norc --noprofile -i"
T send-keys -t hu "'$WAVEBOX' run -- python3 -c 'import signal, sys; signal.signal(signal.SIGHUP, signal.SIG_IGN); print(\"hup-ready\", flush=True); sys.stdin.read()'" Enter
for i in $(seq 1 50); do T capture-pane -t hu -p | grep -q "^hup-ready" && break; sleep 0.1; done
T kill-session -t hu
for i in $(seq 1 50); do pgrep -f "hup-read[y]" >/dev/null || break; sleep 0.1; done
check "the window closed: the command reading its terminal ends" bash -c '! pgrep -f "hup-read[y]" >/dev/null'

# A terminal nobody reads (a harness that stopped reading): the loop does not block on it, so
# the timeout still ends the sandbox; once the harness reads again, wavebox ends with 124.
out=$(cd "$WS" && timeout 60 python3 - "$WAVEBOX" "$SCRATCH/to.json" <<'PY'
import os, pty, subprocess, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "run", "--settings", sys.argv[2], "--", "sh", "-c",
                           "yes wb-unread-marker | head -c 50000000"])
time.sleep(6)  # the timeout is 2 s; nothing read meanwhile
left = subprocess.run(["pgrep", "-f", "^yes wb-unread-marke[r]"], capture_output=True).stdout.strip()
end = time.time() + 30
while time.time() < end:
    try:
        if not os.read(fd, 65536): break
    except OSError:
        break
done, status = os.waitpid(pid, 0)
print("sandbox", "left" if left else "gone", "status", os.waitstatus_to_exitcode(status))
PY
)
check "a terminal nobody reads: the timeout still ends the sandbox ($out)" grep -q "^sandbox gone" <<<"$out"
check "a terminal nobody reads: and the run is 124" grep -q "status 124$" <<<"$out"

# Background runs (`cmd > log &`, `cmd &`, `cmd < file &`): the command is in a session of its
# own, where no SIGTTIN would stop it reading the caller's terminal, so each standard descriptor
# that is the terminal is a terminal of the sandbox's own, fed only while wavebox is the
# foreground job. bg_start SESSION REDIRECTIONS READ: starts in a fresh shell a run that says it
# started, then reads a line (READ: "" for stdin, "<&1" for stdout) into got.txt; then types a
# line for the shell and waits until the shell ran it.
bg_start() {
  rm -f "$WS/started.txt" "$WS/got.txt"
  T new-session -d -s "$1" -x 150 -y 20 "cd '$WS' && exec bash --norc --noprofile -i"
  T send-keys -t "$1" "PS1='outer\$ '; stty -a | grep -o -- '-*icanon\|-*echo ' > '$SCRATCH/$1-before.txt'" Enter
  T send-keys -t "$1" "'$WAVEBOX' run -- sh -c 'echo printed-by-\$((3*4)); echo started > started.txt; read x $3; echo \"got:\$x\" > got.txt' $2 &" Enter
  for i in $(seq 1 50); do [ -e "$WS/started.txt" ] && break; sleep 0.1; done
  sleep 0.5
  T send-keys -t "$1" "echo typed-for-the-shell-\$((6*7))" Enter
  for i in $(seq 1 30); do T capture-pane -t "$1" -p | grep -q "typed-for-the-shell-42" && break; sleep 0.1; done
}
# fg, then a line typed for the command; waits for got.txt.
bg_fg_type() {
  T send-keys -t "$1" "fg" Enter
  sleep 1
  T send-keys -t "$1" "for-the-command" Enter
  for i in $(seq 1 30); do [ -e "$WS/got.txt" ] && break; sleep 0.1; done
}

bg_start bg "> '$SCRATCH/bg.log'" ""
check "stdin alone the terminal: a background run leaves what is typed to the shell" \
  bash -c 'grep -q "typed-for-the-shell-42" <<<"$0"' "$(T capture-pane -t bg -p)"
check "... and did not read it" [ ! -e "$WS/got.txt" ]
bg_fg_type bg
check "... brought to the foreground (fg), it reads what is typed" grep -qx "got:for-the-command" "$WS/got.txt"
T send-keys -t bg "stty -a | grep -o -- '-*icanon\|-*echo ' > '$SCRATCH/bg-after.txt'" Enter
for i in $(seq 1 30); do [ -s "$SCRATCH/bg-after.txt" ] && break; sleep 0.1; done
check "... the shell's terminal modes are as they were" cmp -s "$SCRATCH/bg-before.txt" "$SCRATCH/bg-after.txt"
T kill-session -t bg 2>/dev/null

# All three on the terminal (`cmd &`): the pty of the interactive case, whose modes are taken
# once wavebox is in the foreground (in the background they are the shell's readline modes,
# and `read` would wait for a newline that never comes).
bg_start bg2 "" ""
bg_fg_type bg2
check "all on the terminal, started in the background: after fg it reads what is typed" \
  grep -qx "got:for-the-command" "$WS/got.txt"
T kill-session -t bg2 2>/dev/null

# stdin elsewhere, stdout and stderr the terminal (`cmd < /dev/null &`): a terminal descriptor
# is open for reading and writing, so stdout could be read. A terminal for output alone: what
# the command prints appears, reading it gets nothing typed for the shell.
bg_start bg3 "< /dev/null" "<&1"
screen=$(T capture-pane -t bg3 -p)
check "stdout on the terminal, in the background: the shell gets what is typed" grep -q "typed-for-the-shell-42" <<<"$screen"
check "... the command's output appears" grep -q "printed-by-12" <<<"$screen"
check "... and reading stdout got nothing typed" bash -c '! grep -q typed "$0/got.txt" 2>/dev/null' "$WS"
T kill-session -t bg3 2>/dev/null
rm -f "$WS/started.txt" "$WS/got.txt"

# With `stty tostop`, the kernel stops a background writer of the terminal with SIGTTOU: wavebox
# relaying the command's output must not be stopped by it (it would hold the job and its
# timeout); the output appears, as it did when the command wrote to the terminal itself.
rm -f "$WS/done.txt"
T new-session -d -s bg4 -x 150 -y 20 "cd '$WS' && exec bash --norc --noprofile -i"
T send-keys -t bg4 "stty tostop; '$WAVEBOX' run -- sh -c 'sleep 0.3; echo bg-output-\$((2*21)); sleep 0.3; echo done > done.txt' < /dev/null &" Enter
for i in $(seq 1 50); do [ -e "$WS/done.txt" ] && break; sleep 0.1; done
sleep 1
check "tostop: a background run's output appears" bash -c 'grep -q "bg-output-42" <<<"$0"' "$(T capture-pane -t bg4 -p)"
check "tostop: and the run ends (wavebox not stopped)" bash -c '! pgrep -f "echo bg-outpu[t]-" >/dev/null'
T send-keys -t bg4 "stty -tostop" Enter
T kill-session -t bg4 2>/dev/null
rm -f "$WS/done.txt"

# The terminal reached another way: stdin opened through /dev/tty (its own device number, the
# same terminal), and stdin another terminal than wavebox's (`< /dev/pts/N`): stdout and stderr,
# the caller's terminal, still may not be read in the background.
bg_start bg5 "< /dev/tty > '$SCRATCH/bg5.log'" "<&2"
check "stdin through /dev/tty, in the background: the shell gets what is typed" \
  bash -c 'grep -q "typed-for-the-shell-42" <<<"$0"' "$(T capture-pane -t bg5 -p)"
check "... and reading stderr got nothing typed" bash -c '! grep -q typed "$0/got.txt" 2>/dev/null' "$WS"
T kill-session -t bg5 2>/dev/null
T new-session -d -s other -x 80 -y 10 "sleep 60"
other=$(T display-message -p -t other '#{pane_tty}')
bg_start bg6 "< $other" "<&1"
check "stdin another terminal ($other), in the background: the shell gets what is typed" \
  bash -c 'grep -q "typed-for-the-shell-42" <<<"$0"' "$(T capture-pane -t bg6 -p)"
check "... and reading stdout got nothing typed" bash -c '! grep -q typed "$0/got.txt" 2>/dev/null' "$WS"
T kill-session -t bg6 2>/dev/null
T kill-session -t other 2>/dev/null
rm -f "$WS/started.txt" "$WS/got.txt"

# Output alone through the sandbox's terminal reaches the caller's as the command wrote it: a
# line ends "\r\n" once (the caller's terminal converts), not "\r\r\n".
crlf=$(cd "$WS" && timeout 30 python3 - "$WAVEBOX" <<'PY'
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv("/bin/bash", ["bash", "--norc", "--noprofile", "-i"])
def read_for(t):
    out, end = b"", time.time() + t
    while time.time() < end:
        if select.select([fd], [], [], 0.1)[0]:
            try:
                out += os.read(fd, 65536)
            except OSError:
                break
    return out
read_for(0.5)
os.write(fd, (sys.argv[1] + " run -- sh -c 'sleep 0.3; echo line-$((40+2))' < /dev/null &\n").encode())
out = read_for(2.5)
os.write(fd, b"exit\n")
read_for(0.5)
i = out.find(b"line-42")
print(repr(out[i:i + 11]) if i >= 0 else "missing")
PY
)
check "output alone through the sandbox's terminal: one \\r\\n per line ($crlf)" [ "$crlf" = "b'line-42\\r\\n'" ]
finish
