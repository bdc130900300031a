/**
 * The no-match cache gives the answers the dispatcher gives: a corpus of events is answered by a
 * runner with the cache and by one without, before and after each of a series of changes
 * (settings edits in place and by rename, folders renamed away and back, new layers, trust,
 * named scripts that appear and change, permissions), and the answers must be identical.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, mkdirSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { NoMatchCache } from "../src/cache.ts";
import { inotifyReady } from "../src/inotify.ts";
import { createHookRunner, type HookDispatchOutcome, type HookPayload } from "../src/index.ts";
import { perTestDir, serverSupports } from "./helpers.ts";

// Real processes, on a machine that may be loaded.
setDefaultTimeout(120_000);

const cacheAvailable = (await inotifyReady) !== null && NoMatchCache.available();

let dir = "";
/** The runners a test makes, closed after it. */
const runners = perTestDir((fresh) => {
  dir = fresh;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A handler in argv form: its words can be told apart without a shell, so its project can be cached. */
const reply = (text: string) => ({ argv: ["printf", `{"additionalContext":"${text}"}`] });
const settings = (hooks: unknown) => JSON.stringify({ hooks });

/** What two answers must share: everything but the times. */
function comparable(outcome: HookDispatchOutcome) {
  // Notices are told once per process, to whichever runner's SessionStart comes first.
  const { durationMs: _d, results, notices, ...rest } = outcome;
  const additionalContext = rest.additionalContext.split("\n").filter((line) => !notices?.includes(line)).join("\n");
  return { ...rest, additionalContext, results: results.map(({ durationMs: _r, ...result }) => result) };
}

describe.skipIf(!cacheAvailable)("the no-match cache", () => {
  test("answers exactly as the dispatcher does, across edits, renames, trust changes and new files", async () => {
    const home = join(dir, "home");
    const p1 = join(dir, "p1");
    const p2 = join(dir, "p2");
    for (const folder of [home, join(p1, ".levelcode"), join(p2, ".levelcode")]) mkdirSync(folder, { recursive: true });
    const env = { HOME: home, LEVELCODE_DIR: undefined, LEVELCODE_TRUST_PROJECT_HOOKS: undefined };
    const cached = createHookRunner({ env });
    const plain = createHookRunner({ env, noMatchCache: false });
    runners.push(cached, plain);

    const projectSettings = join(p1, ".levelcode", "settings.json");
    writeFileSync(projectSettings, settings({ PreToolUse: [{ matcher: "write_file", hooks: [reply("p1 write")] }] }));
    writeFileSync(join(p2, ".levelcode", "settings.json"), settings({ Stop: [{ hooks: [{ command: "bash .levelcode/stop.sh" }] }] }));

    const corpus: Array<[string, HookPayload]> = [];
    for (const cwd of [p1, p2]) {
      for (const tool of ["write_file", "str_replace", "read_files", "run_terminal_command"]) {
        corpus.push(["PreToolUse", { event: "PreToolUse", cwd, tool_name: tool, tool_input: { path: "a.ts" } }]);
      }
      corpus.push(["PostToolUse", { event: "PostToolUse", cwd, tool_name: "write_file", tool_result: "ok" }]);
      corpus.push(["SessionStart", { event: "SessionStart", cwd }]);
      corpus.push(["Stop", { event: "Stop", cwd }]);
    }

    let compared = 0;
    let keptHits = 0;
    /** The corpus, answered by both; a second round by the cached runner alone, from memory. */
    const agree = async (step: string) => {
      for (let round = 0; round < 3; round++) {
        for (const [event, payload] of corpus) {
          const fromCache = comparable(await cached.runEvent(event, payload));
          const fromDispatcher = comparable(await plain.runEvent(event, payload));
          expect({ step, event, payload, answer: fromCache }).toEqual({ step, event, payload, answer: fromDispatcher });
          compared++;
        }
        // Files written less than two seconds ago are not remembered (a same-size rewrite in the
        // same clock tick would not show in their stamps): let them age.
        if (round === 0) await sleep(2100);
      }
      // A runner made now answers its first calls from what the others kept (kept.ts).
      const newcomer = createHookRunner({ env });
      for (const [event, payload] of corpus) {
        const fromKept = comparable(await newcomer.runEvent(event, payload));
        const fromDispatcher = comparable(await plain.runEvent(event, payload));
        expect({ step, newcomer: true, event, payload, answer: fromKept }).toEqual({ step, newcomer: true, event, payload, answer: fromDispatcher });
      }
      keptHits += newcomer.cacheStats().hits;
      newcomer.close();
    };

    await agree("start");
    const userDir = join(home, ".config", "levelcode");
    mkdirSync(userDir, { recursive: true });
    writeFileSync(join(userDir, "settings.json"), settings({ PreToolUse: [{ matcher: "str_replace", hooks: [reply("user")] }] }));
    await agree("a user layer appears, in a folder that did not exist");

    writeFileSync(projectSettings, settings({ PreToolUse: [{ matcher: "read_files", hooks: [reply("p1 write")] }] }));
    await agree("the project layer edited in place, same size");

    writeFileSync(`${projectSettings}.tmp`, settings({ PreToolUse: [{ matcher: "run_terminal_command", hooks: [reply("p1 run")] }] }));
    renameSync(`${projectSettings}.tmp`, projectSettings);
    await agree("the project layer saved by rename");

    renameSync(join(p1, ".levelcode"), join(p1, ".levelcode-off"));
    await agree("the project's .levelcode folder renamed away");
    renameSync(join(p1, ".levelcode-off"), join(p1, ".levelcode"));
    await agree("and back");

    mkdirSync(join(home, ".levelcode"));
    writeFileSync(join(home, ".levelcode", "settings.json"), settings({ SessionStart: [{ hooks: [reply("data")] }] }));
    await agree("a data layer appears");

    writeFileSync(join(home, ".levelcode", "trusted-hooks.json"), JSON.stringify({ [p2]: "denied" }));
    await agree("the trust store changes by hand");
    if (serverSupports("trust")) {
      const status = await cached.trustStatus(p2);
      await cached.trust(status.digest, p2);
      await agree("the project is trusted through the client");
    }

    writeFileSync(join(p2, ".levelcode", "stop.sh"), 'echo \'{"additionalContext":"stop script"}\'\n');
    await agree("a script the project's hooks name appears");
    writeFileSync(join(p2, ".levelcode", "stop.sh"), 'echo \'{"additionalContext":"stop script, changed"}\'\n');
    await agree("and changes");

    chmodSync(projectSettings, 0o000);
    await agree("the project layer made unreadable");
    chmodSync(projectSettings, 0o644);
    await agree("and readable again");

    renameSync(p2, join(dir, "p2-old"));
    mkdirSync(join(p2, ".levelcode"), { recursive: true });
    writeFileSync(join(p2, ".levelcode", "settings.json"), settings({ PreToolUse: [{ hooks: [reply("new p2")] }] }));
    await agree("the project folder replaced by another");

    rmSync(join(userDir, "settings.json"));
    await agree("the user layer removed");

    const stats = cached.cacheStats();
    expect(compared).toBeGreaterThan(300);
    // Fewer where project hooks wait for trust: an answer with a trust warning is not remembered.
    expect(stats.hits).toBeGreaterThan(5);
    expect(stats.stored).toBeGreaterThan(5);
    // Watches are set only for what was stored, so only changes after a store drop the cache.
    expect(stats.invalidations).toBeGreaterThanOrEqual(2);
    expect(plain.cacheStats().hits).toBe(0);
    expect(keptHits).toBeGreaterThan(0);
  });

  test("a no-match answered from memory costs no dispatch: the server never sees it", async () => {
    const project = join(dir, "p");
    mkdirSync(join(project, ".levelcode"), { recursive: true });
    const runner = createHookRunner({});
    runners.push(runner);
    const payload = { event: "PreToolUse", cwd: project, tool_name: "write_file" };
    await runner.runEvent("PreToolUse", payload);
    await sleep(150);
    await runner.runEvent("PreToolUse", payload);
    const before = runner.cacheStats();
    for (let i = 0; i < 100; i++) await runner.runEvent("PreToolUse", payload);
    expect(runner.cacheStats().hits - before.hits).toBe(100);
  });

  test("a call an \"if\" filtered out is a no-match for that input only, never for the tool", async () => {
    const home = join(dir, "home");
    const project = join(dir, "project");
    for (const folder of [join(home, ".config", "levelcode"), project]) mkdirSync(folder, { recursive: true });
    const checker = { command: "cat > /dev/null; echo commit checker >&2; exit 2", if: "Bash(git commit *)" };
    writeFileSync(join(home, ".config", "levelcode", "settings.json"), settings({ PreToolUse: [{ matcher: "run_terminal_command", hooks: [checker] }] }));
    // Old enough that an answer may be remembered.
    await sleep(2100);
    const runner = createHookRunner({ env: { HOME: home, LEVELCODE_DIR: undefined } });
    runners.push(runner);
    // A tool the group never applies to: a no-match for the tool, remembered and answered from
    // memory, so the cache is at work here.
    const write = { event: "PreToolUse", cwd: project, tool_name: "write_file", tool_input: { path: "a.ts" } };
    await runner.runEvent("PreToolUse", write);
    await runner.runEvent("PreToolUse", write);
    expect(runner.cacheStats().hits).toBe(1);
    const bash = (command: string) => ({ event: "PreToolUse", cwd: project, tool_name: "run_terminal_command", tool_input: { command } });
    for (let round = 0; round < 3; round++) {
      const ls = await runner.runEvent("PreToolUse", bash("ls"));
      expect(ls.blocked).toBe(false);
      expect(ls.results).toEqual([]);
      const commit = await runner.runEvent("PreToolUse", bash("git add . && git commit -m x"));
      expect(commit.blocked).toBe(true);
      expect(commit.reason).toBe("commit checker");
    }
    expect(runner.cacheStats().hits).toBe(1);
  });

  test("runners of one process share their watches: an edit is seen by each, and one closing, or dropping its memory, blinds none", async () => {
    const home = join(dir, "home");
    const project = join(dir, "project");
    mkdirSync(join(project, ".levelcode"), { recursive: true });
    mkdirSync(home, { recursive: true });
    const file = join(project, ".levelcode", "settings.json");
    writeFileSync(file, settings({ PreToolUse: [{ matcher: "other_tool", hooks: [reply("other")] }] }));
    await sleep(2100);
    const env = { HOME: home, LEVELCODE_DIR: undefined };
    const make = () => {
      const runner = createHookRunner({ env });
      runners.push(runner);
      return runner;
    };
    const [a, b, c] = [make(), make(), make()];
    const call = (runner: ReturnType<typeof make>) => runner.runEvent("PreToolUse", { event: "PreToolUse", cwd: project, tool_name: "write_file", tool_input: {} });
    for (const runner of [a, b, c]) {
      await call(runner);
      await sleep(50);
      await call(runner);
      expect(runner.cacheStats().hits).toBeGreaterThan(0);
    }
    // One runner closes, another drops what it remembered: the third still watches.
    a.close();
    b.invalidate();
    writeFileSync(file, settings({ PreToolUse: [{ matcher: "write_file", hooks: [reply("now guarded")] }] }));
    for (const runner of [c, b]) {
      const outcome = await call(runner);
      expect(outcome.additionalContext).toBe("now guarded");
    }
  });

  test("nothing is remembered in a team's PostToolUse, which writes the compliance log", async () => {
    const runner = createHookRunner({ env: { LEVELCODE_TEAM: "alpha", LEVELCODE_DIR: join(dir, "data") } });
    runners.push(runner);
    const payload = { event: "PostToolUse", cwd: dir, tool_name: "write_file", tool_result: "ok" };
    for (let i = 0; i < 3; i++) {
      await runner.runEvent("PostToolUse", payload);
      await sleep(100);
    }
    expect(runner.cacheStats().hits).toBe(0);
  });
});

describe.skipIf(!cacheAvailable)("the no-match cache and what one answer says of other tools", () => {
  test("a tool no matcher names is answered from another tool's answer; a tool a matcher names, or one given a hook since, is not", async () => {
    const home = join(dir, "home");
    const project = join(dir, "project");
    const user = join(home, ".config", "levelcode");
    for (const folder of [user, project]) mkdirSync(folder, { recursive: true });
    const file = join(user, "settings.json");
    writeFileSync(file, settings({ PreToolUse: [{ matcher: "guarded|Bash", protocol: "claude", hooks: [{ command: "echo 'no' >&2; exit 2" }] }] }));
    const old = new Date(Date.now() - 60_000);
    utimesSync(file, old, old);
    await sleep(2100);

    const runner = createHookRunner({ env: { HOME: home, LEVELCODE_DIR: undefined } });
    runners.push(runner);
    const call = (tool: string) => runner.runEvent("PreToolUse", { event: "PreToolUse", cwd: project, tool_name: tool, tool_input: { command: "ls" } });
    expect((await call("write_file")).blocked).toBe(false);
    await sleep(50);
    const before = runner.cacheStats().hits;
    // Never asked about, and named by no matcher: from memory.
    expect((await call("glob")).blocked).toBe(false);
    expect(runner.cacheStats().hits).toBe(before + 1);
    // Named by a matcher, directly or by its Claude Code name: to the dispatcher, which blocks.
    expect((await call("guarded")).blocked).toBe(true);
    expect((await call("run_terminal_command")).blocked).toBe(true);
    expect(runner.cacheStats().hits).toBe(before + 1);

    // A hook for a tool that was answered from memory: the next call runs it.
    writeFileSync(file, settings({ PreToolUse: [{ matcher: "glob", hooks: [{ command: "echo 'now' >&2; exit 2" }] }] }));
    const after = await call("glob");
    expect(after.blocked).toBe(true);
    expect(after.reason).toBe("now");
  });

  test("calls of a step that wait for the first answer get the dispatcher's answers", async () => {
    const home = join(dir, "home");
    const project = join(dir, "project");
    const user = join(home, ".config", "levelcode");
    for (const folder of [user, project]) mkdirSync(folder, { recursive: true });
    const file = join(user, "settings.json");
    writeFileSync(file, settings({ PreToolUse: [{ matcher: "tool_7", hooks: [{ command: "echo 'seven' >&2; exit 2" }] }] }));
    const old = new Date(Date.now() - 60_000);
    utimesSync(file, old, old);
    await sleep(2100);
    const runner = createHookRunner({ env: { HOME: home, LEVELCODE_DIR: undefined } });
    runners.push(runner);
    const tools = Array.from({ length: 60 }, (_, i) => `tool_${i % 12}`);
    const outcomes = await Promise.all(tools.map((tool) => runner.runEvent("PreToolUse", { event: "PreToolUse", cwd: project, tool_name: tool, tool_input: {} })));
    expect(outcomes.map((o) => o.blocked)).toEqual(tools.map((tool) => tool === "tool_7"));
    expect(outcomes.filter((o) => o.blocked).every((o) => o.reason === "seven")).toBe(true);
    expect(runner.cacheStats().hits).toBeGreaterThan(0);
  });
});

describe.skipIf(!cacheAvailable)("the no-match cache and symlinks on the way", () => {
  test("a swap of a symlinked folder anywhere on the way to a layer drops the cache", async () => {
    // ~/.config/levelcode -> deploy/current -> v1; then current -> v2, which adds a blocking guard.
    const home = join(dir, "home");
    const deploy = join(dir, "deploy");
    const project = join(dir, "project");
    for (const folder of [join(home, ".config"), join(deploy, "v1"), join(deploy, "v2"), project]) mkdirSync(folder, { recursive: true });
    writeFileSync(join(deploy, "v1", "settings.json"), settings({ PreToolUse: [{ matcher: "other_tool", hooks: [{ command: "true" }] }] }));
    writeFileSync(join(deploy, "v2", "settings.json"), settings({ PreToolUse: [{ matcher: "write_file", hooks: [{ command: "echo guarded >&2; exit 2" }] }] }));
    symlinkSync("v1", join(deploy, "current"));
    symlinkSync(join(deploy, "current"), join(home, ".config", "levelcode"));
    // Old enough that the stamps alone can be trusted.
    const old = new Date(Date.now() - 60_000);
    for (const file of [join(deploy, "v1", "settings.json"), join(deploy, "v2", "settings.json")]) utimesSync(file, old, old);
    await sleep(2100);

    const runner = createHookRunner({ env: { HOME: home, LEVELCODE_DIR: undefined } });
    runners.push(runner);
    const payload = { event: "PreToolUse", cwd: project, tool_name: "write_file", tool_input: {} };
    expect((await runner.runEvent("PreToolUse", payload)).blocked).toBe(false);
    expect((await runner.runEvent("PreToolUse", payload)).blocked).toBe(false);
    expect(runner.cacheStats().hits).toBe(1);

    symlinkSync("v2", join(deploy, "next"));
    renameSync(join(deploy, "next"), join(deploy, "current"));
    const after = await runner.runEvent("PreToolUse", payload);
    expect(after.blocked).toBe(true);
    expect(after.reason).toBe("guarded");
  });

  test("a path whose way cannot be watched is not remembered, though its stamp agrees", async () => {
    const noMatch: HookDispatchOutcome = { blocked: false, additionalContext: "", results: [], decision: "proceed", warnings: [], durationMs: 0 };
    // A link that never ends (a loop) cannot be followed, so its way cannot be watched; its
    // stamp, "unreachable", is what the dispatcher would report for it.
    symlinkSync(join(dir, "loop-b"), join(dir, "loop-a"));
    symlinkSync(join(dir, "loop-a"), join(dir, "loop-b"));
    const looped = join(dir, "loop-a", "settings.json");
    const plain = join(dir, "absent.json");
    const cache = new NoMatchCache();
    cache.store("looped", cache.ticket(), noMatch, [[plain, "absent"], [looped, "unreachable"]]);
    expect(cache.lookup("looped")).toBeNull();
    cache.store("plain", cache.ticket(), noMatch, [[plain, "absent"]]);
    expect(cache.lookup("plain")).not.toBeNull();
    // A stamp that differs from the file as it is now: not remembered either.
    writeFileSync(plain, "{}");
    cache.store("stale", cache.ticket(), noMatch, [[plain, "absent"]]);
    expect(cache.lookup("stale")).toBeNull();
    cache.invalidate();
  });
});

describe.skipIf(!cacheAvailable)("the no-match cache and Claude Code's own settings files", () => {
  test("an edit of .claude/settings.json, read as a layer, is seen by the next call", async () => {
    const home = join(dir, "home");
    const project = join(dir, "project");
    const user = join(home, ".config", "levelcode");
    for (const folder of [user, join(project, ".claude")]) mkdirSync(folder, { recursive: true });
    const switchFile = join(user, "settings.json");
    writeFileSync(switchFile, JSON.stringify({ claudeCodeHooks: true }));
    const claudeFile = join(project, ".claude", "settings.json");
    writeFileSync(claudeFile, settings({ PreToolUse: [{ matcher: "Bash", hooks: [{ command: "echo 'no shell' >&2; exit 2" }] }] }));
    const old = new Date(Date.now() - 60_000);
    for (const file of [switchFile, claudeFile]) utimesSync(file, old, old);
    await sleep(2100);

    const runner = createHookRunner({ env: { HOME: home, LEVELCODE_DIR: undefined, LEVELCODE_TRUST_PROJECT_HOOKS: "1" } });
    runners.push(runner);
    const call = (tool: string) => runner.runEvent("PreToolUse", { event: "PreToolUse", cwd: project, tool_name: tool, tool_input: { path: ".env", content: "x" } });
    // The layer is read: its Bash guard blocks the shell.
    const shell = await call("run_terminal_command");
    expect(shell.blocked).toBe(true);
    expect(shell.reason).toBe("no shell");
    expect(shell.results[0]?.layer).toBe("claude-project");
    // A write matches nothing: answered once, then from memory.
    expect((await call("write_file")).blocked).toBe(false);
    await sleep(50);
    const before = runner.cacheStats().hits;
    expect((await call("write_file")).blocked).toBe(false);
    expect(runner.cacheStats().hits).toBe(before + 1);

    // Claude Code's file gets a guard for writes: the next write runs it.
    writeFileSync(claudeFile, settings({ PreToolUse: [{ matcher: "Write|Edit", hooks: [{ command: "echo 'no secrets' >&2; exit 2" }] }] }));
    const write = await call("write_file");
    expect(write.blocked).toBe(true);
    expect(write.reason).toBe("no secrets");
    expect(runner.cacheStats().hits).toBe(before + 1);

    // The switch turned off in the user layer: the file is no longer a layer.
    writeFileSync(switchFile, JSON.stringify({ claudeCodeHooks: false }));
    expect((await call("write_file")).blocked).toBe(false);
  });
});
