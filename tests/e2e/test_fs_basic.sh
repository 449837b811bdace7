#!/usr/bin/env bash
# The writable set: writes outside the writable set fail and leave nothing; the workspace and TMPDIR are
# writable; denyRead content never reaches the output.
. "$(dirname "$0")/lib.sh"

outside="/tmp/wavebox-outside-$$-$RANDOM"
mkdir -p "$HOME/.ssh"; echo "SECRET-KEY-MATERIAL" > "$HOME/.ssh/id_rsa"
before_home=$(snapshot "$HOME")

wb run -- sh -c "echo x > $outside"
check "write outside the writable set fails" [ "$RC" -ne 0 ]
check "the outside file does not exist on the host" [ ! -e "$outside" ]

wb run -- sh -c 'echo made > inside.txt'
check "write in the workspace succeeds" [ "$RC" -eq 0 ]
check "the workspace file exists on the host" grep -q made "$WS/inside.txt"
rm -f "$WS/inside.txt"

wb run -- sh -c 'cat ~/.ssh/id_rsa'
check "reading a denyRead file fails" [ "$RC" -ne 0 ]
check "its content never appears in the output" bash -c '! grep -q SECRET-KEY <<<"$0"' "$OUT"
wb run -- sh -c 'ls ~/.ssh'
check "listing a denyRead directory fails" [ "$RC" -ne 0 ]

wb run -- sh -c 'echo t > "$TMPDIR/wb-tmp-test" && cat "$TMPDIR/wb-tmp-test"'
check "TMPDIR is writable and exported" [ "$RC" -eq 0 ]

wb run -c 'echo via-shell; exit 3'
check "-c runs through a shell and passes the status" [ "$RC" -eq 3 ]
check "-c output is the command's" grep -q via-shell <<<"$OUT"

# A denyRead path from settings that does not exist at start stays unreadable if the host
# creates it meanwhile (a stub carries the mask for the run, and is removed after).
printf '{"sandbox":{"enabled":true,"filesystem":{"denyRead":["~/vault"]}}}' > "$SCRATCH/vault.json"
(sleep 0.5; mkdir -p "$HOME/vault"; echo VAULT-SECRET > "$HOME/vault/key") &
wb run --settings "$SCRATCH/vault.json" -- sh -c 'sleep 1.5; cat ~/vault/key'
wait
check "a denyRead path created during the run stays unreadable" bash -c '! grep -q VAULT-SECRET <<<"$0"' "$OUT"
check "the host's new file is kept after the run" grep -q VAULT-SECRET "$HOME/vault/key"
rm -rf "$HOME/vault"
wb run --settings "$SCRATCH/vault.json" -- true
check "the stub for a missing denyRead path is gone after the run" [ ! -e "$HOME/vault" ]
# The same through a link to a directory: the stub lies at the link's target.
mkdir -p "$WS/vreal" && ln -s vreal "$WS/vlink"
printf '{"sandbox":{"enabled":true,"filesystem":{"denyRead":["%s"]}}}' "$WS/vlink/key" > "$SCRATCH/vlink.json"
(sleep 0.5; mkdir -p "$WS/vreal/key"; echo LINK-SECRET > "$WS/vreal/key/k") &
wb run --settings "$SCRATCH/vlink.json" -- sh -c 'sleep 1.5; cat vlink/key/k'
wait
check "a missing denyRead path through a link: the run starts (exit 1, not 125)" [ "$RC" -eq 1 ]
check "... and what the host made there meanwhile stays unreadable" bash -c '! grep -q LINK-SECRET <<<"$0"' "$OUT"
check "... the host's file is kept" grep -q LINK-SECRET "$WS/vreal/key/k"
rm -rf "$WS/vreal" "$WS/vlink"
# A built-in credential path that appears during the run is reported after it.
(sleep 0.5; mkdir -p "$HOME/.aws"; echo AWS > "$HOME/.aws/credentials") &
wb run -- sh -c 'sleep 1.5'
wait
check "a credential path created during the run is warned about" grep -q '.aws.*created during the run' <<<"$OUT"
rm -rf "$HOME/.aws"

check "no file appeared in home or the workspace" [ "$(snapshot "$HOME")" = "$before_home" ]
# allowRead inside denyRead: the masked directory shows only the carved path (its mount point is
# made inside the mask, never on the host), read-only; the rest stays unreadable.
mkdir -p "$HOME/vault2/public/deep" "$HOME/vault2/private"
echo open-data > "$HOME/vault2/public/deep/ok.txt"; echo CLOSED-DATA > "$HOME/vault2/private/secret"
echo CLOSED-TOO > "$HOME/vault2/top-secret"
vault_before=$(cd "$HOME/vault2" && find . | sort)
printf '{"sandbox":{"enabled":true,"filesystem":{"denyRead":["~/vault2"],"allowRead":["~/vault2/public/deep"]}}}' > "$SCRATCH/carve.json"
wb run --settings "$SCRATCH/carve.json" -- sh -c 'cat ~/vault2/public/deep/ok.txt; ls -A ~/vault2; ls -A ~/vault2/public;
  cat ~/vault2/private/secret ~/vault2/top-secret 2>/dev/null; touch ~/vault2/new 2>/dev/null && echo made-new; true'
check "the carved file is readable inside the masked directory" grep -q open-data <<<"$OUT"
check "the masked directory shows only the way to the carve" [ "$(sed -n 2,3p <<<"$OUT" | tr '\n' ' ')" = "public deep " ]
check "nothing else under the mask is readable" bash -c '! grep -q CLOSED <<<"$0"' "$OUT"
check "the mask is read-only" bash -c '! grep -q made-new <<<"$0"' "$OUT"
check "the host's directory is unchanged (no mount point made there)" [ "$(cd "$HOME/vault2" && find . | sort)" = "$vault_before" ]
rm -rf "$HOME/vault2"

