/**
 * The no-match cache: the answers "nothing matched" for an (event, tool) in a project, kept in
 * memory so that most tool calls never leave the process. It is dropped whole whenever anything
 * that could change such an answer may have changed: a settings layer, the trust store, a
 * script the project's hooks name, or any folder on the way to one of them (created, removed,
 * renamed, its permissions changed), and whenever the watches overflow or cannot be read.
 *
 * Before an answer is given from memory, the watches are read without blocking (inotify, see
 * inotify.ts); a change made before the call is therefore always seen. Answers are stored only
 * for a project whose watches were all in place before the request went out, and only when no
 * watch fired while it was out. Where anything is uncertain (a settings file that is a symlink
 * or has other hard links, a command whose words cannot be told apart without a shell, a folder
 * that exists but cannot be watched) nothing is stored for that project.
 */
import { lstatSync, statSync } from "node:fs";
import { basename, dirname, isAbsolute, join, sep } from "node:path";

import { IN_DELETE_SELF, IN_IGNORED, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_UNMOUNT, Inotify } from "./inotify.js";
import type { HookDispatchOutcome } from "./types.js";

type Json = Record<string, unknown>;

/** `list --json` for a project, or an error message. */
export type Lister = (projectDir: string) => Promise<Json | string>;

export type CacheStats = { hits: number; misses: number; stored: number; invalidations: number };

/** A project whose watches are being set up (`ready` false) or are in place (`ready` true). */
type Context = { ready: boolean };

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

/**
 * The files whose change could change a no-match answer for this project: the three layers, the
 * trust store, and every file inside the project that a project handler's words name. Null when
 * a command's words cannot be found without a shell.
 */
export function watchedFiles(listing: Json): string[] | null {
  const layers = Array.isArray(listing.layers) ? (listing.layers as Json[]) : [];
  const root = typeof listing.project_root === "string" ? listing.project_root : null;
  const data = layers.find((layer) => layer.layer === "data");
  if (!root || !data || typeof data.file !== "string" || layers.length < 3) return null;
  const files = layers.map((layer) => String(layer.file));
  files.push(join(dirname(data.file), "trusted-hooks.json"));

  for (const handler of Array.isArray(listing.handlers) ? (listing.handlers as Json[]) : []) {
    if (handler.layer !== "project") continue;
    const words: string[] = [];
    if (Array.isArray(handler.argv)) words.push(...handler.argv.map(String));
    if (typeof handler.command === "string") {
      // Split where a shell would end a word: white space and the operators `; & | ( ) < >`. A
      // redirection's target is watched too, which costs at most a needless invalidation.
      for (let word of handler.command.split(/[\s;&|()<>]+/)) {
        if (/^'[^']*'$/.test(word) || /^"[^"$`\\]*"$/.test(word)) word = word.slice(1, -1);
        if (/['"\\`$]/.test(word)) return null;
        if (word) words.push(word);
      }
    }
    for (const word of words) {
      const path = isAbsolute(word) ? word : join(root, word);
      if (path.startsWith(root + sep)) files.push(path);
    }
  }
  return files;
}

export class NoMatchCache {
  private readonly answers = new Map<string, HookDispatchOutcome>();
  private readonly contexts = new Map<string, Context>();
  private inotify: Inotify | null = null;
  /** For each watch, the names in its folder that matter (null: every name). */
  private readonly interests = new Map<number, Set<string> | null>();
  private readonly watched = new Map<string, number>();
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

  /**
   * Called before a request goes out: a ticket when its answer may be stored afterwards (the
   * project's watches are in place), else null, and the watches of a project seen for the first
   * time start being set up. `list` is only called for that.
   */
  ticket(context: string, projectDir: string | null, list: Lister): number | null {
    this.check();
    if (projectDir === null) return this.generation; // inline hooks: no file can change them
    const known = this.contexts.get(context);
    if (known) return known.ready ? this.generation : null;
    const fresh: Context = { ready: false };
    this.contexts.set(context, fresh);
    void this.prepare(fresh, context, projectDir, list);
    return null;
  }

  /** Stores a no-match answer, unless a watch fired since the ticket was given. */
  store(key: string, ticket: number, outcome: HookDispatchOutcome): void {
    this.check();
    if (ticket !== this.generation || !isNoMatch(outcome)) return;
    this.answers.set(key, { ...outcome, durationMs: 0 });
    this.stats.stored++;
  }

  /** Forgets every answer and every watch. */
  invalidate(): void {
    this.answers.clear();
    this.contexts.clear();
    this.interests.clear();
    this.watched.clear();
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

  private async prepare(context: Context, key: string, projectDir: string, list: Lister): Promise<void> {
    const generation = this.generation;
    const first = await list(projectDir);
    if (generation !== this.generation || typeof first === "string") return;
    const files = watchedFiles(first);
    if (files === null || !this.watchAll(files)) return;
    // A change between the listing and the watches would be missed: list again, now watched.
    const second = await list(projectDir);
    this.check();
    if (generation !== this.generation || typeof second === "string") return;
    const again = watchedFiles(second);
    if (again === null || again.join("\0") !== files.join("\0")) {
      this.contexts.delete(key);
      return;
    }
    context.ready = true;
  }

  /** Watches each file's folder and every folder above it; false when one cannot be watched. */
  private watchAll(files: string[]): boolean {
    this.inotify ??= Inotify.open();
    if (this.inotify === null) return false;
    for (const file of files) {
      try {
        const stat = lstatSync(file);
        // A change through another name of the file would not show in this folder.
        if (stat.isSymbolicLink() || (stat.isFile() && stat.nlink > 1)) return false;
      } catch {
        // not there (yet): its folder's watch sees it appear
      }
      let child = file;
      let dir = dirname(file);
      for (;;) {
        if (!this.interest(dir, basename(child))) return false;
        if (dirname(dir) === dir) break;
        child = dir;
        dir = dirname(dir);
      }
    }
    return true;
  }

  private interest(dir: string, name: string): boolean {
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
    if (names === undefined) this.interests.set(wd, new Set([name]));
    else names?.add(name);
    return true;
  }
}
