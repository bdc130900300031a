/**
 * Background handlers (`async: true`, contract §21) through the client: `runEvent` answers
 * without waiting for them, a later answer of the same session carries what each came to (its
 * context, labelled, and `background`), once, and a failure reaches the person through the
 * next SessionStart's notices, which levelcode's `run()` shows (docs/levelcode.md).
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";

import { createHookRunner, type HookDispatchOutcome, type HookRunner, type HooksConfig } from "../src/index.ts";
import { perTestDir } from "./helpers.ts";

setDefaultTimeout(60_000);

let dir = "";
const runners = perTestDir((fresh) => {
  dir = fresh;
});

function runnerWith(hooks: HooksConfig): HookRunner {
  const runner = createHookRunner({ hooks });
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
