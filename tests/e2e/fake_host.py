#!/usr/bin/env python3
"""A small agent host following one host's documented hook contract, for test_hooks.sh.

fake_host.py HOST CWD COMMAND [--approve]
Reads the hook configuration from $HOME as the host would, runs the hooks with the host's JSON,
applies their answers as the host does, runs the resulting command with bash, and prints one
line: "ran RC", "blocked: REASON" or "declined: REASON". A refusal that names a command to run
instead is followed once, as an agent would (Codex and Cursor, whose hooks cannot rewrite).
--approve: the user approves when asked.
"""
import json
import os
import re
import subprocess
import sys

host, cwd, command = sys.argv[1], sys.argv[2], sys.argv[3]
approve = "--approve" in sys.argv[4:]
home = os.environ["HOME"]
INSTEAD = "run exactly this instead: "


def run_hook(cmd, payload):
    return subprocess.run(["sh", "-c", cmd], input=json.dumps(payload), cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def pre_tool_use(config, command):
    """Claude Code and Codex: PreToolUse, matcher a regex on the tool name."""
    try:
        cfg = json.load(open(config))
    except FileNotFoundError:
        cfg = {}
    tool_input = {"command": command, "description": "run it", "timeout": 120000}
    for group in cfg.get("hooks", {}).get("PreToolUse", []):
        if not re.search(group.get("matcher", ""), "Bash"):
            continue
        for h in group.get("hooks", []):
            if h.get("type") != "command":
                continue
            payload = {"session_id": "s1", "cwd": cwd, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "permission_mode": "default", "tool_use_id": "t1", "tool_input": tool_input}
            if host == "codex":
                payload.update({"turn_id": "1", "model": "m"})
            r = run_hook(h["command"], payload)
            if r.returncode == 2:
                return ("blocked", r.stderr.strip())
            if r.returncode != 0 or not r.stdout.strip():
                continue  # both hosts: a failed hook does not block
            o = json.loads(r.stdout).get("hookSpecificOutput", {})
            d = o.get("permissionDecision")
            if d == "deny":
                return ("blocked", o.get("permissionDecisionReason", ""))
            if host == "codex" and d not in ("allow", None):
                continue  # unsupported answers: the hook failed, the call goes on
            if "updatedInput" in o and (host == "claude" or d == "allow"):
                tool_input = o["updatedInput"]
            if d == "ask" and not approve:
                return ("declined", o.get("permissionDecisionReason", ""))
    return ("run", tool_input["command"])


def cursor(command):
    try:
        cfg = json.load(open(os.path.join(home, ".cursor/hooks.json")))
    except FileNotFoundError:
        cfg = {"version": 1}
    assert cfg.get("version") == 1
    for h in cfg.get("hooks", {}).get("beforeShellExecution", []):
        payload = {"conversation_id": "c1", "generation_id": "g1", "hook_event_name": "beforeShellExecution",
                   "workspace_roots": [cwd], "command": command, "cwd": cwd}
        r = run_hook(h["command"], payload)
        if r.returncode == 2:
            return ("blocked", r.stderr.strip())
        o = json.loads(r.stdout) if r.stdout.strip() else {}
        p = o.get("permission", "allow")
        if p == "deny":
            return ("blocked", o.get("agent_message", ""))
        if p == "ask" and not approve:
            return ("declined", o.get("user_message", ""))
    return ("run", command)


def opencode(command):
    plugin = os.path.join(home, ".config/opencode/plugins/wavebox.js")
    if not os.path.exists(plugin):
        return ("run", command)
    harness = """
const { pathToFileURL } = require("node:url");
const fs = require("node:fs");
const copy = process.argv[1] + ".mjs";
fs.copyFileSync(process.argv[1], copy);
import(pathToFileURL(copy).href).then(async (m) => {
  const make = Object.values(m).find((v) => typeof v === "function");
  const hooks = await make({ directory: process.argv[2] });
  const output = { args: { command: process.argv[3], description: "run it" } };
  try {
    await hooks["tool.execute.before"]({ tool: "bash", sessionID: "s", callID: "c" }, output);
    console.log(JSON.stringify({ run: output.args.command }));
  } catch (e) {
    console.log(JSON.stringify({ blocked: String(e.message) }));
  } finally { fs.unlinkSync(copy); }
});
"""
    r = subprocess.run(["node", "-e", harness, plugin, cwd, command], capture_output=True, text=True, timeout=120)
    o = json.loads(r.stdout)
    return ("run", o["run"]) if "run" in o else ("blocked", o["blocked"])


def decide(command):
    if host in ("claude", "codex"):
        return pre_tool_use(os.path.join(home, ".claude/settings.json" if host == "claude" else ".codex/hooks.json"),
                            command)
    return cursor(command) if host == "cursor" else opencode(command)


verdict = decide(command)
if verdict[0] == "blocked" and INSTEAD in verdict[1]:
    verdict = decide(verdict[1].split(INSTEAD, 1)[1])  # the agent follows the refusal once
if verdict[0] == "run":
    r = subprocess.run(["bash", "-c", verdict[1]], cwd=cwd, timeout=120)
    print(f"ran {r.returncode}")
else:
    print(f"{verdict[0]}: {verdict[1]}")
