#!/usr/bin/env bash
# Refused reads are reported exactly, wherever the command's stderr goes: a read mask is a FUSE
# filesystem whose lookups and opens wavebox answers (EACCES) and records. Checked with stderr
# as a pipe of its own, merged into stdout, a file, /dev/null, a terminal; absolute, relative
# and linked spellings; a listing; a command that prints nothing. Without /dev/fuse the old
# masks hold and reads are recognised in a relayed stderr only (doctor says which).
. "$(dirname "$0")/lib.sh"
mkdir -p "$HOME/.ssh"
echo SECRET-KEY > "$HOME/.ssh/id_rsa"
echo SECRET-ENV > "$WS/.env"
S="$SCRATCH/s.json"
printf '{"sandbox":{"enabled":true,"filesystem":{"denyRead":["~/.ssh","%s/.env"]}}}' "$WS" > "$S"
R="$SCRATCH/r.json"
before=$(snapshot "$HOME")

# How many times line occurs in file (the block, or --report-json's list).
count_in() { grep -cxF -- "$1" "$2"; }
# Runs in the workspace with stdout and stderr as the caller sets them; the report in $R.
run_to() {  # run_to REDIRECTION COMMAND...
  local how=$1; shift
  rm -f "$R" "$SCRATCH/out"
  case $how in
    merged) (cd "$WS" && "$WAVEBOX" run --settings "$S" --report-json "$R" -- "$@" > "$SCRATCH/out" 2>&1) ;;
    file) (cd "$WS" && "$WAVEBOX" run --settings "$S" --report-json "$R" -- "$@" > /dev/null 2> "$SCRATCH/out") ;;
    null) (cd "$WS" && "$WAVEBOX" run --settings "$S" --report-json "$R" -- "$@" > /dev/null 2>&1) ;;
  esac
}
reported() { grep -qF "\"deny file-read $1\"" "$R" 2>/dev/null; }

exact=$("$WAVEBOX" doctor --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["readReports"]["exact"])')
if [ "$exact" != True ]; then
  # The fallback: a relayed stderr is read, anything else says nothing (and doctor says why).
  "$WAVEBOX" doctor > "$SCRATCH/doctor.txt"
  check "fallback: doctor says reads are recognised in stderr only" grep -q "refused reads   recognised in the command's stderr" "$SCRATCH/doctor.txt"
  wb run --settings "$S" -- cat "$HOME/.ssh/id_rsa"
  check "fallback: a read with its own stderr pipe is reported" grep -qx "deny file-read $HOME/.ssh/id_rsa" <<<"$OUT"
  check "fallback: the key is not shown" bash -c '! grep -q SECRET <<<"$0"' "$OUT"
  check "fallback: nothing changed in home" [ "$(snapshot "$HOME")" = "$before" ]
  finish
fi

"$WAVEBOX" doctor > "$SCRATCH/doctor.txt"
check "doctor: reads are reported exactly" grep -q "refused reads   exact" "$SCRATCH/doctor.txt"

key="$HOME/.ssh/id_rsa"
wb run --settings "$S" -- cat "$key"
check "own stderr pipe: reported once" [ "$(grep -cx "deny file-read $key" <<<"$OUT")" -eq 1 ]

run_to merged cat "$key"
check "2>&1: reported once in the block" [ "$(count_in "deny file-read $key" "$SCRATCH/out")" -eq 1 ]
check "2>&1: and in --report-json" reported "$key"
check "2>&1: the key is not in the output" bash -c '! grep -q SECRET "$0"' "$SCRATCH/out"

run_to file cat "$key"
check "stderr to a file: reported once" [ "$(count_in "deny file-read $key" "$SCRATCH/out")" -eq 1 ]

run_to null cat "$key"
check "everything to /dev/null: in --report-json" reported "$key"

run_to merged sh -c 'cat ~/.ssh/id_rsa 2>/dev/null; exit 0'
check "a command that prints nothing: reported" [ "$(count_in "deny file-read $key" "$SCRATCH/out")" -eq 1 ]
run_to merged python3 -c 'import os
try: os.open(os.path.expanduser("~/.ssh/id_rsa"), os.O_RDONLY)
except OSError: pass'
check "python's silent open: reported" reported "$key"

run_to merged sh -c 'cd ~ && cat .ssh/id_rsa'
check "a relative spelling: reported as the absolute path" [ "$(count_in "deny file-read $key" "$SCRATCH/out")" -eq 1 ]
ln -s "$HOME/.ssh" "$WS/keys"
run_to merged cat keys/id_rsa
check "through a link: reported as the masked path" [ "$(count_in "deny file-read $key" "$SCRATCH/out")" -eq 1 ]
rm -f "$WS/keys"

run_to merged ls "$HOME/.ssh"
check "a directory listing: the directory reported" [ "$(count_in "deny file-read $HOME/.ssh" "$SCRATCH/out")" -eq 1 ]

run_to merged cat .env
check "a masked file, relative: reported absolute" [ "$(count_in "deny file-read $WS/.env" "$SCRATCH/out")" -eq 1 ]
check "its content is not shown" bash -c '! grep -q SECRET "$0"' "$SCRATCH/out"

run_to merged sh -c 'stat ~/.ssh >/dev/null; ls -la ~ >/dev/null; [ -d ~/.ssh ]'
check "looking at a mask from outside is not a read" bash -c '! grep -q "file-read" "$0"' "$SCRATCH/out"
check "and it is still there, mode 0000" [ "$(cd "$WS" && "$WAVEBOX" run --settings "$S" -- stat -c %a "$HOME/.ssh" 2>/dev/null)" = 0 ]

