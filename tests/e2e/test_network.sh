#!/usr/bin/env bash
# The network rules end to end: the proxy is the sandbox's only way out. A lab of two network namespaces
# (made here, torn down here) holds an upstream test host that logs every request it receives.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netlab.sh"
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! command -v curl >/dev/null; then
  echo "the network lab needs root, ip and curl (the unprivileged run is covered from root below)"
  exit 77
fi
trap 'lab_down; cleanup' EXIT
lab_up || { echo "cannot build the lab"; exit 1; }

S="$SCRATCH/net.json"
settings() { printf '{"sandbox":{"enabled":true,"network":{"allowedDomains":%s,"deniedDomains":%s}}}' "$1" "${2:-[]}" > "$S"; }
CURL='curl -s -m 5 -o /dev/stderr -w %{http_code}'

settings '["allowed.test","*.allowed.test","other.test:8080"]' '["denied.test"]'
lab_wb run --settings "$S" -- sh -c "$CURL http://allowed.test/hello-http"
check "HTTP to an allowed name: the server received it" received "80 GET /hello-http"
check "HTTP: the command got the answer" grep -q "hello from 80" <<<"$OUT"
lab_wb run --settings "$S" -- sh -c "curl -s -m 5 -k https://allowed.test/hello-https"
check "HTTPS via CONNECT: the server received it" received "443 GET /hello-https"
lab_wb run --settings "$S" -- sh -c 'curl -s -m 5 --proxy "$ALL_PROXY" http://allowed.test/hello-socks'
check "SOCKS5 (socks5h): the server received it" received "80 GET /hello-socks"
lab_wb run --settings "$S" -- sh -c "curl -s -m 5 http://sub.allowed.test/hello-sub"
check "a subdomain of *.allowed.test is allowed" received "GET /hello-sub host=sub.allowed.test"
lab_wb run --settings "$S" -- sh -c "curl -s -m 5 http://other.test:8080/hello-port"
check "an entry with a port allows that port" received "8080 GET /hello-port"

lab_wb run --settings "$S" -- sh -c "curl -s -m 5 -D - http://other.test/refused-1"
check "a name not allowed on this port: 403" grep -q "403" <<<"$OUT"
check "the refusal names the allowlist and the host" grep -q "Connection blocked by network allowlist: other.test" <<<"$OUT"
check "the refusal carries X-Proxy-Error" grep -qi "X-Proxy-Error: blocked-by-allowlist" <<<"$OUT"
check "the violations block lists host:port and reason" grep -q "deny network-outbound other.test:80 (host is not on the allow list)" <<<"$OUT"
check "the server saw nothing of it" bash -c '! grep -q refused-1 "$0"' "$LAB_LOG"
lab_wb run --settings "$S" -- sh -c "curl -s -m 5 http://denied.test/refused-2"
check "a denied name is refused" grep -q "deny network-outbound denied.test:80" <<<"$OUT"
settings '["allowed.test","denied.test"]' '["denied.test"]'
lab_wb run --settings "$S" -- sh -c "curl -s -m 5 http://denied.test/refused-3"
check "denied wins over allowed" grep -q "host is on the deny list" <<<"$OUT"
settings '["*.allowed.test"]'
lab_wb run --settings "$S" -- sh -c "curl -s -m 5 http://allowed.test/refused-4"
check "the apex is refused when only *.x is allowed" grep -q "deny network-outbound allowed.test:80" <<<"$OUT"
settings '[]'
lab_wb run --settings "$S" -- sh -c "curl -s -m 5 http://allowed.test/refused-5; curl -s -m 5 -k https://allowed.test/refused-6; curl -s -m 5 --proxy \"\$ALL_PROXY\" http://allowed.test/refused-7"
check "empty allowlist: HTTP, HTTPS and SOCKS refused" [ "$(grep -c 'deny network-outbound allowed.test' <<<"$OUT")" -ge 2 ]
lab_wb run --settings "$S" -- sh -c "python3 -c \"import socket; s=socket.socket(); s.connect(('127.0.0.1',1080)); s.sendall(bytes([5,1,0])); s.recv(2); s.sendall(bytes([5,1,0,3,len(b'allowed.test')])+b'allowed.test'+bytes([0,80])); print('socks-reply', s.recv(10)[1])\""
check "SOCKS5 refusal is reply 0x02" grep -q "socks-reply 2" <<<"$OUT"

