#!/usr/bin/env bash
# sandbox.resources: timeouts are covered in test_lifecycle; here memory (RLIMIT_AS), CPU time
# (RLIMIT_CPU) and processes (RLIMIT_NPROC, per user namespace; not for root callers).
. "$(dirname "$0")/lib.sh"
printf '{"sandbox":{"enabled":true,"resources":{"pids":20,"cpuSeconds":1,"memoryMB":256}}}' > "$SCRATCH/res.json"
# Starts up to 50 processes; says how many it could.
SPAWN50="
import subprocess
ps = []
try:
    for i in range(50): ps.append(subprocess.Popen(['sleep', '5']))
    print('spawned', len(ps))
except OSError as e:
    print('refused after', len(ps))
for p in ps: p.kill()"
cgroup=$("$WAVEBOX" doctor --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["resourceLimits"]["cgroup"])')
wb run --settings "$SCRATCH/res.json" -- python3 -c "
try:
    b = bytearray(600 * 1024 * 1024); print('allocated')
except MemoryError:
    print('memory refused')"
if [ "$cgroup" = True ]; then
  # A cgroup of the run's own: the memory is real memory, of the whole sandbox.
  check "memoryMB (cgroup): a 600 MB allocation ends the command" bash -c '[ "$0" -eq 137 ] && ! grep -q allocated <<<"$1"' "$RC" "$OUT"
  check "memoryMB (cgroup): the block says which limit" grep -qx "deny memory 256 MiB (sandbox.resources.memoryMB)" <<<"$OUT"
  wb run --settings "$SCRATCH/res.json" -- python3 -c "
import mmap
m = mmap.mmap(-1, 2 << 30); b = bytearray(100 * 1024 * 1024); print('fits')"
  check "memoryMB (cgroup): address space reserved is not memory used (2 GiB mapped, 100 MB used)" grep -qx fits <<<"$OUT"
  check "memoryMB (cgroup): nothing reported when nothing was ended" bash -c '! grep -q "deny memory" <<<"$0"' "$OUT"
  wb run --settings "$SCRATCH/res.json" -- sh -c 'grep -E "memory|pids" /proc/self/cgroup'
  check "the sandbox is in a cgroup of its own" grep -q "wavebox-" <<<"$OUT"
  dirs=$(sed -n 's/.*:\(\/.*wavebox-[0-9-]*\)$/\1/p' <<<"$OUT")
  gone=1
  for d in $dirs; do for h in /sys/fs/cgroup/memory /sys/fs/cgroup/pids /sys/fs/cgroup/unified /sys/fs/cgroup; do
    [ -d "$h$d" ] && gone=0
  done; done
  check "the run's cgroup is removed after it" [ "$gone" -eq 1 ]
  wb run --settings "$SCRATCH/res.json" -- python3 -c "$SPAWN50"
  check "pids (cgroup, root too): the command's 21st process is refused" grep -qx "refused after 19" <<<"$OUT"
  check "pids (cgroup): the block says which limit" grep -qx "deny processes 20 (sandbox.resources.pids)" <<<"$OUT"
  printf '{"sandbox":{"enabled":true,"resources":{"cpus":0.2}}}' > "$SCRATCH/cpu.json"
  wb run --settings "$SCRATCH/cpu.json" -- timeout 1 sh -c 'while :; do :; done'
  check "cpus (cgroup): a busy loop is throttled, and the block says so" grep -qx "deny cpu 0.2 CPUs (sandbox.resources.cpus)" <<<"$OUT"
  # Below the kernel's smallest quota (1 ms a period): the smallest, not a failed cgroup.
  printf '{"sandbox":{"enabled":true,"resources":{"cpus":0.001,"pids":10}}}' > "$SCRATCH/cpu2.json"
  wb run --settings "$SCRATCH/cpu2.json" -- python3 -c "$SPAWN50"
  check "cpus below 0.01: still a cgroup (its pids limit holds)" grep -qx "refused after 9" <<<"$OUT"
  # wavebox killed mid-run leaves its cgroup; the next run removes it.
  (cd "$WS" && exec "$WAVEBOX" run --settings "$SCRATCH/res.json" -- sh -c 'grep pids /proc/self/cgroup > cg.txt; sleep 30') &
  wbpid=$!
  for i in $(seq 1 100); do [ -s "$WS/cg.txt" ] && break; sleep 0.05; done
  left=/sys/fs/cgroup/pids$(cut -d: -f3 "$WS/cg.txt")
  kill -9 "$wbpid"; wait "$wbpid" 2>/dev/null
  for i in $(seq 1 100); do [ -z "$(cat "$left/cgroup.procs" 2>/dev/null)" ] && break; sleep 0.05; done
  wb run --settings "$SCRATCH/res.json" -- true
  check "a cgroup left by a killed wavebox is removed by the next run" [ ! -d "$left" ]
  rm -f "$WS/cg.txt"
else
  check "memoryMB (rlimit): a 600 MB allocation is refused" grep -q "memory refused" <<<"$OUT"
  printf '{"sandbox":{"enabled":true,"resources":{"cpus":0.5}}}' > "$SCRATCH/cpu.json"
  wb run --settings "$SCRATCH/cpu.json" -- true
  check "cpus without a cgroup: warned as not enforced" grep -q "sandbox.resources.cpus is not enforced here" <<<"$OUT"
fi
start=$(date +%s)
wb run --settings "$SCRATCH/res.json" -- sh -c 'while :; do :; done'
check "cpuSeconds: a busy loop is killed (SIGXCPU/SIGKILL)" bash -c '[ "$0" -eq 137 ] || [ "$0" -eq 152 ]' "$RC"
check "cpuSeconds: within a few seconds" [ $(( $(date +%s) - start )) -lt 10 ]
if ! is_root && [ "$cgroup" != True ]; then
  wb run --settings "$SCRATCH/res.json" -- python3 -c "$SPAWN50"
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
