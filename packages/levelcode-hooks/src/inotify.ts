/**
 * Linux inotify, read synchronously on the caller's thread (Bun only, through `bun:ffi`). The
 * kernel queues a file's event inside the very write, rename or unlink that causes it, so a
 * non-blocking read right before answering from memory sees every change made before that
 * moment. `fs.watch` cannot promise that: its events arrive on a later turn of the event loop.
 *
 * The process has one instance (`Watches`), shared by every no-match cache: closing an instance
 * that holds watches makes the kernel wait until they are freed (a grace period of its own, 10 to
 * 50 ms on a loaded machine), once per instance, and a process's exit closes them all before its
 * parent learns that it ended. So there is one, and as the process exits a small process started
 * then takes its last reference (`holdPastExit`): the exit is as fast as without watches.
 */

/** What a watch reports: the name of the entry in the watched folder, or null for the folder. */
export type WatchEvent = { wd: number; mask: number; name: string | null };

export const IN_MODIFY = 0x2;
export const IN_ATTRIB = 0x4;
export const IN_CLOSE_WRITE = 0x8;
export const IN_MOVED_FROM = 0x40;
export const IN_MOVED_TO = 0x80;
export const IN_CREATE = 0x100;
export const IN_DELETE = 0x200;
export const IN_DELETE_SELF = 0x400;
export const IN_MOVE_SELF = 0x800;
export const IN_UNMOUNT = 0x2000;
export const IN_Q_OVERFLOW = 0x4000;
export const IN_IGNORED = 0x8000;
const IN_ONLYDIR = 0x01000000;
/** Adds to a watch's mask instead of replacing it: one owner's watch never narrows another's. */
const IN_MASK_ADD = 0x20000000;
const IN_NONBLOCK = 0x800;
const IN_CLOEXEC = 0x80000;

/** Everything about a folder and the entries in it. */
export const WATCH_ALL =
  IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
/**
 * Entries of a folder created, removed or renamed, and the folder itself removed or moved, but
 * not changes of the entries' contents or attributes. The kernel sets up a watch with this mask
 * at once, where one that also asks for the entries' changes first marks each entry the folder
 * has in its cache: milliseconds for a folder such as a busy `/tmp`.
 */
export const WATCH_ENTRIES = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

type Libc = {
  inotify_init1: (flags: number) => number;
  inotify_add_watch: (fd: number, path: Uint8Array, mask: number) => number;
  read: (fd: number, buffer: Uint8Array, length: number) => number | bigint;
};

let libc: Libc | null | undefined;

type Ffi = {
  FFIType: Record<"i32" | "u32" | "ptr" | "u64" | "i64", number>;
  dlopen: (name: string, symbols: object) => { symbols: unknown };
};

/**
 * The C library's inotify calls, or null where there are none (not Linux, not Bun). Loaded
 * synchronously where Bun's `import.meta.require` is there, so the first call can use them.
 */
async function load(): Promise<Libc | null> {
  if (libc !== undefined) return libc;
  libc = null;
  if (process.platform !== "linux" || (globalThis as { Bun?: unknown }).Bun === undefined) return libc;
  try {
    // Named through a variable, so that Node and the type checker of the Node build never load it.
    const module = "bun:ffi";
    const require = (import.meta as { require?: (id: string) => unknown }).require;
    const ffi = (typeof require === "function" ? require(module) : await import(module)) as Ffi;
    const { i32, u32, ptr, u64, i64 } = ffi.FFIType;
    const symbols = {
      inotify_init1: { args: [i32], returns: i32 },
      inotify_add_watch: { args: [i32, ptr, u32], returns: i32 },
      read: { args: [i32, ptr, u64], returns: i64 },
    } as const;
    for (const name of ["libc.so.6", "libc.so", `libc.musl-${process.arch === "arm64" ? "aarch64" : "x86_64"}.so.1`]) {
      try {
        libc = ffi.dlopen(name, symbols).symbols as unknown as Libc;
        break;
      } catch {
        // the next name
      }
    }
  } catch {
    libc = null;
  }
  return libc;
}

