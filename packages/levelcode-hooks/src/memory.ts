/**
 * `AnswerMemory`: what a runner remembers of the dispatcher's answers, apart from how it asks
 * for them. It holds the no-match cache (cache.ts), the answers not remembered yet (`fresh`),
 * the requests still out that a twin call or another tool's call may wait for (`inflight`,
 * `scopeAhead`), and the summaries kept for the next process (kept.ts).
 *
 * The runner asks it, for each event, whether it can answer (`recall`), whether the call should
 * wait for an answer already on its way (`ahead`), and, as a request goes out, what to remember
 * of its answer (`outgoing`). Nothing here starts a process or writes to a server.
 */
import { isAbsolute } from "node:path";

import { outcomeFromAnswer } from "./answer.js";
import { isNoMatch, NoMatchCache, nowNs, type CacheStats } from "./cache.js";
import { keptFolder, keptKey, readKept, realDirectory, writeKept } from "./kept.js";
import { callerRecordsCompliance, mayBeLastTurn } from "./process.js";
import type { Reply } from "./server.js";
import { MATCHER_MEMBERS, TOOL_EVENT_NAMES } from "./types.js";
import type { HookDispatchOutcome, HookEventName, HookPayload } from "./types.js";

/** How long a tool call waits for another tool's answer that may say no group applies to it. */
const HOLD_MS = 10;
/** How long remembering an answer is put off when it would run in what may be the last turn. */
const STORE_AFTER_MS = 5;
const TOOL_EVENTS: ReadonlySet<string> = new Set(TOOL_EVENT_NAMES);

/**
 * The tool events levelcode fires around every tool call: the ones whose summaries a call waits
 * for, a runner probes for when it is made, and the next process is given (kept.ts). Each is
 * one of `TOOL_EVENT_NAMES` (tests/client_agreement.rs checks it).
 */
export const SUMMARIZED_EVENTS = ["PreToolUse", "PostToolUse"] as const;
const SUMMARIZED: ReadonlySet<string> = new Set(SUMMARIZED_EVENTS);

type Unrefable = { unref?: () => void };

/**
 * A call the memory may answer: its event and directory, and where its answer is kept: `key`
 * for this very subject, `scope` for the event in this project and environment (what a summary
 * covers), and `subject`, what the matcher is tested against, when a summary may answer it (a
 * tool event's `tool_name` must be a string).
 */
export type Call = { event: string; cwd: string; key: string; scope: string; subject: string | undefined };

/**
 * What one answer can say of calls other than its own (see `answerFrom`): its plain no-match
 * outcome, for its own key, and for each subject of its scope outside `except`.
 */
