#!/usr/bin/env bash
# Exit statuses (wavebox(1), EXIT STATUS), signals, timeout, and nothing outliving wavebox, even after SIGKILL.
. "$(dirname "$0")/lib.sh"

wb run -- sh -c 'exit 7'
check "the command's status passes through" [ "$RC" -eq 7 ]
wb run -- sh -c 'kill -TERM $$'
check "a command killed by SIGTERM gives 143" [ "$RC" -eq 143 ]
wb run -- no-such-command-wb
check "a missing command gives 127" [ "$RC" -eq 127 ]
printf 'echo hi\n' > "$WS/noexec.sh"
wb run -- ./noexec.sh
check "a non-executable command gives 126" [ "$RC" -eq 126 ]
chmod +x "$WS/noexec.sh"
printf 'echo "no-shebang: $*"\n' > "$WS/noexec.sh"
wb run -- ./noexec.sh a "b c"
check "an executable script without #! runs through sh, with its arguments" [ "$OUT" = "no-shebang: a b c" ]
rm -f "$WS/noexec.sh"
echo '{"sandbox":{"enabled":true,"resources":{"timeoutSeconds":1}}}' > "$SCRATCH/t.json"
start=$(date +%s)
wb run --settings "$SCRATCH/t.json" -- sleep 30
check "a configured timeout gives 124" [ "$RC" -eq 124 ]
check "the timeout fired early" [ $(( $(date +%s) - start )) -lt 10 ]

# wavebox starts the sandbox's keeper before it reads the settings; settings that turn the sandbox
# off end it before the command runs in wavebox's place (an exec: no parent-death signal would).
printf '{"sandbox":{"enabled":false}}' > "$SCRATCH/off.json"
wb run --settings "$SCRATCH/off.json" -- python3 -c \
  'import os; print(open("/proc/self/task/%d/children" % os.getpid()).read().strip() or "no-keeper")'
check "an unsandboxed run leaves no keeper started ahead behind, not even a zombie ($OUT)" [ "$OUT" = no-keeper ]
# And under a caller that adopts orphans (a subreaper: an agent host, a CI runner, systemd): what
# wavebox started is reaped by wavebox, not left to it; only the dying bwrap of a run that ran
# may come its way, as before (bwrap is the keeper's child, and ends after wavebox).
cat > "$SCRATCH/subreaper.py" <<'PY'
import ctypes, os, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
os.waitpid(pid, 0)
time.sleep(0.3)
kids = open("/proc/self/task/%d/children" % os.getpid()).read().split()
names = []
for k in kids:
    try:
        names.append(open("/proc/%s/comm" % k).read().strip())
    except OSError:
        pass
print(" ".join(n for n in names if n != "bwrap") or "none")
PY
for args in "run -- true" "run --help" "run --no-such-option -- true" "run --settings $SCRATCH/off.json -- true"; do
  # shellcheck disable=SC2086
  left=$(cd "$WS" && python3 "$SCRATCH/subreaper.py" "$WAVEBOX" $args 2>/dev/null | tail -1)
  check "wavebox $args leaves its caller nothing of its own to reap ($left)" [ "$left" = none ]
done
printf '{"sandbox":{"enabled":true,"resources":{"memoryMB":512}}}' > "$SCRATCH/mem.json"
wb run --settings "$SCRATCH/mem.json" -- sh -c 'echo in-sandbox'
check "settings the keeper started ahead does not fit (a cgroup of the run's own) start another" \
  [ "$RC" -eq 0 ] && [ "$OUT" = in-sandbox ]

# SIGINT to wavebox reaches the command, which can handle it.
(cd "$WS" && "$WAVEBOX" run -- sh -c 'trap "echo got-int; exit 5" INT; sleep 20 & wait' > "$SCRATCH/int.out" 2>&1) &
wpid=$!
sleep 1
kill -INT $(pgrep -f "$WAVEBOX run -- sh -c trap" | head -1) 2>/dev/null
wait $wpid; rc=$?
check "SIGINT is forwarded to the command (status 5)" [ "$rc" -eq 5 ]
check "the command saw the signal" grep -q got-int "$SCRATCH/int.out"

# A signal the caller ignores stays ignored for the command (as through env or nohup); none is
# blocked.
OUT=$(cd "$WS" && bash -c 'trap "" USR1; exec "$0" run -- grep -E "^Sig(Ign|Blk)" /proc/self/status' "$WAVEBOX" 2>/dev/null)
ign=$(awk '/^SigIgn/ {print $2}' <<<"$OUT"); blk=$(awk '/^SigBlk/ {print $2}' <<<"$OUT")
check "an ignored SIGUSR1 stays ignored inside" [ "$(( 0x${ign:-0} & (1 << 9) ))" -ne 0 ]
check "no signal is blocked inside" [ "${blk:-x}" = 0000000000000000 ]

