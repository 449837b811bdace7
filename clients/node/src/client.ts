import { spawn, type ChildProcess } from "node:child_process";

import { findWavebox } from "./locate.js";
import { toEvents } from "./violations.js";
import type {
  ExecOptions,
  ExecResult,
  NetworkApprovalDecision,
  NetworkApprovalRequest,
} from "./types.js";

export interface ClientOptions {
  /** The wavebox program (default: $WAVEBOX_BIN, else `wavebox` on PATH). */
  wavebox?: string;
  /** Sandboxes made ahead of each session's next command (default true). */
  prepareAhead?: boolean;
  /** Asked about a host on neither of a session's lists; without it such hosts are refused. */
  onNetworkApproval?: (req: NetworkApprovalRequest) => NetworkApprovalDecision | Promise<NetworkApprovalDecision>;
  networkApprovalTimeoutMs?: number;
  /** wavebox's own lines on the server's stderr ("wavebox: ..."). Default: dropped. */
  onServerMessage?: (line: string) => void;
}

export interface SessionOptions {
  cwd: string;
  sessionId?: string;
  /** Settings files, merged in order (wavebox-settings(5)); with neither, the files a run in cwd finds. */
  settingsPaths?: string[];
  /** Inline settings: {sandbox: {...}, permissions: {...}}. */
  settings?: Record<string, unknown>;
}

/** A JSON-RPC error answer: code -32002 denied by a rule, -32003 needs approval, -32004 the run failed. */
export class WaveboxError extends Error {
  constructor(
    message: string,
    readonly code: number,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = "WaveboxError";
  }
}

interface Pending {
  resolve: (v: any) => void;
  reject: (e: Error) => void;
}

interface Running {
  stdout: Uint8Array[];
  stderr: Uint8Array[];
  o: ExecOptions;
  text: string;
}

function b64(data: string | Uint8Array): string {
  return Buffer.from(data).toString("base64");
}


/** One `wavebox serve --stdio`: sessions, each with its own directory and settings. */
export class WaveboxClient {
  private buf = "";
  private nextId = 1;
  private nextProcess = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly running = new Map<string, Running>();
  private exited = false;
  private readonly exitPromise: Promise<void>;

  private constructor(
    private readonly proc: ChildProcess,
    private readonly opts: ClientOptions,
  ) {
    proc.stdout!.setEncoding("utf8");
    proc.stdout!.on("data", (chunk: any) => this.onData(String(chunk)));
    let errBuf = "";
    proc.stderr!.setEncoding("utf8");
    proc.stderr!.on("data", (chunk: any) => {
      errBuf += String(chunk);
      let nl: number;
      while ((nl = errBuf.indexOf("\n")) >= 0) {
        const line = errBuf.slice(0, nl);
        errBuf = errBuf.slice(nl + 1);
        opts.onServerMessage?.(line);
      }
    });
    proc.stdin!.on("error", () => undefined);
    this.exitPromise = new Promise((resolve) => {
      proc.on("exit", () => {
        this.exited = true;
        for (const p of this.pending.values()) p.reject(new Error("wavebox serve exited"));
        this.pending.clear();
        resolve();
      });
    });
  }

  /** Starts the server and says hello (initialize). */
  static async start(opts: ClientOptions = {}): Promise<WaveboxClient> {
    const wavebox = findWavebox(opts.wavebox);
    const proc = spawn(wavebox, ["serve", "--stdio"], { stdio: ["pipe", "pipe", "pipe"] });
    const client = new WaveboxClient(proc, opts);
    await new Promise<void>((resolve, reject) => {
      proc.on("error", reject);
      setTimeout(resolve, 0);
    });
    const capabilities: Record<string, unknown> = {};
    if (opts.prepareAhead !== undefined) capabilities.prepareAhead = opts.prepareAhead;
    if (opts.onNetworkApproval) {
      capabilities.networkApproval = true;
      if (opts.networkApprovalTimeoutMs) capabilities.networkApprovalTimeoutMs = opts.networkApprovalTimeoutMs;
    }
    await client.request("initialize", { clientInfo: { name: "@wavebox/client" }, capabilities });
    return client;
  }

