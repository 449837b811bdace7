#!/usr/bin/env bash
# wavebox hooks: installed into each agent host's documented hook file, every shell command the
# agent runs goes through wavebox (checked on the host: what the sandbox refuses is not there
# afterwards); installs are idempotent and keep the user's other hooks; uninstall puts the file
# back as it was; a wavebox invocation that changes the policy is the user's call; a hook that
# cannot decide blocks. Driven by a small host per contract (tests/e2e/fake_host.py).
. "$(dirname "$0")/lib.sh"
HOST="python3 $(cd "$(dirname "$0")" && pwd)/fake_host.py"
hosts="claude codex cursor"
command -v node >/dev/null && hosts="$hosts opencode"
OUTSIDE="$SCRATCH/outside"
mkdir -p "$OUTSIDE"
printf '{"sandbox":{"enabled":true}}' > "$WS/.wave-settings.json"

# The user's own hooks, already there.
mkdir -p "$HOME/.claude" "$HOME/.codex" "$HOME/.cursor"
printf '{\n    "model": "opus",\n    "hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "true"}]}]}\n}\n' \
  > "$HOME/.claude/settings.json"
printf '{"version": 1, "hooks": {"afterFileEdit": [{"command": "true"}]}}\n' > "$HOME/.cursor/hooks.json"
cp "$HOME/.claude/settings.json" "$SCRATCH/claude.before"
cp "$HOME/.cursor/hooks.json" "$SCRATCH/cursor.before"

# Without the hook, the agent's command writes where it likes (the test can fail).
out=$(cd "$WS" && $HOST claude "$WS" "echo x > '$OUTSIDE/none'")
check "no hook: the command runs unwrapped (writes outside)" test -f "$OUTSIDE/none"

wb hooks install --claude --codex --cursor $(command -v node >/dev/null && echo --opencode)
check "install: exit 0" [ "$RC" -eq 0 ]
check "install: the user's other Claude hook is kept" grep -q '"matcher": "Edit"' "$HOME/.claude/settings.json"
check "install: the user's other Claude settings are kept" grep -q '"model": "opus"' "$HOME/.claude/settings.json"
check "install: the user's Cursor hook is kept" grep -q afterFileEdit "$HOME/.cursor/hooks.json"
for f in .claude/settings.json .codex/hooks.json .cursor/hooks.json; do cp "$HOME/$f" "$SCRATCH/$(basename "$(dirname "$f")").after"; done
wb hooks install --claude --codex --cursor
check "a second install is a no-op (says so)" grep -q "already installed" <<<"$OUT"
check "a second install leaves the files byte for byte" \
  bash -c 'cmp -s "$1/.claude/settings.json" "$2/.claude.after" && cmp -s "$1/.codex/hooks.json" "$2/.codex.after" && cmp -s "$1/.cursor/hooks.json" "$2/.cursor.after"' _ "$HOME" "$SCRATCH"
wb hooks status --json
check "status: installed for each host" bash -c '[ "$(grep -c "\"state\": \"installed\"" <<<"$0")" -ge 3 ]' "$OUT"

