/**
 * Background handlers (`async: true`, contract §21) through the client: `runEvent` answers
 * without waiting for them, a later answer of the same session carries what each came to (its
 * context, labelled, and `background`), once, and a failure reaches the person through the
 * next SessionStart's notices, which levelcode's `run()` shows (docs/levelcode.md).
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";

import { createHookRunner, serverCounts, type HookDispatchOutcome, type HookRunner, type HookRunnerOptions, type HooksConfig } from "../src/index.ts";
import { perTestDir } from "./helpers.ts";

setDefaultTimeout(60_000);

let dir = "";
const runners = perTestDir((fresh) => {
  dir = fresh;
});

function runnerWith(hooks: HooksConfig, options: HookRunnerOptions = {}): HookRunner {
  const runner = createHookRunner({ ...options, hooks });
  runners.push(runner);
  return runner;
}

async function until(path: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`${path} never appeared`);
    await Bun.sleep(10);
  }
}

/** Waits until the server `pid` of this process has ended (for being idle). */
async function untilEnded(pid: number | undefined): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (serverCounts().pids.includes(pid!)) {
    if (Date.now() > deadline) throw new Error("the server never ended once idle");
    await Bun.sleep(10);
  }
}

/** Asks with `ask` until an answer hands a background result on (its supervisor has just
 * ended when the marker appears), and once more; returns every answer. */
async function untilHandedOn(ask: () => Promise<HookDispatchOutcome>): Promise<HookDispatchOutcome[]> {
  const answers: HookDispatchOutcome[] = [];
  for (let i = 0; i < 400; i++) {
    const outcome = await ask();
    answers.push(outcome);
    if ((outcome.background ?? []).length > 0) {
      answers.push(await ask());
      return answers;
    }
    await Bun.sleep(10);
  }
  throw new Error("no answer handed a background result on");
}

