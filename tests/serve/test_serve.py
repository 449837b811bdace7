"""End-to-end: `wavebox serve --stdio` driven by wbclient, checked on the host (files, what
loopback servers received, processes and descriptors of the server)."""
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from wbclient import Server, check, checks, children_of, out  # noqa: E402

WAVEBOX = os.environ["WAVEBOX"]


class Collector:
    """A loopback server keeping what each connection sends (bounded in time and size)."""

    def __init__(self):
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(16)
        self.s.settimeout(0.2)
        self.port = self.s.getsockname()[1]
        self.got = []
        self.stop = False
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        end = time.time() + 120
        while not self.stop and time.time() < end:
            try:
                c, _ = self.s.accept()
            except OSError:
                continue
            c.settimeout(2)
            data = b""
            try:
                while len(data) < 65536:
                    b = c.recv(4096)
                    if not b:
                        break
                    data += b
            except OSError:
                pass
            self.got.append(data.decode(errors="replace"))
            c.close()


def main():
    base = tempfile.mkdtemp(prefix="wavebox-serve-")
    home = os.path.join(base, "home")
    os.makedirs(home)
    env = dict(os.environ, HOME=home)
    ws = {n: os.path.join(base, "ws" + n) for n in "ABCDEFGH"}
    for d in ws.values():
        os.makedirs(d)
    secret = os.path.join(base, "secret")
    open(secret, "w").write("secret-x\n")
    col = {"A": Collector(), "B": Collector()}
    srv = Server(WAVEBOX, env=env, cwd=base)
    try:
        init = srv.result("initialize", {"clientInfo": {"name": "test"}})
        check("initialize names the server", init["serverInfo"]["name"] == "wavebox")

        def settings(name, extra=None):
            s = {"sandbox": {"enabled": True, "network": {"allowedDomains": [name.lower() + ".test"]}}}
            if name in col:
                s["sandbox"]["network"]["socksProxyPort"] = col[name].port
            if extra:
                s["sandbox"].setdefault("filesystem", {}).update(extra)
            return s

        sa = srv.result("session/open", {"sessionId": "A", "cwd": ws["A"], "settings": settings("A")})
        sb = srv.result("session/open", {"sessionId": "B", "cwd": ws["B"], "settings": settings("B")})
        check("sessions open with the ids asked for", sa["sessionId"] == "A" and sb["sessionId"] == "B")

        def script(me, other, refused):
            return (f"echo {me} > mine; echo {me} > {ws[other]}/theirs 2>/dev/null; sleep 0.3; "
                    f"exec 3<>/dev/tcp/127.0.0.1/1080 && printf 'hello-{me}' >&3; exec 3>&-; "
                    f"exec 4<>/dev/tcp/127.0.0.1/3128 && printf 'CONNECT {refused}:443 HTTP/1.1\\r\\n"
                    f"Host: {refused}:443\\r\\n\\r\\n' >&4 && read -t 5 line <&4; echo \"proxy: $line\"; cat {secret}")

        # Interleaved and concurrent: both sent before either ends.
        ia = srv.send("command/exec", {"sessionId": "A", "commandLine": script("A", "B", "b.test")})
        ib = srv.send("command/exec", {"sessionId": "B", "commandLine": script("B", "A", "a.test")})
        ra, rb = srv.wait(ia)["result"], srv.wait(ib)["result"]
        end = time.time() + 5  # the collectors get their bytes when the proxy closes upstream
        while time.time() < end and not (col["A"].got and col["B"].got):
            time.sleep(0.05)
        for me, r, refused, allowed in (("A", ra, "b.test", "a.test"), ("B", rb, "a.test", "b.test")):
            check(f"{me}: wrote in its own workspace", open(os.path.join(ws[me], "mine")).read() == me + "\n")
            check(f"{me}: nothing in the other's", not os.path.exists(os.path.join(ws["B" if me == "A" else "A"], "theirs")))
            check(f"{me}: its own proxy forwarded to its own server only", col[me].got == ["hello-" + me])
            check(f"{me}: the other's host refused by its own allowlist", "proxy: HTTP/1.1 403" in out(r))
            check(f"{me}: the refusal is in its own answer", any(refused in v["line"] for v in r["violations"]))
            check(f"{me}: its own host is not refused", not any(allowed in v["line"] for v in r["violations"]))
            check(f"{me}: sandboxed", r["sandboxed"] is True)

        # A session opened later writes in its own workspace.
        srv.result("session/open", {"sessionId": "C", "cwd": ws["C"], "settings": settings("C")})
        rc = srv.result("command/exec", {"sessionId": "C", "command": ["sh", "-c", "echo C > mine; pwd"]})
        check("C: a later session writes in its own workspace", open(os.path.join(ws["C"], "mine")).read() == "C\n")
        check("C: its commands run in its workspace", out(rc).strip() == ws["C"])

        # session/update of A: A's next commands cannot read the secret; B's still can.
        pid_a = sa["policyId"]
        up = srv.result("session/update", {"sessionId": "A", "settings": settings("A", {"denyRead": [secret]})})
        check("update: A has a new policy", up["policyId"] != pid_a)
        r1 = srv.result("command/exec", {"sessionId": "A", "command": ["cat", secret]})
        r2 = srv.result("command/exec", {"sessionId": "B", "command": ["cat", secret]})
        check("update: A's next command cannot read the file", "secret-x" not in out(r1) and r1["exitCode"] != 0)
        check("update: B's is untouched", "secret-x" in out(r2) and r2["policyId"] == sb["policyId"])

        # Ten commands with unchanged settings: one policy, one server.
        ids = [srv.result("command/exec", {"sessionId": "B", "command": ["true"]}) for _ in range(10)]
        check("ten commands: the same policyId", len({r["policyId"] for r in ids}) == 1)
        check("ten commands: the same server process", len({r["timings"]["serverPid"] for r in ids}) == 1)
        threads = {r["timings"]["proxyThread"] for r in ids} | {ra["timings"]["proxyThread"], rb["timings"]["proxyThread"]}
        tid = next(iter(threads))
        check("ten commands and both sessions: one proxy, never restarted (the same loop thread of the server)",
              len(threads) == 1 and tid > 0 and os.path.exists(f"/proc/{srv.p.pid}/task/{tid}"))

        # 50 concurrent commands over 5 sessions; nothing leaks. Each open session keeps at most
        # one sandbox prepared ahead (its keeper is the server's child); counted with the five
        # sessions closed again, everything is back where it was.
        def settled(want_fds, want_kids, limit=5.0):
            end = time.time() + limit
            while True:
                fds, kids = len(os.listdir(f"/proc/{srv.p.pid}/fd")), len(children_of(srv.p.pid))
                if (fds <= want_fds and kids <= want_kids) or time.time() > end:
                    return fds, kids
                time.sleep(0.05)
        time.sleep(0.5)
        fds_before, kids_before = len(os.listdir(f"/proc/{srv.p.pid}/fd")), len(children_of(srv.p.pid))
        check(f"idle: at most one prepared sandbox per open session ({kids_before} for 3)", kids_before <= 3)
        for n in "DEFGH":
            srv.result("session/open", {"sessionId": n, "cwd": ws[n], "settings": settings(n)})
        sent = {}
        for i in range(50):
            n = "DEFGH"[i % 5]
            sent[srv.send("command/exec", {"sessionId": n, "command": ["sh", "-c", f"echo {n}{i}; pwd; exit {i % 7}"]})] = (n, i)
        good = 0
        for id_, (n, i) in sent.items():
            r = srv.wait(id_, 120).get("result", {})
            if r.get("exitCode") == i % 7 and out(r).split() == [f"{n}{i}", ws[n]]:
                good += 1
        check(f"50 concurrent commands: outputs and exit codes right ({good}/50)", good == 50)
        fds_open, kids_open = settled(10**6, 8, 3.0)
        check(f"after them: at most one prepared sandbox per open session ({kids_open} for 8)", kids_open <= 8)
        for n in "DEFGH":
            srv.result("session/close", {"sessionId": n})
        fds_after, kids_after = settled(fds_before, kids_before)
        check(f"no descriptor leaked ({fds_before} -> {fds_after})", fds_after <= fds_before)
        check(f"no process left ({kids_before} -> {kids_after})", kids_after <= kids_before)
        for n in "DEFGH":
            srv.result("session/open", {"sessionId": n, "cwd": ws[n], "settings": settings(n)})

        # Streamed output and stdin written as it runs.
        i_cat = srv.send("command/exec", {"sessionId": "B", "processId": "cat1", "command": ["cat"], "streamOutput": True})
        time.sleep(0.3)
        w = srv.call("command/exec/write", {"processId": "cat1", "deltaBase64": base64.b64encode(b"hello\n").decode()})
        check("write answers", "result" in w)
        srv.result("command/exec/write", {"processId": "cat1", "closeStdin": True})
        r = srv.wait(i_cat)["result"]
        check("streamed: the bytes written came back as outputDelta", srv.deltas("cat1") == b"hello\n")
        check("streamed: cat ended at the end of its stdin", r["exitCode"] == 0 and "stdout" not in r)
        r = srv.result("command/exec", {"sessionId": "B", "command": ["cat"], "stdin": base64.b64encode(b"given").decode()})
        check("stdin given as bytes", out(r) == "given")

        # A terminal for an interactive command: isatty, the size asked, resized, typed input
        # (echoed, as a terminal does), and closing stdin is ^D.
        def shown(pid, text, secs=30):
            end = time.time() + secs
            while time.time() < end:
                if text in srv.deltas(pid):
                    return True
                time.sleep(0.05)
            return False
        i_tty = srv.send("command/exec", {"sessionId": "B", "processId": "tty1", "tty": True, "streamOutput": True,
                                          "size": {"rows": 30, "cols": 100}, "command": [
                                              "sh", "-c", "test -t 0 && test -t 1 && test -t 2 && echo isatty; stty size; "
                                              "read line; echo got=$line; stty size; exec cat"]})
        check("tty: the command's descriptors are a terminal", shown("tty1", b"isatty"))
        check("tty: of the size asked", shown("tty1", b"30 100"))
        srv.result("command/exec/resize", {"processId": "tty1", "size": {"rows": 40, "cols": 120}})
        srv.result("command/exec/write", {"processId": "tty1", "deltaBase64": base64.b64encode(b"hi\n").decode()})
        check("tty: typed input is read", shown("tty1", b"got=hi"))
        check("tty: resized", shown("tty1", b"40 120"))
        srv.result("command/exec/write", {"processId": "tty1", "closeStdin": True})
        r = srv.wait(i_tty, 30)["result"]
        check("tty: closing stdin is the end of file at the terminal", r.get("exitCode") == 0)
        e = srv.call("command/exec", {"sessionId": "B", "tty": True, "command": ["true"]})
        check("tty without streamed output is refused", e.get("error", {}).get("code") == -32602)
        e = srv.call("command/exec/resize", {"processId": "nope", "size": {"rows": 1, "cols": 1}})
        check("resize of an unknown process is refused", "error" in e)

        # terminate, and session/close ending its session's commands.
        t0 = time.time()
        i_sl = srv.send("command/exec", {"sessionId": "B", "processId": "sl", "command": ["sleep", "30"]})
        time.sleep(0.5)
        e = srv.call("command/exec/terminate", {"processId": "sl", "sessionId": "A"})
        check("terminate naming another session is refused (-32005)", e.get("error", {}).get("code") == -32005)
        e = srv.call("command/exec/write", {"processId": "sl", "sessionId": "A", "closeStdin": True})
        check("write naming another session is refused (-32005)", e.get("error", {}).get("code") == -32005)
        srv.result("command/exec/terminate", {"processId": "sl", "sessionId": "B"})
        r = srv.wait(i_sl, 20)["result"]
        check("terminate ends the process (137)", r["exitCode"] == 137 and time.time() - t0 < 10)
        i_sl = srv.send("command/exec", {"sessionId": "C", "command": ["sleep", "30"]})
        time.sleep(0.5)
        srv.result("session/close", {"sessionId": "C"})
        r = srv.wait(i_sl, 20)
        check("session/close ends its commands", r.get("result", {}).get("exitCode") == 137)
        e = srv.call("command/exec", {"sessionId": "C", "command": ["true"]})
        check("a closed session is unknown (-32001)", e.get("error", {}).get("code") == -32001)

        # Errors: the server keeps serving.
        srv.send_raw("this is not json\n")
        srv.send_raw('{"jsonrpc":"2.0","id":77,"method":\n')
        check("a malformed line gets -32700 with id null",
              any(m.get("error", {}).get("code") == -32700 and m.get("id") is None for m in [srv.wait(None, 10)]))
        check("unknown method: -32601", srv.call("no/such").get("error", {}).get("code") == -32601)
        check("bad params: -32602", srv.call("session/open", {"cwd": 5}).get("error", {}).get("code") == -32602)
        check("still serving after errors", srv.result("initialize")["serverInfo"]["name"] == "wavebox")

        # Decisions follow `wavebox decide`: deny is an error, ask needs approve.
        rules = {"sandbox": {"enabled": True}, "permissions": {"deny": ["Bash(rm:*)"], "ask": ["Bash(git push:*)"]}}
        srv.result("session/open", {"sessionId": "P", "cwd": ws["D"], "settings": rules})
        e = srv.call("command/exec", {"sessionId": "P", "commandLine": "rm -f x"})
        check("a deny rule: an error (-32002)", e.get("error", {}).get("code") == -32002)
        e = srv.call("command/exec", {"sessionId": "P", "commandLine": "git push origin"})
        check("an ask without approve: an error naming the rule (-32003)",
              e.get("error", {}).get("code") == -32003 and "git push" in e["error"]["message"])
        r = srv.call("command/exec", {"sessionId": "P", "commandLine": "git push --version >/dev/null 2>&1; echo ran", "approve": True})
        check("an ask with approve runs", "ran" in out(r.get("result", {})))
        # No one to ask: every "ask" needs approve, whatever made it one (an excluded command here).
        marker = os.path.join(base, "excluded-ran")
        srv.result("session/open", {"sessionId": "X", "cwd": ws["D"],
                                    "settings": {"sandbox": {"enabled": True, "excludedCommands": ["touch:*"]}}})
        e = srv.call("command/exec", {"sessionId": "X", "commandLine": "touch " + marker})
        check("an excluded command without approve: an error (-32003), and it did not run",
              e.get("error", {}).get("code") == -32003 and not os.path.exists(marker))
        srv.result("session/close", {"sessionId": "X"})
        # A session that discovers its settings: the project's may only narrow (wavebox trust widens).
        proj = ws["H"]
        os.makedirs(os.path.join(proj, ".claude"))
        json.dump({"sandbox": {"enabled": False}}, open(os.path.join(proj, ".claude", "settings.json"), "w"))
        opened = srv.result("session/open", {"sessionId": "U", "cwd": proj})
        check("the ignored widening is said to the client", any("sandbox.enabled" in w for w in opened.get("warnings", [])))
        r = srv.call("command/exec", {"sessionId": "U", "commandLine": "echo sandbox=${WAVEBOX_SANDBOX:-0}"})
        check("a discovered project file cannot turn the sandbox off", "sandbox=1" in out(r.get("result", {})))
        srv.result("session/close", {"sessionId": "U"})
        f = os.path.join(base, "rules.json")
        json.dump(rules, open(f, "w"))
        cli = json.loads(subprocess.run([WAVEBOX, "decide", "--settings", f, "--", "git push origin"], cwd=ws["D"],
                                        env=env, capture_output=True, timeout=30).stdout)
        check("decide: the same object as `wavebox decide`",
              srv.result("decide", {"sessionId": "P", "command": "git push origin"}) == cli)

        # Attacks from a client's strings and from earlier commands (the review's findings).
        inj = os.path.join(base, "INJECTED")
        e = srv.call("command/exec", {"sessionId": "B", "command": ["true"],
                                      "env": {"X": "y\u0000--dir\u0000" + inj}})
        check("a NUL in env: refused (-32602)", e.get("error", {}).get("code") == -32602)
        e = srv.call("command/exec", {"sessionId": "B", "command": ["true"], "cwd": ws["B"] + "\u0000--dir\u0000" + inj})
        check("a NUL in cwd: refused", e.get("error", {}).get("code") == -32602)
        e = srv.call("command/exec", {"sessionId": "B", "command": ["true", "a\u0000--dir\u0000" + inj]})
        check("a NUL in argv: refused", e.get("error", {}).get("code") == -32602)
        check("nothing was injected on the host", not os.path.exists(inj))
        e = srv.call("command/exec", {"sessionId": "B", "command": ["touch", "x"], "cwd": ws["A"]})
        check("cwd in another session's workspace: refused", e.get("error", {}).get("code") == -32602)
        e = srv.call("command/exec", {"sessionId": "B", "command": ["touch", "x"], "cwd": ".."})
        check("cwd above the session's workspace: refused", e.get("error", {}).get("code") == -32602)
        srv.result("command/exec", {"sessionId": "B", "command": ["ln", "-s", ws["A"], "linka"]})
        e = srv.call("command/exec", {"sessionId": "B", "command": ["touch", "x"], "cwd": "linka"})
        check("cwd through a link a command planted: refused", e.get("error", {}).get("code") == -32602)
        check("session A's workspace untouched", not os.path.exists(os.path.join(ws["A"], "x")))
        marker = os.path.join(base, "PRELOADED")
        so_src = os.path.join(base, "pre.c")
        open(so_src, "w").write('#include <fcntl.h>\n#include <unistd.h>\n__attribute__((constructor)) static void f(void) {'
                                ' int fd = open("%s", O_WRONLY|O_CREAT|O_APPEND, 0644); if (fd >= 0) { write(fd, "x", 1);'
                                ' close(fd); } }\n' % marker)
        so = os.path.join(ws["B"], "pre.so")
        if shutil.which("cc") and subprocess.run(["cc", "-shared", "-fPIC", "-o", so, so_src]).returncode == 0:
            r = srv.result("command/exec", {"sessionId": "B", "command": ["true"], "env": {"LD_PRELOAD": so}})
            check("env's LD_PRELOAD reaches the command only, not the launcher outside", not os.path.exists(marker))
        i_hog = srv.send("command/exec", {"sessionId": "B", "processId": "hog", "command": ["sleep", "4"],
                                          "streamOutput": True})
        time.sleep(0.5)
        t0 = time.time()
        w = srv.call("command/exec/write", {"processId": "hog", "deltaBase64": base64.b64encode(b"z" * 400000).decode()}, 10)
        check("a write the process does not take: an error, not a hang", "error" in w and time.time() - t0 < 6)
        check("the server still answers meanwhile", srv.result("initialize", timeout=5)["serverInfo"]["name"] == "wavebox")
        srv.wait(i_hog, 20)
        with srv.lock:
            srv.responses.pop("null", None)  # the earlier malformed lines' answers
        srv.send_raw('{"id":"deep","method":"initialize","params":{"x":' + "[" * 100000 + "]" * 100000 + "}}\n")
        deep = srv.wait(None, 20)
        check("a deeply nested line: an error (id null: it is not parsed)", deep.get("error", {}).get("code") == -32600)
        check("and the server lives on", srv.result("initialize", timeout=5)["serverInfo"]["name"] == "wavebox")
        nested = os.path.join(ws["D"], "inner")
        os.makedirs(nested)
        json.dump({"sandbox": {"enabled": True}}, open(os.path.join(nested, "inner.json"), "w"))
        srv.result("session/open", {"sessionId": "IN", "cwd": nested, "settingsPaths": ["inner.json"]})
        r = srv.result("command/exec", {"sessionId": "D", "commandLine":
                                        "echo '{\"sandbox\":{\"enabled\":false}}' > inner/inner.json"})
        check("a command cannot rewrite another session's settings file",
              json.load(open(os.path.join(nested, "inner.json")))["sandbox"]["enabled"] is True)

        # shutdown: an answer, running commands ended, exit 0, nothing left.
        i_sl = srv.send("command/exec", {"sessionId": "B", "command": ["sleep", "30"]})
        time.sleep(0.5)
        pid = srv.p.pid
        check("shutdown answers", srv.result("shutdown", {"graceMs": 200}, timeout=20) == {})
        check("shutdown: the running command was ended first", srv.wait(i_sl, 5).get("result", {}).get("exitCode") == 137)
        code = srv.p.wait(20)
        check(f"the server exits 0 ({code})", code == 0)
        foreign = [l for l in srv.stderr.decode(errors="replace").splitlines() if l and not l.startswith("wavebox:")]
        check(f"stderr holds only wavebox's lines {foreign[:3]}", not foreign)
    finally:
        if srv.p.poll() is None:
            srv.p.kill()
        for c in col.values():
            c.stop = True
    # EOF ends everything too.
    srv2 = Server(WAVEBOX, env=env, cwd=base)
    srv2.result("session/open", {"sessionId": "Z", "cwd": ws["A"], "settings": {"sandbox": {"enabled": True}}})
    srv2.send("command/exec", {"sessionId": "Z", "command": ["sh", "-c", "sleep 29.713; touch late"]})
    time.sleep(0.5)
    check("EOF: the server exits 0", srv2.close(20) == 0)
    time.sleep(0.5)
    check("EOF: its command ended with it", not os.path.exists(os.path.join(ws["A"], "late")))
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    check("EOF: no command of it left", "sleep 29.713" not in ps)
    # SIGKILL of the server: its sandboxes go with it.
    srv3 = Server(WAVEBOX, env=env, cwd=base)
    srv3.result("session/open", {"sessionId": "K", "cwd": ws["B"], "settings": {"sandbox": {"enabled": True}}})
    srv3.send("command/exec", {"sessionId": "K", "command": ["sh", "-c", "sleep 1.517; touch killed-late"]})
    srv3.send("command/exec", {"sessionId": "K", "command": ["sh", "-c", "sleep 29.715"]})
    time.sleep(0.5)
    srv3.p.kill()
    srv3.p.wait(10)
    time.sleep(2)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    check("SIGKILL of the server: no command of it left", "sleep 29.715" not in ps and "sleep 1.517" not in ps)
    check("SIGKILL of the server: nothing ran on afterwards", not os.path.exists(os.path.join(ws["B"], "killed-late")))
    approval(env, base, ws)
    shutil.rmtree(base, ignore_errors=True)
    print(f"{checks[0] - checks[1]} passed, {checks[1]} failed")
    return 1 if checks[1] else 0


