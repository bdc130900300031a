/**
 * Answers kept from one process to the next: a no-match answer that says which tools no group
 * applies to (a scope's summary, see cache.ts) is written to the person's cache folder, so that
 * the first tool calls of the next process in the same project are answered at once, before its
 * `serve` has even started.
 *
 * A kept answer is only ever given after the same check as an answer of this process that is not
 * remembered yet: every file it was read from still has the stamp `serve` read (contract §14,
 * `watch`), the binary that gave it is the one this process runs, and the environment variables
 * that change an answer are the same. It is written only when every stamp is older than the
 * request by more than the clock's granularity could hide (`RECENT_NS`), so that any later change
 * to a file, even a same-size rewrite, gives the file a newer change time and another stamp.
 *
 * The folder is `$XDG_CACHE_HOME/levelcode-hooks/answers` (or `~/.cache/…`), one file per scope,
 * written whole and renamed into place, at most `MAX_FILES` of them. A file or folder that is not the person's own, or that
 * another user could write, is not read. Anything unreadable is simply not there: the call goes to
 * `serve`, as it would without this. Deleting the folder is always safe.
 */
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";

import { nowNs, RECENT_NS, stampOf } from "./cache.js";

/** Changed whenever what a kept file holds, or what it means, changes. */
const FORMAT = 1;
/** A kept file larger than this is not one of ours. */
const MAX_BYTES = 1 << 20;
/** Kept files at most; past it, the least recently written go until `PRUNED_TO` are left. */
export const MAX_FILES = 512;
const PRUNED_TO = 384;
/** A temporary file older than this was left by a process that died while writing it. */
const STALE_TEMPORARY_MS = 5 * 60_000;
/** Opened without waiting (a FIFO put in a kept file's place) and without following a link. */
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0);

/**
 * A scope's summary, as kept: the subjects it does not answer, and its files with their stamps.
 * Its outcome is always the plain no-match (cache.ts, `isNoMatch`), so it is not kept.
 */
export type Kept = { except: string[]; watch: Array<[string, string]> };

/**
 * Where a directory really is, symlinks resolved: a project's trust is recorded for its real
 * path (docs/trust.md), which no stamp of `watch` shows when a link on the way is moved to a
 * copy of the same files. Null when it cannot be told.
 */
export function realDirectory(dir: string): string | null {
  try {
    return realpathSync(dir);
  } catch {
    return null;
  }
}

/** The folder of kept answers for this environment; null when it has no home to put one in. */
export function keptFolder(env: Record<string, string | undefined>): string | null {
  const xdg = env.XDG_CACHE_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, "levelcode-hooks", "answers");
  const home = env.HOME;
  if (home && isAbsolute(home)) return join(home, ".cache", "levelcode-hooks", "answers");
  return null;
}

/**
 * What a kept answer stands for: the format, the binary, the environment key (every variable
 * that changes an answer, see process.ts), the directory and the event. Kept whole in the file,
 * compared whole when read; the file's name is a hash of it.
 */
export function keptKey(binary: string, envKey: string, cwd: string, event: string): string {
  return `${FORMAT}\u0000${binary}\u0000${envKey}\u0000${cwd}\u0000${event}`;
}

/** Two 32-bit FNV-1a hashes of the key, as 16 hexadecimal digits: a file name, not a check. */
function fileName(key: string): string {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
  }
  return `${(a >>> 0).toString(16).padStart(8, "0")}${(b >>> 0).toString(16).padStart(8, "0")}.json`;
}

const uid = typeof process.getuid === "function" ? process.getuid() : -1;

/** Whether a file or folder is the person's own and no one else can write it. */
function ownOnly(stat: { uid: number; mode: number }): boolean {
  return uid >= 0 && stat.uid === uid && (stat.mode & 0o022) === 0;
}

/** The stamp list of a kept file, or null when it is not one. */
function stamps(value: unknown): Array<[string, string]> | null {
  if (!Array.isArray(value)) return null;
  for (const entry of value) {
    if (!Array.isArray(entry) || entry.length !== 2 || typeof entry[0] !== "string" || typeof entry[1] !== "string") return null;
  }
  return value as Array<[string, string]>;
}

