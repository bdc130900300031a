/**
 * `createHookRunner`: levelcode's hook runner, answered by the dispatcher. Events go to a pool of
 * long-lived `levelcode-hooks serve` processes, started when first needed and reused after; a
 * call finds an idle server or starts one, so concurrent calls never wait on each other's
 * handlers. When `serve` cannot start, each event is one `levelcode-hooks run`.
 *
 * Nothing here rejects: a missing binary, a server that dies, hangs or answers garbage, all
 * resolve fail-open (proceed) with a warning, as any handler fault does.
 */
import { spawn as nodeSpawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join } from "node:path";

import { failOpen, outcomeFromAnswer } from "./answer.js";
import { findBinary } from "./binary.js";
import { NoMatchCache, type CacheStats } from "./cache.js";
import { inotifyReady } from "./inotify.js";
import { listArgs, listAsync } from "./loader.js";
import { Server, type Reply } from "./server.js";
import { MATCHER_MEMBERS } from "./types.js";
import type { HookEventName, HookDispatchOutcome, HookPayload, HooksConfig, ProjectTrust } from "./types.js";

type Json = Record<string, unknown>;

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
  /** Idle servers kept for reuse (default 16). */
  maxIdleServers?: number | undefined;
  /** Servers at most, busy or idle (default 64); a call beyond waits for one to be free. */
  maxServers?: number | undefined;
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

type Unrefable = { unref?: () => void };

