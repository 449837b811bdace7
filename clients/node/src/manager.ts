import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";

import { findWavebox, shQuote } from "./locate.js";
import type { SandboxDependencyCheck, SandboxRuntimeConfig } from "./types.js";
import { SandboxViolationStore, toEvents } from "./violations.js";

/** srt's ask callback (a host on neither list). A command line from wrapWithSandbox runs on its
 * own, so such hosts are refused there (the direct API's onNetworkApproval can ask). */
export type SandboxAskCallback = (params: { host: string; port?: number }) => Promise<boolean>;

export interface InitializeOptions {
  /** The wavebox program (default: $WAVEBOX_BIN, else `wavebox` on PATH). */
  wavebox?: string;
}

interface State {
  config: SandboxRuntimeConfig;
  wavebox: string;
  dir: string;
  settingsFile: string;
  generation: number;
  reports: { file: string; command: string; id: string }[];
}

let state: State | undefined;
let serial = 0;
const store = new SandboxViolationStore();

function absolutePaths(list: unknown): unknown {
  if (!Array.isArray(list)) return list;
  // srt reads relative paths against the working directory; so does this client, when writing
  // the file wavebox reads.
  return list.map((p) =>
    typeof p === "string" && p !== "" && !isAbsolute(p) && !p.startsWith("~") ? resolve(process.cwd(), p) : p,
  );
}

/** srt's configuration as wavebox settings: always sandboxed, never degraded (srt's meaning). */
export function toWaveboxSettings(config: SandboxRuntimeConfig): Record<string, unknown> {
  const { network, filesystem, ...rest } = config;
  const fs: Record<string, unknown> = { ...filesystem };
  for (const k of ["denyRead", "allowWrite", "denyWrite", "allowRead"]) {
    if (k in fs) fs[k] = absolutePaths(fs[k]);
  }
  return {
    sandbox: {
      ...rest,
      enabled: true,
      failIfUnavailable: true,
      allowUnsandboxedCommands: false,
      network: { ...network },
      filesystem: fs,
    },
  };
}

function writeSettings(s: State, config: SandboxRuntimeConfig, name: string): string {
  const file = join(s.dir, name);
  const settings = toWaveboxSettings(config) as { sandbox: { filesystem: { denyWrite?: string[] } } };
  // This client's own directory (settings, reports) is never writable inside: what a command
  // left there would configure the next one. A new file only ("wx": never through a link).
  const fs = settings.sandbox.filesystem;
  fs.denyWrite = [...(Array.isArray(fs.denyWrite) ? fs.denyWrite : []), s.dir];
  writeFileSync(file, JSON.stringify(settings), { mode: 0o600, flag: "wx" });
  return file;
}

function need(): State {
  if (!state) throw new Error("SandboxManager.initialize() has not been called");
  return state;
}

function merge(base: SandboxRuntimeConfig, extra: Partial<SandboxRuntimeConfig>): SandboxRuntimeConfig {
  return {
    ...base,
    ...extra,
    network: { ...base.network, ...(extra.network ?? {}) },
    filesystem: { ...base.filesystem, ...(extra.filesystem ?? {}) },
  } as SandboxRuntimeConfig;
}

/** Reads the reports of the commands that have ended into the violation store. */
function collect(): void {
  const s = state;
  if (!s) return;
  const left: State["reports"] = [];
  for (const r of s.reports) {
    if (!existsSync(r.file)) {
      left.push(r);
      continue;
    }
    let outcome: any;
    try {
      if (!statSync(r.file).isFile()) throw new Error("not a file");
      outcome = JSON.parse(readFileSync(r.file, "utf8"));
    } catch {
      left.push(r); // still being written
      continue;
    }
    rmSync(r.file, { force: true });
    for (const e of toEvents(outcome.violations, r.command, r.id)) store.addViolation(e);
  }
  s.reports = left;
}

async function initialize(
  config: SandboxRuntimeConfig,
  _askCallback?: SandboxAskCallback,
  _enableLogMonitor?: boolean,
  options: InitializeOptions = {},
): Promise<void> {
  if (state) await reset();
  const wavebox = findWavebox(options.wavebox);
  const dir = mkdtempSync(join(tmpdir(), "wavebox-client-"));
  const s: State = { config, wavebox, dir, settingsFile: "", generation: 0, reports: [] };
  s.settingsFile = writeSettings(s, config, "settings-0.json");
  // The settings are checked now, as srt checks its config: a key wavebox cannot honour is an
  // error here, not at the first command.
  try {
    execFileSync(wavebox, ["doctor", "--json", "--settings", s.settingsFile], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 60000,
    });
  } catch (e: any) {
    // doctor exits 1 when no sandbox can run here (checkDependencies says why) and 125 on
    // settings it refuses.
    if (e?.status === 125) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`wavebox refused the configuration: ${String(e.stderr ?? "").trim()}`);
    }
  }
  state = s;
}

