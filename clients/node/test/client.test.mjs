// Against the real wavebox (WAVEBOX_BIN, else `wavebox` on PATH): what runs inside and what the
// host has afterwards.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { SandboxManager, WaveboxClient, WaveboxError } from "../dist/index.js";

const scratch = realpathSync(mkdtempSync(join(tmpdir(), "wavebox-node-test-")));
const ws = join(scratch, "ws");
const outside = join(scratch, "outside");
spawnSyncOk("mkdir", ["-p", ws, outside]);

function spawnSyncOk(cmd, args) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: "ignore" });
    p.on("exit", (c) => (c === 0 ? resolve() : reject(new Error(`${cmd} exited ${c}`))));
  });
}

function shell(cmdline, cwd) {
  return new Promise((resolve) => {
    const p = spawn(cmdline, [], { shell: true, cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    p.on("exit", (code) => resolve({ code, out, err }));
  });
}

const srtConfig = (write) => ({
  network: { allowedDomains: [], deniedDomains: [] },
  filesystem: { denyRead: [], allowWrite: write, denyWrite: [] },
});

test("SandboxManager: a wrapped command is confined, its refusals reach the store", async () => {
  await SandboxManager.initialize(srtConfig([ws]));
  assert.equal(SandboxManager.isSandboxingEnabled(), true);
  const seen = [];
  const unsubscribe = SandboxManager.getSandboxViolationStore().subscribe((v) => seen.push(v.length));
  const command = `echo ok > in.txt; echo x > '${outside}/srt-out'; true`;
  const wrapped = await SandboxManager.wrapWithSandbox(command);
  const r = await shell(wrapped, ws);
  SandboxManager.cleanupAfterCommand();
  assert.equal(r.code, 0, r.err);
  assert.equal(readFileSync(join(ws, "in.txt"), "utf8"), "ok\n");
  assert.equal(existsSync(join(outside, "srt-out")), false, "the write outside reached the host");
  const mine = SandboxManager.getSandboxViolationStore().getViolationsForCommand(command);
  assert.ok(mine.some((v) => v.operation === "file-write" && v.target === join(outside, "srt-out")), JSON.stringify(mine));
  assert.ok(seen.length >= 2, "the subscriber heard of it");
  unsubscribe();
  // wavebox's own block is in stderr already; without it, the store's lines are appended.
  assert.match(r.err, /<sandbox_violations>/);
  const annotated = SandboxManager.annotateStderrWithSandboxFailures(command, "boom\n");
  assert.match(annotated, /^boom\n<sandbox_violations>\ndeny file-write .*srt-out\n<\/sandbox_violations>$/);
  assert.equal(SandboxManager.pendingReports(), 0);
});

test("SandboxManager: updateConfig and a per-command config change what is writable", async () => {
  await SandboxManager.initialize(srtConfig([ws]));
  const cmd = `echo y > '${outside}/later'`;
  let r = await shell(await SandboxManager.wrapWithSandbox(cmd), ws);
  assert.notEqual(r.code, 0);
  assert.equal(existsSync(join(outside, "later")), false);
  r = await shell(await SandboxManager.wrapWithSandbox(cmd, undefined, { filesystem: { denyRead: [], allowWrite: [ws, outside], denyWrite: [] } }), ws);
  assert.equal(r.code, 0, r.err);
  assert.equal(existsSync(join(outside, "later")), true);
  rmSync(join(outside, "later"));
  SandboxManager.updateConfig(srtConfig([ws, outside]));
  r = await shell(await SandboxManager.wrapWithSandbox(cmd, "/bin/sh"), ws);
  assert.equal(r.code, 0, r.err);
  SandboxManager.cleanupAfterCommand();
});

test("SandboxManager: what wavebox cannot honour is refused at initialize", async () => {
  const bad = srtConfig([ws]);
  bad.network.mitmProxy = { socketPath: "/tmp/x.sock", domains: ["example.com"] };
  await assert.rejects(SandboxManager.initialize(bad), /mitmProxy/);
  assert.equal(SandboxManager.isSandboxingEnabled(), false);
});

test("SandboxManager: checkDependencies and reset", async () => {
  assert.deepEqual(SandboxManager.checkDependencies().errors, []);
  await SandboxManager.initialize(srtConfig([ws]));
  await SandboxManager.reset();
  assert.equal(SandboxManager.getConfig(), undefined);
  await assert.rejects(SandboxManager.wrapWithSandbox("true"), /initialize/);
});

test("WaveboxClient: sessions, output, stdin, streaming, violations, timeouts, decisions", async () => {
  const client = await WaveboxClient.start();
  try {
    const s = await client.openSession({ cwd: ws, settings: { sandbox: { enabled: true }, permissions: { deny: ["Bash(rm:*)"] } } });
    assert.ok(s.policyId);

    let r = await s.exec("echo hi > note; cat note");
    assert.equal(r.exitCode, 0);
    assert.equal(Buffer.from(r.stdout).toString(), "hi\n");
    assert.equal(readFileSync(join(ws, "note"), "utf8"), "hi\n");

    const live = [];
    r = await s.exec(["touch", join(outside, "direct")], { onViolation: (v) => live.push(v.line) });
    assert.deepEqual(live, [`deny file-write ${join(outside, "direct")}`]);
    assert.notEqual(r.exitCode, 0);
    assert.equal(existsSync(join(outside, "direct")), false);
    assert.ok(r.violations.some((v) => v.line === `deny file-write ${join(outside, "direct")}`), JSON.stringify(r.violations));

    const chunks = [];
    r = await s.exec("for i in 1 2 3; do echo $i; done; echo e >&2", { onStdout: (c) => chunks.push(Buffer.from(c).toString()) });
    assert.equal(chunks.join(""), "1\n2\n3\n");
    assert.equal(Buffer.from(r.stdout).toString(), "1\n2\n3\n");
    assert.equal(Buffer.from(r.stderr).toString(), "e\n");

    r = await s.exec("cat", { stdin: "given" });
    assert.equal(Buffer.from(r.stdout).toString(), "given");

    const ex = s.exec("cat", { keepStdinOpen: true, onStdout: () => {} });
    await ex.write("typed\n");
    await ex.closeStdin();
    r = await ex;
    assert.equal(Buffer.from(r.stdout).toString(), "typed\n");

    r = await s.exec("sleep 30", { timeoutMs: 300 });
    assert.equal(r.exitCode, 124);

    const long = s.exec("sleep 30");
    setTimeout(() => void long.terminate(), 300);
    r = await long;
    assert.equal(r.exitCode, 137);

    const ac = new AbortController();
    const aborted = s.exec("sleep 30", { signal: ac.signal });
    setTimeout(() => ac.abort(), 300);
    assert.equal((await aborted).exitCode, 137);

    await assert.rejects(s.exec("rm note").result, (e) => e instanceof WaveboxError && e.code === -32002);
    assert.equal(existsSync(join(ws, "note")), true);
    assert.equal((await s.decide("rm note")).decision, "deny");

    // SIGTERM once the command's trap is set (it says "up"): the trap's status comes back.
    let up;
    const isUp = new Promise((res) => (up = res));
    const trapped = s.exec(`trap 'exit 9' TERM; echo up; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done`, {
      onStdout: (c) => Buffer.from(c).toString().includes("up") && up(),
    });
    await isUp;
    await trapped.kill("SIGTERM");
    assert.equal((await trapped).exitCode, 9);

    const pol = await s.policy();
    assert.ok(pol.policy.filesystem.writable.includes(ws));
    assert.equal((await client.doctor()).sandboxUsable, true);

    await s.update({ settings: { sandbox: { enabled: true } } });
    r = await s.exec("rm note");
    assert.equal(r.exitCode, 0);
    await s.close();
  } finally {
    await client.close();
  }
});

test.after(async () => {
  await SandboxManager.reset();  // this client's own directory, whatever a failed test left
  rmSync(scratch, { recursive: true, force: true });
});

test("SandboxManager: the client's own directory is not writable by a wrapped command", async () => {
  await SandboxManager.initialize(srtConfig([ws, tmpdir()]));
  const probe = `test -f "$WBDIR/settings-0.json" && echo seen; for f in "$WBDIR"/*; do echo x > "$f" && echo wrote; done; echo y > "$WBDIR/wrap-99.settings.json" && echo planted; true`;
  const wrapped = await SandboxManager.wrapWithSandbox(probe);
  const dir = wrapped.match(/--settings '([^']*)\/settings-0\.json'/)[1];
  const r = await shell(`WBDIR='${dir}' ${wrapped}`, ws);
  SandboxManager.cleanupAfterCommand();
  assert.match(r.out, /seen/);
  assert.doesNotMatch(r.out, /wrote|planted/);
  assert.equal(existsSync(join(dir, "wrap-99.settings.json")), false);
  await SandboxManager.reset();
});
