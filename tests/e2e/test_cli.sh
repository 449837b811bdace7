#!/usr/bin/env bash
# The command line behaves like env, timeout and sudo: options stop at the command's first word;
# loopback inside is the sandbox's own (NO_PROXY); an ask rule never blocks a caller without a
# terminal; a limit that ends the command says so; doctor's status gates CI.
. "$(dirname "$0")/lib.sh"
printf 'foo\nbar\n' > "$WS/f"
wb run grep -v foo f
check "options stop at the first word: grep gets its own -v" [ "$OUT" = "bar" ]
wb run sh -c 'echo "$1"' x -v --cwd
check "later words are the command's ($OUT)" [ "$OUT" = "-v" ]
mkdir -p "$WS/sub"
wb run --cwd sub pwd
check "options before the command still count" [ "$OUT" = "$WS/sub" ]
wb run --cwd=sub -- pwd
check "--opt=value and -- as before" [ "$OUT" = "$WS/sub" ]

if command -v python3 >/dev/null; then
  wb run -- python3 -c '
import http.server, threading, urllib.request, os
srv = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
threading.Thread(target=srv.serve_forever, daemon=True).start()
print("proxy set:", bool(os.environ.get("http_proxy")))
r = urllib.request.urlopen(f"http://127.0.0.1:{srv.server_port}/f", timeout=10)
print("status", r.status)
r = urllib.request.urlopen(f"http://localhost:{srv.server_port}/f", timeout=10)
print("status", r.status)'
  check "a loopback server inside is reached through the proxy variables (NO_PROXY)" \
    bash -c '[ "$(grep -c "status 200" <<<"$0")" -eq 2 ] && grep -q "proxy set: True" <<<"$0"' "$OUT"
fi

printf '{"sandbox":{"enabled":true},"permissions":{"ask":["Bash(touch:*)"]}}' > "$SCRATCH/ask.json"
start=$(date +%s)
wb run --settings "$SCRATCH/ask.json" -- touch asked </dev/null
check "an ask rule without a terminal: exit 125 at once" [ "$RC" -eq 125 ] && [ $(( $(date +%s) - start )) -lt 10 ]
check "it names the rule and --approve" bash -c 'grep -q "touch" <<<"$0" && grep -q -- "--approve" <<<"$0"' "$OUT"
check "and the command did not run" [ ! -e "$WS/asked" ]
wb run --settings "$SCRATCH/ask.json" --no-prompt -- touch asked
check "--no-prompt: exit 125" [ "$RC" -eq 125 ]
wb run --settings "$SCRATCH/ask.json" --approve -- touch asked
check "--approve runs it" [ "$RC" -eq 0 ] && [ -e "$WS/asked" ]

# A signal that comes while the sandbox is still starting reaches the command (nothing waits
# out its sleep), at several moments.
if command -v python3 >/dev/null; then
  for delay in 0.002 0.005 0.01 0.03; do
    r=$(cd "$WS" && python3 - "$WAVEBOX" "$delay" <<'PY'
import subprocess, signal, sys, time
p = subprocess.Popen([sys.argv[1], "run", "--", "sh", "-c", "sleep 29.4417"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(float(sys.argv[2]))
t = time.time()
p.send_signal(signal.SIGTERM)
try:
    p.wait(timeout=8)
    print("ended", round(time.time() - t, 1))
except subprocess.TimeoutExpired:
    p.kill(); p.wait(); print("still running")
PY
)
    check "SIGTERM after ${delay}s of start-up ends the run ($r)" grep -q "^ended" <<<"$r"
  done
  sleep 0.3
  check "no command of those runs is left" bash -c '! ps -eo args | grep -q "^sleep 29.4417"'
fi

printf '{"sandbox":{"enabled":true,"resources":{"timeoutSeconds":0.5}}}' > "$SCRATCH/to.json"
wb run --settings "$SCRATCH/to.json" -- sleep 5
check "a timeout: exit 124" [ "$RC" -eq 124 ]
check "a timeout says so on stderr" grep -q "wavebox: .*timeoutSeconds" <<<"$OUT"
wb run -- sh -c 'exit 124'
check "a command's own 124 is not called a timeout" bash -c '[ "$1" -eq 124 ] && ! grep -q timeoutSeconds <<<"$0"' "$OUT" "$RC"

printf '{"sandbox":{"enabled":true,"bwrapPath":"/nonexistent/bwrap"}}' > "$SCRATCH/nobwrap.json"
wb doctor --settings "$SCRATCH/nobwrap.json"
check "doctor exits non-zero when no sandbox can run" [ "$RC" -ne 0 ]
check "and says what is missing" grep -qi "bubblewrap" <<<"$OUT"
wb doctor
check "doctor exits 0 where the sandbox works" [ "$RC" -eq 0 ]
for sub in run wrap decide doctor serve connect; do
  h=$("$WAVEBOX" "$sub" --help 2>&1)
  check "$sub --help shows an example and the exit statuses" bash -c 'grep -q "^Example" <<<"$0" && grep -q "^Exit status" <<<"$0"' "$h"
done
printf '{"sandbox":{"enabled":true,"network":{"allowedDomains":["x.test"]},"bogus":1}}' > "$SCRATCH/ex.json"
wb doctor --settings "$SCRATCH/ex.json"
check "doctor --settings explains each key from the schema" grep -q "Hosts the proxy lets through" <<<"$OUT"
check "and names a key it does not know" bash -c 'grep -q "sandbox.bogus" <<<"$0" && grep -q "not a key wavebox knows" <<<"$0"' "$OUT"
finish
