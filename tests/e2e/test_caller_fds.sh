#!/usr/bin/env bash
# The caller's own descriptors are the command's to use as given, no more: a `>> log` outside the
# writable set handed in as stdout stays append-only and is never truncated or resized, through
# the descriptor (ftruncate, fallocate) or through /proc/self/fd (a reopen with O_TRUNC, or
# without O_APPEND). Checked on the host, twice.
. "$(dirname "$0")/lib.sh"
LOG="$SCRATCH/caller.log"
for run in 1 2; do
  for attack in 'python3 -c "import os; os.ftruncate(1, 0)"' \
                'python3 -c "import os; os.posix_fallocate(1, 0, 1000000)"' \
                'sh -c ": > /proc/self/fd/1"' \
                'python3 -c "import os; fd = os.open(\"/proc/self/fd/1\", os.O_WRONLY); os.write(fd, b\"X\")"'; do
    printf 'line1\nline2\n' > "$LOG"
    (cd "$WS" && eval "\"\$WAVEBOX\" run -- $attack" >> "$LOG" 2>/dev/null)
    check "run $run: the caller's >> log keeps its lines ($attack)" bash -c 'head -2 "$0" | tr "\n" "|" | grep -qx "line1|line2|"' "$LOG"
    check "run $run: ... and is not grown to a size the command chose" [ "$(stat -c %s "$LOG")" -lt 1000 ]
  done
done
# Appending through the descriptor, as the caller meant, still works.
printf 'line1\n' > "$LOG"
(cd "$WS" && "$WAVEBOX" run -- sh -c 'echo appended; echo again >> /proc/self/fd/1' >> "$LOG" 2>/dev/null)
check "appending to the caller's log works" bash -c '[ "$(cat "$0")" = "$(printf "line1\nappended\nagain")" ]' "$LOG"
# A file in the workspace stays the command's to truncate.
printf 'data' > "$WS/own.txt"
(cd "$WS" && "$WAVEBOX" run -- python3 -c 'import os; f = open("own.txt", "r+"); os.ftruncate(f.fileno(), 0)')
check "a workspace file can still be truncated" [ "$(stat -c %s "$WS/own.txt")" -eq 0 ]
finish
