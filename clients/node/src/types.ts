/** srt's configuration (sandbox-runtime's SandboxRuntimeConfig): the keys wavebox reads with
 * srt's meaning. Keys wavebox cannot honour (a MITM proxy, a parent proxy) are refused by
 * wavebox with the reason, never ignored. */
export interface SandboxRuntimeConfig {
  network: {
    allowedDomains: string[];
    deniedDomains: string[];
    allowUnixSockets?: string[];
    allowAllUnixSockets?: boolean;
    allowLocalBinding?: boolean;
    [key: string]: unknown;
  };
  filesystem: {
    denyRead: string[];
    allowWrite: string[];
    denyWrite: string[];
    allowRead?: string[];
    [key: string]: unknown;
  };
  ignoreViolations?: Record<string, string[]>;
  enableWeakerNestedSandbox?: boolean;
  [key: string]: unknown;
}

/** One refused operation, as wavebox reports it (docs/outcome.schema.json), with what srt's
 * events carry. */
export interface SandboxViolationEvent {
  /** `deny file-write /tmp/x`, as in the `<sandbox_violations>` block. */
  line: string;
  /** file-read, file-write, network-outbound, dns, memory, ... */
  operation?: string;
  target?: string;
  reason?: string;
  /** What programs act on: policy, protected, not-allowed, denied-host, ... */
  code?: string;
  /** The settings entry that decided, when one did. */
  rule?: string | null;
  command?: string;
  encodedCommand?: string;
  executionId?: string;
  timestamp: Date;
}

export interface SandboxDependencyCheck {
  errors: string[];
  warnings: string[];
}

/** The outcome of one command (serve's command/exec answer). */
export interface ExecResult {
  exitCode: number;
  signal?: string;
  sandboxed: boolean;
  decision: string;
  rule: string | null;
  reason: string;
  violations: SandboxViolationEvent[];
  violationsNotListed: number;
  /** Collected output (also when streamed through onStdout/onStderr). */
  stdout: Uint8Array;
  stderr: Uint8Array;
  outputTruncated?: boolean;
  elapsedMs: number;
  processId: string;
  policyId?: string;
  timings?: Record<string, unknown>;
}

export interface ExecOptions {
  /** The command's directory (inside the session's). */
  cwd?: string;
  env?: Record<string, string>;
  /** All of stdin at once (default: empty). */
  stdin?: string | Uint8Array;
  /** No stdin given: keep it open for Execution.write() until closeStdin(). */
  keepStdinOpen?: boolean;
  timeoutMs?: number;
  onStdout?: (chunk: Uint8Array) => void;
  onStderr?: (chunk: Uint8Array) => void;
  /** Each refusal as it happens (the result lists them all again at the end). */
  onViolation?: (v: SandboxViolationEvent) => void;
  /** What wavebox says while it plans and runs the command ("warning" | "error"). */
  onMessage?: (level: string, message: string) => void;
  /** The user approved an ask rule for this command. */
  approve?: boolean;
  dangerouslyDisableSandbox?: boolean;
  /** Ends the command's whole sandbox when aborted (the answer then says exit 137). */
  signal?: { aborted: boolean; addEventListener(type: "abort", fn: () => void): void };
}

/** A host on neither list of a session, asked about while a command connects. */
export interface NetworkApprovalRequest {
  sessionId: string;
  processId: string;
  host: string;
  port: number;
}
export type NetworkApprovalDecision = "accept" | "acceptForSession" | "decline";