function updateConfig(newConfig: SandboxRuntimeConfig): void {
  const s = need();
  s.config = newConfig;
  s.generation++;
  s.settingsFile = writeSettings(s, newConfig, `settings-${s.generation}.json`);
}

/** The command line that runs `command` in the sandbox (spawn it with a shell, as srt's). */
async function wrapWithSandbox(
  command: string,
  binShell?: string,
  customConfig?: Partial<SandboxRuntimeConfig>,
  _abortSignal?: unknown,
): Promise<string> {
  const s = need();
  collect();
  const id = `wrap-${++serial}`;
  const settings = customConfig ? writeSettings(s, merge(s.config, customConfig), `${id}.settings.json`) : s.settingsFile;
  const report = join(s.dir, `${id}.report.json`);
  s.reports.push({ file: report, command, id });
  const head = `${shQuote(s.wavebox)} run --no-prompt --settings ${shQuote(settings)} --report-json ${shQuote(report)}`;
  return binShell ? `${head} -- ${shQuote(binShell)} -c ${shQuote(command)}` : `${head} -c ${shQuote(command)}`;
}

/** After a wrapped command has ended: its refusals join the store. */
function cleanupAfterCommand(): void {
  collect();
}

function getSandboxViolationStore(): SandboxViolationStore {
  return store;
}

/** stderr with the command's refusals appended, unless wavebox's block is there already. */
function annotateStderrWithSandboxFailures(command: string, stderr: string): string {
  collect();
  if (stderr.includes("<sandbox_violations>")) return stderr;
  const mine = store.getViolationsForCommand(command);
  if (mine.length === 0) return stderr;
  const sep = stderr === "" || stderr.endsWith("\n") ? "" : "\n";
  return `${stderr}${sep}<sandbox_violations>\n${mine.map((v) => v.line).join("\n")}\n</sandbox_violations>`;
}

/** What wavebox needs here, from `wavebox doctor --json`. */
function checkDependencies(options: InitializeOptions = {}): SandboxDependencyCheck {
  let wavebox: string;
  try {
    wavebox = state?.wavebox ?? findWavebox(options.wavebox);
  } catch (e: any) {
    return { errors: [String(e.message)], warnings: [] };
  }
  let text = "";
  try {
    text = execFileSync(wavebox, ["doctor", "--json"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 60000 });
  } catch (e: any) {
    text = String(e?.stdout ?? "");
  }
  let d: any = {};
  try {
    d = JSON.parse(text);
  } catch {
    return { errors: ["wavebox doctor --json gave no report"], warnings: [] };
  }
  const errors: string[] = [];
  const warnings: string[] = Array.isArray(d.warnings) ? d.warnings.map(String) : [];
  if (d.bwrap && d.bwrap.found === false) errors.push(`bubblewrap is missing${d.bwrap.hint ? ": " + d.bwrap.hint : ""}`);
  if (d.userNamespaces && d.userNamespaces.ok === false) errors.push(`user namespaces: ${d.userNamespaces.reason}`);
  if (d.sandboxUsable === false && errors.length === 0) errors.push("no sandbox can run here (wavebox doctor)");
  return { errors, warnings };
}

function isSupportedPlatform(platform: string = process.platform): boolean {
  return platform === "linux" || platform === "darwin";
}

function isSandboxingEnabled(): boolean {
  return state !== undefined;
}

function getConfig(): SandboxRuntimeConfig | undefined {
  return state?.config;
}

/** Forgets the configuration and removes this client's files. */
async function reset(): Promise<void> {
  collect();
  if (state) rmSync(state.dir, { recursive: true, force: true });
  state = undefined;
}

function pendingReports(): number {
  return state ? readdirSync(state.dir).filter((f) => f.endsWith(".report.json")).length : 0;
}

/** srt's SandboxManager, backed by `wavebox run`: swap the import, keep the calls. */
export const SandboxManager = {
  initialize,
  updateConfig,
  wrapWithSandbox,
  cleanupAfterCommand,
  getSandboxViolationStore,
  annotateStderrWithSandboxFailures,
  checkDependencies,
  isSupportedPlatform,
  isSandboxingEnabled,
  getConfig,
  reset,
  /** @internal for tests */
  pendingReports,
} as const;
