#!/usr/bin/env bash
# The protected set: settings files, shell startup files, git hooks/config (also nested, also git-ignored,
# also after renaming an ancestor), editor and agent folders stay unchanged whatever the command
# tries, and no stub is left behind.
. "$(dirname "$0")/lib.sh"

git -C "$WS" init -q
echo '#!/bin/sh' > "$WS/.git/hooks/pre-commit"
nested="$WS/a/b/c/d/e/f"
mkdir -p "$nested" && git -C "$nested" init -q
mkdir -p "$WS/ignored" && echo "ignored/" > "$WS/.gitignore"
git -C "$WS/ignored" init -q 2>/dev/null || { mkdir -p "$WS/ignored/r"; git -C "$WS/ignored/r" init -q; }
ign_git=$(find "$WS/ignored" -name .git -type d | head -1)
mkdir -p "$WS/.wave"; echo '{"sandbox":{"enabled":true}}' > "$WS/.wave/settings.json"
echo "# rc" > "$HOME/.bashrc"
settings="$SCRATCH/custom settings.json"
echo '{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["~"]}}}' > "$settings"

sum() { (cd "$1" && find . -path ./objects -prune -o -type f -print0 2>/dev/null | sort -z | xargs -0 md5sum 2>/dev/null; find . -path ./objects -prune -o -print 2>/dev/null | sort) | md5sum; }
before_git=$(sum "$WS/.git")
before_nested=$(sum "$nested/.git")
before_ign=$(sum "$ign_git")
before_ws=$(snapshot "$WS")
before_home=$(snapshot "$HOME")

attack='
mv .git .git_old 2>/dev/null; mkdir -p .git/hooks 2>/dev/null; echo evil > .git/hooks/pre-commit 2>/dev/null
echo evil > .git/hooks/pre-commit; echo evil >> .git/config; echo /tmp > .git/commondir; echo x > .git/config.worktree
rm -rf .git/hooks; mv .git/hooks .git/h2
echo evil > a/b/c/d/e/f/.git/hooks/pre-commit; mv a a2; mv a/b/c/d/e/f/.git a/b/c/d/e/f/g
for d in ignored/.git ignored/r/.git; do [ -d $d ] && { echo evil > $d/hooks/post-checkout; echo evil >> $d/config; }; done
echo evil > .wave/settings.json; rm -f .wave/settings.json; mv .wave .wave2; echo evil > .wave/settings.local.json
mkdir -p .vscode && echo evil > .vscode/tasks.json; echo evil > .mcp.json; mkdir -p .claude/commands; echo evil > .claude/commands/x.md
mkdir -p .idea; echo evil > .wave/skills/x
true'
wb run --settings "$settings" -- sh -c "$attack"
check "the attack script ran (status 0)" [ "$RC" -eq 0 ]
check ".git is unchanged after mv .git .git_old and rebuilding hooks" [ "$(sum "$WS/.git")" = "$before_git" ]
check "no .git_old was created" [ ! -e "$WS/.git_old" ]
check ".git/commondir was not written" [ ! -e "$WS/.git/commondir" ]
check "the hooks of a repo 6 levels deep are unchanged" [ "$(sum "$nested/.git")" = "$before_nested" ]
check "the hooks of a repo in a git-ignored folder are unchanged" [ "$(sum "$ign_git")" = "$before_ign" ]
check "workspace settings unchanged" grep -q '"enabled":true' "$WS/.wave/settings.json"
check "no .vscode, .idea, .mcp.json, .claude left in the workspace" bash -c '[ ! -e "$0/.vscode" ] && [ ! -e "$0/.idea" ] && [ ! -e "$0/.mcp.json" ] && [ ! -e "$0/.claude" ]' "$WS"
check "the workspace listing is unchanged (no stubs left)" [ "$(snapshot "$WS")" = "$before_ws" ]

