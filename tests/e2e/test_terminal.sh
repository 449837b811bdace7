#!/usr/bin/env bash
# A terminal stays a terminal: an interactive command reads what is typed, and Ctrl-C reaches it
# (wavebox forwards the signal into the sandbox's own session). Driven through tmux.
. "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null || { echo "no tmux"; exit 77; }
sock="$SCRATCH/tmux.sock"
# The pane's shell is bash whatever the user's login shell: dash, as a plain `sh -c`, dies of
# the Ctrl-C meant for the command (it does not wait to see whether its child handled it).
echo 'set -g default-shell /bin/bash' > "$SCRATCH/tmux.conf"
T() { tmux -S "$sock" -f "$SCRATCH/tmux.conf" "$@"; }
trap 'T kill-server 2>/dev/null; cleanup' EXIT
T new-session -d -s wb -x 120 -y 20 "cd '$WS' && '$WAVEBOX' run -- python3 -c 'import sys,time; print(\"ready\", flush=True); x=input(\"name? \"); print(\"hello\", x, \"tty\" if sys.stdin.isatty() else \"notty\", flush=True); time.sleep(30)'; echo EXIT=\$?; sleep 30"
for i in $(seq 1 50); do T capture-pane -t wb -p | grep -q "name?" && break; sleep 0.1; done
T send-keys -t wb "bob" Enter
for i in $(seq 1 50); do T capture-pane -t wb -p | grep -q "hello bob" && break; sleep 0.1; done
T send-keys -t wb C-c
for i in $(seq 1 50); do T capture-pane -t wb -p | grep -q "EXIT=" && break; sleep 0.1; done
screen=$(T capture-pane -t wb -p)
check "typed input reaches the sandboxed command" grep -q "hello bob" <<<"$screen"
check "stdin is still a terminal inside" grep -q "hello bob tty" <<<"$screen"
check "Ctrl-C reaches the command (exit 130)" grep -q "EXIT=130" <<<"$screen"
finish
