"""serve for agent hosts: signals other than SIGKILL reach the command, the effective policy and
the settings files it came from, a doctor method, and what wavebox says during a command sent to
the client. Driven by wbclient, checked on the host."""
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from wbclient import Server, check, checks, out  # noqa: E402

WAVEBOX = os.environ["WAVEBOX"]


def json_key(id):
    return json.dumps(id)


def main():
    base = tempfile.mkdtemp(prefix="wavebox-serve-host-")
    home = os.path.join(base, "home")
    ws = os.path.join(base, "ws")
    os.makedirs(home)
    os.makedirs(ws)
    settings = os.path.join(base, "s.json")
    open(settings, "w").write('{"sandbox":{"enabled":true,"filesystem":{"denyRead":["%s/secret"]},'
                              '"network":{"allowedDomains":["example.com"]}}}' % base)
    srv = Server(WAVEBOX, env=dict(os.environ, HOME=home, PATH=f".:{ws}/sbin:/usr/local/bin:/usr/bin:/bin"), cwd=base)
    try:
        srv.result("initialize", {})
        srv.result("session/open", {"sessionId": "S", "cwd": ws, "settingsPaths": [settings]})

        # SIGTERM and SIGINT reach the command (its trap runs), which goes on to its own end.
        for sig in ("SIGTERM", "SIGINT"):
            pid = "sig-" + sig
            marker = os.path.join(ws, sig + ".got")
            i = srv.send("command/exec", {"sessionId": "S", "processId": pid, "commandLine":
                                          f"trap 'echo got > {marker}; exit 7' {sig[3:]}; echo ready; "
                                          "i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done",
                                          "streamOutput": True})
            end = time.time() + 30
            while time.time() < end and b"ready" not in srv.deltas(pid):
                time.sleep(0.05)
            sent = srv.call("command/exec/signal", {"sessionId": "S", "processId": pid, "signal": sig})
            r = srv.wait(i, 60)
            check(f"{sig}: accepted", "result" in sent)
            check(f"{sig}: the command's trap ran (its file is on the host)", os.path.exists(marker))
            check(f"{sig}: its exit status is the trap's (7)", r.get("result", {}).get("exitCode") == 7)
        bad = srv.call("command/exec/signal", {"sessionId": "S", "processId": "nope", "signal": "SIGTERM"})
        check("a signal to an unknown process: -32005", bad.get("error", {}).get("code") == -32005)
        i = srv.send("command/exec", {"sessionId": "S", "processId": "x1", "commandLine": "sleep 30"})
        bad = srv.call("command/exec/signal", {"sessionId": "S", "processId": "x1", "signal": "SIGSEGVX"})
        check("an unknown signal name: -32602", bad.get("error", {}).get("code") == -32602)
        srv.call("command/exec/terminate", {"processId": "x1"})
        srv.wait(i, 60)

        # Refusals pushed while the command runs (it waits for the test to see them), typed as in
        # the answer; ignoreViolations applies to them too.
        srt = os.path.join(base, "ign.json")
        open(srt, "w").write('{"sandbox":{"enabled":true,"ignoreViolations":{"*":["/ignored-"]}}}')
        srv.result("session/open", {"sessionId": "T", "cwd": ws, "settingsPaths": [srt]})
        go = os.path.join(ws, "go")
        i = srv.send("command/exec", {"sessionId": "T", "processId": "v1", "commandLine":
                                      "touch /ignored-x /pushed-x 2>/dev/null; n=0; "
                                      "while [ ! -e go ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done"})
        end = time.time() + 30
        pushed = []
        while time.time() < end and not pushed:
            with srv.lock:
                pushed = [n["params"] for n in srv.notes if n.get("method") == "command/exec/violation"
                          and n["params"]["processId"] == "v1"]
            time.sleep(0.05)
        with srv.lock:
            answered = json_key(i) in srv.responses
        check("a refusal is pushed while the command still runs", bool(pushed) and not answered)
        check("... typed as in the answer", bool(pushed) and pushed[0]["violation"].get("operation") == "file-write"
              and pushed[0]["violation"].get("target") == "/pushed-x" and pushed[0]["violation"].get("code") == "policy")
        open(go, "w").close()
        r = srv.wait(i, 60)
        with srv.lock:
            pushed = [n["params"]["violation"]["line"] for n in srv.notes if n.get("method") == "command/exec/violation"
                      and n["params"]["processId"] == "v1"]
        check("... an ignored line is not pushed", not any("/ignored-" in l for l in pushed))
        check("... and the answer lists the same", [v["line"] for v in r["result"]["violations"]] == pushed)
        os.unlink(go)

        # The server's PATH stays guarded whatever PATH a client gives a command.
        srv.result("command/exec", {"sessionId": "S", "commandLine": "mkdir -p sbin; echo x > sbin/ls",
                                    "env": {"PATH": "/usr/bin:/bin"}})
        check("a client's env PATH does not unguard the server's PATH", not os.path.exists(os.path.join(ws, "sbin", "ls")))

        # The effective policy and where it came from.
        pol = srv.result("session/policy", {"sessionId": "S"})
        check("session/policy: the settings file it came from", settings in pol.get("settingsFiles", []))
        check("session/policy: the workspace is writable", ws in pol["policy"]["filesystem"]["writable"])
        check("session/policy: denyRead as planned", os.path.join(base, "secret") in pol["policy"]["filesystem"]["denyRead"])
        check("session/policy: the allowlist", pol["policy"]["network"]["allowedDomains"] == ["example.com"])
        check("session/policy: its policyId", bool(pol.get("policyId")))
        doc = srv.result("doctor", {})
        check("doctor: the platform's facts", "sandboxUsable" in doc and "bwrap" in doc)
        doc = srv.result("doctor", {"sessionId": "S"})
        check("doctor with a session: its policy too", doc.get("session", {}).get("policyId") == pol["policyId"])

        # A warning said while a command is planned reaches the client (the relative PATH entry).
        r = srv.result("command/exec", {"sessionId": "S", "processId": "w1", "commandLine": "true"})
        with srv.lock:
            msgs = [n["params"] for n in srv.notes if n.get("method") == "command/exec/message"]
        check("warnings reach the client as command/exec/message",
              any(m["processId"] == "w1" and m["level"] == "warning" and "relative entry" in m["message"]
                  for m in msgs))
    finally:
        srv.close(20)
        shutil.rmtree(base, ignore_errors=True)  # nothing of the test left in /tmp
    print(f"{checks[0] - checks[1]} passed, {checks[1]} failed")
    return 1 if checks[1] else 0


if __name__ == "__main__":
    sys.exit(main())
