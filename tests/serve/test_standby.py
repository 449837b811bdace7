"""End-to-end: the sandbox serve prepares ahead for a session's next command. It must be used
when nothing changed, and never when it would be weaker than a fresh sandbox: each attack below
changes the host (or lets a command change it) between the standby and the command, then checks
the host afterwards."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from wbclient import Server, check, checks, children_of, out  # noqa: E402

WAVEBOX = os.environ["WAVEBOX"]


def ahead(r):
    return bool(r.get("timings", {}).get("preparedAhead"))


def read(path):
    try:
        return open(path).read()
    except OSError:
        return None


def main():
    base = tempfile.mkdtemp(prefix="wavebox-standby-")
    home = os.path.join(base, "home")
    os.makedirs(home)
    env = dict(os.environ, HOME=home)
    env.pop("WAVEBOX_STANDBY", None)
    ws = os.path.join(base, "ws")
    os.makedirs(os.path.join(ws, "secrets"))
    open(os.path.join(ws, "secrets", "key"), "w").write("old-key\n")
    open(os.path.join(ws, "token.txt"), "w").write("old-token\n")
    open(os.path.join(ws, "keep.txt"), "w").write("keep\n")
    open(os.path.join(ws, ".envrc"), "w").write("export A=1\n")
    subprocess.run(["git", "init", "-q", ws], check=True)
    settings = {"sandbox": {"enabled": True, "filesystem": {"denyRead": [os.path.join(ws, "secrets"),
                                                                          os.path.join(ws, "token.txt")]}}}
    srv = Server(WAVEBOX, env=env, cwd=base)

    def run(argv, **extra):
        time.sleep(0.3)  # the standby is made after the previous command's answer
        return srv.result("command/exec", dict({"sessionId": "S", "command": argv}, **extra))

    def used(argv):
        # Whether an unchanged session's command gets the prepared sandbox. A mount or unmount
        # anywhere on the host drops it (as it must), so a busy machine gets three tries.
        for _ in range(3):
            r = run(argv)
            if ahead(r):
                return True
        return False

    try:
        init = srv.result("initialize")
        check("initialize says sandboxes are prepared ahead", init["capabilities"].get("prepareAhead") is True)
        srv.result("session/open", {"sessionId": "S", "cwd": ws, "settings": settings})
        check("a session's open leaves one prepared sandbox (its keeper)", len(children_of(srv.p.pid)) == 1)

        # Used when nothing changed: output, status, environment, files, refusals as always.
        for _ in range(3):  # (a mount anywhere on the host drops the standby: a busy machine)
            r = run(["sh", "-c", "echo out; echo err >&2; echo \"$FOO\"; pwd; echo made > made.txt; "
                     "echo x > ../outside.txt; exit 5"], env={"FOO": "bar"})
            if ahead(r):
                break
        check("the first command runs in the prepared sandbox", ahead(r))
        check("its exit status", r["exitCode"] == 5)
        check("its output, environment and directory", out(r).split() == ["out", "bar", ws])
        check("its stderr", out(r, "stderr").startswith("err"))
        check("its write in the workspace reached the host", read(os.path.join(ws, "made.txt")) == "made\n")
        check("its write outside was refused and reported",
              not os.path.exists(os.path.join(base, "outside.txt")) and
              any("outside.txt" in v["line"] for v in r["violations"]))
        r = run(["sh", "-c", "cat secrets/key token.txt"])
        check("the next one, and the masks hold", "old-" not in out(r) and r["exitCode"] != 0)
        check("the next one in a prepared sandbox too", ahead(r) or used(["true"]))
        os.makedirs(os.path.join(ws, "sub"))
        r = run(["sh", "-c", "pwd; cat ../secrets/key"], cwd=os.path.join(ws, "sub"))
        check("a command in a directory of its own: there, and still confined",
              out(r).split() == [os.path.join(ws, "sub")] and r["exitCode"] != 0)

        # A repository made on the host after the standby: the next command must guard it.
        time.sleep(0.3)
        subprocess.run(["git", "init", "-q", os.path.join(ws, "late")], check=True)
        cfg_before = read(os.path.join(ws, "late", ".git", "config"))
        r = srv.result("command/exec", {"sessionId": "S", "command": ["sh", "-c",
                       "echo evil > late/.git/hooks/pre-commit; echo '[core] fsmonitor = evil' >> late/.git/config"]})
        check("a repository made after the standby: not the prepared sandbox", not ahead(r))
        check("a repository made after the standby: its hooks and config stay as they were",
              not os.path.exists(os.path.join(ws, "late", ".git", "hooks", "pre-commit")) and
              read(os.path.join(ws, "late", ".git", "config")) == cfg_before)

        # A masked directory renamed away and made again on the host: the standby's mask lies on
        # the old one; the new one must be masked too.
        time.sleep(0.3)
        os.rename(os.path.join(ws, "secrets"), os.path.join(ws, "secrets.old"))
        os.makedirs(os.path.join(ws, "secrets"))
        open(os.path.join(ws, "secrets", "key"), "w").write("new-key\n")
        r = srv.result("command/exec", {"sessionId": "S", "command": ["cat", "secrets/key"]})
        check("a masked directory made again: not the prepared sandbox", not ahead(r))
        check("a masked directory made again: its new contents stay unreadable", "new-key" not in out(r))

        # A masked file replaced on the host (rename over it).
        time.sleep(0.3)
        tmp = os.path.join(ws, "token.new")
        open(tmp, "w").write("new-token\n")
        os.rename(tmp, os.path.join(ws, "token.txt"))
        r = srv.result("command/exec", {"sessionId": "S", "command": ["cat", "token.txt"]})
        check("a masked file replaced: not the prepared sandbox", not ahead(r))
        check("a masked file replaced: the new one stays unreadable", "new-token" not in out(r))

        # The same name made again with a new file on the host (rm, then create: ext4 gives the
        # freed inode number to the new file): the standby's mount on it went with the old one.
        time.sleep(0.3)
        os.unlink(os.path.join(ws, "token.txt"))
        open(os.path.join(ws, "token.txt"), "w").write("third-token\n")
        r = srv.result("command/exec", {"sessionId": "S", "command": ["cat", "token.txt"]})
        check("a masked file removed and made again: unreadable", "third-token" not in out(r))
        time.sleep(0.3)
        shutil.rmtree(os.path.join(ws, "secrets"))
        os.makedirs(os.path.join(ws, "secrets"))
        open(os.path.join(ws, "secrets", "key"), "w").write("third-key\n")
        r = srv.result("command/exec", {"sessionId": "S", "command": ["cat", "secrets/key"]})
        check("a masked directory removed and made again: unreadable", "third-key" not in out(r))
        # A protected tracked file replaced by the host's git checkout (unlink and create).
        subprocess.run(["git", "-C", ws, "add", ".envrc"], check=False, capture_output=True)
        time.sleep(0.3)
        envrc = os.path.join(ws, ".envrc")
        os.unlink(envrc)
        open(envrc, "w").write("export A=2\n")
        r = srv.result("command/exec", {"sessionId": "S", "command": ["sh", "-c", "echo 'touch /tmp/pwned' >> .envrc"]})
        check("a protected file the host made again: still read-only", read(envrc) == "export A=2\n")
        # A denyRead path reached through links, one of whose hops is retargeted on the host.
        for d in ("real1", "real2", "z"):
            os.makedirs(os.path.join(base, d))
        open(os.path.join(base, "real1", "s.txt"), "w").write("link-one\n")
        open(os.path.join(base, "real2", "s.txt"), "w").write("link-two\n")
        os.symlink(os.path.join(base, "real1"), os.path.join(base, "z", "l2"))
        os.symlink(os.path.join(base, "z", "l2"), os.path.join(ws, "link"))
        srv.result("session/update", {"sessionId": "S", "settings": {"sandbox": {"enabled": True, "filesystem": {
            "denyRead": [os.path.join(ws, "link", "s.txt")]}}}})
        r = run(["cat", "link/s.txt"])
        check("a masked path through links: unreadable", "link-one" not in out(r))
        time.sleep(0.3)
        tmp = os.path.join(base, "z", "l2.tmp")
        os.symlink(os.path.join(base, "real2"), tmp)
        os.rename(tmp, os.path.join(base, "z", "l2"))
        r = srv.result("command/exec", {"sessionId": "S", "command": ["cat", "link/s.txt"]})
        check("a link hop retargeted on the host: the new target is masked too", "link-two" not in out(r))
        # A filesystem the host unmounts while the standby waits (root only: mount).
        vault = os.path.join(base, "vault")
        os.makedirs(vault)
        if os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "tmpfs", vault]).returncode == 0:
            try:
                open(os.path.join(vault, "secret"), "w").write("vault-secret\n")
                r = run(["true"])
                time.sleep(0.3)
                subprocess.run(["umount", vault], check=True)
                r = srv.result("command/exec", {"sessionId": "S", "command": ["cat", os.path.join(vault, "secret")]})
                check("a filesystem unmounted on the host: gone in the next command too",
                      "vault-secret" not in out(r) and not ahead(r))
            finally:
                subprocess.run(["umount", vault], stderr=subprocess.DEVNULL)
        srv.result("session/update", {"sessionId": "S", "settings": settings})

        # A command leaves a repository and hides it from the scan cache (directory mtimes
        # rewound); the next command, in the next standby, must guard it.
        r = run(["sh", "-c", "git init -q hid && touch -d '2001-01-01' hid . && echo ok"])
        check("a command made a repository", out(r).strip() == "ok" and os.path.isdir(os.path.join(ws, "hid", ".git")))
        r = run(["sh", "-c", "echo evil > hid/.git/hooks/post-checkout; echo '[core] hooksPath = /tmp' >> hid/.git/config"])
        check("the next command cannot plant in it",
              not os.path.exists(os.path.join(ws, "hid", ".git", "hooks", "post-checkout")) and
              "hooksPath" not in (read(os.path.join(ws, "hid", ".git", "config")) or ""))
        check("with nothing changed since, the prepared sandbox again", used(["true"]))

        # The session's settings change: its next command has the new policy.
        srv.result("session/update", {"sessionId": "S", "settings": {"sandbox": {"enabled": True, "filesystem": {
            "denyWrite": [os.path.join(ws, "keep.txt")]}}}})
        r = run(["sh", "-c", "echo changed > keep.txt"])
        check("after session/update: the new denyWrite holds", read(os.path.join(ws, "keep.txt")) == "keep\n")

        # Another session opened with a settings file in this workspace: this session's next
        # command must not write it (its standby was made before).
        other = os.path.join(ws, "other-settings.json")
        open(other, "w").write(json.dumps({"sandbox": {"enabled": True}}))
        time.sleep(0.3)
        srv.result("session/open", {"sessionId": "O", "cwd": base, "settingsPaths": [other]})
        r = srv.result("command/exec", {"sessionId": "S", "command": ["sh", "-c", "echo '{}' > other-settings.json"]})
        check("another session's settings file, opened after the standby: not writable",
              json.loads(read(other)) == {"sandbox": {"enabled": True}})
        check("after another session opened, this one gets prepared sandboxes again", used(["true"]))
        srv.result("session/close", {"sessionId": "O"})

        # A denyRead path that does not exist: a fresh run holds a stub (placeholder and mask);
        # a standby made meanwhile must not plan it as a plain file (the mask would go with the
        # other run's stub).
        cred = os.path.join(ws, "cred.txt")
        srv.result("session/update", {"sessionId": "S", "settings": {"sandbox": {"enabled": True, "filesystem": {
            "denyRead": [cred]}}}})
        time.sleep(0.3)
        first = srv.send("command/exec", {"sessionId": "S", "command": ["sh", "-c", "sleep 2.5"]})
        time.sleep(0.8)
        srv.result("command/exec", {"sessionId": "S", "command": ["true"]})
        time.sleep(0.5)
        late = srv.send("command/exec", {"sessionId": "S", "command": ["sh", "-c", "sleep 3; cat cred.txt"]})
        srv.wait(first, 30)
        time.sleep(0.5)
        open(cred, "w").write("SECRET-CRED\n")
        r = srv.wait(late, 30).get("result", {})
        check("a stub another run held: its mask holds after that run ended", "SECRET-CRED" not in out(r))
        os.unlink(cred)
        srv.result("session/close", {"sessionId": "S"})
        end = time.time() + 5
        while children_of(srv.p.pid) and time.time() < end:
            time.sleep(0.05)
        check("closed sessions leave no process", children_of(srv.p.pid) == [])
    finally:
        srv.close(20)

    # Turned off: by the client, and by the environment.
    for how, kwargs, caps in (("prepareAhead false", {}, {"prepareAhead": False}),
                              ("WAVEBOX_STANDBY=0", {"env": dict(env, WAVEBOX_STANDBY="0")}, {})):
        s2 = Server(WAVEBOX, cwd=base, **({"env": env} | kwargs))
        try:
            init = s2.result("initialize", {"capabilities": caps})
            s2.result("session/open", {"sessionId": "T", "cwd": ws, "settings": {"sandbox": {"enabled": True}}})
            time.sleep(0.3)
            r = s2.result("command/exec", {"sessionId": "T", "command": ["true"]})
            check(f"{how}: nothing prepared ahead", not ahead(r) and r["exitCode"] == 0 and
                  not init["capabilities"]["prepareAhead"] and children_of(s2.p.pid) == [])
        finally:
            s2.close(20)
    # Turned off after sessions have one: what was made ahead ends, and is not used.
    s3 = Server(WAVEBOX, cwd=base, env=env)
    try:
        s3.result("initialize")
        s3.result("session/open", {"sessionId": "U", "cwd": ws, "settings": {"sandbox": {"enabled": True}}})
        had = len(children_of(s3.p.pid))
        s3.result("initialize", {"capabilities": {"prepareAhead": False}})
        end = time.time() + 5
        while children_of(s3.p.pid) and time.time() < end:
            time.sleep(0.05)
        r = s3.result("command/exec", {"sessionId": "U", "command": ["true"]})
        check("prepareAhead turned off later: the standby made ends and is not used",
              had == 1 and children_of(s3.p.pid) == [] and not ahead(r) and r["exitCode"] == 0)
    finally:
        s3.close(20)
    shutil.rmtree(base, ignore_errors=True)
    print(f"{checks[0] - checks[1]} passed, {checks[1]} failed")
    return 1 if checks[1] else 0


if __name__ == "__main__":
    sys.exit(main())
