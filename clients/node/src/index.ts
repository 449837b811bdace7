export { SandboxManager, toWaveboxSettings } from "./manager.js";
export type { SandboxAskCallback, InitializeOptions } from "./manager.js";
export { SandboxViolationStore } from "./violations.js";
export { WaveboxClient, Session, Execution, WaveboxError } from "./client.js";
export type { ClientOptions, SessionOptions } from "./client.js";
export { findWavebox } from "./locate.js";
export type {
  SandboxRuntimeConfig,
  SandboxViolationEvent,
  SandboxDependencyCheck,
  ExecOptions,
  ExecResult,
  NetworkApprovalRequest,
  NetworkApprovalDecision,
} from "./types.js";
