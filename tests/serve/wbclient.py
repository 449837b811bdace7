"""A small client for `wavebox serve --stdio` (standard library only): requests by id,
notifications collected, every wait bounded in time."""
import base64
import json
import os
import queue
import subprocess
import threading
import time


class Server:
    def __init__(self, wavebox, env=None, cwd=None):
        self.p = subprocess.Popen([wavebox, "serve", "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env, cwd=cwd)
        self.lock = threading.Lock()
        self.cv = threading.Condition(self.lock)
        self.responses = {}
        self.notes = []
        self.unparsed = []
        self.next_id = 1
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                with self.cv:
                    self.unparsed.append(line)
                continue
            with self.cv:
                if "id" in msg and ("result" in msg or "error" in msg):
                    self.responses[json.dumps(msg["id"])] = msg
                else:
                    self.notes.append(msg)
                self.cv.notify_all()

    def _read_err(self):
        self.stderr = self.p.stderr.read()

    def send_raw(self, text):
        self.p.stdin.write(text.encode() if isinstance(text, str) else text)
        self.p.stdin.flush()

    def send(self, method, params=None, id=None):
        with self.lock:
            if id is None:
                id = self.next_id
                self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send_raw(json.dumps(msg) + "\n")
        return id

    def wait(self, id, timeout=60):
        key = json.dumps(id)
        end = time.time() + timeout
        with self.cv:
            while key not in self.responses:
                left = end - time.time()
                if left <= 0:
                    raise TimeoutError(f"no answer to {id} within {timeout} s")
                self.cv.wait(left)
            return self.responses.pop(key)

    def call(self, method, params=None, timeout=60):
        return self.wait(self.send(method, params), timeout)

    def result(self, method, params=None, timeout=60):
        r = self.call(method, params, timeout)
        if "error" in r:
            raise RuntimeError(f"{method}: {r['error']}")
        return r["result"]

    def deltas(self, process_id, stream="stdout"):
        with self.lock:
            return b"".join(base64.b64decode(n["params"]["deltaBase64"]) for n in self.notes
                            if n.get("method") == "command/exec/outputDelta"
                            and n["params"]["processId"] == process_id and n["params"]["stream"] == stream)

    def requests(self, method):
        """The server's own requests of the client (network/requestApproval) seen so far."""
        with self.lock:
            return [n for n in self.notes if n.get("method") == method and "id" in n]

    def wait_request(self, method, count=1, timeout=30):
        end = time.time() + timeout
        with self.cv:
            while True:
                got = [n for n in self.notes if n.get("method") == method and "id" in n]
                if len(got) >= count:
                    return got[count - 1]
                left = end - time.time()
                if left <= 0:
                    raise TimeoutError(f"no {method} request #{count} within {timeout} s")
                self.cv.wait(left)

    def answer(self, id, result):
        self.send_raw(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n")

    def close(self, timeout=20):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        return self.p.wait(timeout)


def out(result, stream="stdout"):
    return base64.b64decode(result.get(stream, "")).decode(errors="replace")


checks = [0, 0]  # made, failed: what check() counted, for a test's summary


def check(what, ok):
    """One assertion of an end-to-end test: printed, counted, never raised."""
    checks[0] += 1
    if ok:
        print("ok:", what)
    else:
        checks[1] += 1
        print("FAIL:", what)


def children_of(pid):
    """The processes whose parent is pid (any of its threads)."""
    kids = []
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            kids += open(f"/proc/{pid}/task/{t}/children").read().split()
        except OSError:
            pass
    return kids
