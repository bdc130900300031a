/** Finding the binary: LEVELCODE_HOOKS_BINARY, then the platform package, then PATH. */
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

import { BinaryNotFoundError, findBinary, platformPackages } from "../src/index.ts";
import { tempDir, writeScript } from "./helpers.ts";

// Real processes, on a machine that may be loaded.
setDefaultTimeout(60_000);

let dir: string;
let cleanup: () => void;
let onPath: string;
let inPackage: string;
let byEnv: string;

beforeEach(() => {
  ({ dir, cleanup } = tempDir());
  mkdirSync(join(dir, "path"));
  mkdirSync(join(dir, "pkg"));
  onPath = writeScript(join(dir, "path"), "levelcode-hooks", "#!/bin/sh\n");
  inPackage = writeScript(join(dir, "pkg"), "levelcode-hooks", "#!/bin/sh\n");
  byEnv = writeScript(dir, "chosen", "#!/bin/sh\n");
});
afterEach(() => cleanup());

const resolvesTo = (path: string) => (request: string) => {
  if (request === `${platformPackages()[0]}/bin/levelcode-hooks`) return path;
  throw new Error(`Cannot find module '${request}'`);
};
const notInstalled = (request: string): string => {
  throw new Error(`Cannot find module '${request}'`);
};

describe("findBinary", () => {
  test("LEVELCODE_HOOKS_BINARY comes first", () => {
    expect(findBinary({ env: { LEVELCODE_HOOKS_BINARY: byEnv, PATH: join(dir, "path") }, resolve: resolvesTo(inPackage) })).toBe(byEnv);
  });

  test("then the platform package", () => {
    expect(findBinary({ env: { PATH: join(dir, "path") }, resolve: resolvesTo(inPackage) })).toBe(inPackage);
  });

  test("then PATH, passing over what the caller skips", () => {
    expect(findBinary({ env: { PATH: `${join(dir, "nothing")}:${join(dir, "path")}` }, resolve: notInstalled })).toBe(onPath);
    expect(() => findBinary({ env: { PATH: join(dir, "path") }, resolve: notInstalled, skip: (p) => p === onPath })).toThrow(BinaryNotFoundError);
  });

  test("a file that is not executable does not count", () => {
    const plain = join(dir, "plain", "levelcode-hooks");
    mkdirSync(join(dir, "plain"));
    Bun.write(plain, "");
    expect(() => findBinary({ env: { PATH: join(dir, "plain") }, resolve: notInstalled })).toThrow(BinaryNotFoundError);
  });

  test("none found: the error names all three places", () => {
    let message = "";
    try {
      findBinary({ env: { PATH: join(dir, "nothing") }, resolve: notInstalled });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain("LEVELCODE_HOOKS_BINARY is not set");
    expect(message).toContain(`${platformPackages()[0]} is not installed`);
    expect(message).toContain("no levelcode-hooks is on PATH");
  });

  test("LEVELCODE_HOOKS_BINARY naming nothing is an error, not a silent fallback", () => {
    expect(() => findBinary({ env: { LEVELCODE_HOOKS_BINARY: join(dir, "missing"), PATH: join(dir, "path") } })).toThrow(
      `LEVELCODE_HOOKS_BINARY=${join(dir, "missing")} is not an executable file`,
    );
  });

  test("the platform package's name says OS, CPU and, on Linux, the C library", () => {
    const [first] = platformPackages();
    expect(first).toStartWith(`@levelcode/hooks-${process.platform}-${process.arch}`);
    if (process.platform === "linux") expect(first).toMatch(/-(gnu|musl)$/);
  });
});
