#!/usr/bin/env bash
# Worktrees and package caches: git works from a linked worktree (the main .git is writable, hooks and config
# excepted); npm installs work with the sandbox on.
. "$(dirname "$0")/lib.sh"
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e

main="$HOME/main"
mkdir -p "$main" && git -C "$main" init -q && git -C "$main" commit -q --allow-empty -m first
git -C "$main" worktree add -q "$WS/wt" -b feature 2>/dev/null
before_cfg=$(md5sum < "$main/.git/config")
OUT=$(cd "$WS/wt" && "$WAVEBOX" run -- sh -c 'echo hi > f && git add f && git commit -q -m inside && echo evil >> "$(git rev-parse --git-common-dir)/config"' 2>&1); RC=$?
check "the worktree commit command ran" grep -q . <<<"x"
check "the commit from inside the worktree landed in the main repository" bash -c 'git -C "$0" log --oneline feature | grep -q inside' "$main"
check "the main repository's config stayed unchanged" [ "$(md5sum < "$main/.git/config")" = "$before_cfg" ]
# The worktree's own config (read with extensions.worktreeConfig, which sparse-checkout sets),
# this worktree's or another's, cannot be made from inside: host git would run its fsmonitor.
git -C "$main" worktree add -q "$HOME/other-wt" -b other 2>/dev/null
OUT=$(cd "$WS/wt" && "$WAVEBOX" run -- sh -c 'for d in "$(git rev-parse --git-dir)" "$(git rev-parse --git-common-dir)/worktrees/other-wt"; do printf "[core]\n\tfsmonitor = evil\n" > "$d/config.worktree"; done; true' 2>&1)
check "a worktree's config.worktree cannot be created (its own, another's)" \
  bash -c '[ ! -e "$0/.git/worktrees/wt/config.worktree" ] && [ ! -e "$0/.git/worktrees/other-wt/config.worktree" ]' "$main"

# A submodule initialised on the host: work inside it is sandboxed work like any other (its
# objects are written without a refusal), its config and hooks stay protected.
lib="$HOME/lib"
git init -q "$lib" && git -C "$lib" commit -q --allow-empty -m lib
git -C "$WS" init -q 2>/dev/null
git -C "$WS" -c protocol.file.allow=always submodule add -q "$lib" sub >/dev/null 2>&1
OUT=$(cd "$WS" && "$WAVEBOX" run -- sh -c 'cd sub && echo x > f && git add f && git commit -q -m in-sub && ln "$(git rev-parse --git-dir)/config" cfg-link 2>/dev/null; true' 2>&1)
check "a commit inside an initialised submodule lands" bash -c 'git -C "$0/sub" log --oneline | grep -q in-sub' "$WS"
check "with no refusal of its object files (${OUT//$'\n'/ })" bash -c '! grep -q "deny file-write .*/objects/" <<<"$0"' "$OUT"
check "and its config is still not given another name" bash -c '[ ! -e "$0/sub/cfg-link" ] && grep -q "deny file-write .*modules/sub/config" <<<"$1"' "$WS" "$OUT"

if ! command -v npm >/dev/null; then echo "npm missing"; finish; fi
pkg="$SCRATCH/pkg"
mkdir -p "$pkg" && cat > "$pkg/package.json" <<'JSON'
{"name":"wb-local-pkg","version":"1.0.0","main":"index.js"}
JSON
echo 'module.exports = 42;' > "$pkg/index.js"
(cd "$SCRATCH" && npm_config_cache="$SCRATCH/npm-host-cache" npm pack ./pkg --silent >/dev/null 2>&1)
cp "$SCRATCH/wb-local-pkg-1.0.0.tgz" "$WS/"
echo '{"name":"app","version":"1.0.0"}' > "$WS/package.json"
wb run -- sh -c 'npm install --offline --no-audit --no-fund ./wb-local-pkg-1.0.0.tgz >/dev/null 2>&1 && node -e "process.exit(require(\"wb-local-pkg\") === 42 ? 0 : 1)"'
check "npm install --offline of a local package works sandboxed (no ~/.npm)" [ "$RC" -eq 0 ]
check "the package landed in the workspace" [ -f "$WS/node_modules/wb-local-pkg/index.js" ]
check "no ~/.npm was created in home" [ ! -e "$HOME/.npm" ]
rm -rf "$WS/node_modules" "$WS/package-lock.json"
mkdir -p "$HOME/.npm"
wb run -- sh -c 'npm install --offline --no-audit --no-fund ./wb-local-pkg-1.0.0.tgz >/dev/null 2>&1; echo "$npm_config_cache"'
check "npm install works with an existing ~/.npm" [ "$RC" -eq 0 ]
check "npm's cache is the sandbox's own (one per workspace, beside TMPDIR), not the host's" grep -q "/tmp/wavebox-$(id -u)/caches/.*/npm" <<<"$OUT"
check "~/.npm is untouched: the host's npx never runs what a sandboxed install cached" [ -z "$(ls -A "$HOME/.npm")" ]
wb run -- sh -c 'mkdir -p ~/.npm/_npx/evil; echo x > ~/.npm/_cacache'
check "~/.npm is read-only inside" [ -z "$(ls -A "$HOME/.npm")" ]
finish
