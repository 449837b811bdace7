#!/usr/bin/env bash
# The report: after the command, a <sandbox_violations> block lists each refused write (from the
# observer) and each refused read it recognised; ignoreViolations drops lines; a clean command
# prints no block; the command's output and status are untouched; --report-json has the list.
. "$(dirname "$0")/lib.sh"
mkdir -p "$HOME/.ssh"; echo SECRET > "$HOME/.ssh/id_rsa"
out1="/tmp/wb-outside-$$-$RANDOM.txt"

wb run -- sh -c "echo x > $out1"
check "refused write is listed" grep -qx "deny file-write $out1" <<<"$OUT"
check "the block is opened and closed" bash -c 'grep -q "^<sandbox_violations>$" <<<"$0" && grep -q "^</sandbox_violations>$" <<<"$0"' "$OUT"
check "the file does not exist" [ ! -e "$out1" ]

wb run -- sh -c 'cat ~/.ssh/id_rsa'
check "refused read of a denyRead file is listed" grep -qx "deny file-read $HOME/.ssh/id_rsa" <<<"$OUT"
check "its content is not in the output" bash -c '! grep -q SECRET <<<"$0"' "$OUT"

d="/tmp/wb-v-$$"
wb run -- sh -c "mkdir $d; mv /etc/hostname /etc/hn2; ln -s x $d.lnk; rm -f /etc/hostname; exit 0"
check "mkdir outside is listed" grep -qx "deny file-write $d" <<<"$OUT"
check "mv outside is listed" grep -q "deny file-write /etc/hostname" <<<"$OUT"
check "ln outside is listed" grep -qx "deny file-write $d.lnk" <<<"$OUT"
check "rm of the same path is listed once (deduplicated)" [ "$(grep -c 'deny file-write /etc/hostname$' <<<"$OUT")" -eq 1 ]
check "the command's status passes through with a block" [ "$RC" -eq 0 ]

# Timestamps: utimensat on a path outside is listed; on a descriptor (futimens, what tar does
# for each file) there is no path and no trap, so writing in the workspace costs nothing.
wb run -- python3 -c 'import os
try: os.utime("/etc/hostname")
except OSError: pass
fd = os.open("t.txt", os.O_WRONLY | os.O_CREAT); os.utime(fd); os.close(fd); os.unlink("t.txt")'
check "utimensat on a path outside is listed" grep -qx "deny file-write /etc/hostname" <<<"$OUT"
check "futimens in the workspace is not" bash -c '! grep -q "t.txt" <<<"$0"' "$OUT"

wb run -- sh -c 'echo out-line; echo err-line >&2; echo inside > ok.txt'
check "a clean command prints no block" bash -c '! grep -q sandbox_violations <<<"$0"' "$OUT"
check "its output is unchanged" [ "$OUT" = "$(printf 'out-line\nerr-line')" ]
rm -f "$WS/ok.txt"

printf '{"sandbox":{"enabled":true,"ignoreViolations":{"*":["/tmp/wb-ignored"],"no-such-cmd":["/etc"]}}}' > "$SCRATCH/ign.json"
wb run --settings "$SCRATCH/ign.json" -- sh -c 'echo x > /tmp/wb-ignored-1; echo y > /etc/wb-kept'
check "an ignored pattern produces no line" bash -c '! grep -q "deny file-write /tmp/wb-ignored" <<<"$0"' "$OUT"
check "a pattern for another command does not apply" grep -q "deny file-write /etc/wb-kept" <<<"$OUT"

wb run --report-json "$SCRATCH/report.json" -- sh -c "echo x > $out1; exit 4"
check "report exit code" grep -q '"exitCode":4' "$SCRATCH/report.json"
check "report lists the violation" grep -q "deny file-write $out1" "$SCRATCH/report.json"

# Many refusals: capped, with a count.
wb run -- sh -c 'for i in $(seq 1 80); do echo > /etc/wb-many-$i; done 2>/dev/null; true'
check "the block is capped with a count" grep -qE '^\.\.\. [0-9]+ more$' <<<"$OUT"

