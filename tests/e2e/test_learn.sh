#!/usr/bin/env bash
# wavebox run --learn: enforced as usual, then the smallest settings additions that would have
# allowed what was refused; applied (merged after the user's settings), the same command runs
# with no violation. Never a protected path or a credential.
. "$(dirname "$0")/lib.sh"
mkdir -p "$HOME/.cache/x" "$HOME/app"
echo "config-value" > "$HOME/app/secret.conf"
port_file="$SCRATCH/port"
python3 -c '
import http.server, socket, sys, threading, time
s = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
open(sys.argv[1], "w").write(str(s.server_port))
threading.Thread(target=s.serve_forever, daemon=True).start()
time.sleep(90)' "$port_file" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; cleanup' EXIT
for _ in $(seq 1 50); do [ -s "$port_file" ] && break; sleep 0.1; done
port=$(cat "$port_file")
printf '{"sandbox":{"enabled":true,"filesystem":{"denyRead":["%s"]},"network":{"allowedDomains":["example.test"]}}}' \
  "$HOME/app" > "$SCRATCH/base.json"
work='mkdir -p "$HOME/.cache/x/obj"; echo o > "$HOME/.cache/x/obj/a.o"; cat "$HOME/app/secret.conf";
  curl --noproxy "" -s -m 5 -o /dev/null -w "%{http_code}\n" "http://127.0.0.1:'"$port"'/"'
cmd="$work; echo x > .git/hooks/pre-commit; true"
git -C "$WS" init -q

wb run --settings "$SCRATCH/base.json" --learn="$SCRATCH/learned.json" -- sh -c "$cmd"
check "learn: the run was enforced as usual (the write, the read, the host refused)" \
  bash -c 'grep -q "deny file-write $1/.cache/x/obj" <<<"$0" && grep -q "deny network-outbound 127.0.0.1:$2" <<<"$0"' "$OUT" "$HOME" "$port"
check "learn: a settings file was written" [ -s "$SCRATCH/learned.json" ]
check "learn: it allows the cache directory, the read and the host, nothing else" python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["sandbox"]
assert s["filesystem"]["allowWrite"] == [sys.argv[2] + "/.cache/x"], s
assert s["filesystem"]["allowRead"] == [sys.argv[2] + "/app/secret.conf"], s
assert s["network"]["allowedDomains"] == ["127.0.0.1:" + sys.argv[3]], s' "$SCRATCH/learned.json" "$HOME" "$port"
check "learn: the protected hook is named as not suggested" grep -q "not suggested: $WS/.git/hooks" <<<"$OUT"

wb run --settings "$SCRATCH/base.json" --settings "$SCRATCH/learned.json" -- sh -c "$work"
check "applied after the user's settings: the same command runs with no violation" \
  bash -c '[ "$1" -eq 0 ] && ! grep -q "sandbox_violations" <<<"$0" && grep -q config-value <<<"$0" && grep -q "^200" <<<"$0"' "$OUT" "$RC"
check "and the hook is still protected" [ ! -e "$WS/.git/hooks/pre-commit" ]

# Printed on stderr without a file; a credential is never suggested.
mkdir -p "$HOME/.ssh" && echo KEY > "$HOME/.ssh/id_test"
wb run --learn -- sh -c 'cat "$HOME/.ssh/id_test"; echo x > "$HOME/.bashrc"; true'
check "learn: printed when no file is named" grep -q "learn:" <<<"$OUT"
check "learn: never a credential or a protected home file" \
  bash -c '! grep -q "\"allowRead\"" <<<"$0" && ! grep -q "\"allowWrite\"" <<<"$0" && grep -q "not suggested: $1/.ssh/id_test" <<<"$0"' "$OUT" "$HOME"
# A refused lookup (the sandbox's resolver) is a host to allow, like a refused connection; a
# name on the deny list is not.
printf '{"sandbox":{"enabled":true,"network":{"deniedDomains":["evil.example.test"]}}}' > "$SCRATCH/dns.json"
wb run --settings "$SCRATCH/dns.json" --learn="$SCRATCH/dns-learned.json" -- sh -c 'getent hosts api.example.test; getent hosts evil.example.test; true'
check "learn: a refused lookup is reported" grep -q "deny dns api.example.test" <<<"$OUT"
check "learn: and proposed as a host" python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["sandbox"]["network"]["allowedDomains"]; assert d == ["api.example.test"], d' "$SCRATCH/dns-learned.json"
check "learn: a denied name is not proposed" grep -q "not suggested: evil.example.test" <<<"$OUT"
finish
