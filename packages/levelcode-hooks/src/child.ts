/**
 * A `serve` process and its three pipes, started with `Bun.spawn` under Bun (a few hundred
 * microseconds; Bun's `node:child_process` costs tens of milliseconds on its first use) and with
 * `node:child_process` elsewhere. Either way the process does not hold the host unless `busy()`
 * was called more recently than `idle()`, and writes reach the pipe before `write` returns.
 */
import { spawn as nodeSpawn } from "node:child_process";

export type ChildEvents = {
  /** Text read from stdout. */
  data: (chunk: string) => void;
  /** The process ended (stdout read to its end first); `how` says how. */
  close: (how: string) => void;
};

export interface Child {
  readonly pid: number | undefined;
  /** Writes to stdin before returning; false when the pipe is gone. */
  write(text: string): boolean;
  /** Closes stdin: the server answers what it has and exits. */
  end(): void;
  kill(signal: "SIGTERM" | "SIGKILL"): void;
  readonly exited: boolean;
  /** The host waits for the process, and stdout is read. */
  busy(): void;
  /** The host no longer waits for it. */
  idle(): void;
}

type Unrefable = { ref?: () => void; unref?: () => void };

type BunFileSink = { write(text: string): number; flush(): unknown; end(): unknown; ref?(): void; unref?(): void };
type BunSubprocess = {
  pid: number;
  stdin: BunFileSink;
  stdout: { getReader(): Reader };
  stderr: unknown;
  exited: Promise<number>;
  exitCode: number | null;
  signalCode: string | null;
  kill(signal?: string): void;
  ref(): void;
  unref(): void;
};
type Reader = { read(): Promise<{ value?: Uint8Array | undefined; done: boolean }> };
type BunSpawn = (cmd: string[], options: Record<string, unknown>) => BunSubprocess;

function how(code: number | null, signal: string | null, stderr: string): string {
  const tail = stderr.trim().slice(-2000);
  return `levelcode-hooks serve ${signal ? `was killed by ${signal}` : `exited with status ${code}`}${tail ? `: ${tail}` : ""}`;
}

class BunChild implements Child {
  private readonly proc: BunSubprocess;
  private readonly reader: Reader;
  private readonly decoder = new TextDecoder();
  private reading = false;
  private wanted = false;
  private closed = false;
  exited = false;

  constructor(spawn: BunSpawn, binary: string, env: Record<string, string>, private readonly on: ChildEvents) {
    this.proc = spawn([binary, "serve"], { stdin: "pipe", stdout: "pipe", stderr: "pipe", env, windowsHide: true });
    // In this order: a reader taken before the first unref holds the host for good (Bun 1.4).
    this.idle();
    this.reader = this.proc.stdout.getReader();
    // Neither this promise nor an idle reader holds the host.
    void this.proc.exited.then(() => {
      this.exited = true;
      if (!this.reading) void this.finish();
    });
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  write(text: string): boolean {
    try {
      this.proc.stdin.write(text);
      this.proc.stdin.flush();
      return true;
    } catch {
      return false;
    }
  }

  end(): void {
    try {
      this.proc.stdin.end();
    } catch {
      // already closed
    }
  }

  kill(signal: "SIGTERM" | "SIGKILL"): void {
    if (!this.exited) this.proc.kill(signal);
  }

  busy(): void {
    this.wanted = true;
    this.proc.ref();
    this.proc.stdin.ref?.();
    if (!this.reading) void this.pump();
  }

  idle(): void {
    this.wanted = false;
    this.proc.unref();
    this.proc.stdin.unref?.();
  }

  /** Reads stdout while an answer is awaited; a pending read would hold the host. */
  private async pump(): Promise<void> {
    this.reading = true;
    try {
      while (this.wanted) {
        const { value, done } = await this.reader.read();
        if (done) break;
        this.on.data(this.decoder.decode(value, { stream: true }));
        if (!this.wanted) return;
      }
      if (!this.wanted) return;
    } catch {
      // the stream failed: the process is ending
    } finally {
      this.reading = false;
    }
    await this.finish();
  }

  private async finish(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const code = await this.proc.exited;
    let stderr = "";
    try {
      stderr = await new Response(this.proc.stderr as ConstructorParameters<typeof Response>[0]).text();
    } catch {
      // nothing to add
    }
    this.on.close(how(code, this.proc.signalCode, stderr));
  }
}

class NodeChild implements Child {
  private readonly proc;
  private stderrTail = "";

  constructor(binary: string, env: Record<string, string>, private readonly on: ChildEvents) {
    this.proc = nodeSpawn(binary, ["serve"], { stdio: ["pipe", "pipe", "pipe"], env, windowsHide: true });
    this.proc.on("error", (error) => this.on.close(`could not run ${binary} serve: ${error.message}`));
    // `close`, not `exit`: an answer written just before the end is read first.
    this.proc.on("close", (code, signal) => this.on.close(how(code, signal, this.stderrTail)));
    // A write after the server died fails with EPIPE; the close above reports it.
    this.proc.stdin?.on("error", () => {});
    this.proc.stdout?.setEncoding("utf8");
    this.proc.stdout?.on("data", (chunk: string) => this.on.data(chunk));
    this.proc.stderr?.setEncoding("utf8");
    this.proc.stderr?.on("data", (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-2000);
    });
    this.idle();
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  get exited(): boolean {
    return this.proc.exitCode !== null || this.proc.signalCode !== null;
  }

  write(text: string): boolean {
    if (!this.proc.stdin || this.proc.stdin.destroyed) return false;
    this.proc.stdin.write(text);
    return true;
  }

  end(): void {
    this.proc.stdin?.end();
  }

  kill(signal: "SIGTERM" | "SIGKILL"): void {
    if (!this.exited) this.proc.kill(signal);
  }

  busy(): void {
    this.proc.ref();
    (this.proc.stdout as Unrefable | null)?.ref?.();
  }

  idle(): void {
    this.proc.unref();
    for (const stream of [this.proc.stdin, this.proc.stdout, this.proc.stderr]) (stream as Unrefable | null)?.unref?.();
  }
}

/** Starts `binary serve`. */
export function startChild(binary: string, env: Record<string, string>, on: ChildEvents): Child {
  const bun = (globalThis as { Bun?: { spawn?: BunSpawn } }).Bun;
  if (typeof bun?.spawn === "function") return new BunChild(bun.spawn, binary, env, on);
  return new NodeChild(binary, env, on);
}
