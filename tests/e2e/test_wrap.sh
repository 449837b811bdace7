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
finish
