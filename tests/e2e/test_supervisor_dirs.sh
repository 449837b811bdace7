#!/usr/bin/env bash
# The supervisor keeps the directories it resolved lately open, so that a run of creations or
# removals in the same directories does not walk each path again (bwrap/supervise/supervise.hpp,
# DirCache). A kept directory is used only while the kernel still names it by the path asked
# for: these checks move directories under a running command, from inside and from the host,
# and check on the host where its next files landed.
. "$(dirname "$0")/lib.sh"

git -C "$WS" init -q

# A command that makes a file in a directory, says so, waits (bounded) for the host to move
# things, then makes another file by the same path.
two_steps() {  # two_steps DIR FIRST SECOND
  cat > "$SCRATCH/steps.py" <<EOF
import os, sys, time
d, first, second = sys.argv[1:4]
os.makedirs(d, exist_ok=True)
os.close(os.open(os.path.join(d, first), os.O_CREAT | os.O_WRONLY, 0o644))
open("step1", "w").close()
for _ in range(100):
    if os.path.exists("go"):
        break
    time.sleep(0.05)
try:
    fd = os.open(os.path.join(d, second), os.O_CREAT | os.O_WRONLY, 0o755)
    os.write(fd, b"#!/bin/sh\necho PWNED\n")
    os.close(fd)
    print("made", second)
except OSError as e:
    print("refused", second, e.errno)
EOF
  cp "$SCRATCH/steps.py" "$WS/.steps.py"
  (cd "$WS" && exec "$WAVEBOX" run -- python3 .steps.py "$@" > "$SCRATCH/steps.out" 2>&1) &
  STEPS_PID=$!
  for _ in $(seq 1 100); do [ -e "$WS/step1" ] && break; sleep 0.05; done
}
steps_done() {
  touch "$WS/go"
  wait "$STEPS_PID"
  OUT=$(cat "$SCRATCH/steps.out")
  rm -f "$WS/step1" "$WS/go" "$WS/.steps.py"
}

# Inside one run: a directory renamed away and made again by the command itself.
wb run -- python3 -c '
import os
os.mkdir("d")
os.close(os.open("d/a", os.O_CREAT | os.O_WRONLY))
os.rename("d", "d2")
os.mkdir("d")
os.close(os.open("d/b", os.O_CREAT | os.O_WRONLY))
os.unlink("d2/a")
os.close(os.open("d2/c", os.O_CREAT | os.O_WRONLY))'
check "a file made after the command moved its directory lands in the new one" [ -f "$WS/d/b" ]
check "... not in the moved one" [ ! -e "$WS/d2/b" ]
check "the moved directory is still found by its new name" [ -f "$WS/d2/c" ] && [ ! -e "$WS/d2/a" ]
rm -rf "$WS/d" "$WS/d2"

# From the host, during the run: the directory moved away and another made in its place.
two_steps d a b
mv "$WS/d" "$WS/d-moved"
mkdir "$WS/d"
steps_done
check "after a host rename the next file lands in the directory now at that path" [ -f "$WS/d/b" ]
check "... not in the directory the host moved away" [ ! -e "$WS/d-moved/b" ]
rm -rf "$WS/d" "$WS/d-moved"

# The attack: the host (a tool, the user) moves a directory the command was writing in to a
# place that is guarded (here the repository's hooks). The command's next file by the old path
# must not land there.
two_steps stage a pre-commit
rm -rf "$WS/.git/hooks"
mv "$WS/stage" "$WS/.git/hooks"
steps_done
check "a directory moved under the command to .git/hooks gets no hook" [ ! -e "$WS/.git/hooks/pre-commit" ]
check "... the command was told" grep -q "refused pre-commit" <<<"$OUT"
rm -rf "$WS/.git/hooks"; mkdir "$WS/.git/hooks"

# Two runs in a row after such a move: the second plans afresh and guards the hooks it finds.
wb run -- sh -c 'echo evil > .git/hooks/pre-commit; true'
check "the next run cannot write the hook either" [ ! -e "$WS/.git/hooks/pre-commit" ]

# Many directories (more than the supervisor keeps open), each written and emptied again.
wb run -- sh -c 'for i in $(seq 1 60); do mkdir -p t/$i && : > t/$i/f && : > t/$i/g; done; rm -rf t/1 t/30; for i in 2 31 59; do rm t/$i/f; done'
check "60 directories: every file made" [ "$(find "$WS/t" -type f | wc -l)" -eq $((58 * 2 - 3)) ]
check "... and the removed ones gone" [ ! -e "$WS/t/1" ] && [ ! -e "$WS/t/31/f" ] && [ -e "$WS/t/31/g" ]
rm -rf "$WS/t"

finish