export type Verdict = {
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

type Summary = { scope: string; except: string[] };

/** A request's answer, for the calls waiting for it (`track`): null when it is not one to give them. */
export type Settle = (verdict: Verdict | null) => void;
/** What a quiet request of the probe (see `probe`) gave: its reply, and how to start waiting for it. */
export type Asked = { reply: Promise<Reply>; wake: () => void };

export class AnswerMemory {
  /**
   * For each scope, its latest no-match answer until the cache has it (`storeLater`): a call
   * made meanwhile is answered from it once the files are seen to hold what the server read.
   */
  private readonly fresh = new Map<string, { verdict: Verdict; uses: number; storeNow: () => void }>();
  /** Requests not answered yet, by cache key: what a twin of one waits for. */
  private readonly inflight = new Map<string, Promise<Verdict | null>>();
  /**
   * For each scope, the request whose answer may say which subjects no group applies to: what
   * another tool's call of the same step waits for, at most `HOLD_MS` when that request may run
   * handlers (a probe runs none, so its answer is waited for).
   */
  private readonly scopeAhead = new Map<string, { answered: Promise<Verdict | null>; wake?: (() => void) | undefined }>();
  /** For each scope, the kept summary (kept.ts) this runner read, as it was read. */
  private readonly keptTexts = new Map<string, string>();
  /** The scopes whose kept summary was looked for. */
  private readonly keptTried = new Set<string>();

  private envKey = "";
  private envId = 0;
  private env: Record<string, string> = {};
  /** The runner answers from an inline configuration: no kept answer was read from it. */
  inline = false;

  private constructor(private readonly cache: NoMatchCache) {}

  /** A memory of answers; null where files cannot be watched synchronously (cache.ts). */
  static open(): AnswerMemory | null {
    return NoMatchCache.available() ? new AnswerMemory(new NoMatchCache()) : null;
  }

  /** The environment the requests now go out with (process.ts, `hostEnvironment`). */
  environment(envKey: string, envId: number, env: Record<string, string>): void {
    this.envKey = envKey;
    this.envId = envId;
    this.env = env;
  }

  /** How the no-match cache has done. */
  get stats(): CacheStats {
    return this.cache.stats;
  }

  /**
   * The call of an event whose answer could be given from memory (docs/serve.md); null when it
   * could not stand for the dispatcher's.
   */
  callOf(event: string, payload: HookPayload): Call | null {
    const cwd = payload.cwd;
    // A dispatch that writes a log leaves a trace that an answer from memory would not.
    if (typeof cwd !== "string" || !isAbsolute(cwd) || "team" in payload) return null;
    // A team's PostToolUse writes a compliance line, unless `logToolCall` of this package writes
    // it instead (process.ts): then its dispatch leaves no trace and may be answered from memory.
    if (this.env.LEVELCODE_HOOKS_LOG || (event === "PostToolUse" && this.env.LEVELCODE_TEAM && !callerRecordsCompliance())) return null;
    const scope = `${this.envId}\u0002${cwd}\u0002${event}`;
    const member = MATCHER_MEMBERS[event as HookEventName];
    if (typeof payload.tool_name === "string") return { event, cwd, key: `${scope}\u0002${payload.tool_name}`, scope, subject: payload.tool_name };
    if (member && typeof payload[member] === "string") {
      return { event, cwd, key: `${scope}\u0002${member}=${payload[member]}`, scope, subject: payload[member] as string };
    }
    // A tool event without a tool's name is an error the dispatcher answers itself.
    return { event, cwd, key: `${scope}\u0002\u0003`, scope, subject: TOOL_EVENTS.has(event) ? undefined : "\u0003" };
  }

  /** The call's answer from memory, or from an answer not remembered yet; null when there is none. */
  recall(bin: string, call: Call): HookDispatchOutcome | null {
    const { key, scope, subject } = call;
    let hit = this.cache.lookup(key, scope, subject);
    if (hit) return hit;
    // The first sighting of a tool event in a directory: what the last process kept of it.
    if (SUMMARIZED.has(call.event) && !this.keptTried.has(scope)) this.takeKept(bin, call);
    const pending = this.fresh.get(scope);
    hit = pending ? this.answerFrom(pending.verdict, key, subject, true) : null;
    // A host that never lets a timer run (calls answered from memory, one after another) gets
    // the watches now, on the second call that needs them.
    if (hit && pending && ++pending.uses > 1) pending.storeNow();
    return hit;
  }

  /**
   * A tool call of a step whose twin is on its way: the twin's answer answers this one too, and
   * so does the answer of another tool's call, or of the probe, when it says which tools no
   * group applies to (and the files it was read from still hold what it read). An answer that
   * ran handlers answers nothing else: then the call is sent on its own. Tool events only:
   * levelcode awaits them, while Stop may be the host's last act. Resolves with the call's
   * answer, or null when it must be sent after all; undefined when there is nothing to wait for.
   */
  ahead(call: Call): Promise<HookDispatchOutcome | null> | undefined {
    if (!SUMMARIZED.has(call.event)) return undefined;
    const { key, scope, subject } = call;
    const twin = !this.cache.matched(key) ? this.inflight.get(key) : undefined;
    const waiting = subject !== undefined && this.cache.mayBeSummarized(scope) ? this.scopeAhead.get(scope) : undefined;
    waiting?.wake?.();
    const answered = twin ?? waiting?.answered;
    return answered?.then((verdict) => this.answerFrom(verdict, key, subject) ?? this.cache.lookup(key, scope, subject));
  }

  /**
   * Sends the call with `send`, which writes the request before returning, and marks it as on
   * its way: what its twins, and for a tool event another tool's call of its scope, wait for.
   */
  track(call: Call, send: (settle: Settle) => Promise<HookDispatchOutcome>): Promise<HookDispatchOutcome> {
    let settle: Settle = () => {};
    const verdict = new Promise<Verdict | null>((resolve) => (settle = resolve));
    const sent = send(settle);
    if (SUMMARIZED.has(call.event)) {
      const { key, scope } = call;
      void sent.then(() => settle(null));
      this.inflight.set(key, verdict);
      void verdict.then(() => {
        if (this.inflight.get(key) === verdict) this.inflight.delete(key);
      });
      if (!this.scopeAhead.has(scope)) this.hold(scope, verdict, HOLD_MS);
    }
    return sent;
  }

  /**
   * Called as the call's request goes out: what `store` needs to know nothing changed since.
   * The function it returns remembers the answer, and gives it to `settle` (see `track`).
   */
  outgoing(bin: string, call: Call, settle?: Settle): (reply: Reply, outcome: HookDispatchOutcome) => void {
    const ticket = this.cache.ticket();
    const sentNs = nowNs();
    const { key, scope } = call;
    // What a summary in the answer would be kept as: taken now, as the request goes out.
    const keepAs = !this.inline && SUMMARIZED.has(call.event) ? this.keepingAs(bin, call.cwd, call.event) : undefined;
    return (reply, outcome) => {
      if (reply.kind !== "answer") return;
      const watch = this.inline ? [] : watchList(reply.answer.watch);
      const except = this.inline ? null : stringList(reply.answer.no_match_except);
      // An answer that ran nothing and says nothing of other subjects: its scope has matchers
      // that only a subject can tell (regular expressions), so no call waits for a summary.
      if (except === null && outcome.results.length === 0) this.cache.noteUnsummarized(scope);
      if (!watch || !isNoMatch(outcome)) this.cache.noteMatched(key);
      else {
        const summary = except !== null ? { scope, except } : undefined;
        const verdict = { outcome, key, except: summary ? new Set(except) : null, watch, sentNs };
        settle?.(verdict);
        this.storeLater(verdict, ticket, summary, summary ? keepAs : undefined);
      }
    };
  }

  /**
   * Asks, for the tool events in `cwd`, which tools no group applies to, so that the first tool
   * call of the process is answered from memory. `ask` sends the quiet request (it runs nothing,
   * docs/serve.md `options.probe`), or returns null when the server cannot take one; its answer
   * is read along with the first event's, or as soon as a tool call waits for it.
   */
  probe(bin: string, cwd: string, ask: (event: string, payload: HookPayload) => Asked | null): void {
    for (const event of SUMMARIZED_EVENTS) {
      const payload: HookPayload = { event, cwd, tool_name: "", tool_input: {} };
      const call = this.callOf(event, payload);
      if (call === null) continue;
      const { scope } = call;
      if (this.scopeAhead.has(scope) || !this.cache.mayBeSummarized(scope)) continue;
      this.takeKept(bin, call, true);
      const ticket = this.cache.ticket();
      const sentNs = nowNs();
      const keepAs = this.keepingAs(bin, cwd, event);
      const asked = ask(event, payload);
      if (asked === null) return;
      const answered = asked.reply.then((reply): Verdict | null => {
        if (reply.kind !== "answer") return null;
        const watch = watchList(reply.answer.watch);
        const except = stringList(reply.answer.no_match_except);
        const outcome = outcomeFromAnswer(reply.answer);
        if (!watch || !except || !isNoMatch(outcome)) return null;
        const verdict = { outcome, key: null, except: new Set(except), watch, sentNs };
        this.storeLater(verdict, ticket, { scope, except }, keepAs);
        return verdict;
      });
      this.hold(scope, answered, null, asked.wake);
    }
  }

  /** Forgets every answer, and the kept summaries already read. */
  invalidate(): void {
    this.fresh.clear();
    this.keptTried.clear();
    this.keptTexts.clear();
    this.cache.invalidate();
  }

  /** Forgets every answer, as the runner closes. */
  close(): void {
    this.fresh.clear();
    this.cache.invalidate();
  }

  /**
   * What an answer says of a call that waited for it: its outcome, when the answer was the plain
   * no-match for this very key, or for a scope whose summary leaves this subject out, and the
   * files it was read from still hold what the server read (checked once per answer).
   */
  private answerFrom(verdict: Verdict | null, key: string, subject: string | undefined, again = false): HookDispatchOutcome | null {
    if (verdict === null) return null;
    if (verdict.key !== key && !(verdict.except !== null && subject !== undefined && !verdict.except.has(subject))) return null;
    const holds = again ? this.cache.stampsHold(verdict.watch) : (verdict.holds ??= this.cache.stampsHold(verdict.watch));
    if (!holds) return null;
    this.cache.countHit();
    return { ...verdict.outcome, results: [], warnings: [], durationMs: 0 };
  }

  private hold(scope: string, sent: Promise<Verdict | null>, bound: number | null, wake?: () => void): void {
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
    this.scopeAhead.set(scope, entry);
    void answered.then(() => {
      if (this.scopeAhead.get(scope) === entry) this.scopeAhead.delete(scope);
    });
  }

  /**
   * Remembers an answer, after the callers waiting for it have it: watching the files it depends
   * on costs more than the answer itself the first time (see cache.ts).
   */
  private storeLater(verdict: Verdict, ticket: number, summary?: Summary, keep?: KeepAs): void {
    let done = false;
    // Kept for the next process once remembered here, or as this process exits, whichever is
    // first: a host that exits right after its calls never lets the timer below run.
    const keepNow =
      summary && keep
        ? () => {
            atExit.delete(keepNow!);
            this.keepForNext(keep, summary, verdict);
          }
        : undefined;
    const storeNow = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      this.cache.store(verdict.key, ticket, verdict.outcome, verdict.watch, summary);
      if (summary && this.fresh.get(summary.scope) === entry) this.fresh.delete(summary.scope);
      keepNow?.();
    };
    const entry = { verdict, uses: 0, storeNow };
    if (keepNow) beforeExit(keepNow);
    if (summary) this.fresh.set(summary.scope, entry);
    // On a later turn, and not on one that may be the event loop's last (process.ts): the answer
    // is kept at exit anyway, and a host that is done would wait for the watches.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const later = (ms: number): void => {
      timer = setTimeout(() => (done ? undefined : mayBeLastTurn() ? later(STORE_AFTER_MS) : storeNow()), ms);
      (timer as Unrefable).unref?.();
    };
    later(0);
  }

  /** What an answer to a request going out now would be kept as (kept.ts). */
  private keepingAs(bin: string, cwd: string, event: string): KeepAs {
    return { binary: bin, cwd, event, envKey: this.envKey, env: this.env, real: realDirectory(cwd) };
  }

  /** Keeps a scope's summary for the next process in this directory (kept.ts). */
  private keepForNext(keep: KeepAs, summary: Summary, verdict: Verdict): void {
    const folder = keptFolder(keep.env);
    if (folder === null || verdict.sentNs === undefined) return;
    // Under the environment of the request: the host's may have changed since.
    const key = keptKey(keep.binary, keep.envKey, keep.cwd, keep.event);
    const kept = { except: summary.except, watch: verdict.watch };
    const text = writeKept(folder, key, keep.binary, kept, verdict.sentNs, this.keptTexts.get(summary.scope) ?? null, keep.cwd, keep.real);
    if (text !== null) this.keptTexts.set(summary.scope, text);
  }

  /**
   * Takes in what the last process in this directory kept of a scope: an answer for every tool
   * its summary covers, given, like any answer not remembered yet, only while its files hold what
   * the server read (`answerFrom`), and remembered as soon as its files are watched: at once when
   * the runner is being made (`now`), after the call's answer otherwise.
   */
  private takeKept(bin: string, call: Call, now = false): void {
    const { scope, cwd, event } = call;
    this.keptTried.add(scope);
    // An inline configuration is not what any kept answer was read from.
    if (this.inline) return;
    const folder = keptFolder(this.env);
    if (folder === null) return;
    const found = readKept(folder, keptKey(bin, this.envKey, cwd, event), bin, cwd);
    if (found === null) return;
    this.keptTexts.set(scope, found.text);
    const outcome = outcomeFromAnswer({ decision: "proceed" });
    const verdict: Verdict = { outcome, key: null, except: new Set(found.kept.except), watch: found.kept.watch };
    const summary = { scope, except: found.kept.except };
    const ticket = this.cache.ticket();
    // As the runner is made (`now`), no call waits: its folders are watched at once, and the
    // first calls are answered from memory. On the way of a call, after its answer.
    if (now && this.cache.store(null, ticket, outcome, verdict.watch, summary)) return;
    this.storeLater(verdict, ticket, summary);
  }
}

/** What is still to be kept for the next process (kept.ts) when this one exits. */
const atExit = new Set<() => void>();
let exitHooked = false;
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
