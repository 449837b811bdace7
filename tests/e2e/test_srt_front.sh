#!/usr/bin/env bash
# The srt-compatible front: `srt` through a link to wavebox, and `wavebox srt`, take srt's command
# line and srt's settings with srt's meaning; what it cannot honour is refused with the reason.
. "$(dirname "$0")/lib.sh"
mkdir -p "$SCRATCH/bin"; ln -s "$WAVEBOX" "$SCRATCH/bin/srt"
SRT="$SCRATCH/bin/srt"
OUTSIDE="$SCRATCH/outside"; mkdir -p "$OUTSIDE"
# srt's usual place, with srt's own idiom: "." is the working directory, never the file's (home).
printf '{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":["~/.secret"],"allowWrite":["."],"denyWrite":[]}}' \
  > "$HOME/.srt-settings.json"
echo TOPSECRET > "$HOME/.secret"
out=$(cd "$WS" && "$SRT" -c "echo made > here.txt; echo x > $HOME/planted; cat $HOME/.secret; echo sandbox=\$WAVEBOX_SANDBOX" 2>&1)
check "srt -c: runs sandboxed" grep -q "sandbox=1" <<<"$out"
check "srt: the default settings file is read (its denyRead holds)" bash -c '! grep -q TOPSECRET <<<"$0"' "$out"
check "srt: \".\" is the working directory" [ -e "$WS/here.txt" ]
check "srt: ... not the settings file's directory (home stays read-only)" [ ! -e "$HOME/planted" ]
out=$(cd "$WS" && "$SRT" --settings "$HOME/.srt-settings.json" -- sh -c 'echo "$1 $2"' sh "a b" c 2>&1)
check "srt --settings FILE -- COMMAND ARGS: the arguments as given" grep -qx "a b c" <<<"$out"
out=$(cd "$WS" && "$WAVEBOX" srt -s "$HOME/.srt-settings.json" touch "$OUTSIDE/x" 2>&1); rc=$?
check "wavebox srt: a write outside is refused" bash -c '[ ! -e "$0/x" ] && grep -q "deny file-write" <<<"$1"' "$OUTSIDE" "$out"
# srt always sandboxes: no settings file turns it off through this front.
printf '{"sandbox":{"enabled":false}}' > "$SCRATCH/off.json"
out=$(cd "$WS" && "$SRT" -s "$SCRATCH/off.json" -c "touch $OUTSIDE/off" 2>&1)
check "srt: a file cannot turn the sandbox off" [ ! -e "$OUTSIDE/off" ]
for f in '{"sandbox":{"enabled":true,"enabledPlatforms":["macos"]}}' '{"sandbox":{"enabled":true,"filesystem":{"disabled":true}}}' \
         '{"sandbox":{"enabled":true,"excludedCommands":["touch"]},"permissions":{"allow":["Bash(touch:*)"]}}' \
         '{"network":{"allowedDomains":[]},"filesystem":{"denyRead":[]},"bwrapPath":"/nonexistent/bwrap"}'; do
  printf '%s' "$f" > "$SCRATCH/f.json"; rm -f "$OUTSIDE/f"
  out=$(cd "$WS" && "$SRT" -s "$SCRATCH/f.json" -c "touch $OUTSIDE/f" 2>&1)
  check "srt: never unsandboxed ($f)" [ ! -e "$OUTSIDE/f" ]
done
# What it cannot honour is refused, and the command does not run.
out=$(cd "$WS" && "$SRT" --control-fd 3 -c "touch $OUTSIDE/cfd" 3</dev/null 2>&1); rc=$?
check "srt --control-fd: refused with the reason" bash -c '[ "$0" -eq 125 ] && [ ! -e "$1/cfd" ] && grep -q "control-fd" <<<"$2"' "$rc" "$OUTSIDE" "$out"
printf '{"network":{"allowedDomains":["a.example"],"mitmProxy":{"socketPath":"/x.sock","domains":["a.example"]}},"filesystem":{}}' \
  > "$SCRATCH/mitm.json"
out=$(cd "$WS" && "$SRT" -s "$SCRATCH/mitm.json" -c "touch $OUTSIDE/mitm" 2>&1); rc=$?
check "srt: mitmProxy refused, not dropped" bash -c '[ "$0" -eq 125 ] && [ ! -e "$1/mitm" ] && grep -q mitmProxy <<<"$2"' "$rc" "$OUTSIDE" "$out"
out=$(cd "$WS" && "$SRT" -s "$SCRATCH/missing.json" -c true 2>&1); rc=$?
check "srt -s MISSING: refused, never the default" [ "$rc" -eq 125 ]
out=$(cd "$WS" && "$SRT" 2>&1); rc=$?
check "srt without a command: an error" [ "$rc" -eq 125 ]
out=$(cd "$WS" && "$SRT" -c 'exit 7' 2>&1); rc=$?
check "srt: the command's status passes through" [ "$rc" -eq 7 ]
finish
