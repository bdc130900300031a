/**
 * `createHookRunner`: levelcode's hook runner, answered by the dispatcher. Events go to the
 * process's pool of long-lived `levelcode-hooks serve` processes (pool.ts), shared by every
 * runner; the first is started when the first runner is created. Each request is written to a
 * server before `runEvent` returns its promise, so an event fired without `await` just before
 * the host exits still runs its handlers. When `serve` cannot start, each event is one
 * `levelcode-hooks run`.
 *
 * Nothing here rejects: a missing binary, a server that dies, hangs or answers garbage, all
 * resolve fail-open (proceed) with a warning, as any handler fault does.
 *
 * This file is the transport and the wiring: which binary, which pool and server, the request
 * line, the watchdog (deadline.ts), the fallback (oneshot.ts). What is remembered of the
 * answers, and which calls are answered from memory, is `AnswerMemory`'s (memory.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { failOpen, outcomeFromAnswer } from "./answer.js";
import { findBinary } from "./binary.js";
import type { CacheStats } from "./cache.js";
import { watchdog, type Limits } from "./deadline.js";
import { inotifyLoaded } from "./inotify.js";
import { AnswerMemory, type Call, type Settle } from "./memory.js";
import { runOnce } from "./oneshot.js";
import { newId, poolFor, type Pool } from "./pool.js";
import {
  agentMark,
  callerRecordsCompliance,
  hostEnvironment,
  keyId,
  noteForPerson,
  noticesFor,
} from "./process.js";
import type { Reply, Server } from "./server.js";
import type { HookEventName, HookDispatchOutcome, HookPayload, HooksConfig, ProjectTrust } from "./types.js";

type Json = Record<string, unknown>;

/** `run`'s flag for `options.caller_records_compliance` (docs/serve.md). */
const CALLER_RECORDS_FLAG = "--caller-records-compliance";

export type HookRunnerOptions = {
  /** An inline configuration used instead of every settings layer (no trust needed). */
  hooks?: HooksConfig | undefined;
  /** Called once for each distinct settings warning (again after `invalidate()`). */
  onConfigWarning?: ((warning: string) => void) | undefined;
  /**
   * Accepted for compatibility with the in-process engine and not used: handlers are started by
   * the dispatcher, which runs them in their own process groups with kill-on-timeout.
   */
  spawnImpl?: unknown;
  /** Variables added to (or, when `undefined`, removed from) the dispatcher's environment. */
  env?: Record<string, string | undefined> | undefined;
  /** The binary to run, instead of looking for one. */
  binary?: string | undefined;
  /** Accepted for compatibility and not used: idle servers end by themselves (`idleMs`). */
  maxIdleServers?: number | undefined;
  /** `serve` processes at most in this process's pool, for this binary and environment (default 4). */
  maxServers?: number | undefined;
  /** A server with no request out for this long ends by itself (default 30 000 ms). */
  idleMs?: number | undefined;
  /** Added to the handlers' own time limits before a server is declared hung (default 2000 ms). */
  hangMarginMs?: number | undefined;
  /**
   * Remember the events that matched nothing and answer them again from memory, dropping that
   * memory on any change of the files behind them (default true; Linux under Bun only, where
   * the files can be watched synchronously; elsewhere every event goes to the dispatcher).
   */
  noMatchCache?: boolean | undefined;
  /** A server that has not answered its first line within this time is given up (default 10 s). */
  startTimeoutMs?: number | undefined;
};

/** The trust state of a project's hooks, as `trust --status --json` reports it (contract §13). */
export type TrustStatus = ProjectTrust & {
  /** Each project handler, where it is written and what it runs: what the person is asked about. */
  hooks?: Array<{ event: string; path: string; matcher: string | null; command: string | null; argv: string[] | null; enabled: boolean }>;
  /** Each file inside the project that a handler names, with its hash. */
  scripts?: Array<{ path: string; hash: string }>;
  [key: string]: unknown;
};

