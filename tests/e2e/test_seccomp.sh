#!/usr/bin/env bash
# The seccomp filter: each refused call is refused (also with high bits set in an int argument),
# ordinary calls still work, host Unix sockets are out of reach, real tools run under it.
. "$(dirname "$0")/lib.sh"
PROBE="$(dirname "$WAVEBOX")/try_syscalls"
[ -x "$PROBE" ] || { echo "probe not built"; exit 77; }

wb run -- "$PROBE"
expect() {  # name errno
  local got; got=$(awk -v n="$1" '$1==n {print $2}' <<<"$OUT")
  if [ "$got" = "$2" ]; then pass "$1 -> $2"; else fail "$1: expected errno $2, got '${got:-missing}'"; fi
}
EPERM=1 ENOSYS=38 EAFNOSUPPORT=97
# Stream Unix sockets work inside (the supervisor performs connect and refuses host sockets);
# datagram ones, which can sendto() any path unseen, are refused.
expect socket_unix 0
expect socket_unix_dgram $EPERM
expect socket_unix_dgram_highbits $EPERM
expect openat2 $ENOSYS
expect fchmodat2 $ENOSYS
expect setxattr 95
expect setxattrat $ENOSYS
expect call_599 $ENOSYS
expect fchmod_setuid $EPERM
expect fchmod_setgid $EPERM
expect socket_packet $EAFNOSUPPORT
expect socket_bluetooth $EAFNOSUPPORT
expect socketpair_unix_dgram $EPERM
expect io_uring_setup $ENOSYS
expect ptrace $EPERM
expect process_vm_readv $EPERM
expect pidfd_getfd $EPERM
expect unshare_newuser $EPERM
expect unshare_newuser_highbits $EPERM
expect clone3 $ENOSYS
expect mount $EPERM
expect umount2 $EPERM
expect pivot_root $EPERM
expect chroot $EPERM
expect setns $EPERM
expect open_tree $ENOSYS
expect fsopen $ENOSYS
expect mount_setattr $ENOSYS
expect ioctl_tiocsti $EPERM
expect ioctl_tiocsti_highbits $EPERM
expect keyctl $EPERM
expect add_key $EPERM
expect bpf $EPERM
expect perf_event_open $EPERM
expect userfaultfd $EPERM
expect open_by_handle_at $EPERM
expect kexec_load $EPERM
# What must keep working.
expect socket_inet 0
expect socket_inet6 0
expect socket_netlink 0
expect socketpair_unix_stream 0
expect clone_plain 0
expect memfd_create 0
expect execveat_bad_fd 0
expect prctl 0

# A host Unix socket listener (stream and datagram) receives nothing from inside.
if command -v python3 >/dev/null; then
  sock="$SCRATCH/host.sock"; dsock="$SCRATCH/host-dgram.sock"; log="$SCRATCH/received"
  python3 - "$sock" "$dsock" "$log" <<'PY' &
import os, socket, sys, select, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(sys.argv[1]); s.listen(5)
d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); d.bind(sys.argv[2])
open(sys.argv[3] + ".ready", "w").close()
end = time.time() + 8
while time.time() < end:
    r, _, _ = select.select([s, d], [], [], 0.2)
    for x in r:
        with open(sys.argv[3], "a") as f:
            if x is s:
                c, _ = s.accept(); f.write("stream:" + c.recv(100).decode(errors="replace") + "\n")
            else:
                f.write("dgram:" + d.recv(100).decode(errors="replace") + "\n")
PY
  lpid=$!
  for i in $(seq 1 50); do [ -e "$log.ready" ] && break; sleep 0.1; done
  chmod 777 "$sock" "$dsock" 2>/dev/null
  wb run --allow-write "$SCRATCH" -- python3 -c "
import socket, sys
for kind, path in ((socket.SOCK_STREAM, '$sock'), (socket.SOCK_DGRAM, '$dsock')):
    try:
        c = socket.socket(socket.AF_UNIX, kind)
        c.connect(path) if kind == socket.SOCK_STREAM else None
        c.sendto(b'escape', path) if kind == socket.SOCK_DGRAM else c.send(b'escape')
        print('sent', kind)
    except OSError as e:
        print('refused', kind, e.errno)
try:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b'escape', '$dsock'); print('sent via socketpair')
except OSError as e:
    print('refused socketpair', e.errno)
"
  sleep 0.5
  kill $lpid 2>/dev/null; wait $lpid 2>/dev/null
  check "the host Unix listeners received nothing" bash -c '[ ! -s "$0" ]' "$log"
  check "the sandboxed attempts were refused" bash -c '! grep -q "^sent" <<<"$0"' "$OUT"
  check "the refused host socket is reported" grep -q "deny network-outbound unix:$sock" <<<"$OUT"

  # The same host socket in a writable place, its times made new from inside (chmod, utime,
  # a rename back and forth) before each connect, over two runs: still a host daemon's.
  sock2="$SCRATCH/host2.sock"; log2="$SCRATCH/received2"
  python3 - "$sock2" "$log2" <<'PY' &
import socket, sys, select, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(sys.argv[1]); s.listen(5)
open(sys.argv[2] + ".ready", "w").close()
end = time.time() + 20
while time.time() < end:
    r, _, _ = select.select([s], [], [], 0.2)
    if r:
        c, _ = s.accept(); open(sys.argv[2], "a").write("got:" + c.recv(100).decode(errors="replace") + "\n")
PY
  lpid=$!
  for i in $(seq 1 50); do [ -e "$log2.ready" ] && break; sleep 0.1; done
  for round in 1 2; do
    wb run --allow-write "$SCRATCH" -- python3 -c "
import os, socket, time
p = '$sock2'
for how in ('chmod', 'utime', 'rename'):
    if how == 'chmod': os.chmod(p, 0o755)
    elif how == 'utime': os.utime(p)
    else: os.rename(p, p + '.x'); os.rename(p + '.x', p)
    try:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); c.connect(p); c.send(b'escape'); print('sent', how)
    except OSError as e:
        print('refused', how, e.errno)
"
    check "round $round: a host socket with new times is refused" bash -c '! grep -q "^sent" <<<"$0"' "$OUT"
    check "round $round: each attempt refused" bash -c '[ "$(grep -c "^refused" <<<"$0")" -eq 3 ]' "$OUT"
  done
  sleep 0.3
  kill $lpid 2>/dev/null; wait $lpid 2>/dev/null
  check "the host listener with new times received nothing" bash -c '[ ! -s "$0" ]' "$log2"

  # The address's family flipped by another thread between wavebox's look and the kernel's
  # (AF_INET when read, AF_UNIX when connected), over two runs: still refused.
  flip="$(dirname "$WAVEBOX")/flip_family"
  if [ -x "$flip" ]; then
    hdir=$(mktemp -d /var/tmp/wavebox-hostsock.XXXXXX); chmod 755 "$hdir"
    sock3="$hdir/h.sock"; log3="$SCRATCH/received3"
    python3 - "$sock3" "$log3" <<'PY' &
import socket, sys, select, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(sys.argv[1]); s.listen(64)
open(sys.argv[2] + ".ready", "w").close()
end = time.time() + 40
while time.time() < end:
    r, _, _ = select.select([s], [], [], 0.2)
    if r:
        c, _ = s.accept(); open(sys.argv[2], "a").write("got:" + c.recv(100).decode(errors="replace") + "\n")
PY
    lpid=$!
    for i in $(seq 1 50); do [ -e "$log3.ready" ] && break; sleep 0.1; done
    chmod 777 "$sock3"
    cp "$flip" "$WS/flip_family"
    for round in 1 2; do
      wb run -- ./flip_family "$sock3"
      check "round $round: a flipped address family does not reach a host socket" bash -c '! grep -q "^connected" <<<"$0"' "$OUT"
    done
    kill $lpid 2>/dev/null; wait $lpid 2>/dev/null
    check "the host listener (flipped family) received nothing" bash -c '[ ! -s "$0" ]' "$log3"
    rm -rf "$hdir" "$WS/flip_family"
  fi