for h in $hosts; do
  rm -f "$OUTSIDE"/* "$WS/inside-$h"
  out=$(cd "$WS" && $HOST "$h" "$WS" "echo x > '$OUTSIDE/$h'; echo ok > inside-$h")
  check "$h: the agent's command ran through the hook ($out)" grep -q "^ran" <<<"$out"
  check "$h: its write outside the workspace was refused (not on the host)" test ! -e "$OUTSIDE/$h"
  check "$h: its write in the workspace happened" grep -qx ok "$WS/inside-$h"
  out=$(cd "$WS" && $HOST "$h" "$WS" "'$WAVEBOX' run --dangerously-disable-sandbox -- touch '$OUTSIDE/off-$h'")
  check "$h: an agent-written --dangerously-disable-sandbox is not run without the user ($out)" test ! -e "$OUTSIDE/off-$h"
  check "$h: ... and says why" grep -Eq "^(blocked|declined):.*only the user" <<<"$out"
  out=$(cd "$WS" && $HOST "$h" "$WS" "wavebox hooks uninstall --$h")
  check "$h: an agent-written 'hooks uninstall' is not run ($out)" grep -Eq "^(blocked|declined):" <<<"$out"
done
wb hooks status --json
check "the hooks are all still installed after the agent's tries" \
  bash -c '[ "$(grep -c "\"state\": \"installed\"" <<<"$0")" -ge 3 ]' "$OUT"

# Claude: a policy change the user approves runs as the user wrote it.
out=$(cd "$WS" && $HOST claude "$WS" "'$WAVEBOX' run --dangerously-disable-sandbox -- touch '$OUTSIDE/approved'" --approve)
check "claude: a policy change the user approves runs ($out)" test -e "$OUTSIDE/approved"

# A command already in wavebox's plain form is not wrapped again (nesting would fail inside).
out=$(cd "$WS" && $HOST claude "$WS" "'$WAVEBOX' run --no-prompt -c 'echo plain > plain.txt'")
check "an already wrapped command runs once ($out)" bash -c 'grep -q "^ran 0" <<<"$0" && grep -qx plain "$1/plain.txt"' "$out" "$WS"

# The hook inside a sandbox (the agent host itself sandboxed) leaves commands alone; the
# variable alone, set outside, does not.
payload='{"tool_name":"Bash","tool_input":{"command":"true"},"cwd":"'"$WS"'"}'
wb run -- sh -c "echo '$payload' | '$WAVEBOX' hook claude; echo rc=\$?"
check "inside a sandbox: no answer (no nesting)" bash -c '! grep -q hookSpecificOutput <<<"$0" && grep -q rc=0 <<<"$0"' "$OUT"
OUT=$(cd "$WS" && echo "$payload" | WAVEBOX_SANDBOX=1 "$WAVEBOX" hook claude)
check "WAVEBOX_SANDBOX=1 outside a sandbox: still wrapped" grep -q '"updatedInput"' <<<"$OUT"

# A hook that cannot decide blocks (malformed settings; malformed input).
mkdir -p "$WS/.wave" && printf '{"sandbox": {' > "$WS/.wave/settings.json"
out=$(cd "$WS" && $HOST claude "$WS" "touch '$OUTSIDE/bad-settings'")
check "claude: malformed settings block the command ($out)" bash -c '[ ! -e "$1" ] && grep -q "^blocked" <<<"$0"' "$out" "$OUTSIDE/bad-settings"
out=$(cd "$WS" && $HOST cursor "$WS" "touch '$OUTSIDE/bad-settings'")
check "cursor: malformed settings block the command ($out)" test ! -e "$OUTSIDE/bad-settings"
rm -rf "$WS/.wave"
# A command the hook's parser nests deeply into (30,000 "("): a crash of the hook would let the
# host run it unwrapped (Claude Code blocks only on exit 2).
deep="touch '$OUTSIDE/deep'
$(printf '(%.0s' $(seq 1 34000))"
out=$(cd "$WS" && $HOST claude "$WS" "$deep" 2>&1)
check "claude: a deeply nested command is still wrapped, not run on the host" test ! -e "$OUTSIDE/deep"
huge="touch '$OUTSIDE/huge'; : $(head -c 70000 /dev/zero | tr '\0' x)"
out=$(cd "$WS" && $HOST claude "$WS" "$huge" 2>&1)
check "claude: a command over 64 KiB is blocked" bash -c '[ ! -e "$1" ] && grep -q "^blocked.*64 KiB" <<<"$0"' "$out" "$OUTSIDE/huge"

# A sandbox the settings require that cannot run here (bubblewrap missing): blocked, with why.
mkdir -p "$HOME/.wave"
printf '{"sandbox":{"enabled":true,"failIfUnavailable":true,"bwrapPath":"/nonexistent/bwrap"}}' > "$HOME/.wave/settings.json"
for h in $hosts; do
  out=$(cd "$WS" && $HOST "$h" "$WS" "touch '$OUTSIDE/unavailable-$h'" 2>&1)
  check "$h: an unavailable sandbox with failIfUnavailable blocks, saying why ($out)" \
    bash -c '[ ! -e "$1" ] && grep -q "^blocked.*unavailable" <<<"$0"' "$out" "$OUTSIDE/unavailable-$h"
done
rm -rf "$HOME/.wave"
echo 'not json' | "$WAVEBOX" hook codex >/dev/null 2>&1
check "codex: input it cannot read blocks (exit 2)" [ $? -eq 2 ]

# A deny rule in the user's settings: refused with the rule, for every host.
cp "$HOME/.claude/settings.json" "$SCRATCH/claude.installed"
python3 - "$HOME/.claude/settings.json" <<'EOF'
import json, sys
p = sys.argv[1]; j = json.load(open(p))
j["sandbox"] = {"enabled": True}; j["permissions"] = {"deny": ["Bash(rm:*)"]}
json.dump(j, open(p, "w"), indent=2)
EOF
touch "$WS/keep.txt"
for h in $hosts; do
  out=$(cd "$WS" && $HOST "$h" "$WS" "rm keep.txt")
  check "$h: a deny rule refuses the command ($out)" bash -c '[ -e "$1" ] && grep -q "^blocked" <<<"$0"' "$out" "$WS/keep.txt"
done
cp "$SCRATCH/claude.installed" "$HOME/.claude/settings.json"

wb hooks uninstall --claude --codex --cursor $(command -v node >/dev/null && echo --opencode)
check "uninstall: exit 0" [ "$RC" -eq 0 ]
check "uninstall: Claude's file is byte for byte as before" cmp -s "$HOME/.claude/settings.json" "$SCRATCH/claude.before"
check "uninstall: Cursor's file is byte for byte as before" cmp -s "$HOME/.cursor/hooks.json" "$SCRATCH/cursor.before"
check "uninstall: the Codex file it made is gone" test ! -e "$HOME/.codex/hooks.json"
check "uninstall: the OpenCode plugin is gone" test ! -e "$HOME/.config/opencode/plugins/wavebox.js"
out=$(cd "$WS" && $HOST claude "$WS" "echo x > '$OUTSIDE/after'")
check "after uninstall: the host runs commands as before" test -e "$OUTSIDE/after"

# Project scope, and a file the user edited after the install: only our entry leaves.
wb hooks install --claude --project
check "project install: in the project's .claude/settings.json" grep -q "hook claude" "$WS/.claude/settings.json"
python3 -c "import json,sys; p=sys.argv[1]; j=json.load(open(p)); j['env']={'A':'1'}; json.dump(j,open(p,'w'))" "$WS/.claude/settings.json"
wb hooks uninstall --claude --project
check "edited after install: the user's edit stays, our entry leaves" \
  bash -c 'grep -q "\"A\"" "$0" && ! grep -q "hook claude" "$0"' "$WS/.claude/settings.json"

# The install record (the bytes uninstall writes back) is not writable in a run, home writable or not.
wb hooks install --claude
printf '{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["~"]}}}' > "$SCRATCH/homew.json"
before=$(cat "$HOME/.config/wavebox/hooks-installed.json")
wb run --settings "$SCRATCH/homew.json" -- sh -c 'echo "{}" > ~/.config/wavebox/hooks-installed.json'
check "a run cannot rewrite the hooks' install record" [ "$(cat "$HOME/.config/wavebox/hooks-installed.json")" = "$before" ]
wb hooks uninstall --claude

# A hook file that is not JSON is never rewritten.
printf '{ not json' > "$HOME/.cursor/hooks.json"
wb hooks install --cursor
check "a malformed hook file: refused (125), named, left as it was" \
  bash -c '[ "$0" -eq 125 ] && grep -q "hooks.json" <<<"$1" && [ "$(cat "$2")" = "{ not json" ]' "$RC" "$OUT" "$HOME/.cursor/hooks.json"
finish