describe("background handlers", () => {
  test("runEvent does not wait, and a later answer hands the context on once", async () => {
    const marker = join(dir, "done");
    const runner = runnerWith({
      PostToolUse: [{ hooks: [{ command: `sleep 1; echo '{"additionalContext":"suite passed"}'; touch ${marker}`, async: true, name: "suite" }] }],
    });
    const started = Date.now();
    const post = await runner.runEvent("PostToolUse", { event: "PostToolUse", cwd: dir, tool_name: "write_file", tool_input: { path: "a" } });
    expect(Date.now() - started).toBeLessThan(900);
    expect(post.results.map((r) => r.outcome)).toEqual(["started"]);
    expect(existsSync(marker)).toBe(false);
    await until(marker);
    const answers = await untilHandedOn(() => runner.runEvent("Stop", { event: "Stop", cwd: dir }));
    const handed = answers.filter((a) => a.additionalContext !== "");
    expect(handed.map((a) => a.additionalContext)).toEqual(["from the background PostToolUse hook suite: suite passed"]);
    const [result] = handed[0]!.background!;
    expect(result!.label).toBe("suite");
    expect(result!.event).toBe("PostToolUse");
    expect(result!.outcome).toBe("proceed");
    expect(answers.at(-1)!.background).toBeUndefined();
  });

  test("calls answered from memory while a handler runs do not keep its result from the session's next answer", async () => {
    const go = join(dir, "go");
    const marker = join(dir, "done");
    const runner = runnerWith({
      PostToolUse: [{ hooks: [{ command: `while [ ! -e ${go} ]; do sleep 0.01; done; echo '{"additionalContext":"lint clean"}'; touch ${marker}`, async: true, name: "lint" }] }],
    });
    const stop = () => runner.runEvent("Stop", { event: "Stop", cwd: dir, session_id: "s1" });
    // Before the handler starts, Stop matches nothing, as often as a memory needs to keep it.
    for (let i = 0; i < 3; i++) expect((await stop()).results).toEqual([]);
    const post = await runner.runEvent("PostToolUse", { event: "PostToolUse", cwd: dir, session_id: "s1", tool_name: "write_file", tool_input: { path: "a" } });
    expect(post.results.map((r) => r.outcome)).toEqual(["started"]);
    // While it runs, the session's calls still match nothing.
    for (let i = 0; i < 3; i++) expect((await stop()).additionalContext).toBe("");
    const before = runner.cacheStats();
    for (let i = 0; i < 3; i++) await stop();
    expect(runner.cacheStats().hits).toBe(before.hits);
    // Another session's calls are answered from memory meanwhile.
    const other = () => runner.runEvent("Stop", { event: "Stop", cwd: dir, session_id: "s2" });
    for (let i = 0; i < 3; i++) await other();
    expect(runner.cacheStats().hits).toBeGreaterThan(before.hits);
    await Bun.write(go, "");
    await until(marker);
    const answers = await untilHandedOn(stop);
    expect(answers.map((a) => a.additionalContext).filter((c) => c !== "")).toEqual(["from the background PostToolUse hook lint: lint clean"]);
    // Once handed on, the session's calls are answered from memory again.
    const after = runner.cacheStats().hits;
    for (let i = 0; i < 3; i++) await stop();
    expect(runner.cacheStats().hits).toBeGreaterThan(after);
  });

  test("payloads without a session id: one project's calls do not end another project's wait", async () => {
    const [a, b] = [join(dir, "a"), join(dir, "b")];
    mkdirSync(a);
    mkdirSync(b);
    const go = join(dir, "go");
    const marker = join(dir, "done");
    const runner = runnerWith({
      PostToolUse: [{ hooks: [{ command: `while [ ! -e ${go} ]; do sleep 0.01; done; echo '{"additionalContext":"a done"}'; touch ${marker}`, async: true, name: "suite" }] }],
    });
    const stop = (cwd: string) => runner.runEvent("Stop", { event: "Stop", cwd });
    for (let i = 0; i < 3; i++) await stop(a);
    for (let i = 0; i < 3; i++) await stop(b);
    const post = await runner.runEvent("PostToolUse", { event: "PostToolUse", cwd: a, tool_name: "write_file", tool_input: { path: "x" } });
    expect(post.results.map((r) => r.outcome)).toEqual(["started"]);
    // Project b has nothing to come: its answers say so, and say nothing of project a.
    for (let i = 0; i < 3; i++) expect((await stop(b)).additionalContext).toBe("");
    await Bun.write(go, "");
    await until(marker);
    const answers = await untilHandedOn(() => stop(a));
    expect(answers.map((x) => x.additionalContext).filter((c) => c !== "")).toEqual(["from the background PostToolUse hook suite: a done"]);
  });

  test("a server that keeps a session's results to come does not end for being idle, and ends once it handed them on", async () => {
    const go = join(dir, "go");
    const marker = join(dir, "done");
    const before = serverCounts();
    const runner = runnerWith(
      { PostToolUse: [{ hooks: [{ command: `while [ ! -e ${go} ]; do sleep 0.01; done; echo '{"additionalContext":"suite passed"}'; touch ${marker}`, async: true, name: "suite" }] }] },
      // A data directory of its own, and so a pool of servers of its own.
      { idleMs: 50, env: { LEVELCODE_DIR: join(dir, "data") } },
    );
    const post = await runner.runEvent("PostToolUse", { event: "PostToolUse", cwd: dir, tool_name: "write_file", tool_input: { path: "a" } });
    expect(post.results.map((r) => r.outcome)).toEqual(["started"]);
    const [pid] = serverCounts().pids.filter((p) => !before.pids.includes(p));
    // Many times its idle bound, and the server that keeps the handler is still there.
    await Bun.sleep(500);
    expect(serverCounts().pids).toContain(pid!);
    await Bun.write(go, "");
    await until(marker);
    const answers = await untilHandedOn(() => runner.runEvent("Stop", { event: "Stop", cwd: dir }));
    expect(answers.map((a) => a.additionalContext).filter((c) => c !== "")).toEqual(["from the background PostToolUse hook suite: suite passed"]);
    expect(serverCounts().started - before.started).toBe(1);
    await untilEnded(pid);
  });

  test("a SessionEnd's own background handler keeps no server from ending once idle", async () => {
    const marker = join(dir, "done");
    const before = serverCounts();
    const runner = runnerWith(
      { SessionEnd: [{ hooks: [{ command: `touch ${marker}`, async: true, name: "bye" }] }] },
      { idleMs: 50, env: { LEVELCODE_DIR: join(dir, "data") } },
    );
    const end = await runner.runEvent("SessionEnd", { event: "SessionEnd", cwd: dir, reason: "other" });
    expect(end.results.map((r) => r.outcome)).toEqual(["started"]);
    const [pid] = serverCounts().pids.filter((p) => !before.pids.includes(p));
    await until(marker);
    await untilEnded(pid);
  });

  test("a session's calls go to the server that keeps its handler, while another one is there", async () => {
    const release = join(dir, "release");
    const marker = join(dir, "done");
    const before = serverCounts();
    const runner = runnerWith(
      {
        PreToolUse: [{ matcher: "slow", hooks: [{ command: `while [ ! -e ${release} ]; do sleep 0.01; done` }] }],
        PostToolUse: [{ hooks: [{ command: `echo '{"additionalContext":"lint clean"}'; touch ${marker}`, async: true, name: "lint" }] }],
      },
      { env: { LEVELCODE_DIR: join(dir, "data") } },
    );
    // A slow call holds the first server, so the next call starts a second one.
    const slow = runner.runEvent("PreToolUse", { event: "PreToolUse", cwd: dir, session_id: "s1", tool_name: "slow", tool_input: {} });
    await Bun.sleep(100);
    const post = await runner.runEvent("PostToolUse", { event: "PostToolUse", cwd: dir, session_id: "s1", tool_name: "write_file", tool_input: { path: "a" } });
    expect(post.results.map((r) => r.outcome)).toEqual(["started"]);
    await Bun.write(release, "");
    await slow;
    expect(serverCounts().started - before.started).toBe(2);
    await until(marker);
    const answers = await untilHandedOn(() => runner.runEvent("Stop", { event: "Stop", cwd: dir, session_id: "s1" }));
    expect(answers.map((a) => a.additionalContext).filter((c) => c !== "")).toEqual(["from the background PostToolUse hook lint: lint clean"]);
  });

  test("a failure is told to the person at the next SessionStart", async () => {
    const marker = join(dir, "failed");
    const runner = runnerWith({
      PostToolUse: [{ hooks: [{ command: `touch ${marker}; echo '2 tests failed' >&2; exit 1`, async: true, name: "npm test" }] }],
      Stop: [{ hooks: [{ command: "true" }] }],
    });
    await runner.runEvent("PostToolUse", { event: "PostToolUse", cwd: dir, tool_name: "write_file", tool_input: { path: "a" } });
    await until(marker);
    // A tool call's answer hands it on, where levelcode reads no warning.
    await untilHandedOn(() => runner.runEvent("Stop", { event: "Stop", cwd: dir }));
    const start = await runner.runEvent("SessionStart", { event: "SessionStart", cwd: dir });
    const told = (start.notices ?? []).filter((n) => n.includes("background PostToolUse hook npm test"));
    expect(told.length).toBe(1);
    expect(told[0]).toContain("2 tests failed");
    expect(start.additionalContext).toContain("background PostToolUse hook npm test");
  });
});
