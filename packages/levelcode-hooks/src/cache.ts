/**
 * The no-match cache: the answers "nothing matched" for an (event, tool) in a project, kept in
 * memory so that most tool calls never leave the process. It is dropped whole whenever anything
 * that could change such an answer may have changed: a settings layer, the trust store, a
 * script the project's hooks name, or any folder on the way to one of them (created, removed,
 * renamed, its permissions changed), and whenever the watches overflow or cannot be read.
 *
 * What to watch comes with the first answer: `serve` adds, for `options.watch`, each file the
 * answer depends on (the layers, the trust store, the paths the trust digest covers) with the
 * stamp it read (docs/serve.md). Before an answer is given from memory, the watches are read
 * without blocking (inotify, see inotify.ts); a change made before the call is therefore always
 * seen. An answer is stored only once the way to each of its files is watched, no watch fired
 * while it was out, and each file still has the stamp the server read. Where anything is
 * uncertain (a file with other hard links, a folder that exists but cannot be watched, times too
 * recent to tell a same-size rewrite) nothing is stored.
 */
import { lstatSync, readlinkSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, sep } from "node:path";

import { IN_DELETE_SELF, IN_IGNORED, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_UNMOUNT, WATCH_ALL, WATCH_ENTRIES, Watches, type WatchEvent, type WatchOwner } from "./inotify.js";
import { mayBeLastTurn } from "./process.js";
import type { HookDispatchOutcome } from "./types.js";

export type CacheStats = { hits: number; misses: number; stored: number; invalidations: number };

const ALARMS = IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED;

/** Whether an outcome is the plain "nothing matched": no handler, no warning, nothing to say. */
export function isNoMatch(outcome: HookDispatchOutcome): boolean {
  return (
    outcome.decision === "proceed" &&
    outcome.results.length === 0 &&
    outcome.warnings.length === 0 &&
    outcome.additionalContext === "" &&
    outcome.reason === undefined &&
    outcome.updatedInput === undefined &&
    outcome.stop === undefined &&
    outcome.systemMessage === undefined &&
    outcome.sessionEnv === undefined &&
    outcome.projectTrust === undefined
  );
}

/** How recent a file's times may be before a write within the same clock tick is possible. */
export const RECENT_NS = 2_000_000_000n;
/** The time now, in nanoseconds since 1970, as file times are compared with it. */
export function nowNs(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}
/** Symlinks followed on one path at most, as the kernel does (ELOOP). */
const MAX_LINKS = 40;
/** How long after a store the folders further up are watched whole (see `upgrade`). */
const UPGRADE_DELAY_MS = 20;
/** How late that may be before the next answer from memory does it first, whatever it costs. */
const UPGRADE_OVERDUE_MS = 1000;

/** A folder's owner and permissions, as `lstat` gives them; null when it cannot be read. */
function attributesOf(dir: string): string | null {
  try {
    const s = lstatSync(dir);
    return `${s.mode}:${s.uid}:${s.gid}`;
  } catch {
    return null;
  }
}

/** What one answer says of every subject of its scope (see `store`). */
type Summary = { outcome: HookDispatchOutcome; except: Set<string> };

/**
 * A file's stamp as `serve` writes it in `watch` (docs/serve.md): `dev:ino:mode:size:mtime_ns:
 * ctime_ns` of `stat` (symlinks followed), `absent`, or `unreachable`; whether its times are
 * too recent to rule out a same-size write in the same clock tick; and the later of its times
 * (null when it is not there).
 */
export function stampOf(path: string, nowNs: bigint): { text: string; recent: boolean; changed: bigint | null } {
  try {
    const s = statSync(path, { bigint: true });
    const changed = s.mtimeNs > s.ctimeNs ? s.mtimeNs : s.ctimeNs;
    return { text: `${s.dev}:${s.ino}:${s.mode}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`, recent: nowNs - changed < RECENT_NS, changed };
  } catch (error) {
    const code = (error as { code?: string }).code;
    return { text: code === "ENOENT" || code === "ENOTDIR" ? "absent" : "unreachable", recent: false, changed: null };
  }
}

