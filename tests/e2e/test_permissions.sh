#!/usr/bin/env bash
# Permission rules: deny rules always win (any subcommand, through env prefixes and wrappers),
# excludedCommands run unsandboxed, --dangerously-disable-sandbox only when allowed, ask rules need
# approval, --network-only keeps the network rules with the filesystem open.
. "$(dirname "$0")/lib.sh"

printf '{"sandbox":{"enabled":true,"excludedCommands":["mytool:*"]},"permissions":{"deny":["Bash(rm:*)"],"ask":["Bash(git push:*)"]}}' > "$SCRATCH/p.json"
for cmd in 'rm -f victim' 'echo hi && rm -f victim' 'FOO=1 rm -f victim' 'timeout 5 rm -f victim' 'true; rm -f victim' 'echo $(rm -f victim)'; do
  touch "$WS/victim"
  wb run --settings "$SCRATCH/p.json" -c "$cmd"
  check "deny: '$cmd' exits 125" [ "$RC" -eq 125 ]
  check "deny: '$cmd' names the rule" grep -q 'denied by rule Bash(rm:\*)' <<<"$OUT"
  check "deny: '$cmd' left victim in place" [ -e "$WS/victim" ]
done
touch "$WS/victim"
wb run --settings "$SCRATCH/p.json" -- rm -f victim
check "deny: argv form exits 125" [ "$RC" -eq 125 ]
check "deny: argv form left victim in place" [ -e "$WS/victim" ]

mkdir -p "$SCRATCH/bin"; printf '#!/bin/sh\necho mytool "$@"\n' > "$SCRATCH/bin/mytool"; chmod +x "$SCRATCH/bin/mytool"
export PATH="$SCRATCH/bin:$PATH"
wb run --settings "$SCRATCH/p.json" -c 'mytool x && touch ~/m && env > ~/m.env'
check "excluded without approval: exit 125 (unsandboxed and no allow rule: decide says ask)" [ "$RC" -eq 125 ]
check "excluded without approval: the command did not run" [ ! -e "$HOME/m" ]
check "excluded without approval: the message says approval is needed" grep -q "approval" <<<"$OUT"
wb run --settings "$SCRATCH/p.json" --approve -c 'mytool x && touch ~/m && env > ~/m.env'
check "excluded: the command ran" grep -q "mytool x" <<<"$OUT"
check "excluded: it ran unsandboxed (the file in home appeared)" [ -e "$HOME/m" ]
check "excluded: no sandbox environment (TMPDIR of wavebox, proxy variables)" bash -c '! grep -qE "^(HTTP_PROXY|HTTPS_PROXY|ALL_PROXY)=|wavebox-[0-9]+/tmp" "$0"' "$HOME/m.env"
wb run --settings "$SCRATCH/p.json" -c 'echo hi && touch ~/m2'
check "not excluded: stays sandboxed (home write refused)" [ ! -e "$HOME/m2" ]

wb run --settings "$SCRATCH/p.json" -- git push
check "ask rule without approval: exit 125" [ "$RC" -eq 125 ]
check "ask rule: the message says approval is needed" grep -q "approval" <<<"$OUT"
git -C "$WS" init -q
wb run --settings "$SCRATCH/p.json" --approve -- git push
check "ask rule with --approve: the command ran (git's own error, not 125)" [ "$RC" -ne 125 ]

printf '{"sandbox":{"enabled":true,"allowUnsandboxedCommands":false}}' > "$SCRATCH/nounsb.json"
wb run --settings "$SCRATCH/nounsb.json" --dangerously-disable-sandbox -- sh -c 'touch ~/d1'
check "disable refused: the command is sandboxed" [ ! -e "$HOME/d1" ]
check "disable refused: one warning says it was ignored" [ "$(grep -c 'dangerously-disable-sandbox is ignored' <<<"$OUT")" -eq 1 ]
printf '{"sandbox":{"enabled":true}}' > "$SCRATCH/on.json"
wb run --settings "$SCRATCH/on.json" --dangerously-disable-sandbox -- sh -c 'touch ~/d2'
check "disable allowed, no approval: exit 125, nothing ran" bash -c '[ "$0" -eq 125 ] && [ ! -e "$1" ]' "$RC" "$HOME/d2"
wb run --settings "$SCRATCH/on.json" --dangerously-disable-sandbox --approve -- sh -c 'touch ~/d2'
check "disable allowed: the command ran unsandboxed" [ -e "$HOME/d2" ]
printf '{"sandbox":{"enabled":true},"permissions":{"allow":["Bash(touch:*)"]}}' > "$SCRATCH/allowtouch.json"
wb run --settings "$SCRATCH/allowtouch.json" --dangerously-disable-sandbox -- touch ~/d3
check "disable allowed, an allow rule covers it: runs without --approve" [ -e "$HOME/d3" ]
# Deny rules match the spellings that run the same program.
for cmd in 'command rm -f victim' 'exec rm -f victim' '/bin/rm -f victim' '\rm -f victim' '"rm" -f victim'; do
  touch "$WS/victim"
  wb run --settings "$SCRATCH/p.json" -c "$cmd"
  check "deny: '$cmd' exits 125, victim kept" bash -c '[ "$0" -eq 125 ] && [ -e "$1" ]' "$RC" "$WS/victim"
done
# A directory as standard input would reach past the mounts (openat(0, "..")).
wb run --settings "$SCRATCH/on.json" -- sh -c 'touch ran-with-dir-stdin' < "$HOME"
check "a directory as stdin: exit 125, the command did not run" bash -c '[ "$0" -eq 125 ] && [ ! -e "$1" ]' "$RC" "$WS/ran-with-dir-stdin"

# --network-only: files open, network still closed.
port=$((20000 + RANDOM % 20000))
python3 -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1 &
srv=$!
for i in $(seq 1 50); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
wb run --settings "$SCRATCH/on.json" --network-only -- sh -c "touch ~/netonly; python3 -c \"import urllib.request as u; u.urlopen('http://127.0.0.1:$port/', timeout=3)\""
kill $srv 2>/dev/null; wait $srv 2>/dev/null
check "--network-only: writing in home works" [ -e "$HOME/netonly" ]
check "--network-only: the host's server is not reachable" [ "$RC" -ne 0 ]

wb decide --settings "$SCRATCH/p.json" -- 'echo "a && rm x" | grep a'
check "decide: quotes hide operators" grep -q '"subcommands":\["echo \\"a && rm x\\"","grep a"\]' <<<"$OUT"
check "decide: allow when sandboxed" grep -q '"decision":"allow"' <<<"$OUT"
wb decide --settings "$SCRATCH/p.json" -- 'mytool a; ls'
check "decide: excluded is unsandboxed and asks" grep -q '"decision":"ask".*"sandboxed":false' <<<"$OUT"
printf '{"sandbox":' > "$SCRATCH/broken.json"
wb decide --settings "$SCRATCH/broken.json" -- ls
check "decide: bad settings exit 125" [ "$RC" -eq 125 ]
finish
