#!/usr/bin/env bash
# cmake --install into a temporary prefix: the installed wavebox runs from elsewhere (the build
# tree off PATH), finds wavebox-core and its shim in libexec, is stripped, and brings its man pages and completions.
. "$(dirname "$0")/lib.sh"
build=$(dirname "$WAVEBOX")
[ -w "$build" ] || { echo "the build tree is not ours to install from (unprivileged run): skipped"; exit 77; }
command -v cmake >/dev/null || { echo "no cmake"; exit 77; }
prefix="$SCRATCH/prefix"
cmake --install "$build" --prefix "$prefix" >"$SCRATCH/install.log" 2>&1
check "cmake --install succeeds" [ $? -eq 0 ]
check "wavebox is in bin/" [ -x "$prefix/bin/wavebox" ]
check "wavebox-shim is in libexec/wavebox/" [ -x "$prefix/libexec/wavebox/wavebox-shim" ]
check "wavebox-core is in libexec/wavebox/" [ -x "$prefix/libexec/wavebox/wavebox-core" ]
check "the installed binaries are stripped" bash -c 'for f; do readelf -S "$f" | grep -q "\.debug_info" && exit 1; done; exit 0' \
  "$prefix/bin/wavebox" "$prefix/libexec/wavebox/wavebox-core"
check "man pages" bash -c '[ -f "$0/share/man/man1/wavebox.1" ] && [ -f "$0/share/man/man5/wavebox-settings.5" ] && [ -f "$0/share/man/man7/wavebox-serve.7" ]' "$prefix"
check "completions for bash, zsh, fish" bash -c '[ -f "$0/share/bash-completion/completions/wavebox" ] && [ -f "$0/share/zsh/site-functions/_wavebox" ] && [ -f "$0/share/fish/vendor_completions.d/wavebox.fish" ]' "$prefix"
out=$(cd "$WS" && env PATH=/usr/local/bin:/usr/bin:/bin "$prefix/bin/wavebox" run -- sh -c 'echo ran; touch inside; touch /etc/nope 2>/dev/null; echo $WAVEBOX_SANDBOX' 2>&1)
check "the installed wavebox runs a sandboxed command from elsewhere" bash -c 'grep -qx ran <<<"$0" && grep -qx 1 <<<"$0"' "$out"
check "and confines it" bash -c '[ -e "$1/inside" ] && grep -q "deny file-write /etc/nope" <<<"$0"' "$out" "$WS"
# The installed launcher's keeper is the one the run takes (its wavebox-core named by a path with
# "..": compared as a file), and one not taken leaves nothing to an unsandboxed command.
out=$(cd "$WS" && env PATH=/usr/local/bin:/usr/bin:/bin "$prefix/bin/wavebox" run -v -- true 2>&1)
check "the installed run takes the keeper its launcher started" grep -q "the sandbox the launcher started" <<<"$out"
printf '{"sandbox":{"enabled":false}}' > "$SCRATCH/off.json"
probe='import os; print(len(os.listdir("/proc/self/fd")), open("/proc/self/task/%d/children" % os.getpid()).read().strip() or "no-child")'
want=$(cd "$WS" && python3 -c "$probe")
out=$(cd "$WS" && env PATH=/usr/local/bin:/usr/bin:/bin "$prefix/bin/wavebox" run --settings "$SCRATCH/off.json" -- \
  python3 -c "$probe" 2>&1)
check "an unsandboxed installed run: no descriptor or keeper of the launch in the command ($out; without wavebox: $want)" \
  [ "$out" = "$want" ]
check "the build tree's copy of the installed launcher is not runnable there" [ ! -x "$build/launcher-installed/wavebox" ]
mkdir -p "$WS/b/launcher-installed"
cp "$build/wavebox" "$build/wavebox-core" "$build/wavebox-shim" "$WS/b/"
cp "$build/launcher-installed/wavebox" "$WS/b/launcher-installed/"
out=$(cd "$WS" && "$WS/b/wavebox" run -- sh -c 'echo x >> b/launcher-installed/wavebox && echo wrote' 2>&1)
check "and no sandbox may write it where the build tree is writable (cmake --install copies it into bin/)" \
  bash -c '! grep -qx wrote <<<"$0"' "$out"
rm -rf "$WS/b"
# Installed inside the workspace: a sandboxed command may write where the installed launcher does
# not look (bin/wavebox-core), never where it does; the next run runs only the real wavebox-core.
inst="$WS/_inst"
cmake --install "$build" --prefix "$inst" >"$SCRATCH/install2.log" 2>&1
(cd "$WS" && env PATH=/usr/local/bin:/usr/bin:/bin "$inst/bin/wavebox" run -- sh -c '
  plant() { printf "#!/bin/sh\ntouch %s/planted-%s\n" "$0" "$2" > "$1" && chmod +x "$1" && echo "wrote $2"; }
  plant _inst/bin/wavebox-core bin "$0"; plant _inst/libexec/wavebox/wavebox-core libexec "$0" 2>/dev/null
  plant _inst/libexec/wavebox/wavebox-shim shim "$0" 2>/dev/null; plant _inst/bin/wavebox launcher "$0" 2>/dev/null
  true' "$SCRATCH") >"$SCRATCH/plant.out" 2>&1
check "the installed launcher's own programs are protected inside (what was written: $(grep wrote "$SCRATCH/plant.out" | tr '\n' ' '))" \
  bash -c '! grep -qE "wrote (libexec|shim|launcher)" "$0"' "$SCRATCH/plant.out"
out=$(cd "$WS" && env PATH=/usr/local/bin:/usr/bin:/bin "$inst/bin/wavebox" run -- sh -c 'echo ran-again' 2>&1)
check "and the next run runs the real wavebox-core, nothing planted" \
  bash -c 'grep -qx ran-again <<<"$0" && ! ls "$1"/planted-* >/dev/null 2>&1' "$out" "$SCRATCH"
rm -rf "$inst"
if command -v bash >/dev/null; then
  bash -c ". '$prefix/share/bash-completion/completions/wavebox' && complete -p wavebox" >/dev/null 2>&1
  check "the bash completion loads" [ $? -eq 0 ]
fi
finish
