/**
 * Answers kept from one runner (one process) to the next (kept.ts): the first tool call of a new
 * runner in a directory the last one summarized is answered before its server could answer, and
 * never once anything the answer was read from changed, the binary or the environment is another,
 * or the kept file could have been written by someone else.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, linkSync, mkdirSync, readdirSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { NoMatchCache, stampOf } from "../src/cache.ts";
import { inotifyReady } from "../src/inotify.ts";
import { createHookRunner, type HookPayload } from "../src/index.ts";
import { keptKey, MAX_FILES, readKept, realDirectory, writeKept } from "../src/kept.ts";
import { ENV_KEYS, unchanged } from "../src/process.ts";
import { BINARY, perTestDir, writeScript } from "./helpers.ts";

// Real processes, on a machine that may be loaded.
setDefaultTimeout(120_000);

const cacheAvailable = (await inotifyReady) !== null && NoMatchCache.available();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let dir = "";
const runners = perTestDir((fresh) => {
  dir = fresh;
});

/** How long a server takes to start while the flag file exists: far longer than a kept answer. */
const SLOW_START_S = 3;
/** What "answered before its server could answer" means here. */
const EARLY_MS = 1500;

/**
 * A home, a project whose PreToolUse group applies to `write_file` only, and a binary that
 * starts slowly while `flag` exists; all aged past the two seconds in which a same-size rewrite
 * could hide, so that answers may be kept.
 */
async function setup() {
  const home = join(dir, "home");
  const project = join(dir, "project");
  mkdirSync(home, { recursive: true });
  mkdirSync(join(project, ".levelcode"), { recursive: true });
  const settings = join(project, ".levelcode", "settings.json");
  writeFileSync(settings, JSON.stringify({ hooks: { PreToolUse: [{ matcher: "write_file", hooks: [{ argv: ["printf", '{"additionalContext":"guarded"}'] }] }] } }));
  const flag = join(dir, "slow");
  const binary = writeScript(dir, "levelcode-hooks", `#!/bin/sh\n[ -e '${flag}' ] && sleep ${SLOW_START_S}\nexec '${BINARY}' "$@"\n`);
  await sleep(2100);
  const env = { HOME: home, XDG_CACHE_HOME: undefined, LEVELCODE_DIR: undefined, LEVELCODE_TRUST_PROJECT_HOOKS: "1" };
  const make = (extra: Record<string, string | undefined> = {}) => {
    const runner = createHookRunner({ binary, env: { ...env, ...extra } });
    runners.push(runner);
    return runner;
  };
  const call = (tool: string): HookPayload => ({ event: "PreToolUse", cwd: project, tool_name: tool, tool_input: { path: "a.ts" } });
  const folder = join(home, ".cache", "levelcode-hooks", "answers");
  /**
   * A runner's answer to `tool`, or "late" when it was not there within EARLY_MS. The runners of
   * a process share its servers: a test that asks again closes the runner first, so that the next
   * one starts a server of its own.
   */
  const early = async (runner: ReturnType<typeof make>, tool: string) => {
    const answer = runner.runEvent("PreToolUse", call(tool));
    const first = await Promise.race([answer, sleep(EARLY_MS).then(() => "late" as const)]);
    return { first, answer: await answer };
  };
  /** Lets a runner answer and keep: a no-match, then time for its watches and its file. */
  const keep = async () => {
    const runner = make();
    const outcome = await runner.runEvent("PreToolUse", call("read_files"));
    expect(outcome.results).toEqual([]);
    await sleep(200);
    runner.close();
    expect(existsSync(folder) ? readdirSync(folder).filter((name) => name.endsWith(".json")).length : 0).toBeGreaterThan(0);
  };
  return { home, project, settings, flag, binary, env, make, call, folder, early, keep };
}