def approval(env, base, ws):
    """network/requestApproval: a host on neither list is asked of the client (which declared
    the capability); accept, acceptForSession (the next command is not asked), decline, and a
    client that never answers (a decline after the bound). Checked on loopback servers."""
    srv = Server(WAVEBOX, env=env, cwd=base)
    cols = [Collector() for _ in range(4)]
    try:
        init = srv.result("initialize", {"capabilities": {"networkApproval": True, "networkApprovalTimeoutMs": 5000}})
        check("approval: the server has the capability", init["capabilities"]["networkApproval"] is True)
        srv.result("session/open", {"sessionId": "N", "cwd": ws["E"],
                                    "settings": {"sandbox": {"enabled": True, "network": {
                                        "allowedDomains": ["allowed.test"], "deniedDomains": [f"127.0.0.1:{cols[3].port}"]}}}})
        srv.result("session/open", {"sessionId": "M", "cwd": ws["F"], "settings": {"sandbox": {"enabled": True}}})

        def connect(port, word):
            # Through the sandbox's HTTP proxy (CONNECT), then a word for the loopback server.
            return (f"exec 4<>/dev/tcp/127.0.0.1/3128 && printf 'CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\n"
                    f"Host: 127.0.0.1:{port}\\r\\n\\r\\n' >&4 && read -t 8 line <&4; echo \"proxy: $line\"; "
                    f"printf '{word}' >&4; sleep 0.3; exec 4>&-")

        def got(col, want, secs=10):
            # The collector keeps a connection's bytes once it ends, on its own thread: wait for it.
            end = time.time() + secs
            while col.got != want and time.time() < end:
                time.sleep(0.05)
            return col.got == want

        def run_answering(session, port, word, decision, count):
            i = srv.send("command/exec", {"sessionId": session, "commandLine": connect(port, word)})
            q = srv.wait_request("network/requestApproval", count, timeout=20)
            if decision is not None:
                srv.answer(q["id"], {"decision": decision})
            return q, srv.wait(i, 30)["result"]

        q, r = run_answering("N", cols[0].port, "accepted", "accept", 1)
        check("approval: the request names the session, process, host and port",
              q["params"]["sessionId"] == "N" and q["params"]["host"] == "127.0.0.1"
              and q["params"]["port"] == cols[0].port and q["params"]["processId"] == r["processId"])
        check("approval: accept lets that connection through", "200" in out(r) and got(cols[0], ["accepted"]))
        # accept was for that command only: the next one is asked again (and declined).
        q, r = run_answering("N", cols[0].port, "again", "decline", 2)
        check("approval: accept covered one command; the next was asked again", q["params"]["processId"] == r["processId"])
        check("approval: decline refuses it (403, reported)",
              "403" in out(r) and cols[0].got == ["accepted"] and any("127.0.0.1" in v["line"] for v in r["violations"]))
        # acceptForSession: this command and the session's next ones, not another session's.
        q, r = run_answering("N", cols[1].port, "for-session", "acceptForSession", 3)
        check("approval: acceptForSession lets it through", "200" in out(r) and got(cols[1], ["for-session"]))
        r = srv.result("command/exec", {"sessionId": "N", "commandLine": connect(cols[1].port, "second")}, timeout=30)
        check("approval: the session's next command is not asked",
              len(srv.requests("network/requestApproval")) == 3 and got(cols[1], ["for-session", "second"]))
        q, r = run_answering("M", cols[1].port, "other-session", "decline", 4)
        check("approval: another session is still asked", q["params"]["sessionId"] == "M"
              and "other-session" not in cols[1].got)
        # A client that never answers: refused after the bound.
        t = time.time()
        q, r = run_answering("N", cols[2].port, "never", None, 5)
        check("approval: no answer is a decline after the bound", "403" in out(r) and cols[2].got == []
              and time.time() - t < 15)
        # The deny list is never asked about.
        r = srv.result("command/exec", {"sessionId": "N", "commandLine": connect(cols[3].port, "denied")}, timeout=30)
        check("approval: a denied host is refused without asking",
              len(srv.requests("network/requestApproval")) == 5 and "403" in out(r) and cols[3].got == [])
        # An answer that also carries an error is a decline.
        i = srv.send("command/exec", {"sessionId": "N", "commandLine": connect(cols[2].port, "err-and-result")})
        q = srv.wait_request("network/requestApproval", 6, timeout=20)
        srv.send_raw(json.dumps({"jsonrpc": "2.0", "id": q["id"], "error": {"code": 1, "message": "x"},
                                 "result": {"decision": "accept"}}) + "\n")
        r = srv.wait(i, 30)["result"]
        check("approval: an answer with an error declines, whatever else it says",
              "403" in out(r) and "err-and-result" not in cols[2].got)
        # acceptForSession belongs to the session that was asked, not to a new one of that name.
        srv.result("session/open", {"sessionId": "R", "cwd": ws["H"], "settings": {"sandbox": {"enabled": True}}})
        i = srv.send("command/exec", {"sessionId": "R", "commandLine": connect(cols[3].port, "reopened") + "; sleep 2"})
        q = srv.wait_request("network/requestApproval", 7, timeout=20)
        srv.result("session/close", {"sessionId": "R"})
        srv.wait(i, 30)
        srv.result("session/open", {"sessionId": "R", "cwd": ws["H"], "settings": {"sandbox": {"enabled": True}}})
        srv.answer(q["id"], {"decision": "acceptForSession"})
        time.sleep(0.3)
        r = srv.result("command/exec", {"sessionId": "R", "commandLine": connect(cols[3].port, "after-reopen")}, timeout=30)
        check("approval: a closed session's acceptForSession does not reach the session reopened under its name",
              len(srv.requests("network/requestApproval")) == 8 and "after-reopen" not in cols[3].got)
        q8 = srv.requests("network/requestApproval")[-1]
        srv.answer(q8["id"], {"decision": "decline"})
        # Questions are bounded per command: a command asking about port after port gets declines.
        many = "for p in $(seq 20000 20099); do exec 5<>/dev/tcp/127.0.0.1/3128 && printf \"CONNECT 127.0.0.1:$p HTTP/1.1\\r\\n\\r\\n\" >&5; done; sleep 1"
        before = len(srv.requests("network/requestApproval"))
        srv.result("command/exec", {"sessionId": "N", "commandLine": many}, timeout=60)
        asked = len(srv.requests("network/requestApproval")) - before
        check(f"approval: at most 64 questions pending per command ({asked})", 0 < asked <= 64)
        # sandbox.auditLog of a session: one line per command.
        audit = os.path.join(base, "serve-audit.jsonl")
        srv.result("session/open", {"sessionId": "AU", "cwd": ws["G"],
                                    "settings": {"sandbox": {"enabled": True, "auditLog": audit}}})
        for _ in range(2):
            srv.result("command/exec", {"sessionId": "AU", "command": ["sh", "-c", "echo x > /outside-ws; exit 4"]})
        lines = [json.loads(l) for l in open(audit).read().splitlines()] if os.path.exists(audit) else []
        check("audit: a session's auditLog gets one line per command, with its exit status and violations",
              len(lines) == 2 and all(l["exitCode"] == 4 and l["sandboxed"] for l in lines)
              and any("/outside-ws" in v["line"] for v in lines[0]["violations"]))
    finally:
        srv.close(20)
        for c in cols:
            c.stop = True


if __name__ == "__main__":
    sys.exit(main())
