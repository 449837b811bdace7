#!/usr/bin/env bash
# Settings as people write them (tests/data/settings/: modelled on Anthropic's examples, Claude
# Code's /sandbox panel, users' dotfiles, srt files, common mistakes): each is applied as its
# author meant, with the policy its .expect.json names, or refused naming the file and the key.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
DATA="${WAVEBOX_SRC:?}/tests/data/settings"
for f in "$DATA"/*.json; do
  case "$f" in *.expect.json) continue ;; esac
  name=$(basename "$f" .json)
  out=$(WS="$WS" HOME="$HOME" python3 - "$WAVEBOX" "$f" "$DATA/$name.expect.json" <<'PY' 2>&1
import json, os, subprocess, sys
wb, settings, expect_file = sys.argv[1:4]
exp = json.load(open(expect_file))
ws, home = os.environ["WS"], os.environ["HOME"]
def sub(v):
    if isinstance(v, str): return v.replace("{cwd}", ws).replace("{home}", home)
    if isinstance(v, list): return [sub(x) for x in v]
    if isinstance(v, dict): return {k: sub(x) for k, x in v.items()}
    return v
exp = sub(exp)
problems = []
p = subprocess.run([wb, "doctor", "--json", "--settings", settings], cwd=ws, capture_output=True, text=True, timeout=60)
if exp["exit"] == 125:
    if p.returncode != 125: problems.append(f"exit {p.returncode}, wanted 125")
    for s in exp.get("stderr", []):
        if s not in p.stderr: problems.append(f"stderr lacks {s!r}: {p.stderr.strip()}")
else:
    if p.returncode not in (0, 1): problems.append(f"exit {p.returncode}: {p.stderr.strip()}")
    else:
        j = json.loads(p.stdout)
        pol = j["policy"]
        for k, v in exp.get("policy", {}).items():
            if pol.get(k) != v: problems.append(f"policy.{k} = {pol.get(k)!r}, wanted {v!r}")
        fs = pol.get("filesystem", {})
        for key, where in (("writable", fs.get("writable", [])), ("denyRead", fs.get("denyRead", [])),
                           ("denyWrite", fs.get("denyWrite", [])),
                           ("allowedDomains", pol.get("network", {}).get("allowedDomains", []))):
            for v in exp.get(key, []):
                if v not in where: problems.append(f"{key} lacks {v!r}: {where}")
        if exp.get("no_warnings") and (j.get("warnings") or "warning" in p.stderr):
            problems.append(f"warnings: {j.get('warnings')} {p.stderr.strip()}")
    for d in exp.get("decide", []):
        q = subprocess.run([wb, "decide", "--settings", settings, "--", d["command"]], cwd=ws, capture_output=True,
                           text=True, timeout=60)
        got = json.loads(q.stdout)
        for k in ("sandboxed", "decision"):
            if k in d and got.get(k) != d[k]: problems.append(f"decide {d['command']!r}: {k} = {got.get(k)!r}")
for pr in problems: print("  " + pr)
sys.exit(1 if problems else 0)
PY
)
  rc=$?
  [ $rc -eq 0 ] || echo "$out"
  check "$name: applied as meant" [ $rc -eq 0 ]
done
# The CLI: a --settings file without a sandbox section runs the command as without wavebox.
wb run --settings "$DATA/permissions-only.json" -- sh -c 'echo "sandbox=${WAVEBOX_SANDBOX:-0}"; touch /tmp/wb-compat-'$$
check "permissions only, named: the sandbox is off" bash -c 'grep -q sandbox=0 <<<"$0" && [ -e /tmp/wb-compat-$1 ]' "$OUT" $$
rm -f /tmp/wb-compat-$$
# Discovered, the same file leaves the built-in profile in force.
mkdir -p "$WS/.claude"; cp "$DATA/permissions-only.json" "$WS/.claude/settings.json"
wb run -- sh -c 'echo "sandbox=${WAVEBOX_SANDBOX:-0}"'
check "permissions only, discovered: the built-in profile" grep -q sandbox=1 <<<"$OUT"
rm -rf "$WS/.claude"
# Credentials: a denied variable is gone, a masked one is a placeholder, whatever passes it.
printf '{"sandbox":{"enabled":true,"passEnvironment":["*"],"credentials":{"envVars":[{"name":"MY_DEPLOY_KEY","mode":"deny"},{"name":"MY_NPM_AUTH","mode":"mask"}]}}}' > "$SCRATCH/cred.json"
MY_DEPLOY_KEY=s3cret-a MY_NPM_AUTH=s3cret-b wb run --settings "$SCRATCH/cred.json" -- sh -c 'echo "a=${MY_DEPLOY_KEY:-unset} b=$MY_NPM_AUTH"'
check "credentials: denied and masked variables never reach the command" bash -c 'grep -q "a=unset b=wavebox-masked-credential" <<<"$0" && ! grep -q s3cret <<<"$0"' "$OUT"
echo "token-value" > "$HOME/.my-token"
printf '{"sandbox":{"enabled":true,"credentials":{"files":[{"path":"~/.my-token","mode":"mask"}]}}}' > "$SCRATCH/credf.json"
wb run --settings "$SCRATCH/credf.json" -- cat "$HOME/.my-token"
check "credentials: a masked file is unreadable" bash -c '! grep -q token-value <<<"$0"' "$OUT"
# Quiet by default: a writable path inside the workspace not made yet is no news on every run.
printf '{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["%s/build/out"]}}}' "$WS" > "$SCRATCH/quiet.json"
wb run --settings "$SCRATCH/quiet.json" -- true
check "an allowWrite path inside the workspace, not there yet: nothing said" [ -z "$OUT" ]
finish