export class NoMatchCache {
  private readonly answers = new Map<string, HookDispatchOutcome>();
  /** The process's watches (inotify.ts), once this cache watches anything. */
  private watches: Watches | null = null;
  /** What the watches tell of this cache's own (see `notice`). */
  private readonly owner: WatchOwner = (event) => this.notice(event);
  /** A watch saw something that matters since the last `check`. */
  private stale = false;
  /** For each watch, the names in its folder that matter (null: every name). */
  private readonly interests = new Map<number, Set<string> | null>();
  private readonly watched = new Map<string, number>();
  /** Paths whose whole way is watched already. */
  private readonly covered = new Set<string>();
  /**
   * Folders on a way, found to be folders (not links) once their parent was watched for their
   * name: until a watch fires, another way through them need not look at them again.
   */
  private readonly folders = new Set<string>();
  /** Keys whose last answer could not be remembered: their twins are not held back. */
  private readonly unremembered = new Set<string>();
  /** Stamps found to be the files' own since their ways were watched. */
  private readonly verified = new Map<string, string>();
  /** For a scope (an event in a project), the answer every subject outside `except` gets. */
  private readonly summaries = new Map<string, Summary>();
  /** Scopes whose last answer came without a summary: their calls are not held back for one. */
  private readonly unsummarized = new Set<string>();
  /**
   * Folders further up a way, watched for their entries only, each with its descriptor and the
   * attributes seen then, until `upgrade` watches them whole.
   */
  private readonly partial = new Map<string, { wd: number; attributes: string | null }>();
  private upgradeTimer: ReturnType<typeof setTimeout> | undefined;
  /** When (`Date.now()`) `partial` was due to be watched whole; 0 for never. */
  private upgradeDue = 0;
  private generation = 0;
  readonly stats: CacheStats = { hits: 0, misses: 0, stored: 0, invalidations: 0 };

  /** Whether this platform and runtime can watch synchronously (Linux, Bun). */
  static available(): boolean {
    return Watches.get() !== null;
  }

  /**
   * The remembered answer for `key`, after reading the watches; null when there is none. `scope`
   * and `subject` (the tool, or the value the event's matcher is tested against) find it in a
   * summary when `key` itself was never asked.
   */
  lookup(key: string, scope?: string, subject?: string): HookDispatchOutcome | null {
    if (this.answers.get(key) === undefined && this.summarized(scope, subject) === undefined) {
      this.stats.misses++;
      return null;
    }
    this.check();
    // A host whose event loop turns only for its answers may put the upgrade off for good.
    if (this.upgradeDue !== 0 && Date.now() >= this.upgradeDue + UPGRADE_OVERDUE_MS) this.upgrade();
    const hit = this.answers.get(key) ?? this.summarized(scope, subject);
    if (hit === undefined) {
      this.stats.misses++;
      return null;
    }
    this.stats.hits++;
    return { ...hit, results: [], warnings: [] };
  }

  private summarized(scope: string | undefined, subject: string | undefined): HookDispatchOutcome | undefined {
    if (scope === undefined || subject === undefined) return undefined;
    const summary = this.summaries.get(scope);
    return summary !== undefined && !summary.except.has(subject) ? summary.outcome : undefined;
  }

  /** Counts an answer given from an answer not yet remembered (see the runner's `answerFrom`). */
  countHit(): void {
    this.stats.hits++;
  }

  /** Whether an answer for `scope` may still bring a summary worth waiting for. */
  mayBeSummarized(scope: string): boolean {
    return !this.unsummarized.has(scope) && !this.summaries.has(scope);
  }

  /** Notes that an answer for `scope` came without a summary. */
  noteUnsummarized(scope: string): void {
    this.unsummarized.add(scope);
  }

  /** Whether an answer for `key` was seen that could not be remembered (handlers ran, say). */
  matched(key: string): boolean {
    return this.unremembered.has(key);
  }

  /** Notes that an answer for `key` could not be remembered. */
  noteMatched(key: string): void {
    this.unremembered.add(key);
  }

  /** Called before a request goes out: what `store` needs to know nothing changed meanwhile. */
  ticket(): number {
    this.check();
    return this.generation;
  }

