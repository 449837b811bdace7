#!/usr/bin/env bash
# Inside the sandbox no capability is left, even for root: mount, umount, unshare -r and mknod
# fail; /dev/shm is private; a hard link to a protected file cannot be made.
. "$(dirname "$0")/lib.sh"
git -C "$WS" init -q

wb run -- grep -E '^(Cap|Seccomp)' /proc/self/status
for c in CapInh CapPrm CapEff CapBnd CapAmb; do
  check "$c is 0 inside" grep -qE "^$c:\s+0+$" <<<"$OUT"
done
# One program, loaded by the shim: the refusals and the observer's notifications together.
check "a seccomp filter applies to the command" grep -qE '^Seccomp:\s+2$' <<<"$OUT"
if grep -q Seccomp_filters <<<"$OUT"; then
  check "exactly one seccomp program applies to the command" grep -qE '^Seccomp_filters:\s+1$' <<<"$OUT"
fi
wb run -v -- true
if [ "${WAVEBOX_SHIM_MOUNTS:-}" = 0 ]; then
  check "WAVEBOX_SHIM_MOUNTS=0: bwrap places every mount" grep -q '(placed by bwrap)' <<<"$OUT"
elif "$WAVEBOX" doctor --json | grep -q '"mountsPlacedBy": "wavebox-shim'; then
  check "the shim places the mounts (the kernel has the mount API)" grep -q '(placed by the shim' <<<"$OUT"
  check "... and bwrap started before the plan was made" grep -q 'bwrap started before the plan' <<<"$OUT"
elif [ "$(uname -r | awk -F. '{print ($1 > 5 || ($1 == 5 && $2 >= 12))}')" = 1 ]; then
  echo "note: Linux 5.12+ but the mount API is refused here (a seccomp policy?): bwrap places every mount"
fi
# Where the mount API is refused (an older kernel, a container's seccomp policy), bwrap places
# every mount, and the guards hold as before.
NOAPI="$(dirname "$WAVEBOX")/without_mount_api"
if [ -x "$NOAPI" ]; then
  OUT=$(cd "$WS" && "$NOAPI" "$WAVEBOX" run -v -- sh -c 'echo x > .git/config' 2>&1); RC=$?
  check "without the mount API, bwrap places every mount" grep -q '(placed by bwrap)' <<<"$OUT"
  check "without the mount API, .git/config is still read-only" grep -q 'deny file-write .*/.git/config' <<<"$OUT"
  check "without the mount API, the command ran (status 2 from the refused write)" [ "$RC" -ne 125 ]
  OUT=$(cd "$WS" && "$NOAPI" "$WAVEBOX" run -- sh -c 'chmod 666 /dev/null; echo "chmod=$?"' 2>&1)
  check "without the mount API, the device nodes are read-only binds too" grep -q 'chmod=1' <<<"$OUT"
fi
# The device nodes are the host's: a command running as root (uid 0 is the host's root here)
# must not change their mode, owner or times (bwrap binds them writable). The same mode is
# asked for, so even a failing check changes nothing but the times.
before=$(stat -c '%a %u %Z' /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty)
wb run -- sh -c 'for n in null zero full random urandom tty; do
  m=$(stat -c %a /dev/$n); chmod "$m" /dev/$n 2>/dev/null && echo "changed $n"; touch -c /dev/$n 2>/dev/null && echo "touched $n"
done; grep -E " /dev/(null|zero|full|random|urandom|tty) " /proc/self/mountinfo | grep -vc " ro,"; true'
check "no device node's mode or times can be changed from inside" bash -c '! grep -qE "changed|touched" <<<"$0"' "$OUT"
check "every device node is a read-only mount" grep -qx 0 <<<"$OUT"
check "the host's device nodes are unchanged" [ "$before" = "$(stat -c '%a %u %Z' /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty)" ]
wb run -- sh -c 'echo x > /dev/null && head -c 8 /dev/zero | wc -c && head -c 8 /dev/urandom | wc -c && ls -l /dev/ptmx /dev/fd/ /dev/stdin >/dev/null && echo devices-ok'
check "the devices still work (write /dev/null, read /dev/zero and /dev/urandom, the links)" grep -q devices-ok <<<"$OUT"
wb run -- python3 -c 'import os, pty; pid, fd = pty.fork(); os._exit(0) if pid == 0 else print("pty-ok")'
check "a pseudo-terminal can be opened (/dev/pts, /dev/ptmx)" grep -q pty-ok <<<"$OUT"
wb run -- mount -t tmpfs none /mnt
check "mount fails" [ "$RC" -ne 0 ]
wb run -- umount /proc
check "umount fails" [ "$RC" -ne 0 ]
wb run -- unshare -r true
check "unshare -r fails" [ "$RC" -ne 0 ]
if [ "${WAVEBOX_SHIM_MOUNTS:-}" != 0 ]; then
  # The shim forbids user namespaces itself (bwrap's --disable-userns), the seccomp program aside.
  wb run -- cat /proc/sys/user/max_user_namespaces
  check "no user namespace may be made inside (limit 0)" [ "$OUT" = 0 ]