fi

# Unix sockets the sandbox makes itself work (multiprocessing, asyncio, socketpair): only the
# host's are out of reach.
if command -v python3 >/dev/null; then
  wb run -- python3 -c "
import asyncio, multiprocessing, socket
a, b = socket.socketpair(); a.sendall(b'pair'); print('socketpair', b.recv(4).decode())
m = multiprocessing.Manager(); d = m.dict(); d['k'] = 'v'; print('manager', d['k']); m.shutdown()
async def main():
    async def echo(r, w):
        w.write(await r.read(5)); await w.drain(); w.close()
    srv = await asyncio.start_unix_server(echo, path='echo.sock')
    r, w = await asyncio.open_unix_connection('echo.sock'); w.write(b'hello')
    print('asyncio', (await r.read(5)).decode()); w.close(); srv.close()
asyncio.run(main())"
  check "a socketpair works inside" grep -q "socketpair pair" <<<"$OUT"
  check "multiprocessing.Manager works inside" grep -q "manager v" <<<"$OUT"
  check "an asyncio Unix server and client work inside" grep -q "asyncio hello" <<<"$OUT"
  rm -f "$WS/echo.sock"
fi

# Escape tools fail; real tools still work under the filter.
wb run -- unshare -r true
check "unshare -r fails" [ "$RC" -ne 0 ]
# File flags (chattr: case folding would make ".GIT/CONFIG" find the protected .git/config).
wb run -- python3 -c '
import fcntl, os
fd = os.open(".", os.O_RDONLY)
flags = fcntl.ioctl(fd, 0x80086601, b"\0" * 8)
try:
    fcntl.ioctl(fd, 0x40086602, flags)
    print("flags set")
except OSError as e:
    print("refused", e.errno)'
check "FS_IOC_SETFLAGS is refused ($OUT)" grep -q "refused 1" <<<"$OUT"
if command -v strace >/dev/null; then
  wb run -- strace -f true
  check "strace (ptrace) fails" [ "$RC" -ne 0 ]
fi
if command -v keyctl >/dev/null; then
  wb run -- keyctl show
  check "keyctl fails" [ "$RC" -ne 0 ]
fi
wb run -- sh -c 'git init -q r && cd r && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x && git log --oneline | grep -q x'
check "git works under the filter" [ "$RC" -eq 0 ]
wb run -- python3 -c 'import subprocess, multiprocessing as m; print(subprocess.run(["echo","ok"],capture_output=True).stdout.decode().strip())'
check "python3 (subprocess) works under the filter" [ "$RC" -eq 0 ]
if command -v node >/dev/null; then
  wb run -- node -e 'require("child_process").execSync("true"); require("fs").writeFileSync("n.txt","x")'
  check "node (child_process, fs) works under the filter" [ "$RC" -eq 0 ]
fi
if command -v cc >/dev/null && command -v make >/dev/null; then
  printf 'int main(void){return 0;}\n' > "$WS/m.c"; printf 'm: m.c\n\tcc -o m m.c\n' > "$WS/Makefile"
  wb run -- sh -c 'make -s && ./m'
  check "cc and make work under the filter" [ "$RC" -eq 0 ]
fi
if command -v npm >/dev/null; then
  wb run -- npm --version
  check "npm runs under the filter" [ "$RC" -eq 0 ]