  /**
   * Stores a no-match answer, given the files it depends on with their stamps as the server
   * read them (`watch`). Each file's whole way is watched first; then, when no watch fired since
   * the ticket and every file's stamp is still the server's, nothing can have changed between
   * the server's reading and the watches. Nothing is stored when a way cannot be watched, a
   * stamp differs, or a file's times are too recent to tell. Returns whether it was stored.
   */
  store(
    key: string | null,
    ticket: number,
    outcome: HookDispatchOutcome,
    watch: Array<[string, string]>,
    summary?: { scope: string; except: string[] },
  ): boolean {
    this.check();
    if (ticket !== this.generation) return false;
    if (!isNoMatch(outcome)) {
      if (key !== null) this.unremembered.add(key);
      return false;
    }
    for (const [path] of watch) if (!this.watchWay(path)) return false;
    this.check();
    if (ticket !== this.generation) return false;
    const now = nowNs();
    for (const [path, stamp] of watch) {
      // Checked once since the watches were set: any change since would have dropped everything.
      if (this.verified.get(path) === stamp) continue;
      const current = stampOf(path, now);
      if (current.recent || current.text !== stamp) return false;
      this.verified.set(path, stamp);
    }
    const kept = { ...outcome, durationMs: 0 };
    if (key !== null) this.answers.set(key, kept);
    // The answer of a subject no group may apply to (docs/serve.md, `no_match_except`): every
    // other subject outside the list gets the same one.
    if (summary) this.summaries.set(summary.scope, { outcome: kept, except: new Set(summary.except) });
    this.stats.stored++;
    return true;
  }

  /**
   * Whether each file of `watch` still has the stamp the server read, and none changed too
   * recently to tell: then an answer read from those files is still the answer now, watched or
   * not.
   */
  stampsHold(watch: Array<[string, string]>): boolean {
    const now = nowNs();
    for (const [path, stamp] of watch) {
      const current = stampOf(path, now);
      if (current.recent || current.text !== stamp) return false;
    }
    return true;
  }

  /** Forgets every answer and every watch. */
  invalidate(): void {
    this.answers.clear();
    this.interests.clear();
    this.watched.clear();
    this.covered.clear();
    this.folders.clear();
    this.verified.clear();
    this.unremembered.clear();
    this.summaries.clear();
    this.unsummarized.clear();
    this.partial.clear();
    clearTimeout(this.upgradeTimer);
    this.upgradeTimer = undefined;
    this.upgradeDue = 0;
    // The kernel's watches stay (other caches may share them, and closing is what costs): this
    // cache is only no longer told of them.
    this.watches?.release(this.owner);
    this.stale = false;
    this.generation++;
    this.stats.invalidations++;
  }

  /**
   * Watches whole each folder that was watched for its entries only. A folder further up can only
   * change an answer by being created, removed or renamed, which its entry watch sees; a change
   * of its permissions meanwhile could only make a file unreadable, and so add a warning to an
   * answer whose decision stays "proceed": that is caught here, by the attributes seen when its
   * watch was set, and from here on by the watch itself.
   */
  private upgrade(): void {
    clearTimeout(this.upgradeTimer);
    this.upgradeTimer = undefined;
    this.upgradeDue = 0;
    for (const dir of [...this.partial.keys()]) {
      if (!this.watchWhole(dir)) {
        this.invalidate();
        return;
      }
    }
  }

  /**
   * Upgrades in `ms`, on a turn of the event loop, unless that may be its last turn (process.ts):
   * watching a busy folder whole takes the kernel tens of milliseconds (7 to 34 for a `/tmp`),
   * which a host that is done would wait for before it exits. Then it is put off again.
   */
  private upgradeLater(ms: number): void {
    clearTimeout(this.upgradeTimer);
    this.upgradeTimer = setTimeout(() => {
      this.upgradeTimer = undefined;
      if (this.upgradeDue === 0) return;
      if (mayBeLastTurn()) this.upgradeLater(UPGRADE_DELAY_MS);
      else this.upgrade();
    }, ms);
    (this.upgradeTimer as { unref?: () => void }).unref?.();
  }