fi

# /proc is the sandbox's own: its processes only, its kernel corners read-only.
wb run -- sh -c 'ls -d /proc/[0-9]* | wc -l; cat /proc/1/comm; readlink /proc/self/ns/pid'
n=$(sed -n 1p <<<"$OUT")
check "/proc lists only the sandbox's processes ($n)" [ "${n:-99}" -le 4 ]
check "pid 1 inside is wavebox-shim" [ "$(sed -n 2p <<<"$OUT")" = wavebox-shim ]
check "the sandbox has a pid namespace of its own" [ "$(sed -n 3p <<<"$OUT")" != "$(readlink /proc/self/ns/pid)" ]
before=$(cat /proc/sys/kernel/ns_last_pid /proc/sys/vm/overcommit_ratio)
wb run -- sh -c 'echo 5 > /proc/sys/vm/overcommit_ratio || exit 3; echo written'
check "a sysctl cannot be written from inside" [ "$RC" -ne 0 ]
check "the host's sysctl is unchanged" [ "$(cat /proc/sys/vm/overcommit_ratio)" = "$(sed -n 2p <<<"$before")" ]
wb run -- sh -c 'echo 1 > /proc/self/oom_score_adj && cat /proc/self/oom_score_adj'
check "the command's own /proc entries stay writable (oom_score_adj)" [ "$OUT" = 1 ]
# sandbox.enableWeakerNestedSandbox (for containers that refuse a new proc mount): the host's
# /proc, read-only, with a warning; the rest as strict as ever.
printf '{"sandbox":{"enabled":true,"enableWeakerNestedSandbox":true}}' > "$SCRATCH/weaker.json"
sleep 30 & hostpid=$!
OUT=$(cd "$WS" && "$WAVEBOX" run --settings "$SCRATCH/weaker.json" -- sh -c "
  [ -d /proc/$hostpid ] && echo host-visible
  echo 1 > /proc/self/oom_score_adj 2>/dev/null && echo proc-writable
  echo 5 > /proc/sys/vm/overcommit_ratio 2>/dev/null && echo sysctl-written
  (exec 3<>/proc/$hostpid/mem) 2>/dev/null && echo mem-open
  unshare -U true 2>/dev/null && echo userns
  echo ran" 2>&1)
kill "$hostpid" 2>/dev/null
check "weaker: the command ran" grep -qx ran <<<"$OUT"
check "weaker: a warning says what it gives up" grep -q 'enableWeakerNestedSandbox: the command sees the host' <<<"$OUT"
check "weaker: the host's processes are visible (the host's /proc)" grep -qx host-visible <<<"$OUT"
check "weaker: that /proc is read-only" bash -c '! grep -qx proc-writable <<<"$0"' "$OUT"
check "weaker: no sysctl can be written" bash -c '! grep -qx sysctl-written <<<"$0"' "$OUT"
check "weaker: no host process's memory can be opened for writing" bash -c '! grep -qx mem-open <<<"$0"' "$OUT"
check "weaker: still no user namespace" bash -c '! grep -qx userns <<<"$0"' "$OUT"
check "weaker: doctor says so" bash -c '"$0" doctor --settings "$1" | grep -q "the host.s, read-only"' "$WAVEBOX" "$SCRATCH/weaker.json"
check "weaker: the host's sysctl is unchanged" [ "$(cat /proc/sys/vm/overcommit_ratio)" = "$(sed -n 2p <<<"$before")" ]
wb run -- mknod "$WS/dev0" c 1 3
check "mknod of a device fails" [ "$RC" -ne 0 ]
check "no device node was created" [ ! -e "$WS/dev0" ]
marker="wb-shm-$$"
wb run -- sh -c "echo x > /dev/shm/$marker && ls /dev/shm/$marker"
check "/dev/shm is writable inside" [ "$RC" -eq 0 ]
check "/dev/shm is private: nothing appears on the host" [ ! -e "/dev/shm/$marker" ]
wb run -- ln .git/config hard
check "a hard link to a protected file cannot be made" [ "$RC" -ne 0 ]
check "no hard link appeared" [ ! -e "$WS/hard" ]
exec 7</dev/null
wb run -- sh -c 'for f in /proc/self/fd/*; do echo "$f $(readlink $f)"; done'
exec 7<&-
check "no descriptor of wavebox, bwrap or the caller beyond 0-2 reaches the command" bash -c '! grep -qE "memfd|wavebox|/fd/[4-9]" <<<"$0"' "$OUT"
finish
