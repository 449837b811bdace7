#!/usr/bin/env bash
# The threat model over time (wavebox(1), THREAT MODEL): nothing a sandboxed run leaves behind weakens the host or a later run.
# Each family of attack runs two or more times in a row, and the host is checked afterwards:
# did anything appear or change that git, a shell, an editor, an agent host, direnv, python or
# the next wavebox run would execute or trust?
. "$(dirname "$0")/lib.sh"

git -C "$WS" init -q
git -C "$WS" config user.email t@example.test
git -C "$WS" config user.name t
sum() { (cd "$1" && find . -type f -print0 2>/dev/null | sort -z | xargs -0 md5sum 2>/dev/null; find . 2>/dev/null | sort) | md5sum; }
# Runs an attack twice in a row; a run that did not happen (125) fails the test, so an attack
# cannot pass for want of running.
twice() {
  wb run "$@"; local rc1=$RC out1=$OUT
  wb run "$@"; OUT="$out1"$'\n'"$OUT"
  if [ "$rc1" -eq 125 ] || [ "$RC" -eq 125 ]; then fail "the attack ran both times: $(head -c 300 <<<"$OUT")"; RC=125; fi
}

# --- Another workspace's TMPDIR and package caches are not this run's to read (what its builds
# and runs left there), while this run's own stay readable and writable.
OTHER="$SCRATCH/home/other"
mkdir -p "$OTHER"
wb run --cwd "$OTHER" -- sh -c 'echo other-secret > "$TMPDIR/left.txt"; mkdir -p "$npm_config_cache"; echo cached > "$npm_config_cache/x"; echo "$TMPDIR"'
other_tmp=$(tail -1 <<<"$OUT")
check "caches: the other workspace's run left its file" [ -f "$other_tmp/left.txt" ]
twice -- sh -c 'cat "$0/left.txt"; ls "$(dirname "$0")"; echo own > "$TMPDIR/own.txt" && cat "$TMPDIR/own.txt"' "$other_tmp"
check "caches: another workspace's TMPDIR is not readable" bash -c '! grep -q other-secret <<<"$0"' "$OUT"
check "caches: and this run's own TMPDIR is readable and writable" grep -q '^own$' <<<"$OUT"

# --- Hook managers and toolchain selectors (docs/protected.md): what they name runs on the next
# commit or tool command, so a command cannot plant them, at the root or deeper.
mkdir -p "$WS/pkg"
twice -- sh -c 'for d in . pkg; do mkdir -p $d/.husky; echo evil > $d/.husky/pre-commit; echo evil > $d/lefthook.yml; echo evil > $d/.pre-commit-config.yaml; printf "[toolchain]\npath = /tmp/evil\n" > $d/rust-toolchain.toml; echo "python path:/tmp/evil" > $d/.tool-versions; echo "yarnPath: evil.js" > $d/.yarnrc.yml; echo "script-shell=/tmp/evil" > $d/.npmrc; echo evil > $d/mise.toml; done; true'
for p in .husky lefthook.yml .pre-commit-config.yaml rust-toolchain.toml .tool-versions .yarnrc.yml .npmrc mise.toml; do
  check "hook managers and toolchains: $p cannot be planted (root, nested)" \
    bash -c '[ ! -e "$0" ] && [ ! -e "$1" ]' "$WS/$p" "$WS/pkg/$p"
done
rm -rf "$WS/pkg"

# --- Fail-open planning: a directory made unreadable by one run does not hide what is in it
# from the next run's guards.
mkdir -p "$WS/locked/inner"
git -C "$WS/locked/inner" init -q
before=$(sum "$WS/locked/inner/.git")
wb run -- chmod 000 "$WS/locked"
wb run -- sh -c 'chmod 755 locked 2>/dev/null; echo evil > locked/inner/.git/hooks/post-checkout; echo "[core] fsmonitor = evil" >> locked/inner/.git/config; true'
chmod 755 "$WS/locked"
check "fail-open: a nested repository behind a directory made unreadable stays unchanged" [ "$(sum "$WS/locked/inner/.git")" = "$before" ]
is_root || check "fail-open: the unreadable directory was named" grep -q "cannot read .*locked" <<<"$OUT"
rm -rf "$WS/locked"

