/**
 * `@levelcode/hooks`: levelcode's hooks, run by the `levelcode-hooks` dispatcher. The exports
 * are those of levelcode's in-process engine (`common/src/hooks/`), so switching is a change of
 * import lines; see docs/levelcode.md in the repository for what differs.
 */
export { createHookRunner } from "./runner.js";
export type { HookRunner, HookRunnerOptions, TrustStatus } from "./runner.js";
export { parseHookDecision } from "./decision.js";
export { logToolCall, legacySignature } from "./compliance.js";
export type { ComplianceEvent } from "./compliance.js";
export { serverCounts } from "./pool.js";
export { loadHooks, getHookConfigPaths } from "./loader.js";
export type { LoadedHooks } from "./loader.js";
export { findBinary, platformPackages, BinaryNotFoundError, BINARY_ENV } from "./binary.js";
export { HOOK_EVENT_NAMES } from "./types.js";
export type {
  HookBackgroundResult,
  HookDecision,
  HookEventName,
  HookEventOutcome,
  HookHandler,
  HookHandlerOutcome,
  HookMatcher,
  HookPayload,
  HookProtocol,
  HookRunResult,
  HookSandbox,
  HookSandboxPolicy,
  HookRunDetail,
  HookDispatchResult,
  HookDispatchOutcome,
  HooksConfig,
  ProjectTrust,
} from "./types.js";
