/**
 * One `levelcode-hooks serve` process (docs/serve.md): requests go in as lines on its stdin, one
 * at a time, and each answer comes back as one line on its stdout. A server that dies, answers
 * garbage or is declared hung by its caller is killed; the request it held resolves with a fault
 * instead of an answer, never with a rejection.
 */
import { spawn, type ChildProcess } from "node:child_process";

type Json = Record<string, unknown>;

/** What a request got: the answer, or why there is none. */
export type Reply =
  | { kind: "answer"; answer: Json }
  | {
      kind: "fault";
      warning: string;
      /** The server never answered its first line: `serve` cannot start with this binary. */
      neverStarted: boolean;
    };

/**
 * The first line every server is sent. It dispatches nothing (no event), and the error it gets
 * says whether this binary takes an inline `hooks` object in `options` (contract §14).
 */
const PROBE_ID = "levelcode-hooks-client-probe";
const PROBE_LINE = `{"id":"${PROBE_ID}","options":{"hooks":{}}}\n`;
const INLINE_UNSUPPORTED = "unknown field `hooks`";

/** Every server alive in this process, so that all of them end when the process does. */
const live = new Set<Server>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const server of live) server.kill("the host process exited");
  });
}

type Unrefable = { ref?: () => void; unref?: () => void };

export class Server {
  private readonly proc: ChildProcess;
  private buffered = "";
  private stderrTail = "";
  private pending: { id: string | number; resolve: (reply: Reply) => void } | null = null;
  private answeredProbe = false;
  private dead = false;
  /** Resolves once the server has answered its probe (true) or died first (false). */
  readonly ready: Promise<boolean>;
  /** The binary takes `options.hooks` (known once `ready` resolves true). */
  inline = false;

  constructor(
    binary: string,
    env: Record<string, string>,
    private readonly onDeath: (server: Server) => void,
    startTimeoutMs = 10_000,
  ) {
    installExitHook();
    live.add(this);
    let settle: (ok: boolean) => void = () => {};
    this.ready = new Promise<boolean>((resolve) => {
      settle = resolve;
    });
    this.pending = {
      id: PROBE_ID,
      resolve: (reply) => {
        if (reply.kind === "answer") {
          this.answeredProbe = true;
          const error = typeof reply.answer.error === "string" ? reply.answer.error : "";
          this.inline = !error.includes(INLINE_UNSUPPORTED);
          this.idle();
          settle(true);
        } else {
          this.startFailure = reply.warning;
          settle(false);
        }
      },
    };

    this.proc = spawn(binary, ["serve"], { stdio: ["pipe", "pipe", "pipe"], env, windowsHide: true });
    this.proc.on("error", (error) => this.kill(`could not run ${binary} serve: ${error.message}`));
    // `close`, not `exit`: an answer written just before the end is read first.
    this.proc.on("close", (code, signal) => {
      const how = signal ? `was killed by ${signal}` : `exited with status ${code}`;
      const tail = this.stderrTail.trim();
      this.kill(`levelcode-hooks serve ${how}${tail ? `: ${tail}` : ""}`);
    });
    // A write after the server died fails with EPIPE; the exit above reports it.
    this.proc.stdin?.on("error", () => {});
    this.proc.stdout?.setEncoding("utf8");
    this.proc.stdout?.on("data", (chunk: string) => this.onData(chunk));
    this.proc.stderr?.setEncoding("utf8");
    this.proc.stderr?.on("data", (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-2000);
    });
    this.busy();
    this.proc.stdin?.write(PROBE_LINE);
    const start = setTimeout(() => {
      if (!this.answeredProbe) this.kill(`levelcode-hooks serve did not answer its first line within ${startTimeoutMs} ms`);
    }, startTimeoutMs);
    (start as Unrefable).unref?.();
    void this.ready.then(() => clearTimeout(start));
  }

  /** Why the server could not start, once `ready` resolved false. */
  startFailure = "";

  get alive(): boolean {
    return !this.dead;
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  /** Sends one request line (ending in a newline) and resolves with its answer or a fault. */
  send(line: string, id: number): Promise<Reply> {
    if (this.dead) {
      return Promise.resolve({ kind: "fault", warning: "levelcode-hooks serve had already ended", neverStarted: false });
    }
    this.busy();
    return new Promise<Reply>((resolve) => {
      this.pending = { id, resolve };
      this.proc.stdin?.write(line);
    });
  }

  /** Ends the server; the request it holds, if any, resolves with `reason` as its warning. */
  kill(reason: string): void {
    if (this.dead) return;
    this.dead = true;
    live.delete(this);
    try {
      this.proc.stdin?.destroy();
      // SIGTERM lets serve stop a running handler's process group as on a timeout.
      this.proc.kill("SIGTERM");
      const hard = setTimeout(() => {
        if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill("SIGKILL");
      }, 1500);
      (hard as Unrefable).unref?.();
    } catch {
      // already gone
    }
    this.idle();
    const pending = this.pending;
    this.pending = null;
    pending?.resolve({ kind: "fault", warning: reason, neverStarted: !this.answeredProbe });
    this.onDeath(this);
  }

  private onData(chunk: string): void {
    this.buffered += chunk;
    let newline: number;
    while (!this.dead && (newline = this.buffered.indexOf("\n")) >= 0) {
      const line = this.buffered.slice(0, newline);
      this.buffered = this.buffered.slice(newline + 1);
      this.onLine(line);
    }
  }

  private onLine(line: string): void {
    const pending = this.pending;
    if (!pending) {
      this.kill(`levelcode-hooks serve wrote a line nobody asked for: ${line.slice(0, 120)}`);
      return;
    }
    let answer: unknown;
    try {
      answer = JSON.parse(line);
    } catch {
      this.kill(`levelcode-hooks serve answered something that is not JSON: ${line.slice(0, 120)}`);
      return;
    }
    if (answer === null || typeof answer !== "object" || Array.isArray(answer) || (answer as Json).id !== pending.id) {
      this.kill(`levelcode-hooks serve answered with a line that is not the answer to request ${pending.id}: ${line.slice(0, 120)}`);
      return;
    }
    this.pending = null;
    this.idle();
    pending.resolve({ kind: "answer", answer: answer as Json });
  }

  /** While a request is out, the host waits for it; otherwise the server must not hold it. */
  private busy(): void {
    this.proc.ref();
    (this.proc.stdout as Unrefable | null)?.ref?.();
  }

  private idle(): void {
    this.proc.unref();
    for (const stream of [this.proc.stdin, this.proc.stdout, this.proc.stderr]) {
      (stream as Unrefable | null)?.unref?.();
    }
  }
}
