/**
 * What every runner of this process shares: the environment the servers are started with, and
 * the notices already given to the person.
 */

/**
 * The environment variables that change what the dispatcher answers: its `ANSWER_VARS`
 * (src/environment.rs), `PATH`, and `LEVELCODE_HOOKS_BINARY`, which says which binary answers.
 * Servers are pooled, and answers kept, under their values; tests/client_agreement.rs fails when
 * this list and the dispatcher's differ.
 */
export const ENV_KEYS = [
  "HOME",
  "LEVELCODE_DIR",
  "LEVELCODE_HOOKS",
  "LEVELCODE_HOOKS_NO_PROJECT",
  "LEVELCODE_HOOKS_DEPTH",
  "LEVELCODE_HOOKS_LOG",
  "LEVELCODE_TEAM",
  "LEVELCODE_TRUST_PROJECT_HOOKS",
  "NEXT_PUBLIC_CB_ENVIRONMENT",
  "LEVELCODE_HOOKS_BINARY",
  "LEVELCODE_MANAGED_SETTINGS",
  "PATH",
  "ProgramData",
] as const;

/**
 * The variables that say a process descends from the agent's tool calls or a hook: levelcode's
 * own, which the dispatcher also sets for every handler, and Claude Code's (the dispatcher's
 * `AGENT` in src/environment.rs; tests/client_agreement.rs checks them).
 */
export const AGENT_MARKS = [
  "LEVELCODE_AGENT",
  "CLAUDECODE",
] as const;

/**
 * The first of `AGENT_MARKS` that is on (`1`, `true`, `on`, any case) in this process's own
 * environment, as `levelcode-hooks trust` tells it; null when none is.
 */
export function agentMark(): string | null {
  for (const name of AGENT_MARKS) {
    const value = process.env[name]?.trim().toLowerCase();
    if (value === "1" || value === "true" || value === "on") return name;
  }
  return null;
}

let lastValues: Array<string | undefined> = [];
let lastExtra: Record<string, string | undefined> | undefined;
let last: { key: string; env: Record<string, string> } = { key: "", env: {} };

/**
 * The environment of the servers: the host's, with `extra` added (or, for `undefined`, removed),
 * and a key that changes when one of the variables that change an answer does. Only those are
 * compared on each call, value by value; copying the whole environment would cost more than a
 * dispatch.
 */
export function hostEnvironment(extra?: Record<string, string | undefined>): { key: string; env: Record<string, string> } {
  if (extra === undefined && lastExtra === undefined && lastValues.length === ENV_KEYS.length && unchanged(process.env, lastValues)) return last;
  let same = extra === lastExtra && lastValues.length === ENV_KEYS.length;
  if (same) {
    for (let i = 0; i < ENV_KEYS.length; i++) {
      const name = ENV_KEYS[i]!;
      if ((extra && name in extra ? extra[name] : process.env[name]) !== lastValues[i]) {
        same = false;
        break;
      }
    }
    if (same) return last;
  }
  const values = ENV_KEYS.map((name) => (extra && name in extra ? extra[name] : process.env[name]));
  const key = values.map((value) => `${value ?? "\u0001"}\u0000`).join("");
  if (key !== last.key) {
    const env: Record<string, string> = {};
    const merged: Record<string, string | undefined> = { ...process.env, ...extra };
    // The servers keep the mark of a process started by the agent (AGENT_MARKS): their `trust`
    // refuses then, as the client's own `trust()` does (docs/trust.md).
    for (const [name, value] of Object.entries(merged)) if (value !== undefined) env[name] = value;
    last = { key, env };
  }
  lastValues = values;
  lastExtra = extra;
  return last;
}

/**
 * Whether each of ENV_KEYS has the value of `values` (in that order) in `env`. Written out name
 * by name: a property read by a name known in advance is some forty times cheaper in Bun's
 * `process.env` than one by a computed name, and this runs on every call (test/differs.test.ts
 * checks that it reads every name of ENV_KEYS).
 */
export function unchanged(env: Record<string, string | undefined>, values: ReadonlyArray<string | undefined>): boolean {
  return (
    env.HOME === values[0] &&
    env.LEVELCODE_DIR === values[1] &&
    env.LEVELCODE_HOOKS === values[2] &&
    env.LEVELCODE_HOOKS_NO_PROJECT === values[3] &&
    env.LEVELCODE_HOOKS_DEPTH === values[4] &&
    env.LEVELCODE_HOOKS_LOG === values[5] &&
    env.LEVELCODE_TEAM === values[6] &&
    env.LEVELCODE_TRUST_PROJECT_HOOKS === values[7] &&
    env.NEXT_PUBLIC_CB_ENVIRONMENT === values[8] &&
    env.LEVELCODE_HOOKS_BINARY === values[9] &&
    env.LEVELCODE_MANAGED_SETTINGS === values[10] &&
    env.PATH === values[11] &&
    env.ProgramData === values[12]
  );
}

const keyIds = new Map<string, number>();
/** A short stand-in for an environment key, for keys built on every call. */
export function keyId(key: string): number {
  let id = keyIds.get(key);
  if (id === undefined) {
    id = keyIds.size + 1;
    keyIds.set(key, id);
  }
  return id;
}

/** When (`performance.now()`) a server last went busy, and when the last one went idle. */
let busyAt = 0;
let idleAt = -1;
/** Within this of the servers going idle, a callback is taken to run in the same turn. */
const SAME_TURN_MS = 2;

/** A server has a request out that someone waits for (server.ts). */
export function noteServerBusy(): void {
  busyAt = performance.now();
}

/** A server has no request out any more (server.ts). */
export function noteServerIdle(): void {
  idleAt = performance.now();
}

/**
 * Whether this may be the event loop's last turn: an answer just left the servers with nothing
 * out, in this very turn as far as a clock can tell, and the host may have nothing else to do.
 * Callbacks still due then run in that turn before the process exits, so work that can wait
 * (watching folders, remembering an answer) is put off from it to a later turn, if there is one.
 */
export function mayBeLastTurn(): boolean {
  return idleAt >= busyAt && performance.now() - idleAt < SAME_TURN_MS;
}

let callerRecords = false;

/**
 * `logToolCall` of this package is in use in this process: from its first call on, every
 * `PostToolUse` tells the dispatcher that the caller records the call (docs/serve.md,
 * `caller_records_compliance`), so that a team's tool call gets one compliance line, the one
 * `logToolCall` writes, whatever `LEVELCODE_TEAM` says. levelcode's tool executor calls
 * `logToolCall` before it awaits the call's `PostToolUse`, so its first call is covered too.
 */
export function markCallerRecordsCompliance(): void {
  callerRecords = true;
}

/** Whether `logToolCall` of this package has been called in this process (see above). */
export function callerRecordsCompliance(): boolean {
  return callerRecords;
}

const told = new Set<string>();
const pending: string[] = [];

/** Something the person should learn at the next SessionStart (a compliance line not written). */
export function noteForPerson(warning: string): void {
  pending.push(warning);
}

/**
 * The lines a SessionStart outcome adds for the person: each warning (hooks that did not run for
 * want of trust, a settings file that could not be read, a dispatcher that could not be reached)
 * that this process has not told yet, and what happened since the last SessionStart. Said once
 * per process: a warning already told is not repeated.
 */
export function noticesFor(warnings: string[]): string[] {
  const lines: string[] = [];
  for (const warning of [...warnings, ...pending.splice(0)]) {
    if (told.has(warning)) continue;
    told.add(warning);
    lines.push(warning.startsWith("levelcode-hooks") ? warning : `levelcode-hooks: ${warning}`);
  }
  return lines;
}