describe.skipIf(!cacheAvailable)("answers kept for the next process", () => {
  test("a new runner's first no-match call is answered before its server could answer; a tool a group applies to still runs its hook", async () => {
    const s = await setup();
    await s.keep();
    writeFileSync(s.flag, "");
    const runner = s.make();
    const { first, answer } = await s.early(runner, "read_files");
    expect(first).not.toBe("late");
    expect(answer.decision).toBe("proceed");
    expect(answer.results).toEqual([]);
    expect(runner.cacheStats().hits).toBe(1);
    // The summary leaves `write_file` out: that call waits for the (slow) server and runs its hook.
    const guarded = await s.early(runner, "write_file");
    expect(guarded.first).toBe("late");
    expect(guarded.answer.results.length).toBe(1);
    expect(guarded.answer.additionalContext).toBe("guarded");
  });

  test("an edit of a file the answer was read from is seen, at once and once it has aged", async () => {
    const s = await setup();
    await s.keep();
    // Same size, saved by rename: only the stamp tells.
    const edited = JSON.stringify({ hooks: { PreToolUse: [{ matcher: "read_files", hooks: [{ argv: ["printf", '{"additionalContext":"guarded"}'] }] }] } });
    writeFileSync(`${s.settings}.tmp`, edited);
    renameSync(`${s.settings}.tmp`, s.settings);
    const now = await s.make().runEvent("PreToolUse", s.call("read_files"));
    expect(now.additionalContext).toBe("guarded");
    await sleep(2100);
    const later = await s.make().runEvent("PreToolUse", s.call("read_files"));
    expect(later.additionalContext).toBe("guarded");
  });

  test("a layer that appears where there was none is seen", async () => {
    const s = await setup();
    await s.keep();
    const userDir = join(s.home, ".config", "levelcode");
    mkdirSync(userDir, { recursive: true });
    writeFileSync(join(userDir, "settings.json"), JSON.stringify({ hooks: { PreToolUse: [{ hooks: [{ argv: ["printf", '{"additionalContext":"user"}'] }] }] } }));
    await sleep(2100);
    const outcome = await s.make().runEvent("PreToolUse", s.call("read_files"));
    expect(outcome.additionalContext).toBe("user");
  });

  test("another environment, a kept file others could write, or one that is not there: the server answers", async () => {
    const s = await setup();
    await s.keep();
    writeFileSync(s.flag, "");
    // The project layer switched off by the environment: another key, so nothing kept applies.
    const otherRunner = s.make({ LEVELCODE_HOOKS_NO_PROJECT: "1" });
    const other = await s.early(otherRunner, "read_files");
    expect(other.first).toBe("late");
    expect(other.answer.results).toEqual([]);
    otherRunner.close();

    const kept = readdirSync(s.folder);
    for (const name of kept) chmodSync(join(s.folder, name), 0o666);
    const writableRunner = s.make();
    const writable = await s.early(writableRunner, "read_files");
    expect(writable.first).toBe("late");
    writableRunner.close();

    // The same files, the person's own again: they are read (the check above was the mode).
    for (const name of kept) chmodSync(join(s.folder, name), 0o600);
    const ownRunner = s.make();
    expect((await s.early(ownRunner, "read_files")).first).not.toBe("late");
    ownRunner.close();

    rmSync(s.folder, { recursive: true, force: true });
    const gone = await s.early(s.make(), "read_files");
    expect(gone.first).toBe("late");
    expect(gone.answer.decision).toBe("proceed");
  });

  test("an answer is kept under the environment of its request, though the host's changed before it was kept", async () => {
    const s = await setup();
    const runner = s.make();
    process.env.LEVELCODE_HOOKS_NO_PROJECT = "1";
    try {
      // The project layer off: nothing applies to any tool.
      expect((await runner.runEvent("PreToolUse", s.call("read_files"))).results).toEqual([]);
    } finally {
      delete process.env.LEVELCODE_HOOKS_NO_PROJECT;
    }
    // The next call, before the first answer is kept, sees the host's environment as it is now
    // (an event whose answers are not kept, so that nothing kept since hides the first).
    await runner.runEvent("SessionStart", { event: "SessionStart", cwd: s.project });
    await sleep(200);
    runner.close();
    const guarded = await s.make().runEvent("PreToolUse", s.call("write_file"));
    expect(guarded.additionalContext).toBe("guarded");
  });

  test("a runner with inline hooks answers from them, never from what others kept", async () => {
    const s = await setup();
    await s.keep();
    // The same binary and environment as the runner that kept its answers.
    const inline = createHookRunner({ binary: s.binary, env: s.env, hooks: { PreToolUse: [{ matcher: "read_files", hooks: [{ command: `printf '{"additionalContext":"inline"}'` }] }] } });
    runners.push(inline);
    expect((await inline.runEvent("PreToolUse", s.call("read_files"))).additionalContext).toBe("inline");
  });

  test("a kept file that is not a plain file is passed over without waiting", async () => {
    const s = await setup();
    await s.keep();
    for (const name of readdirSync(s.folder)) {
      rmSync(join(s.folder, name));
      expect(spawnSync("mkfifo", ["-m", "600", join(s.folder, name)]).status).toBe(0);
    }
    const outcome = await s.make().runEvent("PreToolUse", s.call("read_files"));
    expect(outcome.decision).toBe("proceed");
    expect(outcome.results).toEqual([]);
  });

  test("a directory reached through a link is not answered for once the link points elsewhere", async () => {
    const s = await setup();
    const first = join(dir, "first");
    const second = join(dir, "second");
    renameSync(s.project, first);
    mkdirSync(join(second, ".levelcode"), { recursive: true });
    linkSync(join(first, ".levelcode", "settings.json"), join(second, ".levelcode", "settings.json"));
    symlinkSync(first, s.project);
    await sleep(2100);
    await s.keep();
    writeFileSync(s.flag, "");
    expect((await s.early(s.make(), "read_files")).first).not.toBe("late");
    rmSync(s.project);
    symlinkSync(second, s.project);
    // Every file of the answer has its stamp still (the settings are one file with two names);
    // only where the directory really is tells, and the trust of a project is for that.
    for (const runner of runners.splice(0)) runner.close();
    const moved = await s.early(s.make(), "read_files");
    expect(moved.first).toBe("late");
  });

  test("a kept answer is for the binary that gave it", async () => {
    const s = await setup();
    await s.keep();
    writeFileSync(s.flag, "");
    // The same path, another binary: a rewrite of the wrapper changes its stamp.
    const binary = join(dir, "levelcode-hooks");
    writeFileSync(`${binary}.new`, `#!/bin/sh\n[ -e '${s.flag}' ] && sleep ${SLOW_START_S}\nexec '${BINARY}' "$@"\n`, { mode: 0o755 });
    renameSync(`${binary}.new`, binary);
    const replaced = await s.early(s.make(), "read_files");
    expect(replaced.first).toBe("late");
    expect(replaced.answer.results).toEqual([]);
  });
});

