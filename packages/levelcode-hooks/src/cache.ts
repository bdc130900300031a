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

import { IN_DELETE_SELF, IN_IGNORED, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_UNMOUNT, Inotify } from "./inotify.js";
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
const RECENT_NS = 2_000_000_000n;
/** Symlinks followed on one path at most, as the kernel does (ELOOP). */
const MAX_LINKS = 40;

/**
 * A file's stamp as `serve` writes it in `watch` (docs/serve.md): `dev:ino:mode:size:mtime_ns:
 * ctime_ns` of `stat` (symlinks followed), `absent`, or `unreachable`; and whether its times are
 * too recent to rule out a same-size write in the same clock tick.
 */
function stampOf(path: string, nowNs: bigint): { text: string; recent: boolean } {
  try {
    const s = statSync(path, { bigint: true });
    const recent = nowNs - s.mtimeNs < RECENT_NS || nowNs - s.ctimeNs < RECENT_NS;
    return { text: `${s.dev}:${s.ino}:${s.mode}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`, recent };
  } catch (error) {
    return { text: (error as { code?: string }).code === "ENOENT" || (error as { code?: string }).code === "ENOTDIR" ? "absent" : "unreachable", recent: false };
  }
}

export class NoMatchCache {
  private readonly answers = new Map<string, HookDispatchOutcome>();
  private inotify: Inotify | null = null;
  /** For each watch, the names in its folder that matter (null: every name). */
  private readonly interests = new Map<number, Set<string> | null>();
  private readonly watched = new Map<string, number>();
  /** Paths whose whole way is watched already. */
  private readonly covered = new Set<string>();
  /** Keys whose last answer could not be remembered: their twins are not held back. */
  private readonly unremembered = new Set<string>();
  /** Stamps found to be the files' own since their ways were watched. */
  private readonly verified = new Map<string, string>();
  private generation = 0;
  readonly stats: CacheStats = { hits: 0, misses: 0, stored: 0, invalidations: 0 };

  /** Whether this platform and runtime can watch synchronously (Linux, Bun). */
  static available(): boolean {
    const probe = Inotify.open();
    probe?.close();
    return probe !== null;
  }

  /** The remembered answer for `key`, after reading the watches; null when there is none. */
  lookup(key: string): HookDispatchOutcome | null {
    const hit = this.answers.get(key);
    if (hit === undefined) {
      this.stats.misses++;
      return null;
    }
    this.check();
    if (!this.answers.has(key)) {
      this.stats.misses++;
      return null;
    }
    this.stats.hits++;
    return { ...hit, results: [], warnings: [] };
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
   * stamp differs, or a file's times are too recent to tell.
   */
  store(key: string, ticket: number, outcome: HookDispatchOutcome, watch: Array<[string, string]>): void {
    this.check();
    if (ticket !== this.generation) return;
    if (!isNoMatch(outcome)) {
      this.unremembered.add(key);
      return;
    }
    for (const [path] of watch) if (!this.watchWay(path)) return;
    this.check();
    if (ticket !== this.generation) return;
    const now = BigInt(Date.now()) * 1_000_000n;
    for (const [path, stamp] of watch) {
      // Checked once since the watches were set: any change since would have dropped everything.
      if (this.verified.get(path) === stamp) continue;
      const current = stampOf(path, now);
      if (current.recent || current.text !== stamp) return;
      this.verified.set(path, stamp);
    }
    this.answers.set(key, { ...outcome, durationMs: 0 });
    this.stats.stored++;
  }

  /** Forgets every answer and every watch. */
  invalidate(): void {
    this.answers.clear();
    this.interests.clear();
    this.watched.clear();
    this.covered.clear();
    this.verified.clear();
    this.unremembered.clear();
    this.inotify?.close();
    this.inotify = null;
    this.generation++;
    this.stats.invalidations++;
  }

  /** Reads the watches; drops everything when one of them saw something that matters. */
  private check(): void {
    if (this.inotify === null) return;
    const events = this.inotify.drain();
    if (events === null) {
      this.invalidate();
      return;
    }
    for (const event of events) {
      const names = this.interests.get(event.wd);
      if (event.mask & ALARMS || names === undefined || names === null || event.name === null || names.has(event.name)) {
        this.invalidate();
        return;
      }
    }
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
    this.inotify ??= Inotify.open();
    if (this.inotify === null) return false;
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
      if (!this.interest(at, name)) return false;
      const next = join(at, name);
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
      if (pending.length === 0 && stat.isDirectory() && !this.interest(next, null)) return false;
      if (pending.length > 0 && !stat.isDirectory()) return true; // the way ends in a file: nothing further to watch
      at = next;
    }
    this.covered.add(file);
    return true;
  }

  /** Watches `dir` for `name` (null: for every name in it). */
  private interest(dir: string, name: string | null): boolean {
    let wd = this.watched.get(dir);
    if (wd === undefined) {
      wd = this.inotify!.watch(dir);
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