# Plain HTTP: a Host naming another host than the one decided is refused, and a request
# pipelined behind an allowed one is never relayed undecided.
settings '["allowed.test"]'
lab_wb run --settings "$S" -- sh -c "curl -s -m 5 -H 'Host: denied.test' http://allowed.test/host-swap"
check "a Host header other than the target's is refused: nothing reached the upstream" bash -c '! grep -q host-swap "$0"' "$LAB_LOG"
check "and reported with the host it named" grep -q "deny network-outbound allowed.test:80 (the Host header names denied.test" <<<"$OUT"
lab_wb run --settings "$S" -- python3 -c "
import socket
s = socket.create_connection(('127.0.0.1', 3128), timeout=5)
s.sendall(b'GET http://allowed.test/first HTTP/1.1\r\nHost: allowed.test\r\n\r\nGET /pipelined HTTP/1.1\r\nHost: denied.test\r\n\r\n')
data = b''
while True:
    b = s.recv(65536)
    if not b: break
    data += b
print('answers', data.count(b'HTTP/1.'))"
check "the first of two pipelined requests is served" received "GET /first host=allowed.test"
check "the pipelined second request never reached the upstream" bash -c '! grep -q pipelined "$0"' "$LAB_LOG"
lab_wb run --settings "$S" -- sh -c "printf 'x%.0s' \$(seq 1 10) | curl -s -m 5 -H 'Transfer-Encoding: chunked' --data-binary @- http://allowed.test/chunked -o /dev/null -w '%{http_code}'"
check "a chunked plain-HTTP body is refused (411), not relayed unframed" grep -q 411 <<<"$OUT"

# Around the proxy: nothing reaches the upstream.
settings '["allowed.test"]'
: > "$SCRATCH/before"; cp "$LAB_LOG" "$SCRATCH/before"
lab_wb run --settings "$S" -- sh -c "
curl -s -m 3 --noproxy '*' http://$LAB_UP_IP/direct-1;
env -u HTTP_PROXY -u http_proxy -u HTTPS_PROXY -u https_proxy -u ALL_PROXY -u all_proxy curl -s -m 3 http://other.test/direct-2;
(exec 3<>/dev/tcp/$LAB_UP_IP/80 && printf 'GET /direct-3 HTTP/1.0\r\n\r\n' >&3) 2>/dev/null;
python3 -c \"import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'udp-escape', ('$LAB_UP_IP', 53))\" 2>/dev/null;
python3 -c \"import socket; print(socket.gethostbyname('allowed.test'))\" 2>/dev/null; true"
check "no direct, unproxied, raw TCP or UDP traffic reached the upstream" cmp -s "$SCRATCH/before" "$LAB_LOG"
check "direct connections are listed as violations" grep -q "deny network-outbound $LAB_UP_IP:80 (direct connection; use the proxy)" <<<"$OUT"

# The local-address check: an allowed name that resolves to loopback is refused.
settings '["loopname.test"]'
lab_wb run --settings "$S" -- sh -c "curl -s -m 5 http://loopname.test/"
check "an allowed name resolving to 127.0.0.1 is refused" grep -q "deny network-outbound loopname.test:80 (resolves to a local address (127.0.0.1))" <<<"$OUT"

# Per-call network: --allow-domain adds hosts for one run only.
settings '[]'
lab_wb run --settings "$S" --allow-domain allowed.test --report-json "$SCRATCH/r.json" -- sh -c "curl -s -m 5 http://allowed.test/per-call"
check "--allow-domain: that run reaches the host" received "80 GET /per-call"
check "--allow-domain: the report lists the extra host" grep -q '"extraDomains":\["allowed.test"\]' "$SCRATCH/r.json"
lab_wb run --settings "$S" -- sh -c "curl -s -m 5 http://allowed.test/per-call-2"
check "--allow-domain: the next run without it does not" bash -c '! grep -q per-call-2 "$0"' "$LAB_LOG"
lab_wb decide --settings "$S" --allow-domain allowed.test -- 'curl http://allowed.test/'
check "--allow-domain: decide says which hosts the call adds" grep -q '"addsHosts":\["allowed.test"\]' <<<"$OUT"
lab_wb run --settings "$S" --allow-domain '*.com' -- true
check "--allow-domain: a malformed pattern is exit 125" [ "$RC" -eq 125 ]

# --dangerously-allow-network: every host for one run (never by default); the deny list and the local-address check
# still hold.
settings '[]' '["denied.test"]'
lab_wb run --settings "$S" --dangerously-allow-network --report-json "$SCRATCH/all.json" -- sh -c \
  "curl -s -m 5 http://allowed.test/all-hosts; curl -s -m 5 http://denied.test/all-denied; curl -s -m 5 http://loopname.test/all-loop"
check "--dangerously-allow-network: a host on no list is reached" received "80 GET /all-hosts"
check "--dangerously-allow-network: the deny list still wins" bash -c '! grep -q all-denied "$0"' "$LAB_LOG"
check "--dangerously-allow-network: the local-address check still refuses a name resolving to loopback" \
  grep -q "deny network-outbound loopname.test:80 (resolves to a local address" <<<"$OUT"