# What the old masks showed still shows: stat (statx) of the mask, its existence (access F_OK,
# what Node's existsSync and Python's os.access use); entering it is a refused read.
run_to merged python3 -c 'import os; p = os.path.expanduser("~/.ssh")
print("mode", oct(os.stat(p).st_mode & 0o7777), "exists", os.access(p, os.F_OK), os.path.exists(p))'
check "stat and existence of a mask work as before" grep -q "mode 0o0 exists True True" "$SCRATCH/out"
check "and are not reads" bash -c '! grep -q "file-read" "$0"' "$SCRATCH/out"
run_to merged sh -c 'cd ~/.ssh 2>/dev/null; test -r .env; exit 0'
check "cd into a masked directory is a refused read" [ "$(count_in "deny file-read $HOME/.ssh" "$SCRATCH/out")" -eq 1 ]
check "test -r of a masked file is one" [ "$(count_in "deny file-read $WS/.env" "$SCRATCH/out")" -eq 1 ]
# Names by the hundred: listed up to a bound per mask, then counted in one line (other refusals
# keep their place in the block).
run_to merged sh -c 'i=0; while [ $i -lt 300 ]; do cat ~/.ssh/k$i 2>/dev/null; i=$((i+1)); done; echo x > /etc/wb-rr-$$; exit 0'
check "many names: one line counts those beyond the bound" grep -q "^deny file-read $HOME/.ssh/\.\.\. ([0-9]* more names looked up)$" "$SCRATCH/out"
check "many names: the block stays short" [ "$(grep -c "deny file-read" "$SCRATCH/out")" -le 20 ]
check "many names: a write refused after them is still listed" grep -q "deny file-write /etc/wb-rr-" "$SCRATCH/out"

# A terminal: script(1) gives the command's stdout and stderr one pty.
if command -v script >/dev/null; then
  (cd "$WS" && TERM=dumb script -qec "$WAVEBOX run --settings $S -- cat $key" "$SCRATCH/tty.log" > /dev/null 2>&1)
  check "a terminal: reported once" [ "$(tr -d '\r' < "$SCRATCH/tty.log" | grep -cx "deny file-read $key")" -eq 1 ]
fi

# Two runs in a row: nothing is cached between them, each run reports its own.
run_to merged cat "$key"; a=$(count_in "deny file-read $key" "$SCRATCH/out")
run_to merged cat "$key"; b=$(count_in "deny file-read $key" "$SCRATCH/out")
check "every run reports its read" [ "$a" -eq 1 ] && [ "$b" -eq 1 ]

# A write under a mask is a write, refused as before (the supervisor performs creations).
run_to merged sh -c 'echo x > ~/.ssh/planted'
check "a write under a mask is refused" [ ! -e "$HOME/.ssh/planted" ]
check "and reported as a write, with what protects ~/.ssh" \
  grep -qx "deny file-write $HOME/.ssh/planted (protected: sshd .*; change it outside the sandbox)" "$SCRATCH/out"

# serve: the same report through command/exec (stdin kept open until the answer came).
check "serve: the read is in the command's violations" timeout 120 python3 -c '
import json, subprocess, sys
wb, ws, s, key = sys.argv[1:5]
p = subprocess.Popen([wb, "serve", "--stdio"], cwd=ws, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, text=True)
for m in [{"id": 1, "method": "initialize", "params": {}},
          {"id": 2, "method": "session/open", "params": {"sessionId": "r1", "cwd": ws, "settingsPaths": [s]}},
          {"id": 3, "method": "command/exec", "params": {"sessionId": "r1", "commandLine": "cat " + key + " 2>&1; true"}}]:
    p.stdin.write(json.dumps(m) + "\n")
p.stdin.flush()
found = False
for line in p.stdout:
    m = json.loads(line)
    if m.get("id") == 3:
        found = any("deny file-read " + key == v["line"] for v in m["result"]["violations"])
        break
p.stdin.close(); p.wait()
sys.exit(0 if found else 1)' "$WAVEBOX" "$WS" "$S" "$key"

check "nothing changed in home" [ "$(snapshot "$HOME")" = "$before" ]
check "the key is as it was" [ "$(cat "$key")" = SECRET-KEY ]

# The same as an unprivileged user where /dev/fuse is root's alone (this machine's): opened to
# all (its usual mode) for the length of the check, and put back.
if is_root && id wavebox-test >/dev/null 2>&1 && [ "$(stat -c %a /dev/fuse)" = 600 ]; then
  trap 'chmod 0600 /dev/fuse; cleanup' EXIT
  chmod 0666 /dev/fuse
  U=$(mktemp -d /tmp/wavebox-rr.XXXXXX); chown wavebox-test "$U"
  out=$(su wavebox-test -s /bin/bash -c "export HOME=$U; mkdir -p \$HOME/.ssh; echo K > \$HOME/.ssh/id_rsa; cd \$HOME && '$WAVEBOX' run -- cat \$HOME/.ssh/id_rsa 2>&1")
  chmod 0600 /dev/fuse
  check "unprivileged: reported with 2>&1" grep -qx "deny file-read $U/.ssh/id_rsa" <<<"$out"
  check "unprivileged: the key is not shown" bash -c '! grep -qx K <<<"$0"' "$out"
  rm -rf "$U"
fi
finish
