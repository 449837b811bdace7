#!/usr/bin/env bash
# sandbox.mode: strict shows only the system trees, the workspace and TMPDIR (the rest
# of the host, home above all, is not there at all) and real builds still work in it; permissive
# warns on every run and says what it drops. Each is checked on the host afterwards.
. "$(dirname "$0")/lib.sh"

printf '{"sandbox":{"enabled":true,"mode":"strict"}}' > "$SCRATCH/strict.json"
printf '{"sandbox":{"enabled":true,"mode":"permissive"}}' > "$SCRATCH/permissive.json"
printf '{"sandbox":{"enabled":true}}' > "$SCRATCH/compat.json"
echo "home secret" > "$HOME/notes.txt"
echo "//registry.example.test/:_authToken=abc" > "$HOME/.npmrc"
mkdir -p "$HOME/.config/gcloud" && echo '{"token":"x"}' > "$HOME/.config/gcloud/credentials.db"

# --- strict: what is not there.
probe='for p in "$HOME/notes.txt" "$HOME/.npmrc" "$HOME/.config" /root /srv /mnt /media /var/lib /home /sys /run; do
  [ -e "$p" ] && echo "PRESENT $p"; cat "$p" 2>/dev/null; done; ls -A "$HOME"; echo "tmp:$TMPDIR"; ls /'
wb run --settings "$SCRATCH/strict.json" -- sh -c "$probe"
check "strict: the run works" [ "$RC" -eq 0 ]
check "strict: nothing of home outside the workspace, /root, /home, /srv, /mnt, /media, /var/lib, /sys, /run" \
  bash -c '! grep -q PRESENT <<<"$0"' "$OUT"
check "strict: no credential content reached the command" bash -c '! grep -qE "home secret|_authToken|token" <<<"$0"' "$OUT"
check "strict: home holds only the path to the workspace" grep -qx proj <<<"$OUT"
wb run --settings "$SCRATCH/compat.json" -- sh -c "$probe"
check "compat (the default) still shows home and the rest, read-only" bash -c 'grep -q "PRESENT $HOME/notes.txt" <<<"$0"' "$OUT"

# A workspace outside home: home is not there at all.
other="$SCRATCH/elsewhere"; mkdir -p "$other"
OUT=$(cd "$other" && "$WAVEBOX" run --settings "$SCRATCH/strict.json" -- sh -c '[ -e "$HOME" ] && echo HOME-PRESENT; touch here && echo wrote' 2>&1)
check "strict: with the workspace outside home, \$HOME is absent" bash -c '! grep -q HOME-PRESENT <<<"$0"' "$OUT"
check "strict: that workspace is writable" [ -e "$other/here" ]

# --- strict: real work in the workspace (git, cmake with a compiler, python, node).
mkdir -p "$WS/app"
cat > "$WS/app/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.10)
project(hello C)
add_executable(hello hello.c)
EOF
printf '#include <stdio.h>\nint main(void){puts("hello from strict");return 0;}\n' > "$WS/app/hello.c"
wb run --settings "$SCRATCH/strict.json" -- sh -c '
  git init -q && git -c user.email=t@example.test -c user.name=t commit -q --allow-empty -m first && git log --oneline | wc -l
  cmake -S app -B app/build >/dev/null && cmake --build app/build >/dev/null && ./app/build/hello
  /usr/bin/python3 -c "import json, tempfile; f = tempfile.NamedTemporaryFile(); print(\"python ok\", json.dumps(1))"
  if command -v node >/dev/null; then node -e "console.log(\"node ok\")"; else echo "node ok"; fi'
check "strict: git, cmake and a compiler build and run in the workspace" grep -q "hello from strict" <<<"$OUT"
check "strict: python (with a temp file in TMPDIR) and node work" bash -c 'grep -q "python ok 1" <<<"$0" && grep -q "node ok" <<<"$0"' "$OUT"
check "strict: the build's outputs are on the host" [ -x "$WS/app/build/hello" ]