# wavebox starts its keeper off its own CPU; the command still gets exactly the caller's CPUs.
mine=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
wb run -- awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status
check "the command may run on the caller's CPUs ($mine)" [ "$OUT" = "$mine" ]
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  last=$(( $(nproc) - 1 ))
  OUT=$(cd "$WS" && taskset -c "$last" "$WAVEBOX" run -- awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status 2>/dev/null)
  check "a caller pinned to CPU $last keeps its command there" [ "$OUT" = "$last" ]
  OUT=$(cd "$WS" && taskset -c "0-$last" "$WAVEBOX" run -- awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status 2>/dev/null)
  check "a caller on CPUs 0-$last keeps them all for its command" [ "$OUT" = "0-$last" ]
fi

# SIGKILL of wavebox: nothing of the sandbox survives.
d=$((3000 + RANDOM % 1000))
(cd "$WS" && exec "$WAVEBOX" run -- sh -c "sleep $d & sleep $((d+1)); true") &
wpid=$!
for i in $(seq 1 50); do pgrep -f "sleep $((d+1))" >/dev/null && break; sleep 0.1; done
check "the sandboxed sleeps are running" pgrep -f "sleep $d" >/dev/null
# Every process below wavebox now (the keeper, bwrap, the shim, the command): all must go.
descendants() { local p; for p in $(pgrep -P "$1"); do echo "$p"; descendants "$p"; done; }
helpers=$(descendants $wpid)
check "the run's helpers were found (keeper, bwrap, shim)" [ "$(wc -w <<<"$helpers")" -ge 3 ]
# No grace period: wavebox-shim, pid 1 of the sandbox, arms its parent-death signal before the
# command starts, so even a kill right at start leaves nothing behind.
kill -9 $wpid; wait $wpid 2>/dev/null
for i in $(seq 1 50); do pgrep -f "sleep $d|sleep $((d+1))" >/dev/null || break; sleep 0.1; done
check "no sandbox process is left after kill -9 of wavebox" bash -c '! pgrep -f "sleep $0|sleep $(($0+1))" >/dev/null' "$d"
alive() {  # pids given that still run (zombies do not count)
  local p; for p in "$@"; do
    [ -r "/proc/$p/stat" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] && echo "$p"
  done
}
for i in $(seq 1 50); do [ -z "$(alive $helpers)" ] && break; sleep 0.1; done
check "no keeper, bwrap or shim of that run is left" [ -z "$(alive $helpers)" ]

# A normal end: when wavebox returns, nothing the command started runs any more (the shim, pid 1,
# killed and reaped it all before saying so), and wavebox has reaped the keeper; bwrap and the
# shim, in their exit already, are gone a moment later (bwrap then waits for the system to reap
# it, as bwrap alone leaves its own pid 1).
d=$((4000 + RANDOM % 1000))
(cd "$WS" && exec "$WAVEBOX" run -v -- sh -c "sleep $d & (sleep 1; echo late > late.txt) & sleep 0.5; exit 4" 2>"$SCRATCH/end.log") &
wpid=$!
for i in $(seq 1 50); do [ "$(descendants $wpid | wc -w)" -ge 4 ] && break; sleep 0.05; done
helpers=$(descendants $wpid)
start=$(date +%s%N)
wait $wpid; rc=$?
took=$(( ($(date +%s%N) - start) / 1000000 ))
check "the command's status comes back (4)" [ "$rc" -eq 4 ]
check "wavebox did not wait for the command's background processes (${took} ms)" [ "$took" -lt 900 ]
check "the shim said the sandbox was empty" grep -q "the sandbox is empty" "$SCRATCH/end.log"
check "the command's background processes are gone when wavebox returns" bash -c '! pgrep -f "sleep $0" >/dev/null' "$d"
for i in $(seq 1 50); do [ -z "$(alive $helpers)" ] && break; sleep 0.02; done
check "the keeper, bwrap and the shim end right after" [ -z "$(alive $helpers)" ]
sleep 1.2
check "a background process never got to write after the end" [ ! -e "$WS/late.txt" ]