/** Starts loading the C library's calls; `Inotify.open` is null until then, and where none exist. */
let settled = false;
export const inotifyReady: Promise<Libc | null> = load().finally(() => {
  settled = true;
});

/** Whether loading has ended (`Inotify.open` works from then on, where it can). */
export function inotifyLoaded(): boolean {
  return settled || libc !== undefined && libc !== null;
}

const ENCODER = new TextEncoder();

/** One instance of inotify: its descriptor, its watches and its queue. */
class Inotify {
  private readonly buffer = new Uint8Array(64 * 1024);
  private readonly view = new DataView(this.buffer.buffer);

  private constructor(
    private readonly c: Libc,
    private readonly fd: number,
  ) {}

  /** A new inotify instance, or null when this platform or runtime has none. */
  static open(): Inotify | null {
    if (!libc) return null;
    const fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    return fd < 0 ? null : new Inotify(libc, fd);
  }

  /**
   * Watches a folder for `mask` (`WATCH_ALL` or `WATCH_ENTRIES`); the watch descriptor, or -1
   * when it cannot. Watching a folder again replaces its mask and keeps its descriptor.
   */
  watch(dir: string, mask: number = WATCH_ALL): number {
    return this.c.inotify_add_watch(this.fd, ENCODER.encode(`${dir}\0`), mask);
  }

  /** The descriptor, to hand to a process that holds it past this one's exit. */
  get descriptor(): number {
    return this.fd;
  }

  /**
   * Every event queued so far, or null when reading failed. Never blocks: an empty queue is an
   * empty list.
   */
  drain(): WatchEvent[] | null {
    const events: WatchEvent[] = [];
    for (;;) {
      const got = Number(this.c.read(this.fd, this.buffer, this.buffer.length));
      // -1 is EAGAIN, an empty queue: a non-blocking read of inotify has no other failure with a
      // buffer this size.
      if (got < 0) return events;
      if (got === 0) return null;
      let at = 0;
      while (at + 16 <= got) {
        const wd = this.view.getInt32(at, true);
        const mask = this.view.getUint32(at + 4, true);
        const length = this.view.getUint32(at + 12, true);
        let name: string | null = null;
        if (length > 0) {
          const bytes = this.buffer.subarray(at + 16, at + 16 + length);
          const end = bytes.indexOf(0);
          name = new TextDecoder().decode(end >= 0 ? bytes.subarray(0, end) : bytes);
        }
        events.push({ wd, mask, name });
        at += 16 + length;
      }
      if (got < this.buffer.length - 4096) return events;
    }
  }
}

/** What an owner of watches is told: each event of a watch it asked for, and each overflow. */
export type WatchOwner = (event: WatchEvent) => void;

type Holder = { pid: number; unref(): void; stdin?: { unref?(): void } | null | undefined };
type HolderSpawn = (cmd: string[], options: Record<string, unknown>) => Holder;

/**
 * The process's one inotify instance, shared by its owners (one no-match cache each). Watches are
 * only ever widened (`IN_MASK_ADD`), so that no owner's watch narrows another's, and are kept
 * when an owner lets them go: the next owner of the same folder finds it watched. Each event goes
 * to the owners of its watch (an overflow, or a queue that cannot be read, to every owner); an
 * owner must take one for a possible change of anything it watches.
 */
export class Watches {
  private static shared: Watches | null = null;
  /** For each watch, the owners told of its events. */
  private readonly owners = new Map<number, Set<WatchOwner>>();
  /** Every watch set so far (the kernel keeps them; only one it drops is forgotten). */
  private readonly known = new Set<number>();
  private holder: Holder | null = null;
  private held = false;
  /** A watch was set: the kernel has watches to free when the instance is last closed. */
  private watched = false;

  private constructor(private readonly inotify: Inotify) {}

