/**
 * One `levelcode-hooks serve` process (docs/serve.md): request lines go in on its stdin, each
 * written before `send` returns, and each answer comes back as one line on its stdout, matched to
 * its request by `id`, in whatever order the server answers. A server that dies, answers garbage
 * or is declared hung is killed; the requests it held resolve with a fault, never a rejection.
 *
 * Nothing is written before the first request, and a binary older than an option a request
 * uses says so in its answer, which `refused` reads. The host never waits for a server it is not
 * waiting an answer from: the process, its pipes
 * and its timers are unref'd while no request is out. Nothing kills a server when the host
 * exits: its stdin then closes, and it finishes what it was given and exits by itself.
 */
import { startChild, type Child } from "./child.js";
import { noteServerBusy, noteServerIdle } from "./process.js";

type Json = Record<string, unknown>;

/** What a request got: the answer, or why there is none. */
export type Reply =
  | { kind: "answer"; answer: Json }
  | {
      kind: "fault";
      warning: string;
      /** The server never answered anything: `serve` cannot start with this binary. */
      neverStarted: boolean;
    };

/** The error of a binary older than an option this client sends. */
const UNKNOWN_HOOKS = "unknown field `hooks`";
const UNKNOWN_WATCH = "unknown field `watch`";
const UNKNOWN_CALLER_RECORDS = "unknown field `caller_records_compliance`";

type Unrefable = { ref?: () => void; unref?: () => void };

/**
 * Turns of the event loop seen since this module loaded, counted only while a request is out
 * (`currentTurn`). An answer can only be read on a later turn than its request was written, so a
 * server that has not answered within the turn its request was sent in is not slow: the host has
 * not read yet. Nothing is scheduled once every answer is in: a callback due as the host ends
 * would run in the event loop's last turn, and Bun then collects the heap before it exits.
 */
let turn = 0;
let turnScheduled = false;

/** The turn now, counting on from here (for a request that is out). */
export function currentTurn(): number {
  if (!turnScheduled) {
    turnScheduled = true;
    setImmediate(() => {
      turn++;
      turnScheduled = false;
    });
  }
  return turn;
}

/** The turn now, counting nothing more (no request is out). */
export function turnSeen(): number {
  return turn;
}

export class Server {
  private readonly proc: Child;
  private buffered = "";
  /** Requests written and not answered yet, the oldest first. */
  private readonly pending = new Map<string, (reply: Reply) => void>();
  /**
   * Requests among `pending` that nobody waits for yet (a probe sent when the runner was made):
   * they neither hold the host nor count as work out, and their answers are read along with the
   * next request's, or once `wake` is called.
   */
  private readonly quiet = new Set<string>();
  private answeredAny = false;
  private dead = false;
  private idleTimer: ReturnType<typeof setTimeout> | undefined;
  /**
   * The binary takes `options.hooks`, and `options.watch`. Taken to be so until an answer says
   * otherwise (the binary ships with this client); a request refused for it is sent again.
   */
  inline = true;
  watch = true;
  /** The binary takes `options.caller_records_compliance`; likewise until an answer says otherwise. */
  callerRecords = true;
  /**
   * The sessions whose background results a runner expects from this server (runner.ts): while
   * there is one, the server does not end for being idle.
   */
  readonly background = new Set<string>();
  /** The server answered a request before an older one: it serves requests side by side. */
  concurrent = false;
  /** When the server last answered, or last went from idle to busy (ms, `Date.now()`). */
  lastProgress = Date.now();
  /** The turn of the event loop of `lastProgress`. */
  progressTurn = turnSeen();
  private startTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly spawnedAt = Date.now();

  constructor(
    binary: string,
    env: Record<string, string>,
    private readonly onDeath: (server: Server) => void,
    private readonly idleMs: number,
    private readonly startTimeoutMs = 10_000,
  ) {
    // Nothing is written until there is a request: a server whose host exits without one reads
    // the end of its input and exits, having written nothing.
    this.proc = startChild(binary, env, { data: (chunk) => this.onData(chunk), close: (how) => this.kill(how) });
    this.armIdle();
  }

  /** Whether the server has answered anything yet. */
  get started(): boolean {
    return this.answeredAny;
  }

  /** Learns from a refusal which options the binary lacks; true when the request should go again. */
  refused(answer: Json): boolean {
    const error = typeof answer.error === "string" ? answer.error : "";
    if (this.inline && error.includes(UNKNOWN_HOOKS)) {
      this.inline = false;
      this.watch = false;
      return true;
    }
    if (this.watch && error.includes(UNKNOWN_WATCH)) {
      this.watch = false;
      return true;
    }
    if (this.callerRecords && error.includes(UNKNOWN_CALLER_RECORDS)) {
      this.callerRecords = false;
      return true;
    }
    return false;
  }