# The command's standard descriptors: what the caller gave, closed ones closed (no descriptor of
# wavebox's in their place), and never held by bwrap or the keeper.
probe='for i in 0 1 2; do s=closed; [ -e /proc/self/fd/$i ] && s=open; echo "fd$i $s" >&$1; done'
OUT=$(cd "$WS" && echo piped | "$WAVEBOX" run -- sh -c 'read x; echo "got $x"')
check "stdin reaches the command" [ "$OUT" = "got piped" ]
OUT=$(cd "$WS" && "$WAVEBOX" run -- sh -c "$probe" sh 2 2>&1 <&- >&-)
check "closed stdin and stdout stay closed inside" [ "$(tr '\n' ' ' <<<"$OUT")" = "fd0 closed fd1 closed fd2 open " ]
OUT=$(cd "$WS" && "$WAVEBOX" run -- sh -c "$probe" sh 1 2>&-)
check "a closed stderr stays closed inside" [ "$(tr '\n' ' ' <<<"$OUT")" = "fd0 open fd1 open fd2 closed " ]
(cd "$WS" && exec "$WAVEBOX" run -- sleep 1 | cat >/dev/null) &
runner=$!
# Only this run's processes (other tests run beside this one, their keepers just forked).
descendants() { local c; for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done; }
mine() { for p in $(descendants "$runner"); do
  case "$(cat /proc/$p/comm 2>/dev/null)" in bwrap|wavebox-shim) echo "$p" ;; esac; done; }
for i in $(seq 1 50); do [ -n "$(mine | head -1)" ] && [ -n "$(for p in $(mine); do [ "$(cat /proc/$p/comm)" = bwrap ] && echo b; done)" ] && break; sleep 0.05; done
sleep 0.2  # the keeper and bwrap have replaced the caller's descriptors by then
holders=""
for p in $(mine); do
  # pid 1 of the sandbox (the shim inside) holds the command's descriptors on purpose; the
  # keeper is the other wavebox-shim, and bwrap is checked whatever its pid inside.
  [ "$(cat /proc/$p/comm 2>/dev/null)" = wavebox-shim ] && grep -q "NSpid:.*[[:space:]]1$" "/proc/$p/status" 2>/dev/null && continue
  for f in 0 1; do
    t=$(readlink "/proc/$p/fd/$f" 2>/dev/null)
    [ -n "$t" ] && [ "$t" != /dev/null ] && holders="$holders $p:$f=$t"
  done
done
wait
check "bwrap and the keeper hold neither stdin nor stdout of the caller (${holders:-none})" [ -z "$holders" ]

# The launcher (launcher/launcher.c): `wavebox` starts the run's keeper, then becomes wavebox-core,
# which takes that keeper. Its record never reaches the command, a caller's own is ignored, and
# the process is still "wavebox" to ps and pgrep.
core="$(dirname "$WAVEBOX")/wavebox-core"
if [ -x "$core" ]; then
  OUT=$(cd "$WS" && "$WAVEBOX" run -v -- true 2>&1)
  check "the run takes the keeper the launcher started" grep -q "the sandbox the launcher started" <<<"$OUT"
  OUT=$(cd "$WS" && WAVEBOX_EARLY_START=0 "$WAVEBOX" run -v -- true 2>&1)
  check "WAVEBOX_EARLY_START=0: the run starts its own" \
    bash -c '! grep -q "the launcher started" <<<"$0" && grep -q "started before the settings were read fits" <<<"$0"' "$OUT"
  OUT=$(cd "$WS" && "$WAVEBOX" run -- sh -c 'env | grep -c "^WAVEBOX_EARLY" ; ls /proc/self/fd | wc -l')
  check "the launcher's record and descriptors do not reach the command ($(tr '\n' ' ' <<<"$OUT"))" \
    [ "$(tr '\n' ' ' <<<"$OUT")" = "0 4 " ]
  for forged in "1 2 3" "$$ 0 1 2 3 4 5 6 7 8 9 10 /x
/y" "99999999999999999999"; do
    OUT=$(cd "$WS" && WAVEBOX_EARLY_LAUNCH="$forged" "$WAVEBOX" run -- sh -c 'echo ran; env | grep -c "^WAVEBOX_EARLY"; touch /etc/wb-forged' 2>&1)
    check "a caller's own WAVEBOX_EARLY_LAUNCH is dropped: the run runs, confined" \
      bash -c 'grep -qx ran <<<"$0" && grep -qx 0 <<<"$0" && [ ! -e /etc/wb-forged ]' "$OUT"
    OUT=$(cd "$WS" && WAVEBOX_EARLY_LAUNCH="$forged" "$core" run -- sh -c 'echo ran; env | grep -c "^WAVEBOX_EARLY"; ls /proc/self/fd | wc -l' 2>&1)
    check "and given to wavebox-core itself, it is checked and removed (${OUT//$'\n'/ })" \
      bash -c 'grep -qx ran <<<"$0" && [ "$(sed -n 2p <<<"$0")" = 0 ] && [ "$(sed -n 3p <<<"$0")" = 4 ]' "$OUT"
  done
  (cd "$WS" && exec "$WAVEBOX" run -- sleep 2) &
  runner=$!
  for i in $(seq 1 40); do case "$(readlink /proc/$runner/exe)" in */wavebox-core) break ;; esac; sleep 0.05; done
  sleep 0.1
  check "a running wavebox is named wavebox ($(cat /proc/$runner/comm 2>/dev/null))" [ "$(cat /proc/$runner/comm 2>/dev/null)" = wavebox ]
  check "with the command line its caller gave" bash -c 'tr "\0" " " < /proc/$0/cmdline | grep -q "^$1 run -- sleep 2"' "$runner" "$WAVEBOX"
  kill -9 "$runner" 2>/dev/null
  wait "$runner" 2>/dev/null
  # /proc/PID/environ of the running wavebox no longer shows the record's numbers.
  (cd "$WS" && exec "$WAVEBOX" run -- sleep 1) &
  runner=$!
  for i in $(seq 1 40); do case "$(readlink /proc/$runner/exe)" in */wavebox-core) break ;; esac; sleep 0.05; done
  sleep 0.1
  check "the record is blanked in the process's environment block" \
    bash -c '! tr "\0" "\n" < /proc/$0/environ | grep -q "^WAVEBOX_EARLY_LAUNCH=.*[0-9]"' "$runner"
  wait "$runner" 2>/dev/null
  # A forged record naming a child of the process that is not the shim is not taken.
  cat > "$SCRATCH/forge.py" <<'PY'
