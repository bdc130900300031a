/**
 * Reading a handler's reply: the JSON object a handler may print on stdout (contract §6, §11).
 * The dispatcher reads it itself; this function is for callers that run a script of their own
 * and want the same reading.
 */
import type { HookDecision } from "./types.js";

/** The part of a handler's stdout the dispatcher keeps; a reply longer than this is cut short. */
const KEPT_STDOUT_BYTES = 64 * 1024;

/**
 * Returns the decision in a handler's stdout, or `null` when stdout is not a JSON object carrying
 * one. Plain text, JSON that is not an object, and an object without any known member are all
 * `null`; nothing throws. Unlike the in-process engine, a reply up to 64 KiB is read (it ignored
 * anything over 16 KiB), and `ask`, `updatedInput`, `continue`, `stopReason` and `systemMessage`
 * are read too.
 */
export function parseHookDecision(stdout: string): HookDecision | null {
  const trimmed = stdout.trim();
  if (!trimmed.startsWith("{")) return null;
  if (trimmed.length > KEPT_STDOUT_BYTES && new TextEncoder().encode(stdout).length > KEPT_STDOUT_BYTES) {
    return null;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch {
    return null;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return null;
  const reply = parsed as Record<string, unknown>;
  const decision: HookDecision = {};
  if (reply.decision === "block" || reply.decision === "allow" || reply.decision === "ask") {
    decision.decision = reply.decision;
  }
  if (typeof reply.reason === "string") decision.reason = reply.reason;
  if (typeof reply.additionalContext === "string") decision.additionalContext = reply.additionalContext;
  const input = reply.updatedInput;
  if (input !== null && typeof input === "object" && !Array.isArray(input)) {
    decision.updatedInput = input as Record<string, unknown>;
  }
  if (typeof reply.continue === "boolean") decision.continue = reply.continue;
  if (typeof reply.stopReason === "string") decision.stopReason = reply.stopReason;
  if (typeof reply.systemMessage === "string") decision.systemMessage = reply.systemMessage;
  return Object.keys(decision).length === 0 ? null : decision;
}
