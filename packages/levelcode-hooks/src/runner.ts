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
 */
import { spawn as nodeSpawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join } from "node:path";

import { failOpen, outcomeFromAnswer } from "./answer.js";
import { findBinary } from "./binary.js";
import { isNoMatch, NoMatchCache, nowNs, type CacheStats } from "./cache.js";
import { inotifyLoaded } from "./inotify.js";
import { keptFolder, keptKey, readKept, realDirectory, writeKept } from "./kept.js";
import { listArgs, listAsync } from "./loader.js";
import { newId, poolFor, type Pool } from "./pool.js";
import { hostEnvironment, keyId, noticesFor } from "./process.js";
import type { Reply, Server } from "./server.js";
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


/** A request unanswered this long gets its time limit worked out from what it runs. */
const SLOW_MS = 1000;
/** How long a tool call waits for another tool's answer that may say no group applies to it. */
const HOLD_MS = 10;
const TOOL_EVENTS = new Set(["PreToolUse", "PostToolUse", "PostToolUseFailure"]);
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
  const margin = options.hangMarginMs ?? 2000;
  let inlineJson = options.hooks ? JSON.stringify(options.hooks) : null;
  let settingsDir: string | null = null;
  let settingsFile: string | null = null;
  let binary: string | null = null;
  let binaryError: string | null = null;
  let serveFailure: string | null = null;
  let reportedServeFailure = false;
  let closed = false;
  const seenWarnings = new Set<string>();
  /** undefined: not decided yet; null: off or unavailable. */
  let cache: NoMatchCache | null | undefined = options.noMatchCache === false ? null : undefined;

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
      holdPool(pool);
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

  /**
   * Calls `onHung` once the request has run past its handlers' time limits plus the margin.
   * `waiting()` says whether it may still be queued behind an older request (a server that answers
   * in order): then the clock starts again instead.
   */
  function watchdog(bin: string, event: string, payload: HookPayload, waiting: () => boolean, onHung: (ms: number) => void): () => void {
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
      const bound = await handlersBoundMs(bin, event, payload);
      if (done) return;
      arm((bound ?? (MAX_TIMEOUT_S * 1000 + PER_HANDLER_GRACE_MS) * 16) + margin);
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

  function requestLine(json: string, id: number, server: Server, watch: boolean): string {
    let options = "";
    if (inlineJson !== null) {
      options = server.inline ? `"hooks":${inlineJson}` : `"settings":${JSON.stringify([inlineSettingsFile()])}`;
    } else if (watch && server.watch) options = `"watch":true`;
    const member = options ? `,"options":{${options}}` : "";
    return `{"id":${id}${member}${json.length > 2 ? "," : ""}${json.slice(1)}\n`;
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
      const stop = watchdog(bin, event, payload, () => false, (ms) => {
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

  /** Decides, once the C library's inotify calls are loaded, whether the no-match cache is on. */
  function cacheNow(): NoMatchCache | null {
    if (cache === undefined && inotifyLoaded()) cache = NoMatchCache.available() ? new NoMatchCache() : null;
    return cache ?? null;
  }

  /**
   * Everything up to the request's write happens before this returns: the promise it gives is
   * that of an event already on its way.
   */
  function dispatch(event: string, payload: HookPayload): Promise<HookDispatchOutcome> {
    environment();
    const bin = findOnce();
    if (!bin) return Promise.resolve(finish(event, { kind: "fault", warning: binaryError ?? "", neverStarted: false }));

    const memory = cacheNow();
    const cwd = payload.cwd;
    if (memory && typeof cwd === "string" && cacheable(event, payload)) {
      const { key, scope, subject } = cacheKey(event, cwd, payload);
      let hit = memory.lookup(key, scope, subject);
      if (!hit) {
        // The first sighting of a tool event in a directory: what the last process kept of it.
        if ((event === "PreToolUse" || event === "PostToolUse") && !keptTried.has(scope)) takeKept(memory, bin, cwd, event, scope);
        const pending = fresh.get(scope);
        hit = pending ? answerFrom(memory, pending.verdict, key, subject, true) : null;
        // A host that never lets a timer run (calls answered from memory, one after another)
        // gets the watches now, on the second call that needs them.
        if (hit && pending && ++pending.uses > 1) pending.storeNow();
      }
      if (hit) return Promise.resolve(hit);
      // A tool call of a step whose twin is on its way: the twin's answer answers this one too,
      // and so does the answer of another tool's call, or of the probe, when it says which tools
      // no group applies to (and the files it was read from still hold what it read). An answer
      // that ran handlers answers nothing else: then this call is sent on its own. Tool events
      // only: levelcode awaits them, while Stop may be the host's last act.
      if (event === "PreToolUse" || event === "PostToolUse") {
        const twin = !memory.matched(key) ? inflight.get(key) : undefined;
        const waiting = subject !== undefined && memory.mayBeSummarized(scope) ? scopeAhead.get(scope) : undefined;
        waiting?.wake?.();
        const ahead = twin ?? waiting?.answered;
        if (ahead) {
          return ahead.then(
            (verdict) => answerFrom(memory, verdict, key, subject) ?? memory.lookup(key, scope, subject) ?? send(bin, event, payload, memory, key, scope),
          );
        }
      }
      let settle: (verdict: Verdict | null) => void = () => {};
      const verdict = new Promise<Verdict | null>((resolve) => (settle = resolve));
      const sent = send(bin, event, payload, memory, key, scope, settle);
      if (event === "PreToolUse" || event === "PostToolUse") {
        void sent.then(() => settle(null));
        inflight.set(key, verdict);
        void verdict.then(() => {
          if (inflight.get(key) === verdict) inflight.delete(key);
        });
        if (!scopeAhead.has(scope)) hold(scope, verdict, HOLD_MS);
      }
      return sent;
    }
    return send(bin, event, payload, null, "", undefined);
  }

  /**
   * What an answer says of a call that waited for it: its outcome, when the answer was the plain
   * no-match for this very key, or for a scope whose summary leaves this subject out, and the
   * files it was read from still hold what the server read (checked once per answer).
   */
  function answerFrom(memory: NoMatchCache, verdict: Verdict | null, key: string, subject: string | undefined, again = false): HookDispatchOutcome | null {
    if (verdict === null) return null;
    if (verdict.key !== key && !(verdict.except !== null && subject !== undefined && !verdict.except.has(subject))) return null;
    const holds = again ? memory.stampsHold(verdict.watch) : (verdict.holds ??= memory.stampsHold(verdict.watch));
    if (!holds) return null;
    memory.countHit();
    return { ...verdict.outcome, results: [], warnings: [], durationMs: 0 };
  }

  /**
   * For each scope, its latest no-match answer until the memory has it (`storeLater`): a call
   * made meanwhile is answered from it once the files are seen to hold what the server read.
   */
  const fresh = new Map<string, { verdict: Verdict; uses: number; storeNow: () => void }>();

  /**
   * Remembers an answer, after the callers waiting for it have it: watching the files it depends
   * on costs more than the answer itself the first time (see cache.ts).
   */
  function storeLater(memory: NoMatchCache, verdict: Verdict, ticket: number, summary?: { scope: string; except: string[] }, keep?: KeepAs): void {
    let done = false;
    const entry = { verdict, uses: 0, storeNow };
    // Kept for the next process once remembered here, or as this process exits, whichever is
    // first: a host that exits right after its calls never lets the timer below run.
    const keepNow =
      summary && keep
        ? () => {
            atExit.delete(keepNow!);
            keepForNext(keep, summary, verdict);
          }
        : undefined;
    function storeNow(): void {
      if (done) return;
      done = true;
      clearTimeout(timer);
      memory.store(verdict.key, ticket, verdict.outcome, verdict.watch, summary);
      if (summary && fresh.get(summary.scope) === entry) fresh.delete(summary.scope);
      keepNow?.();
    }
    if (keepNow) beforeExit(keepNow);
    if (summary) fresh.set(summary.scope, entry);
    const timer = setTimeout(storeNow, 0);
    (timer as Unrefable).unref?.();
  }

  /** What an answer to a request going out now would be kept as (kept.ts). */
  function keepingAs(bin: string, cwd: string, event: string): KeepAs {
    return { binary: bin, cwd, event, envKey, env, real: realDirectory(cwd) };
  }

  /** For each scope, the kept summary (kept.ts) this runner read, as it was read. */
  const keptTexts = new Map<string, string>();
  /** The scopes whose kept summary was looked for. */
  const keptTried = new Set<string>();

  /** Keeps a scope's summary for the next process in this directory (kept.ts). */
  function keepForNext(keep: KeepAs, summary: { scope: string; except: string[] }, verdict: Verdict): void {
    const folder = keptFolder(keep.env);
    if (folder === null || verdict.sentNs === undefined) return;
    // Under the environment of the request: the host's may have changed since.
    const key = keptKey(keep.binary, keep.envKey, keep.cwd, keep.event);
    const kept = { except: summary.except, watch: verdict.watch };
    const text = writeKept(folder, key, keep.binary, kept, verdict.sentNs, keptTexts.get(summary.scope) ?? null, keep.cwd, keep.real);
    if (text !== null) keptTexts.set(summary.scope, text);
  }

  /**
   * Takes in what the last process in this directory kept of a scope: an answer for every tool
   * its summary covers, given, like any answer not remembered yet, only while its files hold what
   * the server read (`answerFrom`), and remembered as soon as its files are watched.
   */
  function takeKept(memory: NoMatchCache, bin: string, cwd: string, event: string, scope: string): void {
    keptTried.add(scope);
    // An inline configuration is not what any kept answer was read from.
    if (inlineJson !== null) return;
    const folder = keptFolder(env);
    if (folder === null) return;
    const found = readKept(folder, keptKey(bin, envKey, cwd, event), bin, cwd);
    if (found === null) return;
    keptTexts.set(scope, found.text);
    const outcome = outcomeFromAnswer({ decision: "proceed" });
    const verdict: Verdict = { outcome, key: null, except: new Set(found.kept.except), watch: found.kept.watch };
    storeLater(memory, verdict, memory.ticket(), { scope, except: found.kept.except });
  }

  /** Whether an answer from memory could stand for this event's (docs/serve.md). */
  function cacheable(event: string, payload: HookPayload): boolean {
    // A dispatch that writes a log leaves a trace that an answer from memory would not.
    return isAbsolute(payload.cwd as string) && !("team" in payload) && !env.LEVELCODE_HOOKS_LOG && !(event === "PostToolUse" && env.LEVELCODE_TEAM);
  }

  /**
   * Where an event's answer is kept: `key` for this very subject, `scope` for the event in this
   * project and environment (what a summary covers), and `subject`, what the matcher is tested
   * against, when a summary may answer it (a tool event's `tool_name` must be a string).
   */
  function cacheKey(event: string, cwd: string, payload: HookPayload): { key: string; scope: string; subject: string | undefined } {
    const scope = `${envId}\u0002${cwd}\u0002${event}`;
    const member = MATCHER_MEMBERS[event as HookEventName];
    if (typeof payload.tool_name === "string") return { key: `${scope}\u0002${payload.tool_name}`, scope, subject: payload.tool_name };
    if (member && typeof payload[member] === "string") return { key: `${scope}\u0002${member}=${payload[member]}`, scope, subject: payload[member] as string };
    // A tool event without a tool's name is an error the dispatcher answers itself.
    return { key: `${scope}\u0002\u0003`, scope, subject: TOOL_EVENTS.has(event) ? undefined : "\u0003" };
  }

  /** Requests not answered yet, by cache key: what a twin of one waits for. */
  const inflight = new Map<string, Promise<Verdict | null>>();
  /**
   * For each scope, the request whose answer may say which subjects no group applies to: what
   * another tool's call of the same step waits for, at most `HOLD_MS` when that request may run
   * handlers (a probe runs none, so its answer is waited for).
   */
  const scopeAhead = new Map<string, { answered: Promise<Verdict | null>; wake?: (() => void) | undefined }>();
  function hold(scope: string, sent: Promise<Verdict | null>, bound: number | null, wake?: () => void): void {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const limit =
      bound === null
        ? null
        : new Promise<null>((resolve) => {
            timer = setTimeout(() => resolve(null), bound);
            (timer as Unrefable).unref?.();
          });
    const answered = (limit ? Promise.race([sent, limit]) : sent).then((verdict) => {
      clearTimeout(timer);
      return verdict;
    });
    const entry = { answered, wake };
    scopeAhead.set(scope, entry);
    void answered.then(() => {
      if (scopeAhead.get(scope) === entry) scopeAhead.delete(scope);
    });
  }

  /**
   * Asks, for the tool events in the host's own directory, which tools no group applies to, so
   * that the first tool call of the process is answered from memory. Sent when the runner is
   * made, as a quiet request: it runs nothing (docs/serve.md, `options.probe`), it does not hold
   * the host, and its answer is read along with the first event's, or as soon as a tool call
   * waits for it.
   */
  function probe(bin: string): void {
    const memory = cacheNow();
    const cwd = process.cwd();
    if (!memory || inlineJson !== null || serveFailure !== null) return;
    for (const event of ["PreToolUse", "PostToolUse"]) {
      const payload: HookPayload = { event, cwd, tool_name: "", tool_input: {} };
      if (!cacheable(event, payload)) continue;
      const { scope } = cacheKey(event, cwd, payload);
      if (scopeAhead.has(scope) || !memory.mayBeSummarized(scope)) continue;
      takeKept(memory, bin, cwd, event, scope);
      const chosen = poolOf(bin);
      const server = chosen.pick();
      if (!server.watch) return;
      const ticket = memory.ticket();
      const sentNs = nowNs();
      const keepAs = keepingAs(bin, cwd, event);
      const id = newId();
      const line = `{"id":${id},"options":{"watch":true,"probe":true},${payloadJson(event, payload).slice(1)}\n`;
      const answered = chosen.send(server, line, id, true).then((reply): Verdict | null => {
        if (reply.kind !== "answer") return null;
        const watch = watchList(reply.answer.watch);
        const except = stringList(reply.answer.no_match_except);
        const outcome = outcomeFromAnswer(reply.answer);
        if (!watch || !except || !isNoMatch(outcome)) return null;
        const verdict = { outcome, key: null, except: new Set(except), watch, sentNs };
        storeLater(memory, verdict, ticket, { scope, except }, keepAs);
        return verdict;
      });
      hold(scope, answered, null, () => server.wake(id));
    }
  }

  /** Writes the request to a server before returning (see `dispatch`). */
  function send(
    bin: string,
    event: string,
    payload: HookPayload,
    memory: NoMatchCache | null,
    key: string,
    scope: string | undefined,
    settle?: (verdict: Verdict | null) => void,
  ): Promise<HookDispatchOutcome> {
    const ticket = memory ? memory.ticket() : null;
    const sentNs = memory ? nowNs() : 0n;
    // What a summary in the answer would be kept as: taken now, as the request goes out.
    const keepAs = memory && inlineJson === null && typeof payload.cwd === "string" && (event === "PreToolUse" || event === "PostToolUse") ? keepingAs(bin, payload.cwd, event) : undefined;
    const remember = (reply: Reply, outcome: HookDispatchOutcome): HookDispatchOutcome => {
      if (memory && ticket !== null && reply.kind === "answer") {
        const watch = inlineJson !== null ? [] : watchList(reply.answer.watch);
        const except = inlineJson !== null ? null : stringList(reply.answer.no_match_except);
        // An answer that ran nothing and says nothing of other subjects: its scope has matchers
        // that only a subject can tell (regular expressions), so no call waits for a summary.
        if (scope !== undefined && except === null && outcome.results.length === 0) memory.noteUnsummarized(scope);
        if (!watch || !isNoMatch(outcome)) memory.noteMatched(key);
        else {
          const summary = scope !== undefined && except !== null ? { scope, except } : undefined;
          const verdict = { outcome, key, except: summary ? new Set(except) : null, watch, sentNs };
          settle?.(verdict);
          storeLater(memory, verdict, ticket, summary, summary ? keepAs : undefined);
        }
      }
      return outcome;
    };

    const json = payloadJson(event, payload);
    if (serveFailure === null) {
      const chosen = poolOf(bin);
      const server = chosen.pick();
      const id = newId();
      const line = requestLine(json, id, server, ticket !== null);
      const stop = watchdog(bin, event, payload, () => !server.concurrent && !server.isOldest(id), (ms) =>
        server.kill(`levelcode-hooks serve gave no answer within ${ms} ms; it was stopped and will be replaced`),
      );
      const answered = chosen.send(server, line, id).then(async (reply) => {
        stop();
        if (reply.kind === "answer" && server.refused(reply.answer)) {
          // A binary older than an option the line used: nothing ran; once more without it.
          const again = newId();
          reply = await chosen.send(server, requestLine(json, again, server, ticket !== null), again);
        }
        if (reply.kind === "fault" && reply.neverStarted) {
          serveFailure = reply.warning;
          return fallback(bin, event, payload, json, remember);
        }
        return remember(reply, finish(event, reply));
      });
      return answered.catch((error: unknown) => failOpen(`levelcode-hooks: no hook ran: ${error instanceof Error ? error.message : String(error)}`));
    }
    return fallback(bin, event, payload, json, remember).catch((error: unknown) =>
      failOpen(`levelcode-hooks: no hook ran: ${error instanceof Error ? error.message : String(error)}`),
    );
  }

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
    const reply = await runOnce(bin, event, payload, json);
    if (fallbackNote) {
      const outcome = finish(event, reply, [fallbackNote]);
      return remember(reply, outcome);
    }
    return remember(reply, finish(event, reply));
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
    fresh.clear();
    keptTried.clear();
    keptTexts.clear();
    cache?.invalidate();
  }

  /**
   * Lets this runner go: its memory and its inline settings file. The servers belong to the
   * process's pool and end by themselves once idle; a pool no open runner uses is ended now.
   */
  function close(): void {
    if (closed) return;
    closed = true;
    fresh.clear();
    cache?.invalidate();
    if (settingsDir) rmSync(settingsDir, { recursive: true, force: true });
    settingsDir = null;
    settingsFile = null;
    for (const used of held) releasePool(used);
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

  /** Records the person's trust in exactly the hooks of this digest (from `trustStatus`). */
  async function trust(digest: string, projectDir: string = process.cwd()): Promise<TrustStatus> {
    return trustOf(await trustRequest("trust", projectDir, `,"digest":${JSON.stringify(digest)}`));
  }

  /** How the no-match cache has done (all zero when it is off or unavailable). */
  function cacheStats(): CacheStats {
    return cache ? { ...cache.stats } : { hits: 0, misses: 0, stored: 0, invalidations: 0 };
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

/** What is still to be kept for the next process (kept.ts) when this one exits. */
const atExit = new Set<() => void>();
function beforeExit(task: () => void): void {
  if (atExit.size === 0 && !exitHooked) {
    exitHooked = true;
    process.once("exit", () => {
      for (const pending of [...atExit]) {
        try {
          pending();
        } catch {
          // nothing kept: the next process asks its server
        }
      }
    });
  }
  atExit.add(task);
}
let exitHooked = false;

/** Runners open on each pool; a pool none uses any more is ended. */
const holders = new Map<Pool, number>();
function holdPool(pool: Pool): void {
  holders.set(pool, (holders.get(pool) ?? 0) + 1);
}
function releasePool(pool: Pool): void {
  const left = (holders.get(pool) ?? 1) - 1;
  if (left > 0) holders.set(pool, left);
  else {
    holders.delete(pool);
    pool.endAll();
  }
}

/**
 * What one answer can say of calls other than its own (see `answerFrom`): its plain no-match
 * outcome, for its own key, and for each subject of its scope outside `except`.
 */
type Verdict = {
  outcome: HookDispatchOutcome;
  key: string | null;
  except: Set<string> | null;
  watch: Array<[string, string]>;
  /** Whether the files still hold what the server read, once asked. */
  holds?: boolean;
  /** When the request was sent, in nanoseconds since the epoch (for kept.ts); none for a kept one. */
  sentNs?: bigint;
};

/** Where a summary is kept for the next process: the binary that gave it, its directory and event. */
type KeepAs = {
  binary: string;
  cwd: string;
  event: string;
  /** The environment key and environment of the request. */
  envKey: string;
  env: Record<string, string>;
  /** Where `cwd` really was as the request went out. */
  real: string | null;
};


/** A list of strings, or null when `value` is not one. */
function stringList(value: unknown): string[] | null {
  return Array.isArray(value) && value.every((item) => typeof item === "string") ? (value as string[]) : null;
}

/** The `watch` member of an answer (docs/serve.md): each file with its stamp; null when absent. */
function watchList(value: unknown): Array<[string, string]> | null {
  if (!Array.isArray(value)) return null;
  const list: Array<[string, string]> = [];
  for (const entry of value) {
    if (!Array.isArray(entry) || typeof entry[0] !== "string" || typeof entry[1] !== "string") return null;
    list.push([entry[0], entry[1]]);
  }
  return list;
}

export type HookRunner = ReturnType<typeof createHookRunner>;