check "--dangerously-allow-network: it says so on stderr" grep -q "dangerously-allow-network: every host" <<<"$OUT"
check "--dangerously-allow-network: the report lists \"*\"" grep -q '"extraDomains":\["\*"\]' "$SCRATCH/all.json"
lab_wb run --settings "$S" -- sh -c "curl -s -m 5 http://allowed.test/all-hosts-2"
check "--dangerously-allow-network: the next run without it is back to the allowlist" bash -c '! grep -q all-hosts-2 "$0"' "$LAB_LOG"
lab_wb decide --settings "$S" --dangerously-allow-network -- 'curl http://allowed.test/'
check "--dangerously-allow-network: decide says the call adds every host" grep -q '"addsHosts":\["\*"\]' <<<"$OUT"

# --network off: nothing at all for this run, whatever the allowlist says.
settings '["allowed.test"]'
lab_wb run --settings "$S" --network off -- sh -c "env | grep -ci proxy; curl -s -m 3 http://allowed.test/net-off-1; curl -s -m 3 --noproxy '*' http://$LAB_UP_IP/net-off-2; python3 -c \"
import socket
for p in (3128, 1080):
    try: socket.create_connection(('127.0.0.1', p), timeout=2); print('LISTENER', p)
    except OSError as e: print('no listener', p)\""
check "--network off: no proxy variables inside" grep -qx 0 <<<"$OUT"
check "--network off: no listener inside" bash -c '! grep -q LISTENER <<<"$0"' "$OUT"
check "--network off: nothing reached the lab host" bash -c '! grep -q net-off "$0"' "$LAB_LOG"
check "--network off: the connection attempt is reported" grep -q "deny network-outbound $LAB_UP_IP:80" <<<"$OUT"
lab_wb run --settings "$S" -- sh -c "curl -s -m 5 http://allowed.test/net-on-again"
check "--network off: the next run without it has the allowlist again" received "GET /net-on-again"

# ... and one that resolves to this host's own address spelled as IPv4-mapped IPv6.
settings '["mappedown.test"]'
lab_wb run --settings "$S" -- sh -c "curl -s -m 5 http://mappedown.test/"
check "an allowed name resolving to ::ffff:<this host's IPv4> is refused" grep -q "deny network-outbound mappedown.test:80 (resolves to" <<<"$OUT"

# No query string in reports.
settings '["allowed.test"]'
lab_wb run --settings "$S" -- sh -c "curl -s -m 5 'http://other.test/p?token=SECRET123'"
check "the query string appears nowhere in stderr" bash -c '! grep -q SECRET123 <<<"$0"' "$OUT"
check "the refusal is still listed" grep -q "deny network-outbound other.test:80" <<<"$OUT"

# Host tricks.
# (NO_PROXY unset: loopback inside is the sandbox's own and is reached directly otherwise; here
# the proxy is to see, decide and report the numeric spellings.)
lab_wb run --settings "$S" -- sh -c "unset NO_PROXY no_proxy; curl -s -m 5 http://OTHER.TEST/t1; curl -s -m 5 http://other.test./t2; curl -s -m 5 http://allowed.test.evil.test/t3; curl -s -m 5 http://127.1/t4; curl -s -m 5 http://2130706433/t5"
check "uppercase, trailing dot, suffix and numeric tricks reach nothing" bash -c '! grep -qE "/t[1-5]" "$0"' "$LAB_LOG"
check "numeric forms are reported as the address" grep -q "deny network-outbound 127.0.0.1:80" <<<"$OUT"
lab_wb run --settings "$S" -- sh -c "python3 -c \"import socket; s=socket.socket(); s.connect(('127.0.0.1',1080)); s.sendall(bytes([5,1,0])); s.recv(2); h=b'allowed.test\\x00.evil'; s.sendall(bytes([5,1,0,3,len(h)])+h+bytes([0,80])); print('nul-reply', s.recv(10)[1])\""
check "a NUL byte in a SOCKS host name is refused" grep -q "nul-reply 2" <<<"$OUT"

# git over http from an allowed lab server (dumb protocol).
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e
git init -q "$SCRATCH/src" && git -C "$SCRATCH/src" commit -q --allow-empty -m lab-commit
git clone -q --bare "$SCRATCH/src" "$LAB_ROOT/repo.git" && git -C "$LAB_ROOT/repo.git" update-server-info
lab_wb run --settings "$S" -- sh -c "git clone -q http://allowed.test/repo.git cloned && git -C cloned log --oneline"
check "git clone over http from an allowed server works" grep -q lab-commit <<<"$OUT"

