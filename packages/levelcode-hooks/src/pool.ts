/**
 * The servers of this process: one pool for each binary and environment, shared by every runner
 * the process creates (a runner per prompt costs nothing more) and by `logToolCall`.
 *
 * A request goes to the server with the fewest requests out, among those that answered within
 * the last `STALL_MS` or since the host last read (a server that has not is busy with a slow
 * handler, and a server that answers in order would make the request wait behind it). A new server is started only when
 * every server is stalled, or the least busy one has `SPREAD` requests out and there is only one;
 * never more than `maxServers` (4). A server idle for `idleMs` (30 s) ends by itself.
 */
import { currentTurn, Server, type Reply } from "./server.js";

/** A server with requests out and no answer for this long is taken to be running a slow handler. */
const STALL_MS = 20;
/** Requests out on the least busy server before a second server is worth starting. */
const SPREAD = 4;
const SPREAD_SERVERS = 2;
const DEFAULT_MAX_SERVERS = 4;
const DEFAULT_IDLE_MS = 30_000;

export type PoolSettings = { maxServers?: number | undefined; idleMs?: number | undefined; startTimeoutMs?: number | undefined };

export class Pool {
  private readonly servers: Server[] = [];
  private started = 0;
  /** Runners open on this pool: once none is, its servers are ended. */
  private holders = 0;
  maxServers = DEFAULT_MAX_SERVERS;
  idleMs = DEFAULT_IDLE_MS;
  startTimeoutMs = 10_000;

  constructor(
    readonly binary: string,
    private readonly env: Record<string, string>,
  ) {}

  /** Sets what a runner asked for; the last runner to ask wins. */
  configure(settings: PoolSettings): void {
    if (settings.maxServers !== undefined) this.maxServers = Math.max(1, settings.maxServers);
    if (settings.idleMs !== undefined) this.idleMs = Math.max(0, settings.idleMs);
    if (settings.startTimeoutMs !== undefined) this.startTimeoutMs = settings.startTimeoutMs;
  }

  /** Starts a server now when none is alive, so that the first request does not wait for one. */
  warm(): void {
    if (this.servers.length === 0) this.start();
  }

  /** How many servers this pool has started, and how many are alive. */
  counts(): { started: number; alive: number; pids: number[] } {
    return { started: this.started, alive: this.servers.length, pids: this.servers.map((s) => s.pid ?? -1) };
  }

  /** The server the next request goes to (started if need be). */
  pick(): Server {
    const now = Date.now();
    let best: Server | null = null;
    let fallback: Server | null = null;
    for (const server of this.servers) {
      if (!server.alive) continue;
      if (fallback === null || server.outstanding < fallback.outstanding) fallback = server;
      // Turns are counted only while requests are out (server.ts).
      const stalled = server.outstanding > 0 && currentTurn() > server.progressTurn && now - server.lastProgress > STALL_MS;
      if (stalled && !server.concurrent) continue;
      if (best === null || server.outstanding < best.outstanding) best = server;
    }
    const room = this.servers.length < this.maxServers;
    if (room && (best === null || (best.outstanding >= SPREAD && this.servers.length < SPREAD_SERVERS))) return this.start();
    return best ?? fallback ?? this.start();
  }

  /** Writes `line` to a server before returning; resolves with the answer or a fault. */
  send(server: Server, line: string, id: number, quiet = false): Promise<Reply> {
    return server.send(line, id, quiet);
  }

  /** Ends every server as a caller would: each answers what it was given, then exits. */
  endAll(): void {
    for (const server of [...this.servers]) server.end();
  }

  /** A runner uses this pool, until it calls `release`. */
  hold(): void {
    this.holders++;
  }

  /** A runner is done with this pool; the last one to go ends its servers (`endAll`). */
  release(): void {
    this.holders = Math.max(0, this.holders - 1);
    if (this.holders === 0) this.endAll();
  }

  private start(): Server {
    const server = new Server(
      this.binary,
      this.env,
      (dead) => {
        const at = this.servers.indexOf(dead);
        if (at >= 0) this.servers.splice(at, 1);
      },
      this.idleMs,
      this.startTimeoutMs,
    );
    this.started++;
    this.servers.push(server);
    return server;
  }
}

const pools = new Map<string, Pool>();

/** The pool of this process for a binary and environment (`key` names the environment). */
export function poolFor(binary: string, key: string, env: Record<string, string>): Pool {
  const name = `${binary}\u0000${key}`;
  let pool = pools.get(name);
  if (!pool) {
    pool = new Pool(binary, env);
    pools.set(name, pool);
  }
  return pool;
}

/** Every `serve` process this module has alive, in all pools (for tests and benchmarks). */
export function serverCounts(): { started: number; alive: number; pids: number[] } {
  const total = { started: 0, alive: 0, pids: [] as number[] };
  for (const pool of pools.values()) {
    const c = pool.counts();
    total.started += c.started;
    total.alive += c.alive;
    total.pids.push(...c.pids);
  }
  return total;
}

let nextId = 1;
/** A request id unique in this process. */
export function newId(): number {
  return nextId++;
}