  /** The process's instance; null where inotify cannot be used synchronously (not Linux, not Bun). */
  static get(): Watches | null {
    if (Watches.shared === null) {
      // Opened once it can be (the C library loaded, an instance to be had), then kept.
      const inotify = Inotify.open();
      if (inotify !== null) {
        const shared = new Watches(inotify);
        Watches.shared = shared;
        process.once("exit", () => {
          if (shared.watched) shared.holdPastExit();
        });
      }
    }
    return Watches.shared;
  }

  /**
   * Watches `dir` for `mask` (`WATCH_ALL` or `WATCH_ENTRIES`, added to what the folder is watched
   * for already) on behalf of `owner`, which is told of the events from then on; the watch
   * descriptor, or -1 when it cannot. Watching a folder again gives the same descriptor.
   */
  watch(dir: string, mask: number, owner: WatchOwner): number {
    const wd = this.inotify.watch(dir, mask | IN_MASK_ADD);
    if (wd < 0) return wd;
    this.watched = true;
    let set = this.owners.get(wd);
    if (set?.has(owner)) return wd;
    // A watch set before: what is queued for it happened before `owner` watched, and goes to
    // the owners there were (a new watch has nothing queued).
    if (this.known.has(wd)) {
      this.poll();
      set = this.owners.get(wd);
    }
    this.known.add(wd);
    if (set === undefined) this.owners.set(wd, (set = new Set()));
    set.add(owner);
    return wd;
  }

  /** The process holding the instance past this one's exit (`holdPastExit`), once there is one. */
  get holderPid(): number | null {
    return this.holder?.pid ?? null;
  }

  /** `owner` is told of none of its watches any more (the kernel's watches stay, for the others). */
  release(owner: WatchOwner): void {
    for (const [wd, set] of this.owners) {
      if (set.delete(owner) && set.size === 0) this.owners.delete(wd);
    }
  }

  /**
   * Reads the queue without blocking and tells each event to the owners of its watch; an
   * overflow, or a queue that cannot be read, to every owner.
   */
  poll(): void {
    const events = this.inotify.drain();
    if (events === null) {
      this.tellAll({ wd: -1, mask: IN_Q_OVERFLOW, name: null });
      return;
    }
    for (const event of events) {
      if (event.wd === -1 || event.mask & IN_Q_OVERFLOW) {
        this.tellAll(event);
        continue;
      }
      const set = this.owners.get(event.wd);
      if (set !== undefined) for (const owner of [...set]) owner(event);
      // The kernel dropped the watch (its folder is gone): the descriptor means nothing now.
      if (event.mask & IN_IGNORED) {
        this.owners.delete(event.wd);
        this.known.delete(event.wd);
      }
    }
  }

  private tellAll(event: WatchEvent): void {
    const all = new Set<WatchOwner>();
    for (const set of this.owners.values()) for (const owner of set) all.add(owner);
    for (const owner of all) owner(event);
  }

  /**
   * As the process exits with watches set: a process holds the instance too, so that the exit is
   * not the instance's last close and does not wait for the kernel to free the watches (a spawn
   * costs a fraction of a millisecond; nothing runs beside the host while it lives). The holder is
   * a shell waiting for the end of its input, which is this process's end; it reads nothing else
   * and writes nothing. Where it cannot be started, the exit waits as before.
   */
  private holdPastExit(): void {
    if (this.held) return;
    this.held = true;
    const spawn = (globalThis as { Bun?: { spawn?: HolderSpawn } }).Bun?.spawn;
    if (typeof spawn !== "function") return;
    try {
      // The instance is the holder's descriptor 3; a shell's `read` returns at the end of input.
      const holder = spawn(["/bin/sh", "-c", "read -r _"], { stdio: ["pipe", "ignore", "ignore", this.inotify.descriptor], env: {}, cwd: "/" });
      holder.unref();
      holder.stdin?.unref?.();
      // Kept: its input must stay open until this process ends.
      this.holder = holder;
    } catch {
      // no holder: the exit waits for the kernel
    }
  }
}
