// The few Node APIs this package uses, declared here so that it builds with TypeScript alone
// (no @types/node at build time). Only what is called, with the shapes Node documents.
declare module "node:child_process" {
  interface Readable {
    on(event: "data", fn: (chunk: Uint8Array) => void): this;
    on(event: "end" | "close", fn: () => void): this;
    setEncoding(enc: string): this;
  }
  interface Writable {
    write(data: string | Uint8Array, cb?: (err?: Error | null) => void): boolean;
    end(): void;
    on(event: "error", fn: (err: Error) => void): this;
  }
  export interface ChildProcess {
    readonly pid?: number;
    readonly stdin: Writable | null;
    readonly stdout: Readable | null;
    readonly stderr: Readable | null;
    kill(signal?: string): boolean;
    on(event: "exit", fn: (code: number | null, signal: string | null) => void): this;
    on(event: "error", fn: (err: Error) => void): this;
    unref(): void;
  }
  export function spawn(
    command: string,
    args: readonly string[],
    options?: { stdio?: unknown; env?: Record<string, string | undefined>; cwd?: string; detached?: boolean },
  ): ChildProcess;
  export function execFileSync(
    file: string,
    args: readonly string[],
    options?: { encoding: "utf8"; stdio?: unknown; env?: Record<string, string | undefined>; timeout?: number },
  ): string;
}
declare module "node:fs" {
  export function mkdtempSync(prefix: string): string;
  export function writeFileSync(path: string, data: string, options?: { mode?: number; flag?: string }): void;
  export function statSync(path: string): { isFile(): boolean };
  export function readFileSync(path: string, encoding: "utf8"): string;
  export function readdirSync(path: string): string[];
  export function rmSync(path: string, options?: { recursive?: boolean; force?: boolean }): void;
  export function existsSync(path: string): boolean;
  export function accessSync(path: string, mode?: number): void;
  export const constants: { X_OK: number };
}
declare module "node:os" {
  export function tmpdir(): string;
  export function platform(): string;
}
declare module "node:path" {
  export function join(...parts: string[]): string;
  export function resolve(...parts: string[]): string;
  export function isAbsolute(p: string): boolean;
  export const delimiter: string;
}
declare const process: {
  env: Record<string, string | undefined>;
  cwd(): string;
  platform: string;
};
declare class Buffer extends Uint8Array {
  static from(data: string | Uint8Array, encoding?: string): Buffer;
  static concat(list: readonly Uint8Array[]): Buffer;
  toString(encoding?: string): string;
}
declare function setTimeout(fn: () => void, ms: number): unknown;
declare function clearTimeout(t: unknown): void;
