#!/usr/bin/env bash
# A large workspace is planned from the scan cache and checked while the command starts (issue
# 19: start-up must not grow with the workspace). What the host added since the cache was
# written (a repository cloned, an editor folder, a directory made unreadable) must be guarded
# all the same: the supervisor answers nothing before the check is done, then refuses what it
# found. Each attack runs twice, and the host is checked after.
. "$(dirname "$0")/lib.sh"

# More known directories than LateScan::kMinDirs (2000), so the cache is used.
mkdir -p "$WS"/deps/d{0..49}/e{0..44}
git -C "$WS" init -q
wb run -- true
check "the first run (no cache yet) works" [ "$RC" -eq 0 ]
sleep 2.2  # out of the cache's racy window

# What the host does between runs.
git init -q "$WS/deps/d5/e1/newrepo"
git -C "$WS/deps/d5/e1/newrepo" config core.editor true
cp "$WS/deps/d5/e1/newrepo/.git/config" "$SCRATCH/newrepo.config"
mkdir -p "$WS/deps/d7/e2/.vscode" "$WS/deps/d9/e3/hidden/.git/hooks"
echo '{}' > "$WS/deps/d7/e2/.vscode/settings.json"
chmod 000 "$WS/deps/d9/e3"

attack='r=deps/d5/e1/newrepo
echo evil > $r/.git/hooks/post-checkout; chmod +x $r/.git/hooks/post-checkout
echo "[core] fsmonitor = evil" >> $r/.git/config
printf "[core]\n\tfsmonitor = evil\n" > cfg.lock; mv cfg.lock $r/.git/config
mv $r deps/d5/e1/moved; mkdir -p deps/d5/e1/moved/.git/hooks; ln $r/.git/config cfg2
rm -rf $r/.git/hooks; mkdir -p $r/.git/modules/sub/hooks
echo "{\"tasks\":[]}" > deps/d7/e2/.vscode/tasks.json; rm -f deps/d7/e2/.vscode/settings.json
chmod 755 deps/d9/e3; echo evil > deps/d9/e3/hidden/.git/hooks/pre-commit
echo fine > deps/d1/e1/ok.txt
python3 - "$r" <<"PY"
import ctypes, os, sys
r = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
cfg = r + "/.git/config"
def attempt(what, f):
    try:
        f(); print("ATTACK-WORKED", what)
    except OSError as e:
        print("refused", what, e.errno)
# Through a descriptor opened for reading: mode, owner and times.
rd = os.open(cfg, os.O_RDONLY)
attempt("fchmod on a descriptor", lambda: os.fchmod(rd, 0o755))
attempt("fchown on a descriptor", lambda: os.fchown(rd, os.getuid(), os.getgid()))
attempt("futimens on a descriptor", lambda: os.utime(rd, (0, 0)))
# Another name for the config through its descriptor (linkat AT_EMPTY_PATH), or through a link.
fd = os.open(cfg, os.O_PATH)
libc.linkat(fd, b"", -100, (r + "/alias1").encode(), 0x1000)
os.symlink(os.path.abspath(cfg), "lnk-cfg")
attempt("link through a symlink", lambda: os.link("lnk-cfg", r + "/alias2", follow_symlinks=True))
for a in ("alias1", "alias2"):
    if os.path.exists(r + "/" + a):
        open(r + "/" + a, "a").write("[core]\n\tfsmonitor = evil\n")
# chmod and truncate through /proc magic links and a final symbolic link.
attempt("chmod via /proc/self/fd", lambda: os.chmod("/proc/self/fd/%d" % fd, 0o600))
attempt("truncate via /proc/self/fd", lambda: os.truncate("/proc/self/fd/%d" % fd, 0))
attempt("chmod via a symlink", lambda: os.chmod("lnk-cfg", 0o600))
d = os.open("deps/d9/e3", os.O_PATH)
attempt("chmod of the unreadable directory via /proc", lambda: os.chmod("/proc/self/fd/%d" % d, 0o700))
PY
rm -f lnk-cfg; true'
for i in 1 2; do
  wb run -v -- sh -c "$attack"
  [ "$i" -eq 1 ] && check "run 1 was planned from the scan cache (the path under test)" grep -q "planned from the scan cache" <<<"$OUT"
  [ "$i" -eq 1 ] && check "run 1 found the host's additions after the plan" grep -qE "[1-9][0-9]* guards found after it" <<<"$OUT"
done
chmod 755 "$WS/deps/d9/e3" 2>/dev/null
r="$WS/deps/d5/e1/newrepo"
check "late: no hook planted in the repository the host made" [ ! -e "$r/.git/hooks/post-checkout" ]
check "late: its config unchanged (appended to, renamed over)" cmp -s "$r/.git/config" "$SCRATCH/newrepo.config"
check "late: it was not moved away, its hooks not removed" \
  bash -c '[ -e "$0/.git/hooks/pre-commit.sample" ] && [ ! -e "$1/deps/d5/e1/moved/.git/config" ]' "$r" "$WS"
check "late: no hard link to its config" [ ! -e "$WS/cfg2" ]
check "late: no other name for it (descriptor, symlink) and no write through one" \
  bash -c '[ ! -e "$0/alias1" ] && { [ ! -e "$0/alias2" ] || [ -L "$0/alias2" ]; } && [ "$(stat -c %h "$0/.git/config")" -eq 1 ]' "$r"
check "late: nothing changed through /proc or a symbolic link" bash -c '! grep -q ATTACK-WORKED <<<"$0"' "$OUT"
check "late: its mode unchanged" [ "$(stat -c %a "$r/.git/config")" = "$(stat -c %a "$SCRATCH/newrepo.config")" ]
check "late: no submodule git directory made" [ ! -e "$r/.git/modules" ]
check "late: the editor folder the host made is unchanged" \
  bash -c '[ -e "$0/settings.json" ] && [ ! -e "$0/tasks.json" ]' "$WS/deps/d7/e2/.vscode"
check "late: the directory the host made unreadable stayed closed, nothing planted below it" \
  bash -c '[ ! -e "$0/hidden/.git/hooks/pre-commit" ]' "$WS/deps/d9/e3"
check "late: the rest of the workspace is writable" [ "$(cat "$WS/deps/d1/e1/ok.txt" 2>/dev/null)" = fine ]
check "late: the refusals are reported" grep -q "deny file-write $r/.git/hooks/post-checkout" <<<"$OUT"
check "late: host git works in the repository" git -C "$r" status --porcelain

# The run after: the cache knows the repository now (its guards are mounts again).
wb run -v -- sh -c "echo evil > $r/.git/hooks/pre-push; true"
check "next run: the repository stays guarded" [ ! -e "$r/.git/hooks/pre-push" ]
# The first supervised call of a run may be a removal, with late guards about (they need the
# sandbox's root, taken at the first call).
sleep 2.2
git init -q "$WS/deps/d6/e6/another"
echo v > "$WS/deps/d1/e2/victim"
wb run -v -- rm deps/d1/e2/victim
check "late: a run whose first call is rm works" bash -c '[ "$0" -eq 0 ] && [ ! -e "$1" ]' "$RC" "$WS/deps/d1/e2/victim"
check "late: (that run had late guards)" grep -qE "[1-9][0-9]* guards found after it" <<<"$OUT"
finish