# allowWrite ~, cwd below it: home stays read-only (said), the workspace below it is writable.
wb run --settings "$settings" -- sh -c 'echo evil >> ~/.bashrc; echo evil > ~/.profile; echo x > ~/ok.txt'
check "~/.bashrc unchanged when ~ is writable" [ "$(cat "$HOME/.bashrc")" = "# rc" ]
check "~/.profile was not created" [ ! -e "$HOME/.profile" ]
check "allowWrite ~: home stays read-only" [ ! -e "$HOME/ok.txt" ]
check "and it is said, with the fix" grep -q 'names the home directory .*, which stays read-only in the sandbox; name the directories inside it' <<<"$OUT"
rm -f "$HOME/ok.txt"
wb run --settings "$settings" -- sh -c "echo '{}' > '$settings'"
check "the --settings file itself is protected" grep -q allowWrite "$settings"
check "home listing unchanged (no stubs left)" [ "$(snapshot "$HOME")" = "$before_home" ]

# Nothing is placed on the host for a protected path that does not exist: the supervisor refuses
# to create it. During a run the workspace shows nothing of wavebox's (git status stays clean);
# a run beside another never lifts its guards.
rm -rf "$WS/.vscode"
before_run=$(snapshot "$WS")
status_before=$(git -C "$WS" status --porcelain 2>/dev/null)
(cd "$WS" && "$WAVEBOX" run -- sh -c 'sleep 1.5; mkdir -p .vscode/x; echo evil > .vscode/tasks.json; true' > "$SCRATCH/long.out" 2>&1) &
long=$!
sleep 0.5
check "during a run, the workspace holds nothing wavebox made" [ "$(snapshot "$WS")" = "$before_run" ]
check "during a run, git status on the host shows nothing of wavebox's" [ "$(git -C "$WS" status --porcelain 2>/dev/null)" = "$status_before" ]
wb run -- true
[ "$RC" -eq 0 ] || echo "short run output: $OUT"
check "a short run beside a long one succeeds" [ "$RC" -eq 0 ]
wait $long
check "the long run still could not create .vscode after the short one ended" [ ! -e "$WS/.vscode" ]
check "and its refusal was reported" grep -q "deny file-write $WS/.vscode" "$SCRATCH/long.out"
# A run killed with SIGKILL leaves nothing either (there is nothing to leave).
(cd "$WS" && exec "$WAVEBOX" run -- sleep 5) &
victim=$!
sleep 0.6
kill -9 $victim; wait $victim 2>/dev/null
check "a run killed with SIGKILL left nothing in the workspace" [ "$(snapshot "$WS")" = "$before_run" ]

# A repository the command creates is named after the run, and protected from the next run on.
wb run -- sh -c 'mkdir -p newrepo && git init -q newrepo'
check "a git repository created by the command is warned about" grep -q "created the git repository \"$WS/newrepo/.git\"" <<<"$OUT"
wb run -- sh -c 'echo evil > newrepo/.git/hooks/pre-commit'
check "the next run protects its hooks" [ ! -e "$WS/newrepo/.git/hooks/pre-commit" ]
wb run -- true
check "an existing repository is not warned about again" bash -c '! grep -q "created the git repository" <<<"$0"' "$OUT"

# Runs at once in one workspace share the stubs: a run that finds another's stub joins it, so
# the other cannot take it away before the mounts are placed (it did: now and then a run failed
# with 125, "placing the mount at .../.claude: No such file or directory"). None fails, none is
# left behind.
before=$(snapshot "$WS")
rm -f "$SCRATCH/conc.fail"
for r in $(seq 1 20); do
  for k in 1 2 3 4; do
    (cd "$WS" && "$WAVEBOX" run -- true >/dev/null 2>"$SCRATCH/conc.$k" || cat "$SCRATCH/conc.$k" >> "$SCRATCH/conc.fail") &
  done
  wait
done
check "80 runs, four at a time in one workspace: none failed $(head -c 300 "$SCRATCH/conc.fail" 2>/dev/null)" [ ! -s "$SCRATCH/conc.fail" ]
check "and no stub is left behind" [ "$(snapshot "$WS")" = "$before" ]
# A workspace with more protected folders than the usual 1024 descriptors (node_modules whose
# packages ship .vscode or .idea): every one is guarded, and the run works.
mkdir -p "$WS/many"
for i in $(seq 1 1100); do mkdir -p "$WS/many/p$i/.idea"; done
wb run -- sh -c 'echo evil > many/p7/.idea/workspace.xml; echo ran'
check "1100 protected folders: the run works" grep -qx ran <<<"$OUT"
check "... and each is guarded" [ ! -e "$WS/many/p7/.idea/workspace.xml" ]
rm -rf "$WS/many"
finish