# --- git beyond .git/hooks and .git/config.
# A repository laid out bare (HEAD, objects/, refs/), which git finds before walking up.
git init -q --bare "$WS/vendor.git"
before=$(sum "$WS/vendor.git")
twice -- sh -c 'echo evil > vendor.git/hooks/post-update; echo "[core] fsmonitor = touch /tmp/pwned-bare" >> vendor.git/config; rm -rf vendor.git/hooks; true'
check "git: a bare-layout repository's hooks and config are protected" [ "$(sum "$WS/vendor.git")" = "$before" ]
# A fresh clone's submodule not initialised yet: .git/modules/<name> does not exist.
printf '[submodule "lib"]\n\tpath = lib\n\turl = ./lib\n' > "$WS/.gitmodules"
twice -- sh -c 'mkdir -p .git/modules/lib/hooks && echo evil > .git/modules/lib/hooks/post-checkout; echo "[core] hooksPath = /tmp" > .git/modules/lib/config; true'
check "git: no git directory for an uninitialised submodule can be planted" [ ! -e "$WS/.git/modules" ]
mkdir -p "$WS/.git/modules/known"
git init -q --bare "$WS/.git/modules/known"
twice -- sh -c 'mv .git/modules .git/modules-old; mkdir -p .git/modules/lib/hooks; echo evil > .git/modules/lib/hooks/post-checkout; mkdir .git/modules/lib2; true'
check "git: the modules directory cannot be moved away and made anew" bash -c '[ -d "$0/.git/modules/known" ] && [ ! -e "$0/.git/modules-old" ] && [ ! -e "$0/.git/modules/lib" ] && [ ! -e "$0/.git/modules/lib2" ]' "$WS"
rm -rf "$WS/.git/modules"
# Files the repository's config points at: include.path, core.hooksPath (husky's .husky/_).
printf '[core]\n\thooksPath = .husky/_\n[include]\n\tpath = ../shared.gitconfig\n' >> "$WS/.git/config"
echo "# shared" > "$WS/shared.gitconfig"
twice -- sh -c 'mkdir -p .husky/_ && echo "#!/bin/sh" > .husky/_/pre-commit; echo "[core] fsmonitor = evil" >> shared.gitconfig; true'
check "git: core.hooksPath's directory cannot be created" [ ! -e "$WS/.husky/_" ]
check "git: an included config file cannot be changed" [ "$(cat "$WS/shared.gitconfig")" = "# shared" ]
git -C "$WS" config --unset core.hooksPath; git -C "$WS" config --unset include.path
# A repository made during one run and hidden by rewinding directory times: protected from the
# next run on, and warned about.
wb run -- sh -c 'mkdir -p hide/deep && git init -q hide/deep/r && touch -d "2001-01-01" hide/deep hide . 2>/dev/null; true'
check "git: a repository the command created is warned about" grep -q 'created the git repository' <<<"$OUT"
before=$(sum "$WS/hide/deep/r/.git")
wb run -- sh -c 'echo evil > hide/deep/r/.git/hooks/pre-commit; echo "[core] fsmonitor = evil" >> hide/deep/r/.git/config; true'
check "git: rewinding mtimes does not hide a new repository from the next run" [ "$(sum "$WS/hide/deep/r/.git")" = "$before" ]

