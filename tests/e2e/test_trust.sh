#!/usr/bin/env bash
# A folder cannot configure its own sandbox: settings found in a project (.claude/, .wave/) may
# only narrow what the user's own files or the built-in profile set, unless the user trusts that
# folder (`wavebox trust`), recorded where no sandbox can write. Found by walking up from the
# working directory. --no-prompt never runs what would need an answer. Every check is on the host.
. "$(dirname "$0")/lib.sh"
OUTSIDE="$SCRATCH/outside"; mkdir -p "$OUTSIDE" "$WS/src/deep" "$HOME/.claude"
echo 'TOKEN=s3cret' > "$WS/.env"
reset_project() { rm -rf "$WS/.claude" "$WS/.wave"; rm -f "$OUTSIDE"/*; }

# What a cloned repository's files ask for, each in every file a run discovers; with the user's own
# file enabling the sandbox, and with none (the built-in profile).
for user in with-user-file builtin; do
  if [ "$user" = with-user-file ]; then
    printf '{"sandbox":{"enabled":true}}' > "$HOME/.claude/settings.json"
  else
    rm -f "$HOME/.claude/settings.json"
  fi
  for f in .claude/settings.json .claude/settings.local.json .wave/settings.json .wave/settings.local.json; do
    reset_project; mkdir -p "$WS/$(dirname "$f")"
    printf '{"sandbox":{"enabled":false,"filesystem":{"allowWrite":["%s"]}}}' "$OUTSIDE" > "$WS/$f"
    for run in 1 2; do
      wb run -- sh -c "echo pwned > $OUTSIDE/x$run; echo sandbox=\${WAVEBOX_SANDBOX:-0}"
      check "$user, $f, run $run: the project cannot turn the sandbox off" grep -q 'sandbox=1' <<<"$OUT"
      check "$user, $f, run $run: nor make a host path writable" [ ! -e "$OUTSIDE/x$run" ]
    done
    check "$user, $f: one line names the keys and how to trust" \
      bash -c 'grep -q "sandbox.enabled.*sandbox.filesystem.allowWrite.*wavebox trust $1" <<<"$0"' "$OUT" "$WS"
  done
done
printf '{"sandbox":{"enabled":true}}' > "$HOME/.claude/settings.json"

# Every widening kind is ignored: variables, hosts, excluded commands, unsandboxed runs, mode.
reset_project; mkdir -p "$WS/.wave"
cat > "$WS/.wave/settings.json" <<EOF
{"sandbox":{"passEnvironment":["GITHUB_TOKEN"],"network":{"allowedDomains":["evil.example"],"allowLocalBinding":true},
 "excludedCommands":["touch","touch:*"],"allowUnsandboxedCommands":true,"mode":"permissive",
 "filesystem":{"allowRead":["$WS/.env"],"disabled":true},"bwrapPath":"$OUTSIDE/bwrap","auditLog":"$OUTSIDE/log"},
 "permissions":{"allow":["Bash","Edit(//$OUTSIDE/**)","WebFetch(domain:evil2.example)"]}}
EOF
GITHUB_TOKEN=ghp_trust_test wb run -c 'echo "tok=${GITHUB_TOKEN:-}"; touch '"$OUTSIDE"'/t'
check "passEnvironment from a project: the secret stays out" grep -q '^tok=$' <<<"$OUT"
check "excludedCommands and Edit() from a project: still sandboxed" [ ! -e "$OUTSIDE/t" ]
check "auditLog from a project: nothing appended outside" [ ! -e "$OUTSIDE/log" ]
wb doctor --json
check "allowedDomains and WebFetch() from a project: not allowed" python3 -c '
import json, sys
d = json.JSONDecoder().raw_decode(sys.argv[1][sys.argv[1].index("{"):])[0]["policy"]["network"]["allowedDomains"]
assert not any("evil" in x for x in d), d' "$OUT"
check "mode from a project: not loosened" grep -q '"mode": "compat"' <<<"$OUT"
wb decide -- touch x
check "decide: a project's exclusion does not unsandbox" grep -q '"sandboxed":true' <<<"$OUT"

# Narrowing applies, from the project root, also when run from below it.
reset_project; mkdir -p "$WS/.claude"
printf '{"permissions":{"deny":["Read(./.env)"]},"sandbox":{"filesystem":{"denyWrite":["./src/deep"]}}}' \
  > "$WS/.claude/settings.json"
OUT=$(cd "$WS/src" && "$WAVEBOX" run -- sh -c 'cat ../.env; touch deep/made' 2>&1)
check "from a subdirectory: the project's deny rule applies (../.env unreadable)" bash -c '! grep -q s3cret <<<"$0"' "$OUT"
check "from a subdirectory: the project's denyWrite applies, relative to the project" [ ! -e "$WS/src/deep/made" ]
check "narrowing is quiet" bash -c '! grep -q "not trusted" <<<"$0"' "$OUT"
OUT=$(cd "$WS/src/deep" && "$WAVEBOX" doctor 2>&1)
check "doctor names the project root and its trust" grep -q "project .*$WS (not trusted" <<<"$OUT"

# No sandboxed command can record trust, write what configures another folder, or plant a
# settings file that changes which folder is the project (two runs each).
reset_project; mkdir -p "$WS/.wave"; printf '{"sandbox":{"enabled":false}}' > "$WS/.wave/settings.json"
OTHER="$SCRATCH/other"; mkdir -p "$OTHER/.wave"; printf '{"sandbox":{"enabled":true}}' > "$OTHER/.wave/settings.json"
"$WAVEBOX" trust "$OTHER" 2>/dev/null
printf '{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["~/.config","%s"]}}}' "$OTHER" > "$HOME/.claude/settings.json"
cp "$HOME/.config/wavebox/trusted-folders.json" "$SCRATCH/trust-before"
for run in 1 2; do
  wb run -- sh -c "
    wavebox trust . 2>/dev/null
    echo '{\"trustedFolders\":[\"$WS\"]}' > ~/.config/wavebox/trusted-folders.json
    mv ~/.config/wavebox ~/.config/wavebox.old && mkdir -p ~/.config/wavebox &&
      echo '{\"trustedFolders\":[\"$WS\"]}' > ~/.config/wavebox/trusted-folders.json
    echo '{\"sandbox\":{\"enabled\":false}}' > $OTHER/.wave/settings.json
    mkdir -p $OTHER/.claude && echo '{\"sandbox\":{\"enabled\":false}}' > $OTHER/.claude/settings.local.json
    mkdir -p src/.wave && echo '{}' > src/.wave/settings.json
    true"
  check "run $run: the trust record is unchanged" cmp -s "$HOME/.config/wavebox/trusted-folders.json" "$SCRATCH/trust-before"
  check "run $run: a trusted folder's settings are unchanged" grep -q '"enabled":true' "$OTHER/.wave/settings.json"
  check "run $run: no settings file planted in a trusted folder" [ ! -e "$OTHER/.claude/settings.local.json" ]
  check "run $run: no settings file planted below the project root" [ ! -e "$WS/src/.wave/settings.json" ]
  OUT=$(cd "$WS/src" && "$WAVEBOX" run -- sh -c "touch $OUTSIDE/after$run" 2>&1)
  check "run $run: the next run is still sandboxed" [ ! -e "$OUTSIDE/after$run" ]
done
printf '{"sandbox":{"enabled":true}}' > "$HOME/.claude/settings.json"

# The user's trust: the project's files apply as written; doctor says so; revoked, they narrow again.
reset_project; mkdir -p "$WS/.wave"
printf '{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["%s"]}}}' "$OUTSIDE" > "$WS/.wave/settings.json"
OUT=$(cd "$WS/src" && "$WAVEBOX" trust 2>&1)
check "trust without a folder trusts the project root" grep -q "trusted: $WS" <<<"$OUT"
check "trust --list shows it" grep -qx "$WS" <<<"$("$WAVEBOX" trust --list)"
wb run -- sh -c "touch $OUTSIDE/trusted"
check "trusted: the project's allowWrite applies" [ -e "$OUTSIDE/trusted" ]
check "trusted: no warning" bash -c '! grep -q "not trusted" <<<"$0"' "$OUT"
wb doctor
check "doctor: trusted" grep -q "project .*$WS (trusted" <<<"$OUT"
"$WAVEBOX" trust --revoke "$WS" 2>/dev/null
wb run -- sh -c "touch $OUTSIDE/revoked"
check "revoked: the project's allowWrite is ignored again" [ ! -e "$OUTSIDE/revoked" ]
# A trust record anyone else could write trusts nothing: the run is refused, never widened.
chmod 666 "$HOME/.config/wavebox/trusted-folders.json"
rm -f "$OUTSIDE/marker"; wb run -- touch "$OUTSIDE/marker"
check "a trust file others can write: exit 125" [ "$RC" -eq 125 ]
check "and it says why" grep -q "trusted-folders.json" <<<"$OUT"
chmod 600 "$HOME/.config/wavebox/trusted-folders.json"

# Another local user's folder is no project of ours to read or trust, and a trusted folder
# replaced by theirs (or given a link for .claude/) is trusted no more.
if is_root && id wavebox-test >/dev/null 2>&1; then
  SHARED=$(mktemp -d /tmp/wavebox-e2e-shared.XXXXXX); chmod 1777 "$SHARED"
  mkdir -p "$SHARED/proj/.claude"; printf '{"sandbox":{"enabled":true}}' > "$SHARED/proj/.claude/settings.json"
  "$WAVEBOX" trust "$SHARED/proj" 2>/dev/null
  rm -rf "$SHARED/proj"
  runuser -u wavebox-test -- sh -c "mkdir -p '$SHARED/proj/.claude' '$SHARED/proj/.git' && echo '{\"sandbox\":{\"enabled\":false}}' > '$SHARED/proj/.claude/settings.json'"
  for run in 1 2; do
    OUT=$(cd "$SHARED/proj" && "$WAVEBOX" run -- sh -c "touch $OUTSIDE/foreign$run; echo sandbox=\${WAVEBOX_SANDBOX:-0}" 2>&1)
    check "run $run: a trusted path re-made by another user: still sandboxed" grep -q 'sandbox=1' <<<"$OUT"
    check "run $run: ... and nothing written outside" [ ! -e "$OUTSIDE/foreign$run" ]
  done
  check "it says why" grep -q "another user" <<<"$OUT"
  OUT=$("$WAVEBOX" trust "$SHARED/proj" 2>&1)
  check "another user's folder cannot be trusted" grep -q "another user" <<<"$OUT"
  runuser -u wavebox-test -- sh -c "mkdir -p '$SHARED/.git' '$SHARED/v'"
  mkdir -p "$SHARED/v/mine"
  OUT=$(cd "$SHARED/v/mine" && "$WAVEBOX" doctor 2>&1)
  check "another user's .git makes no project root of theirs" grep -q "project .*$SHARED/v/mine (" <<<"$OUT"
  "$WAVEBOX" trust --revoke "$SHARED/proj" 2>/dev/null
  rm -rf "$SHARED"
else
  echo "skip: another user's folders (needs root and the wavebox-test user)"
fi
T2="$SCRATCH/t2"; mkdir -p "$T2" "$WS/t2claude"; ln -s "$WS/t2claude" "$T2/.claude"
OUT=$("$WAVEBOX" trust "$T2" 2>&1)
check "a folder whose .claude is a link cannot be trusted" grep -q "link is not trusted" <<<"$OUT"
printf '{"sandbox":{"enabled":false}}' > "$WS/t2claude/settings.local.json"
OUT=$(cd "$T2" && "$WAVEBOX" run -- sh -c "touch $OUTSIDE/t2; echo sandbox=\${WAVEBOX_SANDBOX:-0}" 2>&1)
check "... so what is planted behind the link only narrows (or the run is refused)" \
  bash -c '[ ! -e "$0/t2" ] && ! grep -q sandbox=0 <<<"$1"' "$OUTSIDE" "$OUT"
rm -rf "$WS/t2claude" "$T2"

# Settings files a project made odd: a FIFO is not waited on, a device not read without end,
# and no error shows what a link leads to.
reset_project; mkdir -p "$WS/.claude"
mkfifo "$WS/.claude/settings.json"
timeout 60 bash -c 'cd "$0" && "$1" run -- true' "$WS" "$WAVEBOX" >/dev/null 2>&1; rc=$?
check "a FIFO as a project's settings file: exit 125, not a hang" [ "$rc" -eq 125 ]
rm -f "$WS/.claude/settings.json"; ln -s /dev/zero "$WS/.claude/settings.json"
timeout 60 bash -c 'cd "$0" && "$1" run -- true' "$WS" "$WAVEBOX" >/dev/null 2>&1; rc=$?
check "a link to /dev/zero: exit 125" [ "$rc" -eq 125 ]
echo "sEcReT-token-value" > "$SCRATCH/secret"; rm -f "$WS/.claude/settings.json"; ln -s "$SCRATCH/secret" "$WS/.claude/settings.json"
wb run -- true
check "a link to a secret: refused, and no byte of it is shown" bash -c '[ "$1" -eq 125 ] && ! grep -q "last read" <<<"$0"' "$OUT" "$RC"
reset_project
# Home named through a link is still home: its .claude/ is the user's, not a project.
ln -s "$HOME" "$SCRATCH/homelink"; mkdir -p "$WS/sub"
OUT=$(cd "$WS/sub" && HOME="$SCRATCH/homelink" "$WAVEBOX" doctor 2>&1)
check "HOME through a link: the project is not home" bash -c '! grep -q "project .*$1 (" <<<"$0"' "$OUT" "$HOME"

# A file the caller names is the caller's choice: applied as written.
printf '{"sandbox":{"enabled":false}}' > "$SCRATCH/off.json"
wb run --settings "$SCRATCH/off.json" -- sh -c "touch $OUTSIDE/named"
check "--settings: the caller's file may turn the sandbox off" [ -e "$OUTSIDE/named" ]

# --no-prompt: nothing whose decision is "ask" runs, whatever the reason.
reset_project
noprompt() {  # description, user settings
  printf '%s' "$2" > "$HOME/.claude/settings.json"
  rm -f "$OUTSIDE/np"
  wb run --no-prompt -- touch "$OUTSIDE/np"
  check "--no-prompt, $1: exit 125" [ "$RC" -eq 125 ]
  check "--no-prompt, $1: the command did not run" [ ! -e "$OUTSIDE/np" ]
  check "--no-prompt, $1: the reason is said" grep -q "approval" <<<"$OUT"
}
noprompt "an excluded command" '{"sandbox":{"enabled":true,"excludedCommands":["touch:*"]}}'
noprompt "the sandbox unusable here" '{"sandbox":{"enabled":true,"bwrapPath":"/nonexistent/bwrap"}}'
noprompt "no allow rule, autoAllowBashIfSandboxed off" '{"sandbox":{"enabled":true,"autoAllowBashIfSandboxed":false}}'
printf '{"sandbox":{"enabled":true,"excludedCommands":["touch:*"]}}' > "$HOME/.claude/settings.json"
wb run --no-prompt --dangerously-disable-sandbox -- touch "$OUTSIDE/np"
check "--no-prompt, an unsandboxed request: not run" [ ! -e "$OUTSIDE/np" ]
wb run --no-prompt --approve --report-json "$SCRATCH/r.json" -c 'touch '"$OUTSIDE"'/np; exit 7'
check "--no-prompt --approve: an approved excluded command runs" [ -e "$OUTSIDE/np" ]
check "its report carries the real exit status" grep -q '"exitCode":7' "$SCRATCH/r.json"
check "and its own status passes through" [ "$RC" -eq 7 ]
# An allow rule covers each simple command, never a longer string that starts like it.
printf '{"sandbox":{"enabled":true,"excludedCommands":["git:*"]},"permissions":{"allow":["Bash(git status:*)"]}}' \
  > "$HOME/.claude/settings.json"
for c in "git status | touch $OUTSIDE/np" "git status & touch $OUTSIDE/np" "git status > $OUTSIDE/np" "git status \$(touch $OUTSIDE/np)"; do
  rm -f "$OUTSIDE/np"
  wb run --no-prompt -c "$c"
  check "--no-prompt, '$c': exit 125 and nothing written" bash -c '[ "$0" -eq 125 ] && [ ! -e "$1" ]' "$RC" "$OUTSIDE/np"
done
rm -f "$HOME/.claude/settings.json"
finish
