#!/usr/bin/env bash
# Bad settings exit 125 naming the file or key, and the command does not run; sandbox.enabled
# false means zero difference; degradation when the sandbox is unavailable.
. "$(dirname "$0")/lib.sh"
marker="$WS/ran"

bad() {  # description, file content (or "MISSING")
  local f="$SCRATCH/s.json"; rm -f "$f" "$marker"
  [ "$2" = MISSING ] || printf '%s' "$2" > "$f"
  wb run --settings "$f" -- touch "$marker"
  check "$1: exit 125" [ "$RC" -eq 125 ]
  check "$1: the message names the file" grep -q "s.json" <<<"$OUT"
  check "$1: the command did not run" [ ! -e "$marker" ]
}
bad "malformed JSON" '{"sandbox": {"enabled": true,}}'
bad "wrong type" '{"sandbox": {"enabled": "yes"}}'
bad "empty file" ''
bad "missing file" MISSING
printf '{"sandbox":{"network":{"allowedDomains":"x"}}}' > "$SCRATCH/s.json"
wb run --settings "$SCRATCH/s.json" -- true
check "a wrong type names the key path" grep -q "sandbox.network.allowedDomains" <<<"$OUT"
printf '{\n "sandbox": {\n  "enabled": true\n  "x": 1}}' > "$SCRATCH/s.json"
wb run --settings "$SCRATCH/s.json" -- true
check "malformed JSON names line and column" grep -qE 's.json:4:[0-9]+' <<<"$OUT"
printf '{"sandbox":{"enabled":true,"filesytem":{}}}' > "$SCRATCH/s.json"
wb run --settings "$SCRATCH/s.json" -- true
check "an unknown sandbox key warns by name" grep -q 'sandbox.filesytem' <<<"$OUT"

# enabled false: exactly as without wavebox.
printf '{"sandbox":{"enabled":false}}' > "$SCRATCH/off.json"
direct=$(cd "$WS" && env | sort; echo "args:$#"); 
viawb=$(cd "$WS" && "$WAVEBOX" run --settings "$SCRATCH/off.json" -- sh -c 'env | sort; echo "args:$#"' 2>&1)
check "sandbox off: the environment is identical" [ "$(grep -v '^_=' <<<"$direct" | grep -v '^args' | grep -v '^SHLVL=' | grep -v '^OLDPWD')" = "$(grep -v '^_=' <<<"$viawb" | grep -v '^args' | grep -v '^SHLVL=' | grep -v '^OLDPWD')" ]
wb run --settings "$SCRATCH/off.json" -- sh -c 'echo x > /tmp/wb-off-'$$'; exit 9'
check "sandbox off: the status passes through" [ "$RC" -eq 9 ]
check "sandbox off: no output of ours" [ -z "$OUT" ]
check "sandbox off: writes are not confined" [ -e /tmp/wb-off-$$ ]
rm -f /tmp/wb-off-$$

# Unavailable: a missing bwrap degrades with one warning, or exits 125 with failIfUnavailable.
printf '{"sandbox":{"enabled":true,"bwrapPath":"/nonexistent/bwrap"}}' > "$SCRATCH/nobw.json"
rm -f "$marker"
wb run --settings "$SCRATCH/nobw.json" -- touch "$marker"
check "unavailable: the command runs unsandboxed" [ -e "$marker" ]
check "unavailable: exactly one warning line" [ "$(grep -c 'wavebox: warning' <<<"$OUT")" -eq 1 ]
rm -f "$marker"
printf '{"sandbox":{"enabled":true,"failIfUnavailable":true,"bwrapPath":"/nonexistent/bwrap"}}' > "$SCRATCH/nobw2.json"
wb run --settings "$SCRATCH/nobw2.json" -- touch "$marker"
check "failIfUnavailable: exit 125" [ "$RC" -eq 125 ]
check "failIfUnavailable: the command did not run" [ ! -e "$marker" ]
# A sandbox that fails to start is never a reason to run unsandboxed.
printf '{"sandbox":{"enabled":true,"bwrapPath":"/bin/false"}}' > "$SCRATCH/bad.json"
wb run --settings "$SCRATCH/bad.json" -- touch "$marker"
check "a failing sandbox start exits 125" [ "$RC" -eq 125 ]
check "a failing sandbox start does not run the command" [ ! -e "$marker" ]