  /** A raw JSON-RPC request (see wavebox-serve(7)). */
  request(method: string, params?: unknown): Promise<any> {
    if (this.exited) return Promise.reject(new Error("wavebox serve has exited"));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.proc.stdin!.write(JSON.stringify({ jsonrpc: "2.0", id, method, params: params ?? {} }) + "\n");
    });
  }

  async openSession(o: SessionOptions): Promise<Session> {
    const r = await this.request("session/open", o);
    return new Session(this, r.sessionId, r.policyId, r.warnings ?? []);
  }

  /** The permission decision for a command string under a session's settings. */
  decide(sessionId: string, command: string): Promise<{ decision: string; sandboxed: boolean; reason: string }> {
    return this.request("decide", { sessionId, command });
  }

  /** What wavebox doctor says of this machine (and of a session's policy, when named). */
  doctor(sessionId?: string): Promise<Record<string, any>> {
    return this.request("doctor", sessionId ? { sessionId } : {});
  }

  /** Lets running commands end within graceMs, ends the rest, and waits for the server to exit. */
  async close(graceMs = 10000): Promise<void> {
    if (!this.exited) {
      try {
        await this.request("shutdown", { graceMs });
      } catch {
        // it may be gone already
      }
      this.proc.stdin!.end();
    }
    await this.exitPromise;
  }

  /** @internal */
  exec(sessionId: string, command: string | string[], o: ExecOptions): Execution {
    const processId = `node-${this.nextProcess++}`;
    const stream = !!(o.onStdout || o.onStderr || o.keepStdinOpen);
    // serve keeps a streamed command's stdin open when none is given: only when asked for.
    if (stream && o.stdin === undefined && !o.keepStdinOpen) o = { ...o, stdin: "" };
    const params: Record<string, unknown> = { sessionId, processId, streamOutput: stream };
    if (Array.isArray(command)) params.command = command;
    else params.commandLine = command;
    if (o.cwd !== undefined) params.cwd = o.cwd;
    if (o.env) params.env = o.env;
    if (o.stdin !== undefined) params.stdin = b64(o.stdin);
    if (o.timeoutMs !== undefined) params.timeoutMs = o.timeoutMs;
    if (o.approve) params.approve = true;
    if (o.dangerouslyDisableSandbox) params.dangerouslyDisableSandbox = true;
    const text = Array.isArray(command) ? command.join(" ") : command;
    const run: Running = { stdout: [], stderr: [], o, text };
    this.running.set(processId, run);
    const result = this.request("command/exec", params).then(
      (r) => {
        this.running.delete(processId);
        const out = r.stdout !== undefined ? Buffer.from(r.stdout, "base64") : Buffer.concat(run.stdout);
        const err = r.stderr !== undefined ? Buffer.from(r.stderr, "base64") : Buffer.concat(run.stderr);
        const res: ExecResult = {
          exitCode: r.exitCode,
          signal: r.signal,
          sandboxed: r.sandboxed,
          decision: r.decision,
          rule: r.rule ?? null,
          reason: r.reason ?? "",
          violations: toEvents(r.violations, text, processId),
          violationsNotListed: r.violationsNotListed ?? 0,
          stdout: out,
          stderr: err,
          outputTruncated: r.outputTruncated,
          elapsedMs: r.elapsedMs,
          processId,
          policyId: r.policyId,
          timings: r.timings,
        };
        return res;
      },
      (e) => {
        this.running.delete(processId);
        throw e;
      },
    );
    const ex = new Execution(this, sessionId, processId, result, !!o.keepStdinOpen && o.stdin === undefined);
    if (o.signal) {
      if (o.signal.aborted) void ex.terminate();
      else o.signal.addEventListener("abort", () => void ex.terminate());
    }
    return ex;
  }

  private onData(chunk: string): void {
    this.buf += chunk;
    let nl: number;
    while ((nl = this.buf.indexOf("\n")) >= 0) {
      const line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      if (line.trim()) this.onMessage(line);
    }
  }

  private onMessage(line: string): void {
    let m: any;
    try {
      m = JSON.parse(line);
    } catch {
      return;
    }
    if (m.method === "command/exec/outputDelta") {
      const run = this.running.get(m.params?.processId);
      if (!run) return;
      const bytes = Buffer.from(m.params.deltaBase64 ?? "", "base64");
      if (m.params.stream === "stderr") {
        run.stderr.push(bytes);
        run.o.onStderr?.(bytes);
      } else {
        run.stdout.push(bytes);
        run.o.onStdout?.(bytes);
      }
      return;
    }
    if (m.method === "command/exec/violation") {
      const run = this.running.get(m.params?.processId);
      if (run?.o.onViolation) {
        const [e] = toEvents([m.params.violation], run.text, m.params.processId);
        run.o.onViolation(e);
      }
      return;
    }
    if (m.method === "command/exec/message") {
      this.running.get(m.params?.processId)?.o.onMessage?.(String(m.params.level), String(m.params.message));
      return;
    }
    if (m.method === "network/requestApproval" && m.id !== undefined) {
      void this.approve(m.id, m.params);
      return;
    }
    if (m.id === undefined || m.id === null || !this.pending.has(m.id)) return;
    const p = this.pending.get(m.id)!;
    this.pending.delete(m.id);
    if (m.error) p.reject(new WaveboxError(String(m.error.message), Number(m.error.code), m.error.data));
    else p.resolve(m.result);
  }

  private async approve(id: unknown, params: NetworkApprovalRequest): Promise<void> {
    let decision: NetworkApprovalDecision = "decline";
    try {
      if (this.opts.onNetworkApproval) decision = await this.opts.onNetworkApproval(params);
    } catch {
      decision = "decline";
    }
    if (!this.exited) this.proc.stdin!.write(JSON.stringify({ jsonrpc: "2.0", id, result: { decision } }) + "\n");
  }
}

