#!/usr/bin/env bash
# The workspace is the project, not the directory the command starts in; a link planted where a
# command starts (by an earlier run, or a concurrent command of a serve session) changes where it
# starts, never what is writable; home is never a writable root.
. "$(dirname "$0")/lib.sh"
command -v git >/dev/null || { echo "needs git"; exit 77; }

# A repository with a subdirectory: from src/, git commits (.git/index.lock is in the project),
# the project's other files are writable, and the caches are the project's, not the subdirectory's.
git -C "$WS" init -q && git -C "$WS" config user.email e2e@example.test && git -C "$WS" config user.name e2e
mkdir -p "$WS/src" && echo one > "$WS/src/a.txt" && git -C "$WS" add -A && git -C "$WS" commit -qm one
OUT=$(cd "$WS/src" && "$WAVEBOX" run -- sh -c 'echo two >> a.txt && git commit -qam two && echo > ../top.txt && echo "cache=$npm_config_cache"' 2>&1)
check "from src/: git commit works (the workspace is the project)" bash -c '[ "$(git -C "$0" log --format=%s -1)" = two ]' "$WS"
check "from src/: the project's top is writable" [ -f "$WS/top.txt" ]
src_cache=$(grep -o 'cache=.*' <<<"$OUT")
OUT=$(cd "$WS" && "$WAVEBOX" run -- sh -c 'echo "cache=$npm_config_cache"' 2>&1)
check "one set of caches per project, from any subdirectory" [ "$src_cache" = "$(grep -o 'cache=.*' <<<"$OUT")" ]
check "outside the project stays read-only" bash -c '! (cd "$0/src" && "$1" run -- touch "$2/outside.txt") >/dev/null 2>&1; [ ! -e "$2/outside.txt" ]' "$WS" "$WAVEBOX" "$SCRATCH"

# git keeps working across commits that change .gitmodules (a tracked file git runs nothing
# from): checkout, switch back and stash leave a clean tree, run after run.
printf '[submodule "a"]\n\tpath = a\n\turl = ./a\n' > "$WS/.gitmodules" && git -C "$WS" add -A && git -C "$WS" commit -qm gm1
printf '[submodule "b"]\n\tpath = b\n\turl = ./b\n' > "$WS/.gitmodules" && git -C "$WS" commit -qam gm2
for i in 1 2; do
  wb run -- sh -c 'git checkout -q HEAD~1 && git checkout -q - && echo "[x]" >> .gitmodules && git stash -q && git stash pop -q && git checkout -q -- .gitmodules'
  check "run $i: git checkout and stash across a .gitmodules change succeed" [ "$RC" -eq 0 ]
  check "run $i: and leave the tree clean" bash -c '[ -z "$(git -C "$0" status --porcelain --untracked-files=no)" ] && grep -q "submodule \"b\"" "$0/.gitmodules"' "$WS"
done

# A link to home planted in the workspace by an earlier run: starting there (--cwd) does not make
# home writable, inside a repository or not.
for i in 1 2; do
  wb run -- ln -sfn "$HOME" lnk
  OUT=$(cd "$WS" && "$WAVEBOX" run --cwd lnk -- sh -c 'touch plain-from-link' 2>&1)
  check "run $i: --cwd through a planted link to home: home not written" [ ! -e "$HOME/plain-from-link" ]
done
# The same link entered with cd (the shell's $PWD names the link, the kernel's cwd its target):
# the project is still the workspace, the link's target is only where the command starts.
mkdir -p "$HOME/.config"
wb run -- sh -c 'rm -rf src-l && ln -s "$HOME/.config" src-l'
OUT=$(cd "$WS/src-l" && "$WAVEBOX" run -- sh -c 'touch x-cd; mkdir -p app && touch app/pwn' 2>&1)
check "cd through a planted link into home: nothing written there" \
  bash -c '[ ! -e "$0/.config/x-cd" ] && [ ! -e "$0/.config/app" ]' "$HOME"
P2="$SCRATCH/p2" && mkdir -p "$P2" && ln -s "$HOME" "$P2/lnk"
OUT=$(cd "$P2" && "$WAVEBOX" run --cwd lnk -- sh -c 'touch plain-no-repo' 2>&1)
check "outside a repository too (the workspace would be home: read-only)" [ ! -e "$HOME/plain-no-repo" ]
check "and said" grep -q "is the home directory (or holds it), so it is read-only" <<<"$OUT"

# serve: the session's directory is every command's workspace; a command starting in src/
# writes the project's top, and a link a command plants does not widen the next one.
serve_out=$(cd "$WS" && timeout 120 python3 - "$WAVEBOX" "$WAVEBOX_SRC/tests/serve" "$WS" "$HOME" <<'PY' 2>&1
import sys
sys.path.insert(0, sys.argv[2])
from wbclient import Server, out
ws, home = sys.argv[3], sys.argv[4]
srv = Server(sys.argv[1])
srv.result("initialize", {})
srv.result("session/open", {"sessionId": "S", "cwd": ws, "settings": {"sandbox": {"enabled": True}}})
r = srv.result("command/exec", {"sessionId": "S", "cwd": "src", "commandLine": "echo x > ../from-serve.txt; echo rc=$?"})
print("subdir", out(r).strip())
srv.result("command/exec", {"sessionId": "S", "commandLine": "rm -rf src2; ln -s %s src2" % home})
r = srv.result("command/exec", {"sessionId": "S", "cwd": "src2", "commandLine": "touch %s/serve-planted; echo rc=$?" % home})
print("planted", r.get("exitCode"), out(r).strip())
srv.close()
PY
)
check "serve: a command started in src/ writes the project's top" [ -f "$WS/from-serve.txt" ]
check "serve: a cwd through a planted link to home writes nothing there" [ ! -e "$HOME/serve-planted" ]

# Home as a writable root: read-only, said once.
OUT=$(cd "$HOME" && "$WAVEBOX" run -- sh -c 'echo x > ~/home-note.txt' 2>&1)
check "home as the workspace: read-only" [ ! -e "$HOME/home-note.txt" ]
check "home as the workspace: said with the fix" grep -q "run from a project directory, or name the directories" <<<"$OUT"
finish
