#!/usr/bin/env bash
# `wavebox wrap` prints the invocation `wavebox run` executes: the same id for the same request,
# another id when the policy differs, and the printed options are those bwrap gets.
. "$(dirname "$0")/lib.sh"
printf '{"sandbox":{"enabled":true,"filesystem":{"denyRead":["%s/secret"]}}}' "$HOME" > "$SCRATCH/s.json"
printf '{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["%s/out"]}}}' "$HOME" > "$SCRATCH/t.json"
mkdir -p "$HOME/out"; echo s > "$HOME/secret"

id_of() { grep -oE 'invocation [0-9a-f]{16}' <<<"$1" | head -1 | cut -d' ' -f2; }
wrap_id() { local text; text=$(cd "$WS" && "$WAVEBOX" wrap "$@" 2>/dev/null </dev/null); id_of "$text"; }
run_id() { local text; text=$(cd "$WS" && "$WAVEBOX" run -v "$@" 2>&1 >/dev/null </dev/null); id_of "$text"; }

w=$(wrap_id --settings "$SCRATCH/s.json" -- ls -l)
r=$(run_id --settings "$SCRATCH/s.json" -- ls -l)
check "wrap names an invocation" [ -n "$w" ]
check "run -v names the invocation it executes" [ -n "$r" ]
check "wrap and run: the same invocation ($w, $r)" [ "$w" = "$r" ]
w2=$(wrap_id --settings "$SCRATCH/t.json" -- ls -l)
r2=$(run_id --settings "$SCRATCH/t.json" -- ls -l)
check "another policy, another invocation" [ "$w2" != "$w" ]
check "and run agrees again" [ "$w2" = "$r2" ]
w3=$(wrap_id --settings "$SCRATCH/s.json" -- ls -la)
check "another command, another invocation" [ "$w3" != "$w" ]
text=$(cd "$WS" && "$WAVEBOX" wrap --settings "$SCRATCH/s.json" -- ls 2>/dev/null </dev/null)
check "the mask of the denied file is in the printed mounts" grep -q "$HOME/secret" <<<"$text"
check "bwrap's own command line is the launch's" grep -qE -- '--args 3 -- .*wavebox-shim 5 7 6 8' <<<"$text"

# Planning for a Mac, here: from --cwd, HOME and the settings alone; paths only as parameters.
mac=$(HOME=/Users/alice "$WAVEBOX" wrap --platform macos --json --cwd "/Users/alice/my project" -- make -j4 2>/dev/null </dev/null)
check "wrap --platform macos --json prints the invocation" python3 -c '
import json, sys
j = json.loads(sys.argv[1])
assert set(j) == {"program", "args", "profile", "params", "env"}, j.keys()
assert j["program"] == "/usr/bin/sandbox-exec"
assert j["args"][0] == "-p" and j["args"][1] == j["profile"]
assert j["args"][-5:-3] == ["__sandbox-helper", "3"] and j["args"][-3].endswith("/make")
assert j["args"][-7] == "--", "no -- before the helper and the command"
assert j["args"][-2:] == ["make", "-j4"]
assert "/Users" not in j["profile"], "a path in the profile text"
assert j["params"]["WRITABLE_0"] == "/Users/alice/my project"
assert any(v == "/Users/alice/.ssh" for v in j["params"].values())
assert j["env"]["WAVEBOX_SANDBOX"] == "1" and "127.0.0.1" in j["env"]["HTTPS_PROXY"]
assert j["env"]["TMPDIR"].startswith("/Users/alice/Library/Caches/wavebox/caches/")
assert "(deny default (with message \"wavebox_" in j["profile"]
' "$mac"
text=$(HOME=/Users/alice "$WAVEBOX" wrap --platform macos --cwd /Users/alice/p -- true 2>/dev/null </dev/null)
check "and as text: sandbox-exec's command line" grep -q "^/usr/bin/sandbox-exec -p '(version 1)" <<<"$text"
# wrap scans as a run would: a repository inside the workspace is guarded in what it prints
# (planned here for paths that exist here; nothing of a Mac's is made on this machine).
# (Not under /tmp, which a Mac names /private/tmp.)
macws=$(mktemp -d /dev/shm/wavebox-wrap.XXXXXX)
mkdir -p "$macws/vendored"; git init -q "$macws/vendored"
text=$(cd "$macws" && "$WAVEBOX" wrap --platform macos -- true 2>/dev/null </dev/null)
check "wrap --platform macos guards a nested repository as a run would" grep -q "vendored/.git/hooks" <<<"$text"
check "and makes no Mac state here" [ ! -e "$HOME/Library" ]
rm -rf "$macws"
check "--json is for --platform macos" bash -c '! (cd "$1" && "$0" wrap --json -- true >/dev/null 2>&1)' "$WAVEBOX" "$WS"
finish