describe("the variables that change an answer", () => {
  test("the comparison made on every call reads each of them, in order", () => {
    const values = ENV_KEYS.map((name) => `value of ${name}`);
    const env = Object.fromEntries(ENV_KEYS.map((name, i) => [name, values[i]]));
    expect(unchanged(env, values)).toBe(true);
    for (const name of ENV_KEYS) {
      expect({ name, same: unchanged({ ...env, [name]: "another value" }, values) }).toEqual({ name, same: false });
      expect({ name, same: unchanged({ ...env, [name]: undefined }, values) }).toEqual({ name, same: false });
    }
    expect(unchanged({ ...env, SOMETHING_ELSE: "x" }, values)).toBe(true);
  });
});

describe("the folder of kept answers", () => {
  test("keeps at most MAX_FILES, dropping the least recently written", () => {
    const folder = join(dir, "answers");
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    const old = new Date(Date.now() - 3600_000);
    for (let i = 0; i < MAX_FILES; i++) {
      const file = join(folder, `old-${i}.json`);
      writeFileSync(file, "{}", { mode: 0o600 });
      utimesSync(file, old, old);
    }
    writeFileSync(join(folder, "recent.json"), "{}", { mode: 0o600 });
    // A writer that died before its rename long ago, and one writing now.
    for (const [name, at] of [[".dead.json.1.x", old], [".writing.json.2.y", new Date()]] as const) {
      writeFileSync(join(folder, name), "{", { mode: 0o600 });
      utimesSync(join(folder, name), at, at);
    }
    const text = writeKept(folder, keptKey(BINARY, "env", dir, "PreToolUse"), BINARY, { except: ["write_file"], watch: [] }, BigInt(Date.now()) * 1_000_000n, null, dir, realDirectory(dir));
    expect(text).not.toBeNull();
    expect(readdirSync(folder)).not.toContain(".dead.json.1.x");
    expect(readdirSync(folder)).toContain(".writing.json.2.y");
    rmSync(join(folder, ".writing.json.2.y"));
    const left = readdirSync(folder);
    expect(left.length).toBeLessThan(MAX_FILES);
    // The newest two stay: the file written a moment ago, and the one just kept.
    expect(left).toContain("recent.json");
    expect(left.filter((name) => !name.startsWith("old-") && name !== "recent.json").length).toBe(1);
    expect(left.filter((name) => name.startsWith("old-")).length).toBe(left.length - 2);
  });

  test("is not written for a file changed within two seconds of the request, nor for another stamp", async () => {
    const folder = join(dir, "answers");
    const file = join(dir, "settings.json");
    writeFileSync(file, "{}");
    const key = keptKey(BINARY, "env", dir, "PreToolUse");
    const sent = () => BigInt(Date.now()) * 1_000_000n;
    const real = realDirectory(dir);
    const write = (watch: Array<[string, string]>, previous: string | null = null) => writeKept(folder, key, BINARY, { except: [], watch }, sent(), previous, dir, real);
    expect(write([[file, stampOf(file, sent()).text]])).toBeNull();
    await sleep(2100);
    expect(write([[file, "absent"]])).toBeNull();
    const text = write([[file, stampOf(file, sent()).text]]);
    expect(text).not.toBeNull();
    expect(readKept(folder, key, BINARY, dir)?.kept.watch).toEqual([[file, stampOf(file, sent()).text]]);
    // Written again only when it says something else.
    expect(write([[file, stampOf(file, sent()).text]], text)).toBe(text);
    expect(readKept(folder, keptKey(BINARY, "another env", dir, "PreToolUse"), BINARY, dir)).toBeNull();
    expect(readKept(folder, key, join(dir, "another-binary"), dir)).toBeNull();
    // Not for a directory that was elsewhere when the request went out.
    expect(writeKept(folder, key, BINARY, { except: [], watch: [[file, stampOf(file, sent()).text]] }, sent(), null, dir, "/elsewhere")).toBeNull();
  });
});
