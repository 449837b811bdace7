#!/usr/bin/env bash
# wavebox's per-user directory in /tmp made first by another local user (where no
# XDG_RUNTIME_DIR is: cron, su, containers): every run was refused. Now the files go to a place
# no other user can make (the user's home), said once per run, and the run happens. Needs root
# (to squat for a user of the test's own making).
. "$(dirname "$0")/lib.sh"
is_root || { echo "skipped: needs root"; exit 77; }
command -v useradd >/dev/null || { echo "skipped: no useradd"; exit 77; }

user="wbsq$$"
top=$(mktemp -d /tmp/wavebox-squat.XXXXXX)
chmod 755 "$top"
useradd -M -d "$top/home" -s /bin/sh "$user" || { echo "skipped: useradd failed"; rm -rf "$top"; exit 77; }
uid=$(id -u "$user")
mkdir -p "$top/home/proj"
chown -R "$user:" "$top/home"
squat="/tmp/wavebox-$uid"
rm -rf "$squat"
mkdir -m 755 "$squat"  # root's: made first by another user
as_user() {
  (cd "$top/home/proj" && runuser -u "$user" -- env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$top/home" \
    "$WAVEBOX" "$@" 2>&1)
}
for i in 1 2; do
  OUT=$(as_user run -- sh -c 'echo ran; echo "TMPDIR=$TMPDIR"; echo hi > "$TMPDIR/x" && cat "$TMPDIR/x"')
  check "squatted ($i): the run happens" grep -q '^ran$' <<<"$OUT"
  check "squatted ($i): it is said why the files are elsewhere" grep -q "belongs to another user" <<<"$OUT"
  check "squatted ($i): TMPDIR is in the user's home, and writable" \
    bash -c 'grep -q "^TMPDIR=$0/.cache/wavebox/run/" <<<"$1" && grep -q "^hi$" <<<"$1"' "$top/home" "$OUT"
done
check "squatted: nothing was written into the other user's directory" [ -z "$(ls -A "$squat")" ]
OUT=$(as_user run -- sh -c 'echo evil > "$HOME/.cache/wavebox/run/scan/x"; echo rc=$?')
check "the relocated state is not writable from inside" [ ! -e "$top/home/.cache/wavebox/run/scan/x" ]
rmdir "$squat"
# Without the squat: /tmp again, and quiet.
OUT=$(as_user run -- sh -c 'echo "TMPDIR=$TMPDIR"')
check "unsquatted: TMPDIR is in /tmp/wavebox-UID again" grep -q "^TMPDIR=/tmp/wavebox-$uid/" <<<"$OUT"
check "unsquatted: and nothing is said" bash -c '! grep -q "belongs to another user" <<<"$0"' "$OUT"
pkill -u "$user" 2>/dev/null
userdel "$user" 2>/dev/null
rm -rf "$top" "/tmp/wavebox-$uid" "/dev/shm/wavebox-$uid-stubs"
finish