# Discovery: <cwd>/.wave/settings.json is read when no --settings is given; it may turn the sandbox
# off only in a folder the user trusts (test_trust.sh has the rest).
mkdir -p "$WS/.wave"; printf '{"sandbox":{"enabled":false}}' > "$WS/.wave/settings.json"
wb run -- sh -c 'echo x > /tmp/wb-disc-'$$
check "workspace settings are discovered (and, untrusted, cannot turn the sandbox off)" \
  bash -c '[ ! -e /tmp/wb-disc-$1 ] && grep -q "sandbox.enabled" <<<"$0"' "$OUT" $$
"$WAVEBOX" trust "$WS" 2>/dev/null
wb run -- sh -c 'echo x > /tmp/wb-disc-'$$
check "a trusted workspace's settings apply as written" [ -e /tmp/wb-disc-$$ ]
"$WAVEBOX" trust --revoke "$WS" 2>/dev/null
rm -f /tmp/wb-disc-$$ "$WS/.wave/settings.json"; rmdir "$WS/.wave"

OUT=$(cd / && "$WAVEBOX" run -- true 2>&1); RC=$?
check "a workspace of / is refused (it would make everything writable)" [ "$RC" -eq 125 ]
OUT=$(cd / && "$WAVEBOX" run --settings "$SCRATCH/off.json" -- true 2>&1); RC=$?
check "with the sandbox off, / is fine (zero difference)" [ "$RC" -eq 0 ]

wb doctor --json
check "doctor --json reports bubblewrap" grep -q '"bwrap"' <<<"$OUT"
check "doctor reports user namespaces" grep -q 'userNamespaces' <<<"$OUT"
# A sandbox section with rules but no "enabled": the command runs unsandboxed, and a line says so
# (a user who wrote rules meant them); "enabled": false stays silent.
printf '{"sandbox":{"filesystem":{"allowWrite":["/tmp"]}}}' > "$SCRATCH/noenabled.json"
wb run --settings "$SCRATCH/noenabled.json" -- true
check "rules without enabled: a line says the sandbox is off and how to turn it on" grep -q 'sandbox is OFF.*"enabled": true' <<<"$OUT"
printf '{"sandbox":{"enabled":false,"filesystem":{"allowWrite":["/tmp"]}}}' > "$SCRATCH/off.json"
wb run --settings "$SCRATCH/off.json" -- true
check "enabled false: nothing of ours on stderr" [ -z "$OUT" ]
# srt's format (top-level filesystem/network) is read as such, the sandbox on; a misspelled
# "sandbox" section is refused, never read as no sandbox.
mkdir -p "$HOME/.ssh"; echo PRIVATE-KEY > "$HOME/.ssh/id_rsa"
printf '{"filesystem":{"denyRead":["~/.ssh"]},"network":{"allowedDomains":["example.com"]}}' > "$SCRATCH/srt.json"
wb run --settings "$SCRATCH/srt.json" -- cat "$HOME/.ssh/id_rsa"
check "srt's format: sandboxed (the key stays unreadable)" bash -c '! grep -q PRIVATE-KEY <<<"$0"' "$OUT"
check "srt's format: quiet by default" bash -c '! grep -q "srt" <<<"$0"' "$OUT"
wb run -v --settings "$SCRATCH/srt.json" -- true
check "srt's format: said under -v" grep -q "srt" <<<"$OUT"
printf '{"sandBox":{"enabled":true}}' > "$SCRATCH/mis.json"
rm -f "$marker"; wb run --settings "$SCRATCH/mis.json" -- touch "$marker"
check "a misspelled sandbox section: exit 125" [ "$RC" -eq 125 ]
check "it names the key" grep -q '"sandBox"' <<<"$OUT"
check "and the command did not run" [ ! -e "$marker" ]
# Claude Code's settings files are discovered, with Claude Code's path semantics: "./x" is the
# project's (not .claude/'s), a rule's "/x" is the project's too and "//x" the root's, "dir/**"
# is the directory; a file without a sandbox section does not turn the sandbox off.
CW="$SCRATCH/claude-proj"; mkdir -p "$CW/.claude" "$CW/secrets" "$CW/deploy" "$CW/config" "$CW/sub" "$SCRATCH/abs"
echo TOKEN=1 > "$CW/.env"; echo S > "$CW/secrets/k"; echo A > "$SCRATCH/abs/f"; echo B > "$CW/sub/f"
printf '{"permissions":{"deny":["Read(./.env)","Edit(./deploy/**)","Read(/sub/f)","Read(//%s/abs/f)"]}}' "${SCRATCH#/}" \
  > "$CW/.claude/settings.json"