  get alive(): boolean {
    return !this.dead;
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  /** Requests out that someone waits for. */
  get outstanding(): number {
    return this.pending.size - this.quiet.size;
  }

  /** Whether `id` is the oldest request still out that someone waits for. */
  isOldest(id: number): boolean {
    return this.oldest() === String(id);
  }

  private oldest(): string | undefined {
    for (const key of this.pending.keys()) if (!this.quiet.has(key)) return key;
    return undefined;
  }

  /** Someone now waits for the quiet request `id`: it holds the host and is read like any other. */
  wake(id: number): void {
    const key = String(id);
    if (!this.quiet.has(key) || this.dead) return;
    const idle = this.outstanding === 0;
    this.quiet.delete(key);
    if (idle) this.busy();
    this.watchStart();
  }

  /**
   * Writes one request line (ending in a newline) before returning, and resolves with its answer
   * or a fault. `id` is the line's `id`, a number unique in this process.
   */
  send(line: string, id: number, quiet = false): Promise<Reply> {
    if (this.dead) {
      return Promise.resolve({ kind: "fault", warning: "levelcode-hooks serve had already ended", neverStarted: false });
    }
    return new Promise<Reply>((resolve) => {
      if (quiet) this.quiet.add(String(id));
      else {
        if (this.outstanding === 0) this.busy();
        this.watchStart();
      }
      this.pending.set(String(id), resolve);
      if (!this.proc.write(line)) {
        // The process is ending: its close says how (with its stderr); this is a backstop.
        const backstop = setTimeout(() => this.kill("levelcode-hooks serve had ended; its input is closed"), 2000);
        (backstop as Unrefable).unref?.();
      }
    });
  }

  /** From idle to busy: the host waits for the server, and its answers are read. */
  private busy(): void {
    noteServerBusy();
    this.lastProgress = Date.now();
    this.progressTurn = currentTurn();
    this.refAll();
    clearTimeout(this.idleTimer);
  }

  /** A server that has answered nothing within its start time is given up. */
  private watchStart(): void {
    if (this.answeredAny || this.startTimer !== undefined) return;
    this.startTimer = setTimeout(() => {
      if (!this.answeredAny) this.kill(`levelcode-hooks serve did not answer its first line within ${this.startTimeoutMs} ms`);
    }, Math.max(0, this.spawnedAt + this.startTimeoutMs - Date.now()));
    (this.startTimer as Unrefable).unref?.();
  }

  /**
   * Ends the server as a caller would: end of input; it answers what it has and exits 0. A quiet
   * request, which nobody waits for, is settled now.
   */
  end(): void {
    if (this.dead) return;
    this.proc.end();
    this.dead = true;
    for (const key of this.quiet) {
      this.pending.get(key)?.({ kind: "fault", warning: "levelcode-hooks serve ended before this was read", neverStarted: false });
      this.pending.delete(key);
    }
    this.quiet.clear();
    this.onDeath(this);
  }

  /** Ends the server now; each request it holds resolves with `reason` as its warning. */
  kill(reason: string): void {
    if (this.dead && this.pending.size === 0) return;
    const wasDead = this.dead;
    this.dead = true;
    clearTimeout(this.idleTimer);
    clearTimeout(this.startTimer);
    try {
      this.proc.end();
      // SIGTERM lets serve stop a running handler's process group as on a timeout.
      this.proc.kill("SIGTERM");
      const hard = setTimeout(() => this.proc.kill("SIGKILL"), 1500);
      (hard as Unrefable).unref?.();
    } catch {
      // already gone
    }
    this.unrefAll();
    noteServerIdle();
    const held = [...this.pending.values()];
    this.pending.clear();
    this.quiet.clear();
    for (const resolve of held) resolve({ kind: "fault", warning: reason, neverStarted: !this.answeredAny });
    if (!wasDead) this.onDeath(this);
  }

  private onData(chunk: string): void {
    const text = this.buffered + chunk;
    let from = 0;
    let newline: number;
    while (this.pending.size > 0 && (newline = text.indexOf("\n", from)) >= 0) {
      const line = text.slice(from, newline);
      from = newline + 1;
      this.onLine(line);
    }
    this.buffered = from === 0 ? text : text.slice(from);
  }

  private onLine(line: string): void {
    let answer: unknown;
    try {
      answer = JSON.parse(line);
    } catch {
      this.kill(`levelcode-hooks serve answered something that is not JSON: ${line.slice(0, 120)}`);
      return;
    }
    const id = answer !== null && typeof answer === "object" && !Array.isArray(answer) ? (answer as Json).id : undefined;
    const key = typeof id === "string" ? JSON.stringify(id) : String(id);
    const resolve = id === undefined ? undefined : this.pending.get(key);
    if (!resolve) {
      this.kill(`levelcode-hooks serve wrote a line that answers no request: ${line.slice(0, 120)}`);
      return;
    }
    if (!this.quiet.has(key) && this.oldest() !== key) this.concurrent = true;
    this.pending.delete(key);
    this.quiet.delete(key);
    this.answeredAny = true;
    clearTimeout(this.startTimer);
    this.lastProgress = Date.now();
    this.progressTurn = this.outstanding > 0 ? currentTurn() : turnSeen();
    if (this.outstanding === 0) {
      noteServerIdle();
      this.unrefAll();
      this.armIdle();
    }
    resolve({ kind: "answer", answer: answer as Json });
  }

  /**
   * An idle server ends by itself after `idleMs`, unless it keeps background results still to
   * come for a session of a runner (`background`): their next answer is to come from it.
   */
  private armIdle(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.outstanding > 0) return;
      if (this.background.size === 0) this.end();
      else this.armIdle();
    }, this.idleMs);
    (this.idleTimer as Unrefable).unref?.();
  }

  /** While a request is out, the host waits for its answer, as it would for a handler. */
  private refAll(): void {
    this.proc.busy();
  }

  private unrefAll(): void {
    this.proc.idle();
  }
}