# --- strict: the workspace's own protections hold, over two runs.
git -C "$WS" config core.editor true
cp "$WS/.git/config" "$SCRATCH/config.before"
for _ in 1 2; do
  wb run --settings "$SCRATCH/strict.json" -- sh -c 'echo "#!/bin/sh" > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit
    echo "[core] fsmonitor = evil" >> .git/config; mkdir -p .vscode; echo "{}" > .vscode/tasks.json; echo x > .envrc; true'
done
check "strict: no hook was planted" [ ! -e "$WS/.git/hooks/pre-commit" ]
check "strict: .git/config unchanged" cmp -s "$WS/.git/config" "$SCRATCH/config.before"
check "strict: no .vscode or .envrc made" bash -c '[ ! -e "$0/.vscode" ] && [ ! -e "$0/.envrc" ]' "$WS"
check "strict: the refusals are reported" grep -q "deny file-write $WS/.git/hooks/pre-commit" <<<"$OUT"

# --- strict: an allowRead reached through a link a run planted in the workspace refuses the run
# (it would show the link's target: home); a denyRead below /usr holds under /lib and /bin too.
wb run -- sh -c 'mkdir -p vendor && ln -s "$HOME" vendor/sdk'
printf '{"sandbox":{"enabled":true,"mode":"strict","filesystem":{"allowRead":["%s"]}}}' "$WS/vendor/sdk" > "$SCRATCH/planted.json"
wb run --settings "$SCRATCH/planted.json" -- cat "$WS/vendor/sdk/notes.txt"
check "strict: an allowRead through a planted link is refused (125), home not shown" \
  bash -c '[ "$0" -eq 125 ] && ! grep -q "home secret" <<<"$1"' "$RC" "$OUT"
rm -rf "$WS/vendor"
if [ -L /lib ] && [ -e /usr/lib/os-release ]; then
  printf '{"sandbox":{"enabled":true,"mode":"strict","filesystem":{"denyRead":["/usr/lib/os-release"]}}}' > "$SCRATCH/usrmask.json"
  wb run --settings "$SCRATCH/usrmask.json" -- sh -c 'cat /lib/os-release; cat /usr/lib/os-release; true'
  check "strict: a denyRead below /usr is not readable through the /lib link" bash -c '! grep -q "^NAME=" <<<"$0"' "$OUT"
fi

# --- strict: doctor prints what is visible.
wb doctor --settings "$SCRATCH/strict.json"
check "strict: doctor lists the visible trees" bash -c 'grep -q "visible (mode strict" <<<"$0" && grep -qx "    /usr" <<<"$0" && grep -qx "    /etc" <<<"$0"' "$OUT"
wb doctor --json --settings "$SCRATCH/strict.json"
check "strict: doctor --json has policy.filesystem.visible" grep -q '"visible": *\[' <<<"$OUT"

# --- permissive: warned about on every run, and what it drops is real.
mkdir -p "$HOME/.ssh" && echo "PRIVATE KEY" > "$HOME/.ssh/id_test"
for i in 1 2; do
  wb run --settings "$SCRATCH/permissive.json" -- sh -c 'cat "$HOME/.ssh/id_test"; echo "tok=${GITHUB_TOKEN:-}"; echo x > .git/hooks/pre-push; true'
  check "permissive: run $i warns that it is for troubleshooting" grep -q 'mode "permissive" is for troubleshooting only' <<<"$OUT"