# git over ssh goes through `wavebox connect` (ProxyCommand); here it carries a plain request.
lab_wb run --settings "$S" -- sh -c "printf 'GET /via-connect HTTP/1.0\r\nHost: allowed.test\r\n\r\n' | $WAVEBOX connect allowed.test 80; echo; echo \"\$GIT_SSH_COMMAND\""
check "wavebox connect tunnels through the SOCKS5 proxy" received "GET /via-connect"
check "GIT_SSH_COMMAND uses wavebox connect as ProxyCommand" grep -q "ProxyCommand=.*connect %h %p" <<<"$OUT"

# httpProxyPort: connections go to the caller's own proxy on the host, not to ours.
fport=$((20000 + RANDOM % 20000))
ip netns exec "$LAB_CL" python3 -c "
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', $fport)); s.listen(5)
open('$SCRATCH/fwd-ready', 'w').close()
s.settimeout(15)
c, _ = s.accept(); line = c.recv(4096).split(b'\r\n')[0]
open('$SCRATCH/forwarded', 'w').write(line.decode())
c.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nforwarded')
" &
fwd=$!
# Listening before the run (a python started through a version manager's shim takes a while).
for _ in $(seq 1 100); do [ -e "$SCRATCH/fwd-ready" ] && break; sleep 0.1; done
printf '{"sandbox":{"enabled":true,"network":{"httpProxyPort":%d}}}' "$fport" > "$SCRATCH/fwd.json"
lab_wb run --settings "$SCRATCH/fwd.json" -- sh -c "curl -s -m 5 http://anything.test/via-caller-proxy"
wait $fwd 2>/dev/null
check "httpProxyPort: the request reached the caller's proxy" grep -q "GET http://anything.test/via-caller-proxy" "$SCRATCH/forwarded"
check "httpProxyPort: the command got its answer" grep -q forwarded <<<"$OUT"

# Bulk bytes both ways through the proxy, intact; and the namespace's TCP does not pace (the
# keeper sets cubic or reno there: a pacing bbr inherited from the host cost a third of the
# proxy's download speed on loopback).
settings '["allowed.test"]'
want=$(head -c 33554432 /dev/zero | tr '\0' x | sha256sum | cut -d' ' -f1)
lab_wb run --settings "$S" -- sh -c "curl -s -m 30 http://allowed.test/big/33554432 | sha256sum; head -c 16777216 /dev/zero | curl -s -m 30 --data-binary @- http://allowed.test/upload; echo; cat /proc/sys/net/ipv4/tcp_congestion_control"
check "32 MiB downloaded through the proxy arrive intact" grep -q "$want" <<<"$OUT"
check "16 MiB uploaded through the proxy arrive whole" received "POST /upload bytes=16777216"
check "TCP inside the sandbox does not pace (cubic or reno)" grep -qxE "cubic|reno" <<<"$OUT"

# A client that resets a connection while the proxy still relays to it (the relay's splice then
# raises SIGPIPE): wavebox lives on, and the run ends with its report (it used to die of it).
# (SIGPIPE's default action for wavebox, whatever the caller left it at.)
settings '["allowed.test"]'
lab_wb_default_pipe() {
  OUT=$(cd "$WS" && ip netns exec "$LAB_CL" env --default-signal=PIPE "$WAVEBOX" "$@" 2>&1)
  RC=$?
}
lab_wb_default_pipe run --settings "$S" -- python3 -c "
import socket, struct, time
for i in range(3):
    s = socket.create_connection(('127.0.0.1', 3128), timeout=5)
    s.sendall(b'CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n')
    s.recv(39)
    s.sendall(b'GET /big/20000000 HTTP/1.0\r\nHost: allowed.test\r\n\r\n')
    s.recv(10)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
    s.close()
    time.sleep(1)
print('survived')
import urllib.request
try: urllib.request.urlopen('http://denied.test/after-reset', timeout=5)
except Exception: pass"
check "a client's reset mid-relay does not end wavebox (exit $RC)" [ "$RC" -eq 0 ]
check "and the run's report is still printed" grep -q "deny network-outbound denied.test:80" <<<"$OUT"

# The same as an unprivileged user (user namespaces, /proc and capabilities differ).
user=wavebox-test
if id "$user" >/dev/null 2>&1; then
  uws="$SCRATCH/userws"; mkdir -p "$uws"; chown "$user" "$uws"; chmod o+rx "$SCRATCH"
  OUT=$(ip netns exec "$LAB_CL" runuser -u "$user" -- sh -c "cd '$uws' && HOME='$uws' '$WAVEBOX' run --settings '$S' -- sh -c 'curl -s -m 5 http://allowed.test/hello-user; curl -s -m 5 http://other.test/refused-user'" 2>&1)
  check "unprivileged: an allowed name works" received "GET /hello-user"
  check "unprivileged: a refused name is listed" grep -q "deny network-outbound other.test:80" <<<"$OUT"
  check "unprivileged: the server saw no refused request" bash -c '! grep -q refused-user "$0"' "$LAB_LOG"
fi
finish