/**
 * The kept answer for `key`; null when there is none, it is not the person's own, it is for
 * another key, `binary` is not the one that gave it, or `cwd` is now elsewhere than it was.
 * The caller checks the files' stamps.
 */
export function readKept(folder: string, key: string, binary: string, cwd: string): { kept: Kept; text: string } | null {
  let fd = -1;
  try {
    if (!ownOnly(lstatSync(folder))) return null;
    fd = openSync(join(folder, fileName(key)), OPEN_FLAGS);
    const stat = fstatSync(fd);
    if (!stat.isFile() || !ownOnly(stat) || stat.size > MAX_BYTES) return null;
    const text = readFileSync(fd, "utf8");
    const value = JSON.parse(text) as Record<string, unknown>;
    const watch = stamps(value.watch);
    const except = value.except;
    if (value.key !== key || watch === null || watch.length === 0) return null;
    if (!Array.isArray(except) || !except.every((item) => typeof item === "string")) return null;
    const current = stampOf(binary, nowNs());
    if (current.recent || current.text !== value.binary) return null;
    if (typeof value.real !== "string" || realDirectory(cwd) !== value.real) return null;
    return { kept: { except: except as string[], watch }, text };
  } catch {
    return null;
  } finally {
    if (fd >= 0) closeSync(fd);
  }
}

/**
 * Keeps a summary for the next process, when every file it depends on (and `binary`) still has
 * the stamp it had and none was changed within `RECENT_NS` before `sentNs`, when the request
 * went out: then any change since, whenever made, shows in a stamp. `real` is where the
 * directory really was when the request went out; it must still be there. `previous` is the
 * text read for the same key: the same summary is not written again. Returns the text now
 * kept, or null when nothing could be.
 */
export function writeKept(
  folder: string,
  key: string,
  binary: string,
  summary: Kept,
  sentNs: bigint,
  previous: string | null,
  cwd: string,
  real: string | null,
): string | null {
  if (real === null || realDirectory(cwd) !== real) return null;
  const now = (path: string, stamp: string | null): string | null => {
    const current = stampOf(path, sentNs);
    if (current.text === "unreachable" || (stamp !== null && current.text !== stamp)) return null;
    if (current.changed !== null && sentNs - current.changed < RECENT_NS) return null;
    return current.text;
  };
  for (const [path, stamp] of summary.watch) if (now(path, stamp) === null) return null;
  const own = now(binary, null);
  if (own === null || own === "absent") return null;
  const text = JSON.stringify({ key, binary: own, real, except: summary.except, watch: summary.watch });
  if (text === previous) return text;
  const temporary = join(folder, `.${fileName(key)}.${process.pid}.${Math.random().toString(36).slice(2)}`);
  try {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    if (!ownOnly(lstatSync(folder))) return null;
    writeFileSync(temporary, text, { mode: 0o600, flag: "wx" });
    renameSync(temporary, join(folder, fileName(key)));
    prune(folder);
    return text;
  } catch {
    rmSync(temporary, { force: true });
    return null;
  }
}

/**
 * Removes the least recently written kept files once there are more than `MAX_FILES`, and the
 * temporary files of writers that died before renaming them.
 */
function prune(folder: string): void {
  const all = readdirSync(folder);
  const written = (name: string): number => {
    try {
      return statSync(join(folder, name)).mtimeMs;
    } catch {
      return 0;
    }
  };
  for (const name of all) {
    if (name.startsWith(".") && Date.now() - written(name) > STALE_TEMPORARY_MS) rmSync(join(folder, name), { force: true });
  }
  const names = all.filter((name) => name.endsWith(".json"));
  if (names.length <= MAX_FILES) return;
  const oldest = names.map((name) => ({ name, at: written(name) })).sort((a, b) => a.at - b.at);
  for (const { name } of oldest.slice(0, names.length - PRUNED_TO)) rmSync(join(folder, name), { force: true });
}