printf '{"sandbox":{"enabled":true,"filesystem":{"denyRead":["./secrets"],"denyWrite":["./config/**"]}}}' \
  > "$CW/.claude/settings.local.json"
out=$(cd "$CW" && "$WAVEBOX" run -- sh -c 'cat .env; cat secrets/k; cat sub/f; cat '"$SCRATCH"'/abs/f; touch deploy/x config/y; echo sandbox=$WAVEBOX_SANDBOX' 2>&1)
check ".claude: the sandbox is on" grep -q "sandbox=1" <<<"$out"
check ".claude: Read(./.env) protects the project's .env" bash -c '! grep -q TOKEN <<<"$0"' "$out"
check ".claude: denyRead ./secrets is the project's" bash -c '! grep -qx S <<<"$0"' "$out"
check ".claude: Read(/sub/f) is the project's sub/f" bash -c '! grep -qx B <<<"$0"' "$out"
check ".claude: Read(//path) is absolute" bash -c '! grep -qx A <<<"$0"' "$out"
check ".claude: Edit(./deploy/**) protects the directory" [ ! -e "$CW/deploy/x" ]
check ".claude: denyWrite ./config/** protects the directory" [ ! -e "$CW/config/y" ]
(cd "$CW" && "$WAVEBOX" run -- sh -c 'echo "{}" > .claude/settings.json' >/dev/null 2>&1)
check ".claude: its settings file is write-protected" grep -q "Read(./.env)" "$CW/.claude/settings.json"
mkdir -p "$HOME/.claude" "$HOME/private"; echo P > "$HOME/private/p"
printf '{"sandbox":{"enabled":true,"filesystem":{"denyRead":["~/private"]}}}' > "$HOME/.claude/settings.json"
wb run -- cat "$HOME/private/p"
check "~/.claude/settings.json is read" bash -c '! grep -qx P <<<"$0"' "$OUT"
rm -f "$HOME/.claude/settings.json"
# Globs in write rules cover what matches them at the start, and say what they leave out; a
# directory a glob makes writable is searched for repositories like any writable root.
mkdir -p "$WS/gen1" "$WS/gen2" "$WS/other" "$SCRATCH/outs/o1"
git init -q "$SCRATCH/outs/o1"
printf '{"sandbox":{"enabled":true,"filesystem":{"denyWrite":["%s/gen*"],"allowWrite":["%s/outs/*"]}}}' "$WS" "$SCRATCH" \
  > "$SCRATCH/glob.json"
wb run --settings "$SCRATCH/glob.json" -- sh -c "touch gen1/x gen2/x other/x $SCRATCH/outs/o1/made; echo hook > $SCRATCH/outs/o1/.git/hooks/pre-commit"
check "a denyWrite glob guards what matches it" bash -c '[ ! -e "$0/gen1/x" ] && [ ! -e "$0/gen2/x" ]' "$WS"
check "and nothing else" [ -e "$WS/other/x" ]
check "and is quiet about it (what comes to match later is covered too)" bash -c '! grep -q "covers the" <<<"$0"' "$OUT"
# What comes to match a denyWrite glob during the run: created, renamed or made below a match,
# refused and reported, run after run; "**" reaches any depth, an existing match is read-only.
mkdir -p "$WS/deep/a/secrets" && echo s > "$WS/deep/a/secrets/old"
printf '{"sandbox":{"enabled":true,"filesystem":{"denyWrite":["%s/gen*","**/secrets/**","%s/*.pem"]}}}' "$WS" "$WS" \
  > "$SCRATCH/glob-later.json"
