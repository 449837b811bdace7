#!/usr/bin/env bash
# sandbox.auditLog / --audit-log: one JSON line per run, for every outcome, appended safely, and
# never something a sandboxed command can forge or erase. Checked on the host.
. "$(dirname "$0")/lib.sh"
log="$SCRATCH/audit.jsonl"
field() {  # field FILE LINE EXPR: a python expression over the record `r` (exported for bash -c)
  python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).read().splitlines()[int(sys.argv[2])]); v=eval(sys.argv[3]); print(*v) if isinstance(v, tuple) else print(v)' "$@"
}
export -f field

wb run --audit-log "$log" -- sh -c 'echo hi; echo x > "$HOME/outside"; exit 3'
check "--audit-log: one line for the run" [ "$(wc -l < "$log")" -eq 1 ]
check "the record: exit status, sandboxed, cwd, command" \
  bash -c '[ "$(field "$0" 0 "r[\"exitCode\"], r[\"sandboxed\"], r[\"cwd\"] == \"$1\", r[\"command\"][0]")" = "3 True True sh" ]' "$log" "$WS"
check "the record: the refused write is listed" \
  bash -c 'field "$0" 0 "r[\"violations\"]" | grep -q "deny file-write $1/outside"' "$log" "$HOME"
check "the record: a time and a duration" bash -c 'field "$0" 0 "r[\"time\"].endswith(\"Z\") and r[\"durationMs\"] > 0" | grep -qx True' "$log"

# From the settings (relative to the settings file), appended run after run; a deny rule too.
mkdir -p "$SCRATCH/conf"
printf '{"sandbox":{"enabled":true,"auditLog":"logs/audit.jsonl"},"permissions":{"deny":["Bash(rm:*)"]}}' > "$SCRATCH/conf/s.json"
mkdir -p "$SCRATCH/conf/logs"
slog="$SCRATCH/conf/logs/audit.jsonl"
wb run --settings "$SCRATCH/conf/s.json" -- true
wb run --settings "$SCRATCH/conf/s.json" -- rm -rf /nonexistent-x
check "settings: the denied command was not run (125)" [ "$RC" -eq 125 ]
check "settings: two lines appended" [ "$(wc -l < "$slog")" -eq 2 ]
check "settings: the deny is recorded with its reason" \
  bash -c '[ "$(field "$0" 1 "r[\"decision\"], r[\"exitCode\"], r[\"error\"] is not None")" = "deny 125 True" ]' "$slog"
check "the log is private (0600)" [ "$(stat -c %a "$slog")" = 600 ]

# An audit log inside the workspace: the command can neither forge, erase nor redirect it.
printf '{"sandbox":{"enabled":true,"auditLog":"%s"}}' "$WS/audit.jsonl" > "$SCRATCH/ws-audit.json"
wb run --settings "$SCRATCH/ws-audit.json" -- true
for _ in 1 2; do
  wb run --settings "$SCRATCH/ws-audit.json" -- sh -c 'echo "{\"forged\":1}" >> audit.jsonl; : > audit.jsonl; rm -f audit.jsonl; ln -s /etc/hostname audit.jsonl; mv audit.jsonl x; true'
done
check "in the workspace: still a regular file, not replaced by a link" bash -c '[ -f "$0" ] && [ ! -L "$0" ]' "$WS/audit.jsonl"
records_only() {  # every line a record of ours, and how many
  python3 -c 'import json,sys; ls=open(sys.argv[1]).read().splitlines(); print(len(ls) if all("time" in json.loads(l) for l in ls) else -1)' "$1"
}
export -f records_only
check "in the workspace: nothing forged, nothing erased (three records)" bash -c '[ "$(records_only "$0")" -eq 3 ]' "$WS/audit.jsonl"
rm -f "$WS/audit.jsonl" "$WS/x"
wb run --settings "$SCRATCH/ws-audit.json" -- sh -c 'echo "{\"forged\":1}" > audit.jsonl; true'
check "in the workspace, before the file exists: the command cannot create it first" \
  bash -c '[ "$(records_only "$0")" -eq 1 ]' "$WS/audit.jsonl"

# A project's own settings cannot make wavebox append to what a host tool runs: a shell's
# startup file, a script, a repository's hook (the command line is the command's, and a line
# holding $(...) would run in the user's next shell).
printf '#!/bin/sh\necho hi\n' > "$HOME/tool.sh"
echo "# my bashrc" > "$HOME/.bashrc"
mkdir -p "$WS/.claude"
"$WAVEBOX" trust "$WS" 2>/dev/null  # else a project's auditLog is ignored outright (test_trust.sh)
for target in "$HOME/.bashrc" "$HOME/.profile" "$HOME/tool.sh" "$WS/.git/hooks/post-checkout"; do
  git -C "$WS" init -q 2>/dev/null
  cp "$target" "$SCRATCH/before" 2>/dev/null || rm -f "$SCRATCH/before"
  printf '{"sandbox":{"enabled":true,"auditLog":"%s"}}' "$target" > "$WS/.claude/settings.json"
  wb run -- sh -c 'echo "$(touch /tmp/wavebox-audit-pwned)"; true'
  if [ -e "$SCRATCH/before" ]; then
    check "audit: not appended to $(basename "$target") (it is not a log)" cmp -s "$target" "$SCRATCH/before"
  else
    check "audit: $(basename "$target") not created" [ ! -e "$target" ]
  fi
  check "audit: the refusal is said ($(basename "$target"))" grep -q "audit log.*not written" <<<"$OUT"
done
rm -f "$WS/.claude/settings.json" /tmp/wavebox-audit-pwned
"$WAVEBOX" trust --revoke "$WS" 2>/dev/null

# What stands at the path is never followed or waited on: a link, a FIFO.
ln -s "$SCRATCH/elsewhere.jsonl" "$SCRATCH/link.jsonl"
wb run --audit-log "$SCRATCH/link.jsonl" -- true
check "a symbolic link at the path is not followed (warned about, exit status kept)" \
  bash -c '[ ! -e "$0" ] && [ "$1" -eq 0 ] && grep -q "audit log" <<<"$2"' "$SCRATCH/elsewhere.jsonl" "$RC" "$OUT"
mkfifo "$SCRATCH/fifo.jsonl"
start=$(date +%s)
timeout 20 "$WAVEBOX" run --audit-log "$SCRATCH/fifo.jsonl" -- true 2>/dev/null
rc=$?
check "a FIFO at the path does not hold the run" bash -c '[ "$0" -eq 0 ] && [ $(( $(date +%s) - $1 )) -lt 10 ]' "$rc" "$start"
finish
