import type { SandboxViolationEvent } from "./types.js";

/** The command's key in the store: its bytes in base64, as srt keys them. */
export function encodeCommand(command: string): string {
  return Buffer.from(command, "utf8").toString("base64");
}

/** wavebox's refusals (docs/outcome.schema.json's violations) as events of one command. */
export function toEvents(list: any[] | undefined, command: string, executionId: string): SandboxViolationEvent[] {
  const when = new Date();
  return (list ?? []).map((v) => ({
    line: String(v.line ?? ""),
    operation: v.operation,
    target: v.target,
    reason: v.reason,
    code: v.code,
    rule: v.rule ?? null,
    command,
    encodedCommand: encodeCommand(command),
    executionId,
    timestamp: when,
  }));
}

type Listener = (violations: SandboxViolationEvent[]) => void;

/** The latest refusals, newest last, with listeners: srt's SandboxViolationStore shape. */
export class SandboxViolationStore {
  private events: SandboxViolationEvent[] = [];
  private total = 0;
  private readonly listeners = new Set<Listener>();
  private readonly perExecution = new Map<string, Set<(v: SandboxViolationEvent) => void>>();

  constructor(private readonly maxSize = 500) {}

  addViolation(v: SandboxViolationEvent): void {
    this.events.push(v);
    this.total++;
    if (this.events.length > this.maxSize) this.events.splice(0, this.events.length - this.maxSize);
    const snapshot = this.getViolations();
    for (const l of this.listeners) l(snapshot);
    if (v.executionId) for (const l of this.perExecution.get(v.executionId) ?? []) l(v);
  }

  getViolations(limit?: number): SandboxViolationEvent[] {
    return limit === undefined ? [...this.events] : this.events.slice(-limit);
  }

  getCount(): number {
    return this.events.length;
  }

  /** Every violation ever added, cleared ones included. */
  getTotalCount(): number {
    return this.total;
  }

  getViolationsForCommand(command: string): SandboxViolationEvent[] {
    const key = encodeCommand(command);
    return this.events.filter((v) => v.encodedCommand === key);
  }

  getViolationsForExecution(executionId: string): SandboxViolationEvent[] {
    return this.events.filter((v) => v.executionId === executionId);
  }

  clear(): void {
    this.events = [];
    const snapshot = this.getViolations();
    for (const l of this.listeners) l(snapshot);
  }

  /** Called at once with what is there, then on every change; returns the unsubscribe. */
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    listener(this.getViolations());
    return () => {
      this.listeners.delete(listener);
    };
  }

  subscribeToExecution(executionId: string, listener: (v: SandboxViolationEvent) => void): () => void {
    let set = this.perExecution.get(executionId);
    if (!set) this.perExecution.set(executionId, (set = new Set()));
    set.add(listener);
    return () => {
      set!.delete(listener);
      if (set!.size === 0) this.perExecution.delete(executionId);
    };
  }
}