export function createHookRunner(options: HookRunnerOptions = {}) {
  const margin = options.hangMarginMs ?? 2000;
  let inlineJson = options.hooks ? JSON.stringify(options.hooks) : null;
  let settingsDir: string | null = null;
  let settingsFile: string | null = null;
  let binary: string | null = null;
  let binaryError: string | null = null;
  let serveFailure: string | null = null;
  let reportedServeFailure = false;
  /** `run` takes `--caller-records-compliance`: taken to be so until it refuses the flag. */
  let runKnowsCallerRecords = true;
  let closed = false;
  const seenWarnings = new Set<string>();
  /** undefined: not decided yet; null: off or unavailable. */
  let memory: AnswerMemory | null | undefined = options.noMatchCache === false ? null : undefined;
  /**
   * The sessions (`sessionOf`) whose background handlers still run, or whose results wait, in
   * the dispatcher, with the server that keeps them (null: a `run`'s). None of their calls is
   * answered from memory, and each goes to that server while it lives, since the answer that
   * hands a result on must come from it (contract §21). A session goes in when an answer starts
   * a background handler or says `background_pending`, and out when its server's answer no
   * longer says so; meanwhile that server does not end for being idle.
   */
  const backgroundSessions = new Map<string, Server | null>();

  let envKey = "";
  let envId = 0;
  let env: Record<string, string> = {};
  let pool: Pool | null = null;
  /** The pools this runner has used, released by `close()`. */
  const held = new Set<Pool>();

  function environment(): void {
    const host = hostEnvironment(options.env);
    if (host.key === envKey) return;
    envKey = host.key;
    envId = keyId(envKey);
    env = host.env;
    binary = null;
    binaryError = null;
    pool = null;
    memory?.environment(envKey, envId, env);
  }

  function findOnce(): string | null {
    if (binary || binaryError) return binary;
    try {
      binary = options.binary ?? findBinary({ env });
    } catch (error) {
      binaryError = error instanceof Error ? error.message : String(error);
    }
    return binary;
  }

  function poolOf(bin: string): Pool {
    if (pool && pool.binary === bin) return pool;
    pool = poolFor(bin, envKey, env);
    if (!held.has(pool)) {
      held.add(pool);
      pool.hold();
    }
    pool.configure({ maxServers: options.maxServers, idleMs: options.idleMs, startTimeoutMs: options.startTimeoutMs });
    return pool;
  }

  /** The inline configuration as a settings file, for binaries and modes without `options.hooks`. */
  function inlineSettingsFile(): string {
    if (settingsFile) return settingsFile;
    settingsDir ??= mkdtempSync(join(tmpdir(), "levelcode-hooks-inline-"));
    settingsFile = join(settingsDir, `settings-${newId()}.json`);
    writeFileSync(settingsFile, `{"hooks":${inlineJson}}`, { mode: 0o600 });
    return settingsFile;
  }

  /** What the time limit of a request going out now is worked out from (deadline.ts). */
  function limits(): Limits {
    return { hooks: options.hooks, env, margin };
  }

  /** The payload as handlers get it: `event` set, a payload's own `id` and `options` left out. */
  function payloadJson(event: string, payload: HookPayload): string {
    if (payload.event === event && !("id" in payload) && !("options" in payload)) return JSON.stringify(payload);
    const { id: _id, options: _options, ...rest } = payload;
    return JSON.stringify({ ...rest, event });
  }

  function requestLine(event: string, json: string, id: number, server: Server, watch: boolean): string {
    let options = "";
    if (inlineJson !== null) {
      options = server.inline ? `"hooks":${inlineJson}` : `"settings":${JSON.stringify([inlineSettingsFile()])}`;
    } else if (watch && server.watch) options = `"watch":true`;
    if (event === "PostToolUse" && server.callerRecords && callerRecordsCompliance()) {
      options += `${options ? "," : ""}"caller_records_compliance":true`;
    }
    const member = options ? `,"options":{${options}}` : "";
    return `{"id":${id}${member}${json.length > 2 ? "," : ""}${json.slice(1)}\n`;
  }

  /** Decides, once the C library's inotify calls are loaded, whether answers are remembered. */
  function memoryNow(): AnswerMemory | null {
    if (memory === undefined && inotifyLoaded()) {
      memory = AnswerMemory.open();
      memory?.environment(envKey, envId, env);
      if (memory) memory.inline = inlineJson !== null;
    }
    return memory ?? null;
  }

  /**
   * Everything up to the request's write happens before this returns: the promise it gives is
   * that of an event already on its way.
   */
  function dispatch(event: string, payload: HookPayload): Promise<HookDispatchOutcome> {
    environment();
    const bin = findOnce();
    if (!bin) return Promise.resolve(finish(event, { kind: "fault", warning: binaryError ?? "", neverStarted: false }));
    const known = memoryNow();
    const call = known && !backgroundSessions.has(sessionOf(payload)) ? known.callOf(event, payload) : null;
    if (!known || !call) return send(bin, event, payload, null);
    const hit = known.recall(bin, call);
    if (hit) return Promise.resolve(hit);
    const ahead = known.ahead(call);
    if (ahead) return ahead.then((answer) => answer ?? send(bin, event, payload, { memory: known, call }));
    return known.track(call, (settle) => send(bin, event, payload, { memory: known, call, settle }));
  }

  /** The quiet requests of `AnswerMemory.probe`, sent when the runner is made. */
  function probe(bin: string): void {
    const known = memoryNow();
    if (!known || inlineJson !== null || serveFailure !== null) return;
    known.probe(bin, process.cwd(), (event, payload) => {
      const chosen = poolOf(bin);
      const server = chosen.pick();
      if (!server.watch) return null;
      const id = newId();
      const caller = event === "PostToolUse" && server.callerRecords && callerRecordsCompliance() ? `,"caller_records_compliance":true` : "";
      const line = `{"id":${id},"options":{"watch":true,"probe":true${caller}},${payloadJson(event, payload).slice(1)}\n`;
      return { reply: chosen.send(server, line, id, true), wake: () => server.wake(id) };
    });
  }

  /** Writes the request to a server before returning (see `dispatch`); `into` remembers its answer. */
  function send(
    bin: string,
    event: string,
    payload: HookPayload,
    into: { memory: AnswerMemory; call: Call; settle?: Settle } | null,
  ): Promise<HookDispatchOutcome> {
    const learn = into ? into.memory.outgoing(bin, into.call, into.settle) : null;
    const remember = (reply: Reply, outcome: HookDispatchOutcome): HookDispatchOutcome => {
      learn?.(reply, outcome);
      return outcome;
    };
    const json = payloadJson(event, payload);
    if (serveFailure === null) {
      const chosen = poolOf(bin);
      const keeper = backgroundSessions.get(sessionOf(payload));
      const server = keeper?.alive ? keeper : chosen.pick();
      const id = newId();
      const line = requestLine(event, json, id, server, learn !== null);
      const stop = watchdog(limits(), bin, event, payload, () => !server.concurrent && !server.isOldest(id), (ms) =>
        server.kill(`levelcode-hooks serve gave no answer within ${ms} ms; it was stopped and will be replaced`),
      );
      const answered = chosen.send(server, line, id).then(async (reply) => {
        stop();
        if (reply.kind === "answer" && server.refused(reply.answer)) {
          // A binary older than an option the line used: nothing ran; once more without it.
          const again = newId();
          reply = await chosen.send(server, requestLine(event, json, again, server, learn !== null), again);
        }
        if (reply.kind === "fault" && reply.neverStarted) {
          serveFailure = reply.warning;
          return fallback(bin, event, payload, json, remember);
        }
        noteBackground(event, payload, reply, server);
        return remember(reply, finish(event, reply));
      });
      return answered.catch((error: unknown) => failOpen(`levelcode-hooks: no hook ran: ${error instanceof Error ? error.message : String(error)}`));
    }
    return fallback(bin, event, payload, json, remember).catch((error: unknown) =>
      failOpen(`levelcode-hooks: no hook ran: ${error instanceof Error ? error.message : String(error)}`),
    );
  }

  /** One `levelcode-hooks run` for the event (oneshot.ts): the fallback when `serve` cannot start. */
  async function fallback(
    bin: string,
    event: string,
    payload: HookPayload,
    json: string,
    remember: (reply: Reply, outcome: HookDispatchOutcome) => HookDispatchOutcome,
  ): Promise<HookDispatchOutcome> {
    let fallbackNote: string | null = null;
    if (!reportedServeFailure) {
      reportedServeFailure = true;
      fallbackNote = `levelcode-hooks: serve could not start (${serveFailure}); one run per event from now on`;
    }
    const args = ["run"];
    if (inlineJson !== null) args.push("--settings", inlineSettingsFile());
    const bounds = limits();
    const once = (flags: string[]) => runOnce(bin, flags, env, json, (onHung) => watchdog(bounds, bin, event, payload, () => false, onHung));
    const tellsCaller = event === "PostToolUse" && runKnowsCallerRecords && callerRecordsCompliance();
    let reply = await once(tellsCaller ? [...args, CALLER_RECORDS_FLAG] : args);
    if (tellsCaller && reply.kind === "answer" && typeof reply.answer.error === "string" && reply.answer.error.includes(CALLER_RECORDS_FLAG)) {
      // A binary older than the flag refused the arguments: nothing ran; once more without it.
      runKnowsCallerRecords = false;
      reply = await once(args);
    }
    noteBackground(event, payload, reply, null);
    return remember(reply, finish(event, reply, fallbackNote ? [fallbackNote] : []));
  }

  /**
   * Keeps `backgroundSessions` up to date with an answer to `event` of `payload`'s session from
   * `server` (null: from a `run`). A server says whether results are still to come
   * (`background_pending`); a session whose handlers a `run` started stays out of memory's reach.
   */
  function noteBackground(event: string, payload: HookPayload, reply: Reply, server: Server | null): void {
    if (reply.kind !== "answer") return;
    const handlers = reply.answer.handlers;
    // A `run` says nothing of what is to come: a handler it started is (unless the session just
    // ended, when its result goes to the log only).
    const started =
      server === null &&
      event !== "SessionEnd" &&
      Array.isArray(handlers) &&
      handlers.some((h) => h !== null && typeof h === "object" && (h as { outcome?: unknown }).outcome === "started");
    const session = sessionOf(payload);
    const keeper = backgroundSessions.get(session);
    if (started || reply.answer.background_pending === true) {
      if (keeper && keeper !== server) keeper.background.delete(session);
      backgroundSessions.set(session, server);
      server?.background.add(session);
    } else if (server && (keeper === undefined || keeper === server || !keeper?.alive)) {
      keeper?.background.delete(session);
      backgroundSessions.delete(session);
    }
  }

  function finish(event: string, reply: Reply, extra: string[] = []): HookDispatchOutcome {
    const outcome = reply.kind === "fault" ? failOpen(`levelcode-hooks: no hook ran: ${reply.warning}`) : outcomeFromAnswer(reply.answer);
    if (extra.length > 0) outcome.warnings.unshift(...extra);
    if (options.onConfigWarning) {
      for (const warning of outcome.warnings) {
        if (seenWarnings.has(warning)) continue;
        seenWarnings.add(warning);
        options.onConfigWarning(warning);
      }
    }
    // A background handler's failure reaches the person at the next SessionStart, whichever
    // answer handed it on (docs/levelcode.md).
    for (const ended of outcome.background ?? []) if (ended.warning) noteForPerson(ended.warning);
    if (event === "SessionStart") {
      // levelcode shows SessionStart's additionalContext to the person (docs/levelcode.md): what
      // did not run, and why, is said there, once per process.
      const notices = noticesFor(outcome.warnings);
      if (notices.length > 0) {
        outcome.notices = notices;
        outcome.additionalContext = [outcome.additionalContext, ...notices].filter((text) => text !== "").join("\n");
      }
    }
    return outcome;
  }

  /** Dispatches one event. Never rejects: any fault resolves "proceed" with a warning. */
  function runEvent(event: HookEventName | string, payload: HookPayload): Promise<HookDispatchOutcome> {
    try {
      return dispatch(event, payload);
    } catch (error) {
      return Promise.resolve(failOpen(`levelcode-hooks: no hook ran: ${error instanceof Error ? error.message : String(error)}`));
    }
  }

  /**
   * Forgets what was worked out: the binary's place, a failed start of `serve`, the warnings
   * already reported, and the inline configuration (read again from `options.hooks`). Settings
   * files need no invalidation: the dispatcher reads every change by itself.
   */
  function invalidate(): void {
    inlineJson = options.hooks ? JSON.stringify(options.hooks) : null;
    if (settingsFile) rmSync(settingsFile, { force: true });
    settingsFile = null;
    binary = null;
    binaryError = null;
    serveFailure = null;
    reportedServeFailure = false;
    pool = null;
    seenWarnings.clear();
    if (memory) {
      memory.inline = inlineJson !== null;
      memory.invalidate();
    }
  }

  /**
   * Lets this runner go: its memory and its inline settings file. The servers belong to the
   * process's pool and end by themselves once idle; a pool no open runner uses is ended now.
   */
  function close(): void {
    if (closed) return;
    closed = true;
    memory?.close();
    if (settingsDir) rmSync(settingsDir, { recursive: true, force: true });
    settingsDir = null;
    settingsFile = null;
    for (const used of held) used.release();
    held.clear();
  }

  /** The trust state in an answer: at its top level, or under `project_trust` or `trust`. */
  function trustOf(answer: Json): TrustStatus {
    const nested = [answer.project_trust, answer.trust].find((value) => value !== null && typeof value === "object" && !Array.isArray(value));
    return { ...answer, ...(nested as Json | undefined) } as TrustStatus;
  }

  /** Sends one trust request (contract §14) to a server and returns its answer. */
  async function trustRequest(op: string, projectDir: string, extra: string): Promise<Json> {
    environment();
    const bin = findOnce();
    if (!bin) throw new Error(`levelcode-hooks: ${binaryError}`);
    const chosen = poolOf(bin);
    const server = chosen.pick();
    const id = newId();
    const reply = await chosen.send(server, `{"id":${id},"op":${JSON.stringify(op)}${extra},"options":{"project_dir":${JSON.stringify(projectDir)}}}\n`, id);
    if (reply.kind === "fault") throw new Error(`levelcode-hooks: ${reply.warning}`);
    if (typeof reply.answer.error === "string") throw new Error(`levelcode-hooks: ${reply.answer.error}`);
    return reply.answer;
  }

  /** The trust state of a project's hooks, for a prompt that asks the person (contract §13). */
  async function trustStatus(projectDir: string = process.cwd()): Promise<TrustStatus> {
    return trustOf(await trustRequest("trust_status", projectDir, ""));
  }

  /**
   * Records the person's trust in exactly the hooks of this digest (from `trustStatus`). Refused
   * (the promise rejects, nothing is sent) in a process started from the agent's tool calls or a
   * hook, which its environment says (`agentMark`): only a person can trust a project's hooks.
   */
  async function trust(digest: string, projectDir: string = process.cwd()): Promise<TrustStatus> {
    const mark = agentMark();
    if (mark !== null) {
      throw new Error(
        `levelcode-hooks: ${mark} is set, so this was started from inside the agent's tool calls or a hook, and only a person can trust a project's hooks: nothing was recorded. Review and trust them in your own terminal with: levelcode-hooks trust --project-dir ${shellQuoted(projectDir)}`,
      );
    }
    return trustOf(await trustRequest("trust", projectDir, `,"digest":${JSON.stringify(digest)}`));
  }

  /** How the no-match cache has done (all zero when it is off or unavailable). */
  function cacheStats(): CacheStats {
    return memory ? { ...memory.stats } : { hits: 0, misses: 0, stored: 0, invalidations: 0 };
  }

  // Start early: the first tool call should not pay for starting a server. Nothing started here
  // keeps the host alive.
  try {
    environment();
    const bin = findOnce();
    if (bin) {
      poolOf(bin).warm();
      probe(bin);
    }
  } catch {
    // the first runEvent reports it
  }

  return { runEvent, invalidate, close, trustStatus, trust, cacheStats };
}

export type HookRunner = ReturnType<typeof createHookRunner>;

/** `text` as one word of a POSIX shell: as it is when nothing in it is special, else quoted. */
function shellQuoted(text: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`;
}

/**
 * The session a payload belongs to, as the dispatcher reads it: its `session_id`, else its
 * `sessionId`; for one without, its directory (the dispatcher's session of its project root;
 * levelcode's payloads carry no id and give the root as `cwd`).
 */
function sessionOf(payload: HookPayload): string {
  for (const member of ["session_id", "sessionId"] as const) {
    const id = (payload as Record<string, unknown>)[member];
    if (typeof id === "string") return `id\u0000${id}`;
  }
  return `cwd\u0000${String(payload.cwd)}`;
}