# A hard link made to a new repository's config in the run that made it stays no way in later.
wb run -- sh -c 'git init -q linked && ln linked/.git/config cfglink; ln linked/.git/hooks/pre-commit.sample hooklink; true'
check "git: no hard link to a repository's config or hooks can be made" bash -c '[ ! -e "$0/cfglink" ] && [ ! -e "$0/hooklink" ]' "$WS"
ln "$WS/linked/.git/config" "$WS/hostlink"
wb run -- true
check "git: a protected file with another name refuses the run (125)" [ "$RC" -eq 125 ]
check "git: ... saying why" grep -q "hard links" <<<"$OUT"
rm -f "$WS/hostlink"
# A repository made and moved in one run is still named after it, and guarded next time.
wb run -- sh -c 'git init -q tmprepo && mv tmprepo moved-repo'
check "git: a repository created and moved is warned about" grep -q "created the git repository \"$WS/moved-repo/.git\"" <<<"$OUT"
# HEAD with a commondir (a linked worktree's layout) is a repository too.
mkdir -p "$WS/wt" && echo "ref: refs/heads/main" > "$WS/wt/HEAD" && echo "../.git" > "$WS/wt/commondir"
twice -- sh -c 'echo "[core] fsmonitor = evil" > wt/config; mkdir -p wt/hooks; echo evil > wt/hooks/post-checkout; true'
check "git: a HEAD + commondir layout is guarded" bash -c '[ ! -e "$0/wt/config" ] && [ ! -e "$0/wt/hooks" ]' "$WS"
rm -rf "$WS/wt"
# A tree deeper than the kernel's longest path cannot hide a repository: the run is refused.
deep="$WS/d"; long=$(printf 'x%.0s' $(seq 1 200))
mkdir -p "$deep"
( cd "$deep" && for i in $(seq 1 22); do mkdir "$long" && cd "$long" || exit 1; done; mkdir .git )
wb run -- true
check "scan: a tree deeper than PATH_MAX refuses the run (125)" [ "$RC" -eq 125 ]
check "scan: ... saying why" grep -q "deeper than the longest path" <<<"$OUT"
rm -rf "$deep"
# No set-user-ID or set-group-ID file is left for the host to run.
twice -- sh -c 'cp /bin/true suid-true; chmod 4755 suid-true; chmod g+s suid-true; python3 -c "import os; os.close(os.open(\"suid2\", os.O_CREAT|os.O_WRONLY, 0o6755))"; true'
check "setuid: no set-user-ID or set-group-ID file was left" bash -c '[ -z "$(find "$0" -perm /6000 -type f 2>/dev/null)" ]' "$WS"
rm -f "$WS/suid-true" "$WS/suid2"
# A broken .git/HEAD makes git look at the workspace root itself: HEAD, objects and refs there
# (files will do) would make it a bare repository whose config git trusts.
mkdir -p "$WS/sub2"
twice -- sh -c 'printf "garbage\n" > .git/HEAD.new; printf "ref: refs/heads/main\n" > HEAD; : > objects; : > refs; printf "ref: x\n" > sub2/HEAD; true'
check "git: no HEAD can be made in a directory that is no repository" bash -c '[ ! -e "$0/HEAD" ] && [ ! -e "$0/sub2/HEAD" ]' "$WS"
rm -rf "$WS/objects" "$WS/refs" "$WS/sub2" "$WS/.git/HEAD.new"
wb run -- sh -c 'git -c user.email=t@example.test -c user.name=t commit -q --allow-empty -m x && git checkout -q -b other && git checkout -q -'
check "git: commits and checkouts (HEAD, logs/HEAD) still work inside" [ "$RC" -eq 0 ]
# Modes: nothing becomes writable for other local users.
twice -- sh -c 'chmod 777 . .git; chmod 1777 .git; chmod 1666 .git/index; chmod o+w .git/index; python3 -c "import os; os.umask(0); os.mkdir(\"ww\", 0o1777); os.close(os.open(\"wf\", os.O_CREAT|os.O_WRONLY, 0o666))" ; true'
check "modes: nothing in the workspace is world-writable after the runs (sticky or not)" \
  bash -c '[ -z "$(find "$0" -maxdepth 2 -perm -002 2>/dev/null)" ]' "$WS"
rm -rf "$WS/ww" "$WS/wf"
# Another workspace's package caches are not this run's to write.
other="$SCRATCH/other-ws"; mkdir -p "$other"
other_cache=$(cd "$other" && "$WAVEBOX" run -- sh -c 'mkdir -p "$npm_config_cache" && echo "$npm_config_cache"' 2>/dev/null)
other_tmp=$(cd "$other" && "$WAVEBOX" run -- sh -c 'mkdir -p "$TMPDIR/repo.git/hooks" && echo "$TMPDIR"' 2>/dev/null)
printf '{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["/tmp"]}}}' > "$SCRATCH/tmpw2.json"
for settings in "" "--settings $SCRATCH/tmpw2.json"; do
  # shellcheck disable=SC2086
  twice $settings -- sh -c "mkdir -p '$other_cache/_npx/evil' 2>/dev/null; echo evil > '$other_cache/planted' 2>/dev/null
    echo evil > '$other_tmp/repo.git/hooks/post-checkout' 2>/dev/null; echo evil > '$other_tmp/planted' 2>/dev/null; true"
done
check "caches: another workspace's caches were not written (also with /tmp writable)" \
  bash -c '[ -n "$0" ] && [ ! -e "$0/_npx/evil" ] && [ ! -e "$0/planted" ]' "$other_cache"
check "TMPDIR: another workspace's TMPDIR was not written (also with /tmp writable)" \
  bash -c '[ -d "$0/repo.git/hooks" ] && [ ! -e "$0/repo.git/hooks/post-checkout" ] && [ ! -e "$0/planted" ]' "$other_tmp"
wb run -- sh -c 'echo "$TMPDIR"'; own_tmp=$OUT
check "TMPDIR: each workspace has its own" bash -c '[ -n "$0" ] && [ -n "$1" ] && [ "$0" != "$1" ]' "$own_tmp" "$other_tmp"
# A read-only descriptor stays read-only (a host file given as stdin).
echo "host data" > "$SCRATCH/input.txt"
wb run -- sh -c 'echo appended >> /dev/stdin; true' < "$SCRATCH/input.txt"
check "descriptors: a read-only stdin cannot be reopened for writing" [ "$(cat "$SCRATCH/input.txt")" = "host data" ]
# Another process's /proc entries are not opened for writing on the command's behalf.
wb run -- python3 -c "
import os
try:
    os.open('/proc/1/mem', os.O_RDWR); print('MEM-OPEN')
