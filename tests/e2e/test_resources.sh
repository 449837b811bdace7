#!/usr/bin/env bash
# sandbox.resources: timeouts are covered in test_lifecycle; here memory (RLIMIT_AS), CPU time
# (RLIMIT_CPU) and processes (RLIMIT_NPROC, per user namespace; not for root callers).
. "$(dirname "$0")/lib.sh"
printf '{"sandbox":{"enabled":true,"resources":{"pids":20,"cpuSeconds":1,"memoryMB":256}}}' > "$SCRATCH/res.json"
wb run --settings "$SCRATCH/res.json" -- python3 -c "
try:
    b = bytearray(600 * 1024 * 1024); print('allocated')
except MemoryError:
    print('memory refused')"
check "memoryMB: a 600 MB allocation is refused" grep -q "memory refused" <<<"$OUT"
start=$(date +%s)
wb run --settings "$SCRATCH/res.json" -- sh -c 'while :; do :; done'
check "cpuSeconds: a busy loop is killed (SIGXCPU/SIGKILL)" bash -c '[ "$0" -eq 137 ] || [ "$0" -eq 152 ]' "$RC"
check "cpuSeconds: within a few seconds" [ $(( $(date +%s) - start )) -lt 10 ]
if ! is_root; then
  wb run --settings "$SCRATCH/res.json" -- python3 -c "
import subprocess
ps = []
try:
    for i in range(50): ps.append(subprocess.Popen(['sleep', '5']))
    print('spawned', len(ps))
except OSError as e:
    print('refused after', len(ps))
for p in ps: p.kill()"
  check "pids: the 21st process is refused" grep -q "refused after" <<<"$OUT"
fi
# A caller near its process limit (RLIMIT_NPROC; root is exempt): wavebox may get no thread for
# its write observer. It must neither crash (a notified call left unanswered would hang, or fail
# with ENOSYS once the listener closes) nor lose reports: the supervision loop answers instead.
if [ "$(id -u)" -ne 0 ] && command -v prlimit >/dev/null; then
  ran=0; fallback=0
  for n in 3 4 5 6 7 8 9 10 12 16 24; do
    rm -f "$WS/np-ok"
    # The previous run's bwrap, ended, may wait for the system to reap it (as bwrap alone leaves
    # its pid 1): it still counts against the limit until then.
    for i in $(seq 1 100); do [ "$(ps -u "$(id -u)" -o stat= | grep -c Z)" -eq 0 ] && break; sleep 0.05; done
    OUT=$(cd "$WS" && prlimit --nproc=$n "$WAVEBOX" run -- sh -c "echo ok > np-ok; echo x > /etc/np-$$" 2>&1); RC=$?
    check "nproc $n: wavebox does not crash (status $RC)" [ "$RC" -lt 128 ]
    if [ -e "$WS/np-ok" ] || grep -q 'np-ok' <<<"$OUT"; then
      ran=$((ran + 1))
      check "nproc $n: the command's own write worked" grep -qx ok "$WS/np-ok"
      check "nproc $n: the refused write is reported" grep -q "deny file-write /etc/np-$$" <<<"$OUT"
    fi
    grep -q 'no thread for the write observer' <<<"$OUT" && fallback=$((fallback + 1))
  done
  check "the command ran under some of those limits ($ran)" [ "$ran" -gt 0 ]
  echo "note: the observer ran without a thread under $fallback of those limits"
fi
finish