fi
# Once everything under the observer filter has ended, the kernel answers every receive with
# ENOENT at once; the observer must notice the hang-up rather than spin (it used to, ~200 times
# per run, slowing the sandbox's teardown).
wb run -v -- sh -c 'touch a b c; rm a b c'
empty=$(printf '%s\n' "$OUT" | sed -n 's/.* \([0-9][0-9]*\) empty receives.*/\1/p')
check "the observer does not spin after the sandbox ends (empty receives: ${empty:-none})" [ "${empty:-999}" -le 5 ]
# Nor wavebox's own loop, which polls the observer's listener until the first notification: a
# command that writes nothing ends with the listener hung up, which must not wake it for ever.
wb run -v -- true
woke=$(printf '%s\n' "$OUT" | sed -n 's/.*supervision loop woke \([0-9][0-9]*\) times.*/\1/p')
check "wavebox's loop does not spin either (woke ${woke:-?} times for true)" [ "${woke:-999}" -le 30 ]
# connect and bind are answered by wavebox for the calling thread, whichever it is: from a
# thread other than the first they used to fail with ENOTSOCK (its pidfd could not be opened),
# which broke every multi-threaded client (Go, Java, a resolver thread).
wb run -- python3 -c "
import socket, threading
out = []
def f():
    try:
        s = socket.create_connection(('127.0.0.1', 3128), timeout=5)
        s.sendall(b'GET http://no-such-host.test/ HTTP/1.1\\r\\nHost: no-such-host.test\\r\\n\\r\\n')
        out.append(s.recv(12).decode())
        b = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        b.bind('thread.sock'); out.append('bound')
    except Exception as e:
        out.append('ERR %s' % e)
t = threading.Thread(target=f); t.start(); t.join()
print(' '.join(out))"
check "a thread connects to the proxy and binds a socket of its own (got: $OUT)" grep -q "HTTP/1.1 403 bound" <<<"$OUT"
# network.allowUnixSockets on Linux: the host sockets it names are reachable (an ssh-agent's, a
# docker daemon's), another one in the same directory is not, and says so.
socks="$SCRATCH/sockets"; mkdir -p "$socks"
python3 -c '
import os, socket, sys, threading, time
d = sys.argv[1]
def serve(name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.path.join(d, name)); s.listen(4); s.settimeout(30)
    end = time.time() + 30
    while time.time() < end:
        try: c, _ = s.accept()
        except Exception: return
        c.sendall(("hello from " + name + "\n").encode()); c.close()
for n in ("agent.sock", "other.sock"): threading.Thread(target=serve, args=(n,), daemon=True).start()
open(os.path.join(d, "ready"), "w").close()
time.sleep(30)' "$socks" &
sockserver=$!
for _ in $(seq 50); do [ -e "$socks/ready" ] && break; sleep 0.1; done
printf '{"sandbox":{"enabled":true,"network":{"allowUnixSockets":["%s/agent.sock"]}}}' "$socks" > "$SCRATCH/unix.json"
wb run --settings "$SCRATCH/unix.json" -- python3 -c "
import socket, sys
for name in ('agent.sock', 'other.sock'):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sys.argv[1] + '/' + name); print(s.recv(64).decode().strip())
    except OSError as e:
        print(name, 'refused', e.errno)" "$socks"
check "allowUnixSockets: the named host socket answers" grep -q "hello from agent.sock" <<<"$OUT"
check "another host socket in the same directory is refused" grep -q "other.sock refused" <<<"$OUT"
check "and the refusal is listed" grep -q "other.sock" <<<"$(grep '^deny' <<<"$OUT")"
wb run -- python3 -c "
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try: s.connect(sys.argv[1] + '/agent.sock'); print('reached')
except OSError as e: print('refused', e.errno)" "$socks"
check "without the setting, that socket is refused too" grep -q "refused" <<<"$OUT"
# A thread swapping the descriptor between an inet and a Unix socket while another connects it
# to a host socket: what is connected is what was checked (it used to connect after ~2000 tries).
swapper="$(dirname "$WAVEBOX")/swap_connect"
if [ -x "$swapper" ]; then
  cp "$swapper" "$WS/swap_connect"
  wb run -- ./swap_connect "$socks/other.sock"
  check "a descriptor swapped during connect never reaches a host socket ($OUT)" grep -q "never connected" <<<"$OUT"
  wb run -- ./swap_connect "$socks/other.sock" thread
  check "nor from a second thread ($OUT)" grep -q "never connected" <<<"$OUT"
fi
kill "$sockserver" 2>/dev/null
finish