except OSError as e: print('mem refused', e.errno)"
check "/proc: pid 1's memory does not open for writing" bash -c '! grep -q MEM-OPEN <<<"$0"' "$OUT"

# What the user's own ~/.gitconfig includes is protected, wherever it lies (here, the workspace).
echo "# team settings" > "$WS/team.gitconfig"
printf '[include]\n\tpath = %s\n' "$WS/team.gitconfig" > "$HOME/.gitconfig"
twice -- sh -c 'echo "[core] fsmonitor = evil" >> team.gitconfig; true'
check "git: a file ~/.gitconfig includes stays unchanged" [ "$(cat "$WS/team.gitconfig")" = "# team settings" ]
rm -f "$HOME/.gitconfig" "$WS/team.gitconfig"
# A .git file made in a workspace that is no repository never makes its target writable later
# (the worktree rule is for a real linked worktree only).
nonrepo="$SCRATCH/nonrepo"; mkdir -p "$nonrepo" "$SCRATCH/victim-dir"
(cd "$nonrepo" && "$WAVEBOX" run -- sh -c "echo 'gitdir: $SCRATCH/victim-dir' > .git") >/dev/null 2>&1
(cd "$nonrepo" && "$WAVEBOX" run -- sh -c "echo planted > '$SCRATCH/victim-dir/x'") >/dev/null 2>&1
check "git: 'gitdir: DIR' in a .git file does not make DIR writable" [ ! -e "$SCRATCH/victim-dir/x" ]
# A datagram Unix socket by another type name (SOCK_RAW) is refused too.
wb run -- python3 -c "
import socket
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_RAW); print('RAW-OK')
except OSError as e: print('raw refused', e.errno)"
check "sockets: AF_UNIX SOCK_RAW (a datagram socket) is refused" bash -c '! grep -q RAW-OK <<<"$0"' "$OUT"

# A fresh clone or extraction keeps its protected names (allowed in directories the run made),
# warned about; the same names in directories that existed are refused.
twice -- sh -c 'mkdir -p fresh/clone && cd fresh/clone && mkdir .vscode && echo "mine" > .envrc; true'
check "new dirs: protected names inside a directory the run made are allowed" [ -e "$WS/fresh/clone/.envrc" ]
check "new dirs: and warned about" grep -q "created \"$WS/fresh/clone/.envrc\" in a directory it made" <<<"$OUT"
wb run -- sh -c 'echo evil > fresh/clone/.envrc; rm -rf fresh/clone/.vscode; true'
check "new dirs: from the next run on they are protected" grep -qx "mine" "$WS/fresh/clone/.envrc"
rm -rf "$WS/fresh"
# A package's own editor folder (allowed inside node_modules, where no tool opens it) moved out
# with its directory: warned about, and protected from the next run on, as a clone's are.
mkdir -p "$WS/node_modules/leftpad"
twice -- sh -c 'cd node_modules/leftpad && mkdir -p .vscode && echo "{\"tasks\":[]}" > .vscode/tasks.json && echo evil > .envrc; cd ../.. && mv node_modules/leftpad tools 2>/dev/null; true'
check "node_modules: protected names moved out with their directory are warned about" \
  grep -q "left \"$WS/tools/.envrc\" here" <<<"$OUT"
check "node_modules: ... each of them" grep -q "left \"$WS/tools/.vscode\" here" <<<"$OUT"
wb run -- sh -c 'echo evil2 > tools/.vscode/tasks.json; echo evil2 > tools/.envrc; true'
check "node_modules: from the next run on they are protected" bash -c '! grep -q evil2 "$0"/tools/.vscode/tasks.json "$0"/tools/.envrc' "$WS"
rm -rf "$WS/node_modules" "$WS/tools"

# --- Default-writable places that are code: package caches are the sandbox's own.
mkdir -p "$HOME/.npm/_npx" "$HOME/.local/share/pnpm" "$HOME/.cache/yarn"
twice -- sh -c 'mkdir -p ~/.npm/_npx/1/node_modules/.bin; echo evil > ~/.local/share/pnpm/pnpm; echo evil > ~/.cache/yarn/x; true'
check "code places: ~/.npm/_npx, PNPM_HOME and the yarn cache stay unchanged" \
  [ -z "$(find "$HOME/.npm/_npx" "$HOME/.local/share/pnpm" "$HOME/.cache/yarn" -mindepth 1 2>/dev/null)" ]