# Every mount of the host is read-only inside, not only "/": the shim makes the whole tree
# read-only in one recursive call, bwrap remounts each. A mount point that is writable on the host
# (and not one of the writable paths) must not be writable inside. access(W_OK) says EROFS for
# a read-only mount even to root, so the check writes nothing.
points=$(awk '$6 ~ /^rw/ {print $5}' /proc/self/mountinfo | grep -vE '^/(proc|dev)(/|$)' | sort -u)
wb run -- sh -c 'for m in "$@"; do case "$m" in "$PWD"|"$PWD"/*|"$TMPDIR"|"$TMPDIR"/*) continue;; esac;
  [ -d "$m" ] && [ -w "$m" ] && echo "writable: $m"; done; echo checked' sh $points
check "no host mount point is writable inside (checked $(wc -w <<<"$points"))" bash -c '! grep -q "^writable:" <<<"$0" && grep -q checked <<<"$0"' "$OUT"

# The environment reaches the command byte for byte (it travels with bwrap's options).
OUT=$(cd "$WS" && WB_ODD_VALUE=$'a=b\nc  d\t$x' "$WAVEBOX" run -- printenv WB_ODD_VALUE 2>/dev/null)
check "an environment value with =, a newline, a tab and spaces arrives unchanged" [ "$OUT" = $'a=b\nc  d\t$x' ]
# What the sandbox's environment leaves out (the caller's proxy, with its credentials) reaches
# neither the command nor pid 1's environment, with bwrap's --clearenv and, for a bubblewrap
# older than 0.5 (a wrapper that says 0.4.0), with --unsetenv.
fake="$SCRATCH/old-bwrap"
printf '#!/bin/sh\n[ "$1" = --version ] && { echo "bubblewrap 0.4.0"; exit 0; }\nexec %s "$@"\n' "$(command -v bwrap)" > "$fake"
chmod +x "$fake"
printf '{"sandbox":{"enabled":true,"bwrapPath":"%s"}}' "$fake" > "$SCRATCH/oldbwrap.json"
for settings in "" "--settings $SCRATCH/oldbwrap.json"; do
  OUT=$(cd "$WS" && https_proxy=http://user:PROXY-SECRET@proxy.example:8080 NO_PROXY=PROXY-SECRET.internal "$WAVEBOX" run $settings -- \
        sh -c 'env; tr "\0" "\n" < /proc/1/environ' 2>&1)
  check "the caller's proxy credentials stay out (${settings:-bwrap --clearenv})" bash -c '! grep -q PROXY-SECRET <<<"$0"' "$OUT"
  check "the sandbox's own proxy is set (${settings:-bwrap --clearenv})" grep -q '^https_proxy=http://127.0.0.1:3128' <<<"$OUT"
done
# bwrap starts before the sandbox is planned (its options do not depend on the plan where the
# shim places the mounts); the shim waits for the plan. A plan that fails after that start runs
# nothing: a protected name that is a symbolic link cannot be pinned (exit 125).
odd="$SCRATCH/odd-ws"; mkdir -p "$odd"; ln -s /nonexistent "$odd/.mcp.json"
OUT=$(cd "$odd" && "$WAVEBOX" run -- sh -c 'touch ran-anyway' 2>&1); RC=$?
check "a plan refused after bwrap started gives 125" [ "$RC" -eq 125 ]
check "... and the command did not run" [ ! -e "$odd/ran-anyway" ]
check "... and says why" grep -q 'cannot be pinned' <<<"$OUT"
# A writable path that resolves into /dev/shm (a link) is only seen once planned: bwrap must
# place the mounts after all, and the sandbox starts again that way.
shm="/dev/shm/wavebox-test-$$"; mkdir -p "$shm"; ln -sfn "$shm" "$SCRATCH/to-shm"
printf '{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["%s"]}}}' "$SCRATCH/to-shm" > "$SCRATCH/shm.json"
OUT=$(cd "$WS" && "$WAVEBOX" run -v --settings "$SCRATCH/shm.json" -- sh -c "echo via-link > $SCRATCH/to-shm/f && echo wrote" 2>&1); RC=$?
check "a writable path resolving into /dev/shm works (status $RC)" [ "$RC" -eq 0 ]
check "... the file reached the host" grep -qx via-link "$shm/f"
if [ "${WAVEBOX_SHIM_MOUNTS:-}" != 0 ]; then
  check "... after starting the sandbox again, bwrap placing the mounts" grep -q 'starting the sandbox again' <<<"$OUT"
fi
rm -rf "$shm"

# A working directory under a denyRead mask: refused before anything runs, and said so.
mkdir -p "$WS/masked-cwd"
printf '{"sandbox":{"enabled":true,"filesystem":{"denyRead":["%s"]}}}' "$WS/masked-cwd" > "$SCRATCH/mcwd.json"
wb run --settings "$SCRATCH/mcwd.json" --cwd "$WS/masked-cwd" -- sh -c "touch $SCRATCH/mcwd-ran"
check "a working directory it may not read: exit 125" [ "$RC" -eq 125 ]
check "... the command did not run" [ ! -e "$SCRATCH/mcwd-ran" ]
check "... the error names the directory and denyRead" grep -q 'masked-cwd" is unreadable in the sandbox (denyRead)' <<<"$OUT"
rm -rf "$WS/masked-cwd"
finish
