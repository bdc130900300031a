/**
 * The dispatcher's answer (contract §7, §11, §13), read into a `HookDispatchOutcome`, and the
 * fail-open outcome that stands for an answer that never came.
 */
import type { HookBackgroundResult, HookDispatchOutcome, HookDispatchResult, ProjectTrust } from "./types.js";

type Json = Record<string, unknown>;

const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
const num = (value: unknown): number | null => (typeof value === "number" ? value : null);
const isObject = (value: unknown): value is Json =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/** The outcome of an event whose answer could not be had: proceed, and say why. */
export function failOpen(warning: string): HookDispatchOutcome {
  return { blocked: false, additionalContext: "", results: [], decision: "proceed", warnings: [warning], durationMs: 0 };
}

function handlerResult(handler: Json): HookDispatchResult {
  const outcome = str(handler.outcome) ?? "error";
  const message = str(handler.message) ?? null;
  return {
    label: str(handler.label) ?? "",
    exitCode: num(handler.exit_code),
    stdout: str(handler.stdout) ?? "",
    stderr: str(handler.stderr) ?? "",
    timedOut: outcome === "timeout",
    spawnError: outcome === "spawn_error" ? (message ?? "the handler could not be started") : undefined,
    outcome,
    durationMs: num(handler.duration_ms),
    layer: str(handler.layer) ?? "",
    source: str(handler.source) ?? null,
    matcher: str(handler.matcher) ?? null,
    signal: num(handler.signal),
    httpStatus: num(handler.http_status),
    stdoutTruncated: handler.stdout_truncated === true,
    stderrTruncated: handler.stderr_truncated === true,
    message,
    rewroteInput: handler.rewrote_input === true,
  };
}

function backgroundResult(ended: Json): HookBackgroundResult {
  const result: HookBackgroundResult = {
    label: str(ended.label) ?? "",
    event: str(ended.event) ?? "",
    outcome: str(ended.outcome) ?? "error",
    exitCode: num(ended.exit_code),
    signal: num(ended.signal),
    durationMs: num(ended.duration_ms) ?? 0,
    layer: str(ended.layer) ?? "",
    source: str(ended.source) ?? null,
    message: str(ended.message) ?? null,
  };
  const context = str(ended.additionalContext);
  if (context !== undefined) result.additionalContext = context;
  const systemMessage = str(ended.system_message);
  if (systemMessage !== undefined) result.systemMessage = systemMessage;
  const warning = str(ended.warning);
  if (warning !== undefined) result.warning = warning;
  return result;
}

function projectTrust(value: unknown): ProjectTrust | undefined {
  if (!isObject(value)) return undefined;
  const trust: ProjectTrust = {
    state: str(value.state) ?? "untrusted",
    digest: str(value.digest) ?? "",
    path: str(value.path) ?? "",
    handlers: num(value.handlers) ?? 0,
  };
  const layer = str(value.layer);
  if (layer !== undefined) trust.layer = layer;
  return trust;
}

/**
 * Reads one answer object. An `{"error": ...}` answer (the dispatcher refused the payload) is
 * fail-open with the error as a warning, as every code but a block is "proceed" for callers.
 */
export function outcomeFromAnswer(answer: Json): HookDispatchOutcome {
  const error = str(answer.error);
  if (error !== undefined) return failOpen(`levelcode-hooks: ${error}`);

  const decision = answer.decision === "block" || answer.decision === "ask" ? answer.decision : "proceed";
  const outcome: HookDispatchOutcome = {
    blocked: decision !== "proceed",
    additionalContext: str(answer.additionalContext) ?? "",
    results: Array.isArray(answer.handlers) ? answer.handlers.filter(isObject).map(handlerResult) : [],
    decision,
    warnings: Array.isArray(answer.warnings) ? answer.warnings.filter((w): w is string => typeof w === "string") : [],
    durationMs: num(answer.duration_ms) ?? 0,
  };
  const reason = str(answer.reason);
  if (reason !== undefined) outcome.reason = reason;
  if (isObject(answer.updated_input)) outcome.updatedInput = answer.updated_input;
  if (isObject(answer.stop)) outcome.stop = { reason: str(answer.stop.reason) ?? "" };
  const systemMessage = str(answer.system_message);
  if (systemMessage !== undefined) outcome.systemMessage = systemMessage;
  const sessionEnv = str(answer.session_env);
  if (sessionEnv !== undefined) outcome.sessionEnv = sessionEnv;
  const trust = projectTrust(answer.project_trust);
  if (trust) outcome.projectTrust = trust;
  if (Array.isArray(answer.background)) outcome.background = answer.background.filter(isObject).map(backgroundResult);
  if (answer.interrupted === true) outcome.warnings.push("levelcode-hooks: the dispatch was interrupted");
  return outcome;
}
