"""End-to-end: serve keeps a session's plan while nothing it read of the filesystem changed, and
plans afresh as soon as anything did. Each attack below starts from a kept plan, changes the host
(or lets a sandboxed command change it), then runs the command the change should be refused to,
and checks the host afterwards."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from wbclient import Server, check, checks, out  # noqa: E402

WAVEBOX = os.environ["WAVEBOX"]


def kept(r):
    return bool(r.get("timings", {}).get("planKept"))


def read(path):
    try:
        return open(path).read()
    except OSError:
        return None


def main():
    base = tempfile.mkdtemp(prefix="wavebox-plancache-")
    home = os.path.join(base, "home")
    os.makedirs(home)
    env = dict(os.environ, HOME=home)
    for k in ("WAVEBOX_STANDBY", "WAVEBOX_PLAN_CACHE"):
        env.pop(k, None)
    ws = os.path.join(base, "ws")
    os.makedirs(os.path.join(ws, "real1"))
    os.makedirs(os.path.join(ws, "real2"))
    open(os.path.join(ws, "real1", "s.txt"), "w").write("link-one\n")
    open(os.path.join(ws, "real2", "s.txt"), "w").write("link-two\n")
    os.symlink("real1", os.path.join(ws, "link"))
    open(os.path.join(ws, "inc.cfg"), "w").write("")
    subprocess.run(["git", "init", "-q", ws], check=True)
    # A denyRead path through a link; the built-in credential paths (~/.aws, ~/.netrc, ~/.ssh)
    # do not exist in this home: masked once they do, with nothing placed for them before.
    settings = {"sandbox": {"enabled": True, "filesystem": {"denyRead": [os.path.join(ws, "link", "s.txt")]}}}
    srv = Server(WAVEBOX, env=env, cwd=base)

    def run(argv):
        time.sleep(0.3)  # the standby is made after the previous command's answer
        return srv.result("command/exec", {"sessionId": "K", "command": argv})

    def settle():
        # Until the session's plan is kept: made once, watched, made again unchanged. A mount
        # anywhere on the host drops it (as it must), so a busy machine gets a few tries.
        # Then a pause: the next sandbox is made from it before the change comes.
        for _ in range(6):
            if kept(run(["true"])):
                time.sleep(0.3)
                return True
        return False

    try:
        srv.result("initialize")
        srv.result("session/open", {"sessionId": "K", "cwd": ws, "settings": settings})
        check("an unchanged session's commands plan from the kept plan", settle())

        # Something the plan does not depend on: a plain file written in the workspace.
        open(os.path.join(ws, "notes.txt"), "w").write("n\n")
        check("a plain file written in the workspace: the plan stays kept",
              kept(run(["true"])) or kept(run(["true"])))

        # A credential that did not exist appears on the host, under a directory made with it.
        settle()
        os.makedirs(os.path.join(home, ".aws"))
        open(os.path.join(home, ".aws", "credentials"), "w").write("cred-secret\n")
        r = run(["cat", os.path.join(home, ".aws", "credentials")])
        check("a credential made on the host (new directory): planned afresh", not kept(r))
        check("a credential made on the host (new directory): unreadable", "cred-secret" not in out(r))

        # ... and straight in a directory the plan knew (its name was missing from a listing).
        settle()
        open(os.path.join(home, ".netrc"), "w").write("machine x password second-secret\n")
        r = run(["cat", os.path.join(home, ".netrc")])
        check("a credential file made on the host: unreadable", "second-secret" not in out(r) and not kept(r))

        # A credential directory that appears by a rename on the host.
        settle()
        os.makedirs(os.path.join(home, "staging"))
        open(os.path.join(home, "staging", "id_rsa"), "w").write("ssh-key\n")
        os.rename(os.path.join(home, "staging"), os.path.join(home, ".ssh"))
        r = run(["cat", os.path.join(home, ".ssh", "id_rsa")])
        check("a credential directory renamed into place: unreadable", "ssh-key" not in out(r))

        # A symbolic link on the way to a denyRead path, pointed elsewhere on the host.
        settle()
        r = run(["cat", "link/s.txt"])
        check("a denyRead path through a link: unreadable", "link-one" not in out(r))
        settle()
        tmp = os.path.join(ws, "link.tmp")
        os.symlink("real2", tmp)
        os.rename(tmp, os.path.join(ws, "link"))
        r = run(["cat", "link/s.txt"])
        check("the link pointed elsewhere: the new target is unreadable", "link-two" not in out(r))

        # A sandboxed command makes a repository; the next one may not plant its hooks.
        settle()
        r = run(["sh", "-c", "git init -q sub && echo made"])
        check("a command made a repository", "made" in out(r))
        r = run(["sh", "-c", "echo evil > sub/.git/hooks/pre-commit; echo '[core] fsmonitor = x' >> sub/.git/config"])
        check("the next command cannot plant in it",
              not os.path.exists(os.path.join(ws, "sub", ".git", "hooks", "pre-commit")) and
              "fsmonitor" not in (read(os.path.join(ws, "sub", ".git", "config")) or ""))

        # ... or makes one elsewhere and moves the tree holding it into the workspace's middle.
        settle()
        r = run(["sh", "-c", "mkdir -p t/x && git init -q t/x/r && mv t u && echo moved"])
        check("a command moved a tree holding a repository", "moved" in out(r))
        run(["sh", "-c", "echo evil > u/x/r/.git/hooks/post-checkout"])
        check("the next command cannot plant in the moved repository",
              not os.path.exists(os.path.join(ws, "u", "x", "r", ".git", "hooks", "post-checkout")))

        # The repository's config starts including a file on the host (what git reads changed).
        settle()
        r = run(["sh", "-c", "echo '# ok' >> inc.cfg && echo wrote"])
        check("a plain workspace file: writable", "wrote" in out(r))
        settle()
        with open(os.path.join(ws, ".git", "config"), "a") as f:
            f.write("[include]\n\tpath = ../inc.cfg\n")
        before = read(os.path.join(ws, "inc.cfg"))
        run(["sh", "-c", "echo '[core] fsmonitor = /tmp/evil' >> inc.cfg"])
        check("a file the repository's config now includes: read-only", read(os.path.join(ws, "inc.cfg")) == before)

        # Many changes at once (more than the kernel queues): planned afresh, then kept again.
        settle()
        many = os.path.join(ws, "many")
        os.makedirs(many)
        for i in range(20000):
            open(os.path.join(many, f"f{i}"), "w").close()
        r = run(["true"])
        check("after a flood of changes: planned afresh", not kept(r) and r.get("exitCode") == 0)
        shutil.rmtree(many)
        check("after the flood: the plan is kept again", settle())

        # A filesystem mounted over a directory the plan looked into (root only).
        if os.geteuid() == 0:
            settle()
            cover = os.path.join(home, ".aws")
            if subprocess.run(["mount", "-t", "tmpfs", "tmpfs", cover]).returncode == 0:
                try:
                    open(os.path.join(cover, "credentials"), "w").write("mounted-secret\n")
                    r = run(["cat", os.path.join(cover, "credentials")])
                    check("a filesystem mounted on the host: planned afresh, still unreadable",
                          not kept(r) and "mounted-secret" not in out(r))
                finally:
                    subprocess.run(["umount", cover], stderr=subprocess.DEVNULL)

        # A one-shot run in the same workspace between two commands (it writes wavebox's state
        # dir and git's index): the next command still gets its prepared sandbox.
        settle()
        ahead = False
        for _ in range(3):
            subprocess.run([WAVEBOX, "run", "--", "git", "status", "--porcelain"], cwd=ws, env=env,
                           capture_output=True)
            r = run(["git", "status", "--porcelain"])
            if r.get("timings", {}).get("preparedAhead"):
                ahead = True
                break
        check("a one-shot run in between: the next command still starts in its prepared sandbox", ahead)

        # A hook file this user may not read, given another name on the host: planning refuses
        # that (the other name would stay writable), so the next command must see it come.
        hook = os.path.join(ws, ".git", "hooks", "pre-commit")
        open(hook, "w").write("#!/bin/sh\necho hook\n")
        os.chmod(hook, 0o100)
        settle()
        os.link(hook, os.path.join(ws, "notes2"))
        time.sleep(0.3)
        r = srv.call("command/exec", {"sessionId": "K", "command": [
            "sh", "-c", "chmod 755 notes2; printf '#!/bin/sh\\necho PLANTED\\n' > notes2"]})
        os.chmod(hook, 0o600)
        check("a hook given another name on the host: refused, not written through it",
              "hard links" in str(r.get("error")) and "PLANTED" not in read(hook))
        os.unlink(os.path.join(ws, "notes2"))
        os.unlink(hook)

        # A FIFO where planning reads a repository's file (HEAD beside a commondir): nothing
        # waits for a writer that never comes.
        def answered(argv):
            time.sleep(0.3)
            try:
                return srv.result("command/exec", {"sessionId": "K", "command": argv}, timeout=20)
            except TimeoutError:
                return None
        r = answered(["sh", "-c", "mkdir n && echo x > n/HEAD && mkfifo n/commondir && echo made"])
        r2 = answered(["true"])
        check("a FIFO named commondir: this command and the next are answered",
              r is not None and "made" in out(r) and r2 is not None and r2.get("exitCode") == 0)
        shutil.rmtree(os.path.join(ws, "n"), ignore_errors=True)

        # session/update: new settings, a new plan (not the kept one of the old settings).
        settle()
        srv.result("session/update", {"sessionId": "K", "settings": {"sandbox": {"enabled": True, "filesystem": {
            "denyWrite": [os.path.join(ws, "notes.txt")]}}}})
        r = run(["sh", "-c", "echo changed > notes.txt"])
        check("after session/update: not the old kept plan, the new denyWrite holds",
              not kept(r) and read(os.path.join(ws, "notes.txt")) == "n\n")
    finally:
        srv.close()
        subprocess.run(["chmod", "-R", "u+rwx", base], stderr=subprocess.DEVNULL)
        shutil.rmtree(base, ignore_errors=True)
    print(f"{checks[0] - checks[1]} passed, {checks[1]} failed")
    return 1 if checks[1] else 0


if __name__ == "__main__":
    sys.exit(main())