done
export GITHUB_TOKEN=ghp_e2e_token
wb run --settings "$SCRATCH/permissive.json" -- sh -c 'cat "$HOME/.ssh/id_test"; echo "tok=${GITHUB_TOKEN:-}"'
check "permissive drops: credential files in home are readable" grep -q "PRIVATE KEY" <<<"$OUT"
check "permissive drops: credential variables reach the command" grep -q "tok=ghp_e2e_token" <<<"$OUT"
wb run --settings "$SCRATCH/compat.json" -- sh -c 'cat "$HOME/.ssh/id_test"; echo "tok=${GITHUB_TOKEN:-}"'
check "compat keeps both out" bash -c '! grep -q "PRIVATE KEY" <<<"$0" && grep -qx "tok=" <<<"$0"' "$OUT"
check "compat: no permissive warning" bash -c '! grep -q permissive <<<"$0"' "$OUT"
unset GITHUB_TOKEN
check "permissive keeps: hooks still protected" [ ! -e "$WS/.git/hooks/pre-push" ]
# Secrets by default: the system's password hashes (a root caller could read them), common token
# variables, and a password inside a URL, in compat and strict alike.
printf '{"sandbox":{"enabled":true,"mode":"strict"}}' > "$SCRATCH/strict-secrets.json"
for settings in "" "--settings $SCRATCH/strict-secrets.json"; do
  # shellcheck disable=SC2086
  GITHUB_PAT=ghp_modes_pat TF_TOKEN_app_terraform_io=tf_modes DATABASE_URL=postgres://u:pw_modes@db/x \
    wb run $settings -- sh -c 'cat /etc/shadow 2>&1 | head -1; env'
  check "secrets ${settings:+(strict)}: /etc/shadow unreadable" bash -c '! grep -q "^root:" <<<"$0"' "$OUT"
  check "secrets ${settings:+(strict)}: token variables and URL passwords kept out" \
    bash -c '! grep -qE "ghp_modes_pat|tf_modes|pw_modes" <<<"$0"' "$OUT"
done
# Tools' files with a token beside settings the tool needs: shown without the token (npm still
# reads its registry), the host's file untouched; permissive, or allowRead of the file, passes it.
printf 'registry=https://registry.example.test/\n//registry.example.test/:_authToken=npm_modes_secret\n' > "$HOME/.npmrc"
printf 'npmRegistryServer: "https://registry.example.test"\nnpmAuthToken: yarn_modes_secret\n' > "$HOME/.yarnrc.yml"
mkdir -p "$HOME/dotfiles" && printf '[global]\nindex-url = https://me:pip_modes_secret@pypi.example.test/simple\n' > "$HOME/dotfiles/pip.conf"
mkdir -p "$HOME/.config/pip" && ln -sf "$HOME/dotfiles/pip.conf" "$HOME/.config/pip/pip.conf"
for settings in "" "--settings $SCRATCH/strict-secrets.json"; do
  # shellcheck disable=SC2086
  wb run $settings -- sh -c 'cat "$HOME/.npmrc" "$HOME/.yarnrc.yml" "$HOME/.config/pip/pip.conf" "$HOME/dotfiles/pip.conf"'
  check "secrets ${settings:+(strict)}: tokens in ~/.npmrc, ~/.yarnrc.yml and pip.conf (through a link) kept out" \
    bash -c '! grep -qE "npm_modes_secret|yarn_modes_secret|pip_modes_secret" <<<"$0"' "$OUT"
  # (Mode strict shows no home at all.)
  [ -z "$settings" ] && check "secrets: the rest of each file is there" \
    bash -c 'grep -q "^registry=https://registry.example.test/" <<<"$0" && grep -q "npmRegistryServer" <<<"$0" && grep -q "index-url = https://pypi.example.test/simple" <<<"$0"' "$OUT"
done
if command -v npm >/dev/null; then
  wb run -- npm config get registry
  check "npm reads its registry from the shown file" grep -q "https://registry.example.test/" <<<"$OUT"
fi
check "the host's ~/.npmrc keeps its token" grep -q "npm_modes_secret" "$HOME/.npmrc"
wb run --settings "$SCRATCH/permissive.json" -- cat "$HOME/.npmrc"
check "permissive: the token is passed" grep -q "npm_modes_secret" <<<"$OUT"
printf '{"sandbox":{"enabled":true,"filesystem":{"allowRead":["~/.npmrc"]}}}' > "$SCRATCH/pass-npmrc.json"
wb run --settings "$SCRATCH/pass-npmrc.json" -- cat "$HOME/.npmrc" "$HOME/.yarnrc.yml"
check "allowRead of the file passes its token" grep -q "npm_modes_secret" <<<"$OUT"
check "and only that file's" bash -c '! grep -q "yarn_modes_secret" <<<"$0"' "$OUT"
finish