export function createHookRunner(options: HookRunnerOptions = {}) {
  const maxIdle = options.maxIdleServers ?? 16;
  const maxServers = Math.max(1, options.maxServers ?? 64);
  /** Calls waiting for a server because `maxServers` are out. */
  const waiting: Array<() => void> = [];
  const wakeOne = () => waiting.shift()?.();
  const margin = options.hangMarginMs ?? 2000;
  let inlineJson = options.hooks ? JSON.stringify(options.hooks) : null;
  let settingsDir: string | null = null;
  let settingsFile: string | null = null;
  let binary: string | null = null;
  let binaryError: string | null = null;
  let serveFailure: string | null = null;
  let reportedServeFailure = false;
  const seenWarnings = new Set<string>();
  let nextId = 1;
  /** undefined: not decided yet; null: off or unavailable. */
  let cache: NoMatchCache | null | undefined = options.noMatchCache === false ? null : undefined;

  const idle: Server[] = [];
  const all = new Set<Server>();
  let envKey = "";
  let env: Record<string, string> = {};

  function environment(): void {
    // Only the variables that change an answer are compared on each call; copying the whole
    // environment would cost more than the rest of a dispatch.
    const extra = options.env;
    let key = "";
    for (const name of ENV_KEYS) key += `${(extra && name in extra ? extra[name] : process.env[name]) ?? "\u0001"}\u0000`;
    if (key === envKey) return;
    // The servers' environment is fixed when they start: those of an older one are retired.
    envKey = key;
    env = {};
    const merged: Record<string, string | undefined> = { ...process.env, ...extra };
    for (const [name, value] of Object.entries(merged)) if (value !== undefined) env[name] = value;
    for (const server of idle.splice(0)) server.kill("retired: the environment changed");
    binary = null;
    binaryError = null;
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

  /** The inline configuration as a settings file, for binaries and modes without `options.hooks`. */
  function inlineSettingsFile(): string {
    if (settingsFile) return settingsFile;
    settingsDir ??= mkdtempSync(join(tmpdir(), "levelcode-hooks-inline-"));
    settingsFile = join(settingsDir, `settings-${nextId}.json`);
    writeFileSync(settingsFile, `{"hooks":${inlineJson}}`, { mode: 0o600 });
    return settingsFile;
  }

  async function acquire(bin: string): Promise<Server | string> {
    for (;;) {
      while (idle.length > 0) {
        const server = idle.pop()!;
        if (server.alive) return server;
      }
      if (all.size < maxServers) break;
      await new Promise<void>((resolve) => waiting.push(resolve));
    }
    let server: Server;
    try {
      server = new Server(bin, env, (dead) => {
        all.delete(dead);
        const at = idle.indexOf(dead);
        if (at >= 0) idle.splice(at, 1);
        wakeOne();
      }, options.startTimeoutMs);
    } catch (error) {
      return `could not start ${bin} serve: ${error instanceof Error ? error.message : String(error)}`;
    }
    all.add(server);
    if (await server.ready) return server;
    return server.startFailure || `${bin} serve did not start`;
  }

  function release(server: Server, key: string): void {
    if (!server.alive) return;
    if (key !== envKey || idle.length >= maxIdle) server.kill("no longer needed");
    else {
      idle.push(server);
      wakeOne();
    }
  }

  /** The longest the handlers of this event may take, in ms; `null` when it cannot be known. */
  async function handlersBoundMs(bin: string, event: string, payload: HookPayload): Promise<number | null> {
    const reads = payload.tool_name === "read_files" && Array.isArray(payload.tool_input?.paths) ? Math.max(1, payload.tool_input.paths.length) : 1;
    if (options.hooks) {
      let total = 0;
      for (const group of options.hooks[event] ?? []) {
        for (const handler of group?.hooks ?? []) total += clampTimeout(handler?.timeout) * 1000 + PER_HANDLER_GRACE_MS;
      }
      return total * reads;
    }
    const listing = await listAsync(bin, listArgs(payload.cwd, event, payload.tool_name), env);
    if (typeof listing === "string" || !Array.isArray(listing.handlers)) return null;
    let total = 0;
    for (const handler of listing.handlers as Json[]) {
      if (handler.state === "would_run") total += clampTimeout(handler.timeout) * 1000 + PER_HANDLER_GRACE_MS;
    }
    return total * reads;
  }

  /** Calls `onHung` once the request has run past its handlers' time limits plus the margin. */
  function watchdog(bin: string, event: string, payload: HookPayload, onHung: (ms: number) => void): () => void {
    const started = Date.now();
    let done = false;
    let timer: ReturnType<typeof setTimeout> | undefined = setTimeout(async () => {
      const bound = await handlersBoundMs(bin, event, payload);
      if (done) return;
      const limit = (bound ?? (MAX_TIMEOUT_S * 1000 + PER_HANDLER_GRACE_MS) * 16) + margin;
      timer = setTimeout(() => onHung(limit), Math.max(0, started + limit - Date.now()));
      (timer as Unrefable).unref?.();
    }, Math.min(SLOW_MS, margin));
    (timer as Unrefable).unref?.();
    return () => {
      done = true;
      clearTimeout(timer);
    };
  }

  /** The payload as handlers get it: `event` set, a payload's own `id` and `options` left out. */
  function payloadJson(event: string, payload: HookPayload): string {
    if (payload.event === event && !("id" in payload) && !("options" in payload)) return JSON.stringify(payload);
    const { id: _id, options: _options, ...rest } = payload;
    return JSON.stringify({ ...rest, event });
  }

  function requestLine(json: string, id: number, inline: boolean): string {
    let options = "";
    if (inlineJson !== null) {
      options = inline ? `,"options":{"hooks":${inlineJson}}` : `,"options":{"settings":${JSON.stringify([inlineSettingsFile()])}}`;
    }
    return `{"id":${id}${options}${json.length > 2 ? "," : ""}${json.slice(1)}\n`;
  }

  /** One `levelcode-hooks run` for the event: the fallback when `serve` cannot start. */
  function runOnce(bin: string, event: string, payload: HookPayload, json: string): Promise<Reply> {
    return new Promise((resolve) => {
      const args = ["run"];
      if (inlineJson !== null) args.push("--settings", inlineSettingsFile());
      let stdout = "";
      let settled = false;
      const finish = (reply: Reply) => {
        if (settled) return;
        settled = true;
        stop();
        resolve(reply);
      };
      const child = nodeSpawn(bin, args, { stdio: ["pipe", "pipe", "ignore"], env, windowsHide: true });
      const stop = watchdog(bin, event, payload, (ms) => {
        child.kill("SIGTERM");
        finish({ kind: "fault", warning: `levelcode-hooks run gave no answer within ${ms} ms; it was stopped`, neverStarted: false });
      });
      child.on("error", (error) => finish({ kind: "fault", warning: `could not run ${bin}: ${error.message}`, neverStarted: false }));
      child.stdin?.on("error", () => {});
      child.stdout?.setEncoding("utf8");
      child.stdout?.on("data", (chunk: string) => {
        stdout += chunk;
      });
      child.on("close", (code, signal) => {
        try {
          const answer: unknown = JSON.parse(stdout);
          if (answer !== null && typeof answer === "object" && !Array.isArray(answer)) {
            finish({ kind: "answer", answer: answer as Json });
            return;
          }
        } catch {
          // below
        }
        finish({ kind: "fault", warning: `levelcode-hooks run ended (${signal ?? code}) without an answer`, neverStarted: false });
      });
      child.stdin?.end(json);
    });
  }

  async function dispatch(event: string, payload: HookPayload): Promise<HookDispatchOutcome> {
    environment();
    const bin = findOnce();
    if (!bin) return failOpen(`levelcode-hooks: no hook ran: ${binaryError}`);

    const json = payloadJson(event, payload);

    if (cache === undefined) cache = (await inotifyReady) && NoMatchCache.available() ? new NoMatchCache() : null;
    let ticket: number | null = null;
    let key = "";
    const cwd = payload.cwd;
    // A dispatch that writes a log leaves a trace that an answer from memory would not.
    if (cache && typeof cwd === "string" && isAbsolute(cwd) && !("team" in payload) && !env.LEVELCODE_HOOKS_LOG && !(event === "PostToolUse" && env.LEVELCODE_TEAM)) {
      const context = `${envKey}\u0002${cwd}`;
      // What the matcher is tested against: a no-match holds for that value only.
      const member = MATCHER_MEMBERS[event as HookEventName];
      const subject = typeof payload.tool_name === "string" ? payload.tool_name : member && typeof payload[member] === "string" ? `${member}=${payload[member]}` : "\u0003";
      key = `${context}\u0002${event}\u0002${subject}`;
      const hit = cache.lookup(key);
      if (hit) return hit;
      const listEnv = env;
      ticket = cache.ticket(context, inlineJson === null ? cwd : null, (dir) => listAsync(bin, listArgs(dir), listEnv));
    }
    const remember = (outcome: HookDispatchOutcome): HookDispatchOutcome => {
      if (ticket !== null) cache?.store(key, ticket, outcome);
      return outcome;
    };

    let reply: Reply;
    let fallbackNote: string | null = null;
    if (serveFailure === null) {
      const key = envKey;
      const server = await acquire(bin);
      if (typeof server === "string") {
        serveFailure = server;
      } else {
        const id = nextId++;
        const stop = watchdog(bin, event, payload, (ms) => server.kill(`levelcode-hooks serve gave no answer within ${ms} ms; it was stopped and will be replaced`));
        reply = await server.send(requestLine(json, id, server.inline), id);
        stop();
        release(server, key);
        if (reply.kind === "fault" && reply.neverStarted) serveFailure = reply.warning;
        else return remember(finish(reply));
      }
    }
    if (!reportedServeFailure) {
      reportedServeFailure = true;
      fallbackNote = `levelcode-hooks: serve could not start (${serveFailure}); one run per event from now on`;
    }
    reply = await runOnce(bin, event, payload, json);
    const outcome = remember(finish(reply));
    if (fallbackNote) outcome.warnings.unshift(fallbackNote);
    return outcome;
  }

  function finish(reply: Reply): HookDispatchOutcome {
    if (reply.kind === "fault") return failOpen(`levelcode-hooks: no hook ran: ${reply.warning}`);
    const outcome = outcomeFromAnswer(reply.answer);
    if (options.onConfigWarning) {
      for (const warning of outcome.warnings) {
        if (seenWarnings.has(warning)) continue;
        seenWarnings.add(warning);
        options.onConfigWarning(warning);
      }
    }
    return outcome;
  }

  /** Dispatches one event. Never rejects: any fault resolves "proceed" with a warning. */
  async function runEvent(event: HookEventName | string, payload: HookPayload): Promise<HookDispatchOutcome> {
    try {
      return await dispatch(event, payload);
    } catch (error) {
      return failOpen(`levelcode-hooks: no hook ran: ${error instanceof Error ? error.message : String(error)}`);
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
    seenWarnings.clear();
    cache?.invalidate();
  }

  /** Ends every server of this runner. A later `runEvent` starts a new one. */
  function close(): void {
    for (const server of [...all]) server.kill("the runner was closed");
    idle.length = 0;
    cache?.invalidate();
    if (settingsDir) rmSync(settingsDir, { recursive: true, force: true });
    settingsDir = null;
    settingsFile = null;
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
    const server = await acquire(bin);
    if (typeof server === "string") throw new Error(`levelcode-hooks: ${server}`);
    const key = envKey;
    const id = nextId++;
    const reply = await server.send(`{"id":${id},"op":${JSON.stringify(op)}${extra},"options":{"project_dir":${JSON.stringify(projectDir)}}}\n`, id);
    release(server, key);
    if (reply.kind === "fault") throw new Error(`levelcode-hooks: ${reply.warning}`);
    if (typeof reply.answer.error === "string") throw new Error(`levelcode-hooks: ${reply.answer.error}`);
    return reply.answer;
  }

  /** The trust state of a project's hooks, for a prompt that asks the person (contract §13). */
  async function trustStatus(projectDir: string = process.cwd()): Promise<TrustStatus> {
    return trustOf(await trustRequest("trust_status", projectDir, ""));
  }

  /** Records the person's trust in exactly the hooks of this digest (from `trustStatus`). */
  async function trust(digest: string, projectDir: string = process.cwd()): Promise<TrustStatus> {
    return trustOf(await trustRequest("trust", projectDir, `,"digest":${JSON.stringify(digest)}`));
  }

  /** How the no-match cache has done (all zero when it is off or unavailable). */
  function cacheStats(): CacheStats {
    return cache ? { ...cache.stats } : { hits: 0, misses: 0, stored: 0, invalidations: 0 };
  }

  return { runEvent, invalidate, close, trustStatus, trust, cacheStats };
}

export type HookRunner = ReturnType<typeof createHookRunner>;
