#!/usr/bin/env bash
# Inside the sandbox no capability is left, even for root: mount, umount, unshare -r and mknod
# fail; /dev/shm is private; a hard link to a protected file cannot be made.
. "$(dirname "$0")/lib.sh"
git -C "$WS" init -q

wb run -- grep CapEff /proc/self/status
check "CapEff is 0 inside" grep -qE 'CapEff:\s+0+$' <<<"$OUT"
wb run -- mount -t tmpfs none /mnt
check "mount fails" [ "$RC" -ne 0 ]
wb run -- umount /proc
check "umount fails" [ "$RC" -ne 0 ]
wb run -- unshare -r true
check "unshare -r fails" [ "$RC" -ne 0 ]
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