import os, socket, sys, time
r = [os.pipe() for _ in range(4)]
a, b = socket.socketpair(), socket.socketpair()
m = [os.memfd_create(n, 0) for n in "fsm"]
rec = [r[0][0], r[0][1], r[1][1], r[2][0], r[2][1], a[0].fileno()] + m + [b[0].fileno(), r[3][0]]
for f in rec:
    os.set_inheritable(f, True)
pid = os.fork()
if pid == 0:
    time.sleep(2)
    os._exit(0)
env = dict(os.environ, WAVEBOX_EARLY_LAUNCH="%d %s %s\n%s" % (pid, " ".join(map(str, rec)), sys.argv[2], "/usr/bin/bwrap"))
os.execve(sys.argv[1], [sys.argv[1], "run", "-v", "--", "sh", "-c", "echo RAN; ls /proc/self/fd | wc -l"], env)
PY
  OUT=$(cd "$WS" && python3 "$SCRATCH/forge.py" "$core" "$(dirname "$WAVEBOX")/wavebox-shim" 2>&1)
  check "a forged record naming another child of the process is not taken" \
    bash -c 'grep -qx RAN <<<"$0" && ! grep -q "the launcher started" <<<"$0" && grep -qx 4 <<<"$0"' "$OUT"
  # A caller that ignores SIGCHLD still gets the command's status.
  ign='import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])'
  OUT=$(cd "$WS" && python3 -c "$ign" "$WAVEBOX" run -- sh -c 'echo ok; exit 3' 2>&1)
  rc=$?
  check "a caller ignoring SIGCHLD gets the command's output and status ($rc: $OUT)" [ "$OUT:$rc" = ok:3 ]
  # The launcher runs wavebox-core from one place only: not from ../libexec/wavebox/, which a
  # sandbox whose workspace holds the build tree could plant, while its own is missing.
  mkdir -p "$WS/b"
  cp "$WAVEBOX" "$core" "$(dirname "$WAVEBOX")/wavebox-shim" "$WS/b/"
  (cd "$WS" && "$WS/b/wavebox" run -- sh -c 'mkdir -p libexec/wavebox; printf "#!/bin/sh\ntouch %s/planted\n" "$0" > libexec/wavebox/wavebox-core; chmod +x libexec/wavebox/wavebox-core' "$SCRATCH") >/dev/null 2>&1
  chmod -x "$WS/b/wavebox-core"
  OUT=$(cd "$WS" && "$WS/b/wavebox" run -- true 2>&1)
  check "a build tree's launcher without its wavebox-core exits 125 and runs nothing planted" \
    bash -c '[ "$1" -eq 125 ] && [ ! -e "$2/planted" ]' "$OUT" "$?" "$SCRATCH"
  rm -rf "$WS/b" "$WS/libexec"
  mkdir -p "$SCRATCH/alone"
  cp "$WAVEBOX" "$SCRATCH/alone/wavebox"
  OUT=$("$SCRATCH/alone/wavebox" run -- true 2>&1)
  check "a launcher without wavebox-core says so (exit 125)" bash -c '[ "$1" -eq 125 ] && grep -q "wavebox-core is not installed" <<<"$0"' "$OUT" "$?"
fi

# A command that deletes the directory it is in gets no extra failure from wavebox.
wb run -- sh -c 'mkdir sub && cd sub && rmdir ../sub && echo removed'
check "a command that deletes its cwd gets no extra failure" [ "$RC" -eq 0 ]
check "the directory is gone on the host" [ ! -e "$WS/sub" ]
finish
