#!/usr/bin/env bash
# --report-json: a report for every outcome; written through the path as a file (a link, a
# device, a FIFO are kept), never through what the sandboxed command planted there.
. "$(dirname "$0")/lib.sh"
R="$SCRATCH/r.json"

printf '{"sandbox":{"enabled":true},"permissions":{"deny":["Bash(rm:*)"]}}' > "$SCRATCH/deny.json"
rm -f "$R"; wb run --settings "$SCRATCH/deny.json" --report-json "$R" -- rm -f x
check "deny: a report" grep -q '"decision":"deny"' "$R"
check "deny: its exit status and error" bash -c 'grep -q "\"exitCode\":125" "$0" && grep -q "\"error\":\"" "$0"' "$R"
rm -f "$R"; wb run --report-json "$R" -- no-such-command-here
check "not found: a report with 127" grep -q '"exitCode":127' "$R"
printf '{"sandbox":{"enabled":tru' > "$SCRATCH/bad.json"
rm -f "$R"; wb run --settings "$SCRATCH/bad.json" --report-json "$R" -- true
check "bad settings: a report naming the file" bash -c 'grep -q "\"exitCode\":125" "$0" && grep -q "bad.json" "$0"' "$R"
printf '{"sandbox":{"enabled":true,"bwrapPath":"/nonexistent/bwrap","failIfUnavailable":true}}' > "$SCRATCH/un.json"
rm -f "$R"; wb run --settings "$SCRATCH/un.json" --report-json "$R" -- true
check "unavailable: a report" bash -c 'grep -q "\"exitCode\":125" "$0" && grep -q "unavailable" "$0"' "$R"

out=$(cd "$WS" && "$WAVEBOX" run --report-json - -- echo hi 2>/dev/null)
check "- is stdout" bash -c 'grep -qx hi <<<"$0" && grep -q "\"exitCode\":0" <<<"$0"' "$out"
out=$(cd "$WS" && "$WAVEBOX" run --report-json /dev/stdout -- true 2>/dev/null)
check "/dev/stdout is written, not replaced" grep -q '"exitCode":0' <<<"$out"
(cd "$WS" && "$WAVEBOX" run --report-json fd:3 -- true 3>"$SCRATCH/fd3.json" 2>/dev/null)
check "fd:N" grep -q '"exitCode":0' "$SCRATCH/fd3.json"

mkdir -p "$SCRATCH/reports"; echo old > "$SCRATCH/reports/real.json"
ln -s "$SCRATCH/reports/real.json" "$SCRATCH/link.json"
wb run --report-json "$SCRATCH/link.json" -- true
check "a link the caller made is written through" grep -q '"exitCode":0' "$SCRATCH/reports/real.json"
check "and stays a link" [ -L "$SCRATCH/link.json" ]

mkfifo "$SCRATCH/r.fifo"
(timeout 10 cat "$SCRATCH/r.fifo" > "$SCRATCH/fifo.got" &)
sleep 0.2
wb run --report-json "$SCRATCH/r.fifo" -- true
sleep 0.3
check "a FIFO with a reader gets the report" grep -q '"exitCode":0' "$SCRATCH/fifo.got"
mkfifo "$SCRATCH/lonely.fifo"
start=$(date +%s)
wb run --report-json "$SCRATCH/lonely.fifo" -- true
check "a FIFO nobody reads: no wait" [ $(( $(date +%s) - start )) -lt 5 ]
check "and a warning" grep -q "not written" <<<"$OUT"

# Attack: the command plants a link at the report's path (in the workspace) to a file the host
# runs; over two runs, the file stays as it was.
echo "# mine" > "$HOME/.bashrc"
for round in 1 2; do
  rm -f "$WS/report.json"
  wb run --report-json "$WS/report.json" -- sh -c "rm -f report.json; ln -s '$HOME/.bashrc' report.json; true"
  check "round $round: a planted link is not followed" [ "$(cat "$HOME/.bashrc")" = "# mine" ]
  check "round $round: and says so" grep -q "not written" <<<"$OUT"
done
# The command makes the report's directory a link (the path itself did not exist).
mkdir -p "$WS/out"
wb run --report-json "$WS/out/r.json" -- sh -c "rmdir out && ln -s '$HOME' out"
check "a directory turned into a link is not followed" [ ! -e "$HOME/r.json" ]
finish
