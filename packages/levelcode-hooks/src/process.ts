/**
 * What every runner of this process shares: the environment the servers are started with, and
 * the notices already given to the person.
 */

/** The dispatcher's environment variables that change what it answers. */
const ENV_KEYS = [
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
  "PATH",
] as const;

let lastKey = "";
let lastExtra: Record<string, string | undefined> | undefined;
let lastEnv: Record<string, string> = {};

/**
 * The environment of the servers: the host's, with `extra` added (or, for `undefined`, removed),
 * and a key that changes when one of the variables that change an answer does. Only those are
 * compared on each call; copying the whole environment would cost more than a dispatch.
 */
export function hostEnvironment(extra?: Record<string, string | undefined>): { key: string; env: Record<string, string> } {
  let key = "";
  for (const name of ENV_KEYS) key += `${(extra && name in extra ? extra[name] : process.env[name]) ?? "\u0001"}\u0000`;
  if (key === lastKey && extra === lastExtra) return { key, env: lastEnv };
  const env: Record<string, string> = {};
  const merged: Record<string, string | undefined> = { ...process.env, ...extra };
  for (const [name, value] of Object.entries(merged)) if (value !== undefined) env[name] = value;
  lastKey = key;
  lastExtra = extra;
  lastEnv = env;
  return { key, env };
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
