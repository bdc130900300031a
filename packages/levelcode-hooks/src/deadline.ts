/**
 * When a request has taken too long: its handlers' own time limits, as the settings (or the
 * dispatcher's `list`) give them, plus a margin. A request is only timed once it is slow, so a
 * quick answer never costs a `list`.
 */
import { listArgs, listAsync } from "./loader.js";
import type { HookPayload, HooksConfig } from "./types.js";

type Json = Record<string, unknown>;
type Unrefable = { unref?: () => void };

/** A request unanswered this long gets its time limit worked out from what it runs. */
const SLOW_MS = 1000;
/** A handler may cost its timeout plus about 1.5 s (contract §6). */
const PER_HANDLER_GRACE_MS = 1500;
const DEFAULT_TIMEOUT_S = 10;
const MAX_TIMEOUT_S = 600;

function clampTimeout(value: unknown): number {
  if (typeof value !== "number" || !(value > 0)) return DEFAULT_TIMEOUT_S;
  return Math.min(value, MAX_TIMEOUT_S);
}

/** What a request's time limit is worked out from. */
export type Limits = {
  /** The runner's inline configuration, when it has one. */
  hooks: HooksConfig | undefined;
  /** The environment the dispatcher runs in. */
  env: Record<string, string>;
  /** Added to the handlers' own time limits (`hangMarginMs`). */
  margin: number;
};

/** The longest the handlers of this event may take, in ms; `null` when it cannot be known. */
async function handlersBoundMs(limits: Limits, bin: string, event: string, payload: HookPayload): Promise<number | null> {
  const reads = payload.tool_name === "read_files" && Array.isArray(payload.tool_input?.paths) ? Math.max(1, payload.tool_input.paths.length) : 1;
  if (limits.hooks) {
    let total = 0;
    for (const group of limits.hooks[event] ?? []) {
      for (const handler of group?.hooks ?? []) total += clampTimeout(handler?.timeout) * 1000 + PER_HANDLER_GRACE_MS;
    }
    return total * reads;
  }
  const listing = await listAsync(bin, listArgs(payload.cwd, event, payload.tool_name), limits.env);
  if (typeof listing === "string" || !Array.isArray(listing.handlers)) return null;
  let total = 0;
  for (const handler of listing.handlers as Json[]) {
    if (handler.state === "would_run") total += clampTimeout(handler.timeout) * 1000 + PER_HANDLER_GRACE_MS;
  }
  return total * reads;
}

/**
 * Calls `onHung` once the request has run past its handlers' time limits plus the margin.
 * `waiting()` says whether it may still be queued behind an older request (a server that answers
 * in order): then the clock starts again instead. Returns what stops the watch.
 */
export function watchdog(limits: Limits, bin: string, event: string, payload: HookPayload, waiting: () => boolean, onHung: (ms: number) => void): () => void {
  let started = Date.now();
  let done = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = (limit: number) => {
    timer = setTimeout(() => {
      if (done) return;
      if (waiting()) {
        started = Date.now();
        arm(limit);
      } else onHung(limit);
    }, Math.max(0, started + limit - Date.now()));
    (timer as Unrefable).unref?.();
  };
  timer = setTimeout(async () => {
    const bound = await handlersBoundMs(limits, bin, event, payload);
    if (done) return;
    arm((bound ?? (MAX_TIMEOUT_S * 1000 + PER_HANDLER_GRACE_MS) * 16) + limits.margin);
  }, Math.min(SLOW_MS, limits.margin));
  (timer as Unrefable).unref?.();
  return () => {
    done = true;
    clearTimeout(timer);
  };
}