# wavebox never runs a bwrap from a PATH entry the sandbox can write.
mkdir -p "$WS/bin"
printf '#!/bin/sh\ntouch "%s/fake-bwrap-ran"\nexec /usr/bin/bwrap "$@"\n' "$SCRATCH" > "$WS/bin/bwrap"
chmod +x "$WS/bin/bwrap"
PATH="$WS/bin:$PATH" wb run -- true
check "code places: a bwrap planted on PATH is never executed" [ ! -e "$SCRATCH/fake-bwrap-ran" ]
check "code places: and the run still works" [ "$RC" -eq 0 ]
rm -rf "$WS/bin"

# --- Symbolic links and wavebox's own state: read-only inside whatever the policy, even with
# /tmp writable; nothing new may appear in it.
state="/tmp/wavebox-$(id -u)"
printf '{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["/tmp"]}}}' > "$SCRATCH/tmpw.json"
rm -rf "$state/stubs2" "$state/seccomp2" 2>/dev/null  # an older binary's leftovers would mislead the check
wb run -- true  # the caches exist
twice --settings "$SCRATCH/tmpw.json" -- sh -c "
for f in $state/scan/* $state/seccomp/* $state/bwrap-version $state/userns-ok; do echo planted-junk > \"\$f\"; done
rm -rf $state/scan $state/seccomp; ln -s / $state/stubs2; mkdir $state/seccomp2; chmod 777 $state/tmp; true"
check "state: nothing in wavebox's state dir was written with /tmp writable" bash -c '! grep -rqs planted-junk "$0"' "$state"
check "state: the scan cache and compiled programs are still there" bash -c '[ -n "$(ls "$0/scan")" ] && [ -n "$(ls "$0/seccomp")" ]' "$state"
check "state: nothing new appeared in it" bash -c '[ ! -e "$0/stubs2" ] && [ ! -e "$0/seccomp2" ]' "$state"
wb run -- sh -c 'echo evil > .git/hooks/pre-commit'
check "state: the next run works (TMPDIR opened up by chmod is closed again) and still guards" \
  bash -c '[ "$0" -ne 125 ] && [ ! -e "$1/.git/hooks/pre-commit" ]' "$RC" "$WS"

# A writable directory of the settings that a run replaced by a link (to home) is refused, not
# followed, by the next run.
mkdir -p "$WS/build"
printf '{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["%s"]}}}' "$WS/build" > "$SCRATCH/build.json"
wb run -- sh -c 'rm -rf build && ln -s "$HOME" build'
wb run --settings "$SCRATCH/build.json" -- sh -c 'echo evil > build/.planted-through-link'
check "symlinks: a writable path turned into a link is refused (125)" [ "$RC" -eq 125 ]
check "symlinks: nothing was written through it" [ ! -e "$HOME/.planted-through-link" ]
rm -f "$WS/build"
# A refused write to a protected file says so, in the command's error and in the block.
wb run -- git config user.name someone-else
check "git config: the refusal is 'Read-only file system', not 'busy'" grep -q "Read-only file system" <<<"$OUT"
check "git config: the block names the protection" grep -q "deny file-write $WS/.git/config (protected" <<<"$OUT"

# --- Settings files: a .wave/settings*.json made in a subdirectory never configures a run there.
mkdir -p "$WS/sub"
twice -- sh -c 'mkdir -p sub/.wave sub/.claude; echo "{\"sandbox\":{\"enabled\":false}}" > sub/.wave/settings.json; echo "{\"sandbox\":{\"enabled\":false}}" > sub/.wave/settings.local.json; true'
check "settings: no settings file can be created in a subdirectory" bash -c '[ ! -e "$0/sub/.wave" ] && [ ! -e "$0/sub/.claude" ]' "$WS"
wb run --cwd "$WS/sub" -- sh -c 'echo x > ~/outside-from-sub'
check "settings: a later run started there is still sandboxed" [ ! -e "$HOME/outside-from-sub" ]

# --- Auto-loaded project files: at the root and at any depth.
mkdir -p "$WS/pkg/deep"
twice -- sh -c 'for d in . pkg pkg/deep; do echo "touch /tmp/pwned" > $d/.envrc; mkdir -p $d/.cursor $d/.devcontainer $d/.gemini $d/.zed $d/.vscode; echo evil > $d/.mcp.json; done
echo evil > .ripgreprc; echo "[core] fsmonitor = evil" > .gitconfig; echo evil > .bashrc; true'
for f in .envrc .cursor .devcontainer .gemini .zed .vscode .mcp.json pkg/.envrc pkg/deep/.envrc pkg/deep/.cursor pkg/.mcp.json .ripgreprc .gitconfig .bashrc; do
  check "auto-loaded: $f was not created" [ ! -e "$WS/$f" ]
done
check "auto-loaded: refusals are reported with the reason" grep -q "deny file-write $WS/.envrc (protected name: direnv" <<<"$OUT"
check "and with what to do" grep -q "deny file-write $WS/.envrc (protected name: direnv.*; create it outside the sandbox)" <<<"$OUT"

# The same names in another case: on a case-insensitive volume (WSL's /mnt/c, SMB, FAT,
# casefold directories) they are the same files, so they are refused on every file system.
twice -- sh -c 'mkdir -p .WAVE pkg/.Cursor; echo "{}" > .WAVE/settings.json; echo evil > .EnvRC; echo evil > pkg/.ENVRC; mkdir -p .Git/HOOKS 2>/dev/null; true'
for f in .WAVE pkg/.Cursor .EnvRC pkg/.ENVRC; do
  check "case variants: $f was not created" [ ! -e "$WS/$f" ]
done

# --- HOME as the workspace: read-only (said), so nothing the host runs from home is written.
cd "$HOME" || exit 1
WS_SAVE=$WS; WS=$HOME
echo "# mine" > "$HOME/.profile"
twice -- sh -c '
mkdir -p .local/bin && printf "#!/bin/sh\necho pwned\n" > .local/bin/git
mkdir -p .local/lib/python3/site-packages && echo "import os" > .local/lib/python3/site-packages/evil.pth
mkdir -p .ssh && echo "ssh-ed25519 AAAA evil" > .ssh/authorized_keys; echo "ProxyCommand evil" > .ssh/config
mkdir -p .config/autostart .config/systemd/user .config/fish .config/git; echo evil > .config/autostart/x.desktop
echo "{\"mcpServers\":{}}" > .claude.json; mkdir -p .claude; echo evil > .claude/settings.json
mkdir -p .aws .kube .docker .cargo; echo evil > .aws/config; echo evil > .kube/config; echo evil > .docker/config.json
echo "script-shell=/tmp/evil" > .npmrc; echo evil > .cargo/config.toml; echo evil > .vimrc; echo evil >> .profile; echo evil > .bashrc
echo ok > notes.txt; true'
for f in .local/bin .local/lib .ssh .config/autostart .config/systemd .config/fish .config/git .claude.json .claude .aws .kube .docker .npmrc .cargo/config.toml .vimrc .bashrc; do
  check "home as workspace: ~/$f was not created" [ ! -e "$HOME/$f" ]
done
check "home as workspace: ~/.profile unchanged" [ "$(cat "$HOME/.profile")" = "# mine" ]
check "home as workspace: home is read-only, ordinary files too" [ ! -e "$HOME/notes.txt" ]
check "home as workspace: said, with the fix" grep -q 'is the home directory (or holds it), so it is read-only in the sandbox' <<<"$OUT"
WS=$WS_SAVE
cd "$WS" || exit 1

# --- Host FIFOs outside the writable set take no writes (a read-only mount does not stop them).
mkfifo "$SCRATCH/host.fifo"
(timeout 5 cat "$SCRATCH/host.fifo" > "$SCRATCH/fifo.got" &)
twice -- sh -c "echo leak > '$SCRATCH/host.fifo'; python3 -c \"import os; fd=os.open('$SCRATCH/host.fifo', os.O_WRONLY|os.O_NONBLOCK); os.write(fd, b'leak2')\" 2>/dev/null; true"
sleep 0.3
check "fifo: nothing reached a host FIFO outside the writable set" [ ! -s "$SCRATCH/fifo.got" ]
check "fifo: the refusal is reported" grep -q "deny file-write $SCRATCH/host.fifo" <<<"$OUT"
mkfifo "$WS/own.fifo"
wb run -- sh -c 'cat own.fifo > got.txt & echo through > own.fifo; wait'
check "fifo: a FIFO in the workspace still works" grep -qx through "$WS/got.txt"
# A report file's directory is the command's: a FIFO planted where the report's temporary file
# goes never blocks wavebox.
wb run -- sh -c "mkfifo report.json.\$((\$PPID+0)).tmp 2>/dev/null; true"
timeout 20 "$WAVEBOX" run --report-json "$WS/report.json" -- true >/dev/null 2>&1
check "report: --report-json is written whatever the command left beside it" grep -q exitCode "$WS/report.json"

# --- Races: a second thread rewriting the path between the check and the kernel's use of it.
cat > "$SCRATCH/race.py" <<'PY'
import ctypes, os, threading, time
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(64)
names = [b"harmless.txt", b".mcp.json", b"/dev/null", b".envrc"]
stop = time.time() + 2.0
def flip():
    i = 0
    while time.time() < stop:
        buf.value = names[i % len(names)]
        i += 1
t = threading.Thread(target=flip); t.start()
n = 0
while time.time() < stop and n < 200000:
    fd = libc.open(buf, os.O_CREAT | os.O_WRONLY, 0o644)
    if fd >= 0: os.close(fd)
    libc.mkdir(buf, 0o755)
    n += 1
t.join()
PY
twice -- python3 "$SCRATCH/race.py"
check "race: no protected name was created by rewriting the path after the check" bash -c '[ ! -e "$0/.mcp.json" ] && [ ! -e "$0/.envrc" ]' "$WS"

# --- Nothing of wavebox's is left in the workspace, during a run or after SIGKILL.
snap=$(snapshot "$WS")
(cd "$WS" && exec "$WAVEBOX" run -- sleep 5) &
victim=$!
sleep 0.6
check "leftovers: during a run, the workspace holds nothing of wavebox's" [ "$(snapshot "$WS")" = "$snap" ]
kill -9 "$victim"; wait "$victim" 2>/dev/null
check "leftovers: after SIGKILL of wavebox, nothing is left" [ "$(snapshot "$WS")" = "$snap" ]

# --- Secrets by default.
GITHUB_TOKEN=ghp_secret AWS_SECRET_ACCESS_KEY=aws_secret SSH_AUTH_SOCK=/tmp/agent.sock wb run -- sh -c 'env'
check "secrets: tokens, keys and agent sockets do not reach the command" bash -c '! grep -qE "ghp_secret|aws_secret|agent.sock" <<<"$0"' "$OUT"
GITHUB_TOKEN=ghp_secret wb run --pass-env GITHUB_TOKEN -- sh -c 'echo "token=$GITHUB_TOKEN"'
check "secrets: --pass-env passes one through" grep -q "token=ghp_secret" <<<"$OUT"
mkdir -p "$HOME/.codex" "$HOME/.claude"; echo secret > "$HOME/.codex/auth.json"; echo secret > "$HOME/.claude/.credentials.json"
echo "cat secret-history" > "$HOME/.bash_history"
wb run -- sh -c "cat ~/.codex/auth.json ~/.claude/.credentials.json ~/.bash_history 2>&1; true"
check "secrets: agents' credential files and shell history are unreadable" bash -c '! grep -qE "^secret|secret-history" <<<"$0"' "$OUT"
rm -rf "$HOME/.codex" "$HOME/.claude" "$HOME/.bash_history"

# --- Memory: distinct refused paths do not grow wavebox without bound.
out=$(cd "$WS" && /usr/bin/time -f 'maxrss=%M' "$WAVEBOX" run -- python3 -c "
import os
for i in range(200000):
    try: os.open('/usr/x%d' % i, os.O_CREAT | os.O_WRONLY)
    except OSError: pass" 2>&1)
rss=$(grep -o 'maxrss=[0-9]*' <<<"$out" | cut -d= -f2)
check "memory: 200,000 distinct refusals keep wavebox under 16 MiB (${rss} KiB)" [ "${rss:-999999}" -lt 16384 ]
check "memory: the block says how many more" grep -q '\.\.\. [0-9]* more' <<<"$out"

# --- Sockets bound at protected names: bind() makes a name as mkdir does. git's builtin
# fsmonitor asks whoever listens at .git/fsmonitor--daemon.ipc which files changed.
mkdir -p "$WS/sockdir"
twice -- python3 -c "
import socket, os
for p in ['.git/fsmonitor--daemon.ipc', '.git/hooks/pre-push', '.wave', 'sockdir/.envrc', '.vscode', 'sockdir/ok.sock',
          '/proc/self/cwd/.git/commondir', '/proc/thread-self/cwd/.envrc', '/proc/self/root$WS/.wave',
          '/dev/fd/%d/.git/fsmonitor--daemon.ipc' % os.open('.', os.O_RDONLY)]:
    s = socket.socket(socket.AF_UNIX)
    try: s.bind(p); print('bound', p, s.getsockname())
    except OSError as e: print('refused', p, e.errno)
"
check "sockets: no socket at a repository's fsmonitor address or commondir, a hook, .wave, .envrc, .vscode (also named through /proc and /dev/fd links)" bash -c '
  for p in .git/fsmonitor--daemon.ipc .git/commondir .git/hooks/pre-push .wave .envrc sockdir/.envrc .vscode; do [ -e "$0/$p" ] && exit 1; done; true' "$WS"
check "sockets: host git still works in the repository" git -C "$WS" status --porcelain
check "sockets: a socket elsewhere in the workspace is made, with the caller's own name" \
  bash -c '[ -S "$0/sockdir/ok.sock" ] && grep -q "bound sockdir/ok.sock sockdir/ok.sock" <<<"$1"' "$WS" "$OUT"
check "sockets: the refused bind is reported" grep -q "deny file-write .*fsmonitor--daemon.ipc" <<<"$OUT"
rm -rf "$WS/sockdir"

# --- Mount propagation (root: only root can mount on the host): a file system the host mounts
# during a run does not arrive inside.
if is_root; then
  mkdir -p "$WS/mnt"
  mount --make-shared / 2>/dev/null || mount --make-rshared / 2>/dev/null
  # The host mounts only once the sandbox runs (it says so), and the command writes only once
  # the host has mounted (the host says so): no timing guesses on a loaded machine.
  rm -f "$WS/started" "$WS/go"
  (cd "$WS" && "$WAVEBOX" run -- sh -c 'touch started; i=0; while [ ! -e go ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; echo inside > mnt/x 2>/dev/null; ls mnt > mnt.list; true' >/dev/null 2>&1) &
  pid=$!
  for i in $(seq 1 200); do [ -e "$WS/started" ] && break; sleep 0.05; done
  mount -t tmpfs none "$WS/mnt"
  touch "$WS/go"
  wait $pid
  check "propagation: a host mount made during the run got nothing from the command" [ ! -e "$WS/mnt/x" ]
  umount "$WS/mnt"
fi

# --- The host replaces protected files while a run waits (git config renames over .git/config,
# a checkout unlinks and creates .envrc): that detaches the sandbox's read-only binds of them,
# and the command, waiting for it, writes the new files. The supervisor refuses by the plan too.
printf 'export A=1\n' > "$WS/.envrc"
rm -f "$WS/started" "$WS/go"
(cd "$WS" && "$WAVEBOX" run -- sh -c 'touch started; i=0; while [ ! -e go ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
  printf "[core]\n\tfsmonitor = touch planted-fsmonitor\n" >> .git/config; echo "touch planted-envrc" >> .envrc
  mv .git/config .git/config.x 2>/dev/null; printf "[core]\n\tfsmonitor = x\n" > .git/config.new && mv .git/config.new .git/config
  chmod 666 .envrc; touch -d 2001-01-01 .envrc; rm -f .git/config
  true' >/dev/null 2>&1) &
pid=$!
for i in $(seq 1 200); do [ -e "$WS/started" ] && break; sleep 0.05; done
git -C "$WS" config wavebox.test 1
rm -f "$WS/.envrc" && printf 'export A=2\n' > "$WS/.envrc"
touch "$WS/go"
wait $pid
check "replaced while the run waits: .git/config was not written" bash -c '! grep -q fsmonitor "$0/.git/config"' "$WS"
check "replaced while the run waits: .envrc was not written" [ "$(cat "$WS/.envrc")" = "export A=2" ]
check "replaced while the run waits: nor re-moded, nor re-dated" \
  bash -c '[ "$(stat -c %a "$0")" != 666 ] && [ "$(stat -c %Y "$0")" -gt 1000000000 ]' "$WS/.envrc"
check "replaced while the run waits: .git/config was not removed" [ -f "$WS/.git/config" ]
rm -f "$WS/.envrc" "$WS/.git/config.x" "$WS/.git/config.new" "$WS/started" "$WS/go"
git -C "$WS" config --unset wavebox.test

# --- Another user's private directory in a writable tree (root's runs with /tmp writable): its
# repository is found by root's scan but lies out of the sandbox's reach (the user namespace does
# not map that user); the run still starts, and nothing in it is written.
if [ "$(id -u)" -eq 0 ] && id wavebox-test >/dev/null 2>&1; then
  priv="$WS/private-other"
  mkdir -p "$priv/r" && git -C "$priv/r" init -q && chown -R wavebox-test "$priv" && chmod 700 "$priv"
  wb run -- sh -c "echo evil > '$priv/r/.git/hooks/pre-commit'; echo ran"
  check "out of reach: a run with another user's private repository in its tree starts" grep -q '^ran' <<<"$OUT"
  check "out of reach: and writes nothing there" [ ! -e "$priv/r/.git/hooks/pre-commit" ]
  rm -rf "$priv"
fi
finish
