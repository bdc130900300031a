/**
 * Finding the `levelcode-hooks` binary: `LEVELCODE_HOOKS_BINARY`, then this platform's package
 * (`@levelcode/hooks-<os>-<cpu>[-<libc>]`, installed as an optional dependency), then `PATH`.
 */
import { accessSync, constants, statSync } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, join } from "node:path";

/** The environment variable that names the binary, ahead of every other place. */
export const BINARY_ENV = "LEVELCODE_HOOKS_BINARY";

const EXECUTABLE = process.platform === "win32" ? "levelcode-hooks.exe" : "levelcode-hooks";

/** The C library of this Linux: `musl` or `gnu` (glibc). */
function linuxLibc(): "gnu" | "musl" {
  try {
    const report = (process as { report?: { getReport?: () => unknown } }).report?.getReport?.();
    const header = (report as { header?: { glibcVersionRuntime?: unknown } } | undefined)?.header;
    if (header && typeof header.glibcVersionRuntime === "string") return "gnu";
  } catch {
    // no report: look for musl's loader below
  }
  for (const loader of ["/lib/ld-musl-x86_64.so.1", "/lib/ld-musl-aarch64.so.1"]) {
    try {
      accessSync(loader);
      return "musl";
    } catch {
      // not this one
    }
  }
  return "gnu";
}

/**
 * The names of the platform packages that can serve this machine, the best first. On Linux the
 * package for this C library comes first; the other one still works, the binaries being static.
 */
export function platformPackages(): string[] {
  const base = `@levelcode/hooks-${process.platform}-${process.arch}`;
  if (process.platform !== "linux") return [base];
  return linuxLibc() === "musl" ? [`${base}-musl`, `${base}-gnu`] : [`${base}-gnu`, `${base}-musl`];
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, process.platform === "win32" ? constants.F_OK : constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Thrown when no binary can be found, naming the three places looked in. */
export class BinaryNotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BinaryNotFoundError";
  }
}

/** Where to look, for tests and for the `bin/` shim: everything here is read from the outside. */
export type LookupOptions = {
  env?: Record<string, string | undefined>;
  /** Resolves a module's file, as `require.resolve`; from this file by default. */
  resolve?: (request: string) => string;
  /** A file the `PATH` search must pass over (the `bin/` shim, which would call itself). */
  skip?: (path: string) => boolean;
};

const defaultRequire = createRequire(import.meta.url);

/**
 * Returns the absolute path of the `levelcode-hooks` binary, or throws `BinaryNotFoundError`
 * saying what was tried and how to fix it.
 */
export function findBinary(options: LookupOptions = {}): string {
  const env = options.env ?? process.env;
  const fromEnv = env[BINARY_ENV];
  if (fromEnv) {
    if (isExecutableFile(fromEnv)) return fromEnv;
    throw new BinaryNotFoundError(
      `${BINARY_ENV}=${fromEnv} is not an executable file; point it at a levelcode-hooks binary, or unset it`,
    );
  }

  const resolve = options.resolve ?? ((request: string) => defaultRequire.resolve(request));
  const packages = platformPackages();
  for (const name of packages) {
    try {
      const path = resolve(`${name}/bin/${EXECUTABLE}`);
      if (isExecutableFile(path)) return path;
    } catch {
      // not installed
    }
  }

  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const path = join(dir, EXECUTABLE);
    if (options.skip?.(path)) continue;
    if (isExecutableFile(path)) return path;
  }

  throw new BinaryNotFoundError(
    `levelcode-hooks binary not found: ${BINARY_ENV} is not set; the platform package ` +
      `${packages[0]} is not installed (reinstall @levelcode/hooks without --no-optional, or ` +
      `install ${packages[0]} itself); and no ${EXECUTABLE} is on PATH`,
  );
}