  /** Watches a folder of `partial` whole; false when it changed since its entry watch was set. */
  private watchWhole(dir: string): boolean {
    const entry = this.partial.get(dir);
    if (entry === undefined) return true;
    this.partial.delete(dir);
    const wd = this.watches?.watch(dir, WATCH_ALL, this.owner) ?? -1;
    return wd === entry.wd && attributesOf(dir) === entry.attributes;
  }

  /** Reads the watches; drops everything when one of them saw something that matters. */
  private check(): void {
    if (this.watches === null) return;
    this.watches.poll();
    if (this.stale) this.invalidate();
  }

  /** An event of one of this cache's watches: whether it may change what the cache remembers. */
  private notice(event: WatchEvent): void {
    if (this.stale) return;
    const names = this.interests.get(event.wd);
    if (event.mask & ALARMS || names === undefined || names === null || event.name === null || names.has(event.name)) this.stale = true;
  }

  /**
   * Watches every folder on the way to `file`, from the root down, following each symlink met on
   * the way (in a folder or as the file itself) and watching the way to its target too, so that a
   * change of any folder, link or file on the way is seen. False when a folder that is there
   * cannot be watched, the file has other hard links (a change through another name would not
   * show), or the links do not end.
   */
  private watchWay(file: string): boolean {
    if (this.covered.has(file)) return true;
    this.watches ??= Watches.get();
    if (this.watches === null) return false;
    let pending = file.split(sep).filter((part) => part !== "");
    let at: string = sep;
    let links = 0;
    while (pending.length > 0) {
      const name = pending.shift()!;
      if (name === ".") continue;
      if (name === "..") {
        at = dirname(at);
        continue;
      }
      // The folder that holds the file is watched whole at once; those further up for their
      // entries only, until `upgrade`.
      if (!this.interest(at, name, pending.length === 0)) return false;
      const next = join(at, name);
      // A folder already found on another way: its watched parent would have seen it change.
      if (pending.length > 0 && this.folders.has(next)) {
        at = next;
        continue;
      }
      let stat;
      try {
        stat = lstatSync(next);
      } catch {
        return true; // not there (yet): the folder's watch sees it appear
      }
      if (stat.isSymbolicLink()) {
        if (++links > MAX_LINKS) return false;
        let target: string;
        try {
          target = readlinkSync(next);
        } catch {
          return false;
        }
        pending = [...target.split(sep).filter((part) => part !== ""), ...pending];
        if (isAbsolute(target)) at = sep;
        continue;
      }
      if (pending.length === 0 && stat.isFile() && stat.nlink > 1) return false;
      // A folder stands for what is in it (a seal's nearest folder of a path not there yet).
      if (pending.length === 0 && stat.isDirectory() && !this.interest(next, null, true)) return false;
      if (pending.length > 0 && !stat.isDirectory()) return true; // the way ends in a file: nothing further to watch
      if (pending.length > 0) this.folders.add(next);
      at = next;
    }
    this.covered.add(file);
    return true;
  }

  /**
   * Watches `dir` for `name` (null: for every name in it): whole, or (`whole` false) for its
   * entries only, which the kernel sets up at once however many entries the folder has.
   */
  private interest(dir: string, name: string | null, whole: boolean): boolean {
    let wd = this.watched.get(dir);
    if (wd !== undefined && whole && this.partial.has(dir)) {
      if (!this.watchWhole(dir)) return false;
    }
    if (wd === undefined) {
      const attributes = whole ? null : attributesOf(dir);
      wd = this.watches!.watch(dir, whole ? WATCH_ALL : WATCH_ENTRIES, this.owner);
      if (wd >= 0 && !whole) {
        this.partial.set(dir, { wd, attributes });
        if (this.upgradeDue === 0) {
          this.upgradeDue = Date.now() + UPGRADE_DELAY_MS;
          this.upgradeLater(UPGRADE_DELAY_MS);
        }
      }
      if (wd < 0) {
        // A folder that is not there is fine (the one above sees it appear); one that is there
        // and cannot be watched is not.
        try {
          statSync(dir);
          return false;
        } catch {
          return true;
        }
      }
      this.watched.set(dir, wd);
    }
    const names = this.interests.get(wd);
    if (name === null) this.interests.set(wd, null);
    else if (names === undefined) this.interests.set(wd, new Set([name]));
    else names?.add(name);
    return true;
  }
}
