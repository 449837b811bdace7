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
finish