for i in 1 2; do
  wb run --settings "$SCRATCH/glob-later.json" -- sh -c 'mkdir gen3; touch gen4; mkdir t; mv t gen5; echo k > key.pem; mkdir -p deep/b/secrets; echo x > deep/b/secrets/new; echo x > deep/a/secrets/old; mkdir -p made && echo ok > made/f'
  check "run $i: names matching a denyWrite glob made during the run are refused" \
    bash -c 'for f in gen3 gen4 gen5 key.pem deep/b/secrets; do [ ! -e "$0/$f" ] || exit 1; done' "$WS"
  check "run $i: an existing match of a ** glob is read-only" grep -qx s "$WS/deep/a/secrets/old"
  check "run $i: and reported" bash -c 'grep -q "deny file-write $1/gen3 (denyWrite" <<<"$0" && grep -q "deny file-write $1/key.pem (denyWrite" <<<"$0"' "$OUT" "$WS"
  check "run $i: what matches no glob is written" grep -qx ok "$WS/made/f"
  wb run --settings "$SCRATCH/glob-later.json" -- python3 -c "
import os
fd = os.open('deep/a/secrets/old', os.O_RDONLY)
for f in (lambda: os.fchmod(fd, 0o777), lambda: os.utime(fd, (0, 0))):
    try:
        f(); print('ATTACK-WORKED')
    except OSError: pass"
  check "run $i: a match's mode and times hold through a descriptor" \
    bash -c '! grep -q ATTACK-WORKED <<<"$0" && [ "$(stat -c %a "$1")" != 777 ] && [ "$(stat -c %Y "$1")" != 0 ]' "$OUT" "$WS/deep/a/secrets/old"
done
# A tree renamed to where a "**" glob reaches into it (a file linked elsewhere first, to write it
# through the other name in a later run): the rename is refused.
printf '{"sandbox":{"enabled":true,"filesystem":{"denyWrite":["**/certs/*.pem"]}}}' > "$SCRATCH/glob-tree.json"
wb run --settings "$SCRATCH/glob-tree.json" -- sh -c 'mkdir -p c2/conf && echo x > c2/conf/k.pem && ln c2/conf/k.pem alias; mv c2/conf c2/certs; mkdir -p plain/x && mv plain plain2'
check "a tree that would put a match of a ** glob in place is not moved" [ ! -e "$WS/c2/certs" ]
check "and it is reported" grep -q "deny file-write $WS/c2/certs (denyWrite" <<<"$OUT"
check "a tree with no match moves" [ -d "$WS/plain2/x" ]
# A directory in the tree closed with chmod hides a match from the look: the move is refused
# (its owner could open it again once moved).
printf '{"sandbox":{"enabled":true,"filesystem":{"denyWrite":["**/certs/*/*.pem"]}}}' > "$SCRATCH/glob-deep.json"
wb run --settings "$SCRATCH/glob-deep.json" -- sh -c 'mkdir -p c3/conf/hid && echo x > c3/conf/hid/k.pem && chmod 000 c3/conf/hid; mv c3/conf c3/certs; chmod 755 c3/conf/hid c3/certs/hid 2>/dev/null; true'
check "a tree with a directory it cannot read is not moved under a ** glob" [ ! -e "$WS/c3/certs" ]
check "an allowWrite glob makes its matches writable" [ -e "$SCRATCH/outs/o1/made" ]
check "a repository in such a match keeps its hooks protected" [ ! -e "$SCRATCH/outs/o1/.git/hooks/pre-commit" ]
# User namespaces refused (here: user.max_user_namespaces=0 in a namespace of the test's own) is
# a sandbox that cannot start: exit 125 naming the fix, never the command run unsandboxed.
if unshare -Ur true 2>/dev/null; then
  rm -f "$marker"
  out=$(cd "$WS" && unshare -Ur sh -c 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" run -- touch "$1"' \
        "$WAVEBOX" "$marker" 2>&1); rc=$?
  check "user namespaces refused: exit 125" [ "$rc" -eq 125 ]
  check "user namespaces refused: the command did not run" [ ! -e "$marker" ]
  if is_root; then check "user namespaces refused: the reason and the fix are said" grep -q "max_user_namespaces" <<<"$out"; fi
else
  echo "skip: no user namespaces for the test itself"
fi
finish