/** A session: its own working directory and settings. */
export class Session {
  /** @internal */
  constructor(
    private readonly client: WaveboxClient,
    readonly id: string,
    public policyId: string,
    public warnings: string[],
  ) {}

  /** Runs a command (a shell string through bash, or an argv) in a sandbox of its own. */
  exec(command: string | string[], o: ExecOptions = {}): Execution {
    return this.client.exec(this.id, command, o);
  }

  /** New settings for the session's next commands (running ones keep theirs). */
  async update(o: { settingsPaths?: string[]; settings?: Record<string, unknown> } = {}): Promise<void> {
    const r = await this.client.request("session/update", { sessionId: this.id, ...o });
    this.policyId = r.policyId;
    this.warnings = r.warnings ?? [];
  }

  decide(command: string) {
    return this.client.decide(this.id, command);
  }

  /** The effective policy of the session's next command and the settings files it came from. */
  policy(): Promise<{ policyId: string; settingsFiles: string[]; warnings: string[]; policy: Record<string, any> }> {
    return this.client.request("session/policy", { sessionId: this.id });
  }

  /** Ends the session and its running commands. */
  async close(): Promise<void> {
    await this.client.request("session/close", { sessionId: this.id });
  }
}

/** A running command: awaitable for its result. */
export class Execution implements PromiseLike<ExecResult> {
  /** @internal */
  constructor(
    private readonly client: WaveboxClient,
    readonly sessionId: string,
    readonly processId: string,
    readonly result: Promise<ExecResult>,
    private readonly stdinOpen: boolean,
  ) {}

  then<A = ExecResult, B = never>(
    ok?: ((v: ExecResult) => A | PromiseLike<A>) | null,
    bad?: ((e: any) => B | PromiseLike<B>) | null,
  ): PromiseLike<A | B> {
    return this.result.then(ok, bad);
  }

  /** Writes to the command's stdin (a command started with streaming and no stdin). */
  async write(data: string | Uint8Array): Promise<void> {
    if (!this.stdinOpen) throw new Error("this command's stdin was given at start or is not open");
    await this.client.request("command/exec/write", {
      sessionId: this.sessionId,
      processId: this.processId,
      deltaBase64: b64(data),
    });
  }

  async closeStdin(): Promise<void> {
    if (!this.stdinOpen) return;
    await this.client.request("command/exec/write", {
      sessionId: this.sessionId,
      processId: this.processId,
      closeStdin: true,
    });
  }

  /** Sends a signal to the command: "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1",
   * "SIGUSR2", "SIGCONT", "SIGWINCH"; "SIGKILL" ends the whole sandbox. */
  async kill(signal: string = "SIGTERM"): Promise<void> {
    await this.client.request("command/exec/signal", {
      sessionId: this.sessionId,
      processId: this.processId,
      signal,
    });
  }

  /** Ends the command's whole sandbox (the result says exit status 137). */
  async terminate(): Promise<void> {
    try {
      await this.client.request("command/exec/terminate", { sessionId: this.sessionId, processId: this.processId });
    } catch {
      // already ended
    }
  }
}