# stderr and stdout on one pipe (2>&1): wavebox does not relay (it could reorder them), so the
# interleaving is exactly the command's.
OUT=$(cd "$WS" && "$WAVEBOX" run -- sh -c 'for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; done' 2>&1)
check "with 2>&1 the order of stdout and stderr lines is kept" [ "$OUT" = "$(printf 'out1\nerr1\nout2\nerr2\nout3\nerr3\nout4\nerr4\nout5\nerr5')" ]

# A path with a newline cannot forge a line of the block.
wb run -- sh -c 'echo > "/etc/evil
deny file-write /fake" 2>/dev/null; true'
check "control bytes in paths are escaped" bash -c '! grep -qx "deny file-write /fake" <<<"$0"' "$OUT"

# Exact in both directions: no report for what the mounts did not refuse (existing directories,
# /dev/null, a FIFO in the workspace), and a write through a descriptor's other names
# (/proc/self/fd/N, /dev/fd/N) or through a link and .. is reported as the file it is.
mkfifo "$WS/fifo"
wb run -- sh -c 'mkdir -p /tmp /usr/lib; echo x > /dev/null; (cat fifo > /dev/null &) ; echo f > fifo; exec 3</etc/hostname
  echo y > /proc/self/fd/3; echo z > /dev/fd/3; ln -s /usr lnk; echo w > lnk/../usr/wb-dotdot; true'
check "no false report: mkdir -p of existing directories, /dev/null, a FIFO" \
  bash -c '! grep -qE "deny file-write (/tmp|/usr/lib|/dev/null|.*/fifo)$" <<<"$0"' "$OUT"
check "a write through /proc/self/fd/N of a read-only descriptor is reported as its file" \
  grep -q "deny file-write /etc/hostname (through /proc/self/fd/3" <<<"$OUT"
check "... and through /dev/fd/N" grep -q "deny file-write /etc/hostname (through /dev/fd/3" <<<"$OUT"
check "a write through link/.. is reported as the path it reached" grep -q "deny file-write /usr/wb-dotdot" <<<"$OUT"
rm -f "$WS/fifo" "$WS/lnk"

# A protected file's refusal says what protects it and what to do, in the block the command's
# caller reads (`git remote add` failing on .git/config said only "read-only").
git init -q "$WS/repo"
cfg_before=$(cat "$WS/repo/.git/config")
wb run -- sh -c 'cd repo && git remote add origin https://example.invalid/r.git; echo x > .git/hooks/pre-commit; true'
check "a refused .git/config write names git's config and what to do" \
  grep -q "deny file-write $WS/repo/.git/config (protected: git runs the programs a repository's config names .*; change it outside the sandbox)" <<<"$OUT"
check "a refused hook names git's hooks" \
  grep -q "deny file-write $WS/repo/.git/hooks/pre-commit (protected: git runs a repository's hooks; change it outside the sandbox)" <<<"$OUT"
check "the host's .git/config is unchanged" [ "$(cat "$WS/repo/.git/config")" = "$cfg_before" ]
check "no hook was made on the host" [ ! -e "$WS/repo/.git/hooks/pre-commit" ]
wb run -- sh -c 'echo z > /usr/wb-plain; true'
check "a read-only system path gets no protection reason" grep -qx "deny file-write /usr/wb-plain" <<<"$OUT"
# An O_PATH open writes nothing whatever its other flags (the kernel drops them): no report,
# and nothing changed.
git init -q "$WS/repo"
cfg_before=$(cat "$WS/repo/.git/config")
wb run -- python3 -c '
import os
for p, fl in [("/etc/hostname", os.O_PATH | os.O_WRONLY), ("repo/.git/config", os.O_PATH | os.O_RDWR | os.O_TRUNC)]:
    os.close(os.open(p, fl))
print("opened")'
check "O_PATH opens with write flags succeed" grep -q opened <<<"$OUT"
check "... and are not reported as refused writes" bash -c '! grep -q "deny file-write" <<<"$0"' "$OUT"
check "... and change nothing" [ "$(cat "$WS/repo/.git/config")" = "$cfg_before" ]
rm -rf "$WS/repo"
finish
