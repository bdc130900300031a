/**
 * The transport: servers started lazily and reused, concurrent calls that do not wait on each
 * other, faults that resolve fail-open, the fallback to `run`, and servers that never outlive
 * their host.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

import { createHookRunner, type HookRunnerOptions } from "../src/index.ts";
import { alive, BINARY, BUN, perTestDir, writeProjectHooks, writeScript } from "./helpers.ts";

// Real processes, on a machine that may be loaded.
setDefaultTimeout(60_000);

let dir = "";
/** The runners a test makes, closed after it. */
const runners = perTestDir((fresh) => {
  dir = fresh;
});

function runnerWith(options: HookRunnerOptions) {
  const runner = createHookRunner(options);
  runners.push(runner);
  return runner;
}

const pre = (tool: string) => ({ event: "PreToolUse" as const, cwd: dir, tool_name: tool, tool_input: {} });
/** A handler that tells which process started it: the server. */
const parentPid = { command: `printf '{"additionalContext":"%s"}' "$PPID"` };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitUntil(condition: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await sleep(20);
  }
  return condition();
}

/** A stand-in for the binary: `serve` runs `serveScript`, every other command the real binary. */
function fakeBinary(serveScript: string): string {
  return writeScript(dir, "fake-levelcode-hooks", `#!/bin/sh\nif [ "$1" = serve ]; then\n${serveScript}\nfi\nexec '${BINARY}' "$@"\n`);
}

/** Answers the first request as a server would (nothing matched), so the server counts as started. */
const ANSWER_FIRST = `read -r line; id=$(printf '%s' "$line" | sed 's/^{"id":\\([0-9]*\\).*/\\1/'); echo "{\\"decision\\":\\"proceed\\",\\"handlers\\":[],\\"warnings\\":[],\\"id\\":$id}"`;

describe("servers", () => {
  test("are reused by calls one after another, and concurrent calls share a few", async () => {
    const runner = runnerWith({ hooks: { PreToolUse: [{ hooks: [parentPid] }], PostToolUse: [{ hooks: [{ command: "sleep 0.3" }, parentPid] }] } });
    const first = await runner.runEvent("PreToolUse", pre("a"));
    const second = await runner.runEvent("PreToolUse", pre("b"));
    expect(Number(first.additionalContext)).toBeGreaterThan(1);
    expect(second.additionalContext).toBe(first.additionalContext);

    const post = { event: "PostToolUse" as const, cwd: dir, tool_name: "a" };
    const all = await Promise.all(Array.from({ length: 12 }, () => runner.runEvent("PostToolUse", post)));
    expect(all.every((outcome) => outcome.warnings.length === 0 && Number(outcome.additionalContext) > 1)).toBe(true);
    expect(new Set(all.map((outcome) => outcome.additionalContext)).size).toBeLessThanOrEqual(4);
  });

  test("a 2-second hook in one call delays a concurrent no-match call by less than 50 ms", async () => {
    // The transport itself: no answer from the no-match cache.
    const runner = runnerWith({ noMatchCache: false, hooks: { PreToolUse: [{ matcher: "slow_tool", hooks: [{ command: "sleep 2" }] }] } });
    // One server, which the slow call takes: the quick one must start a server of its own.
    await runner.runEvent("PreToolUse", pre("warm"));
    let alone = Infinity;
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      await runner.runEvent("PreToolUse", pre("other"));
      alone = Math.min(alone, performance.now() - started);
    }

    const slowStarted = performance.now();
    const slow = runner.runEvent("PreToolUse", pre("slow_tool"));
    await sleep(50);
    const started = performance.now();
    const quick = await runner.runEvent("PreToolUse", pre("other"));
    const concurrent = performance.now() - started;
    const slowOutcome = await slow;

    expect(quick.results).toHaveLength(0);
    expect(slowOutcome.results).toHaveLength(1);
    expect(performance.now() - slowStarted).toBeGreaterThan(1900);
    expect(concurrent - alone).toBeLessThan(50);
  });

  test("beyond maxServers, calls share the servers there are", async () => {
    const runner = runnerWith({ maxServers: 2, hooks: { Stop: [{ hooks: [{ command: "sleep 0.3" }, parentPid] }] } });
    const outcomes = await Promise.all([1, 2, 3, 4, 5].map(() => runner.runEvent("Stop", { event: "Stop", cwd: dir })));
    expect(outcomes.every((o) => o.warnings.length === 0)).toBe(true);
    expect(new Set(outcomes.map((o) => o.additionalContext)).size).toBeLessThanOrEqual(2);
  });

  test("a settings change in the environment reaches the next call", async () => {
    const runner = runnerWith({});
    writeFileSync(join(dir, "settings.json"), JSON.stringify({ hooks: { Stop: [{ hooks: [{ command: "echo '{\"additionalContext\":\"data layer\"}'" }] }] } }));
    const before = await runner.runEvent("Stop", { event: "Stop", cwd: dir });
    expect(before.additionalContext).toBe("");
    process.env.LEVELCODE_DIR = dir;
    try {
      const after = await runner.runEvent("Stop", { event: "Stop", cwd: dir });
      expect(after.additionalContext).toBe("data layer");
    } finally {
      delete process.env.LEVELCODE_DIR;
    }
  });
});

describe("faults resolve fail-open", () => {
  test("a server killed during a request: proceed with a warning, and the next call gets a new server", async () => {
    const runner = runnerWith({ hooks: { PreToolUse: [{ matcher: "die", hooks: [{ command: "kill -9 $PPID; sleep 5" }] }, { matcher: "ok", hooks: [parentPid] }] } });
    const died = await runner.runEvent("PreToolUse", pre("die"));
    expect(died.blocked).toBe(false);
    expect(died.warnings.join("\n")).toContain("SIGKILL");
    const next = await runner.runEvent("PreToolUse", pre("ok"));
    expect(next.warnings).toEqual([]);
    expect(Number(next.additionalContext)).toBeGreaterThan(1);
  });

  test("a server that answers garbage is replaced", async () => {
    const binary = fakeBinary(`${ANSWER_FIRST}; while read -r line; do echo 'not an answer'; done; exit 0`);
    const runner = runnerWith({ binary, hooks: { PreToolUse: [{ hooks: [{ command: "exit 2" }] }] } });
    expect((await runner.runEvent("PreToolUse", pre("warm"))).warnings).toEqual([]);
    const outcome = await runner.runEvent("PreToolUse", pre("a"));
    expect(outcome.blocked).toBe(false);
    expect(outcome.warnings.join("\n")).toContain("not JSON: not an answer");
  });

  test("an answer to another request counts as garbage", async () => {
    const binary = fakeBinary(`${ANSWER_FIRST}; while read -r line; do echo '{"decision":"block","id":999}'; done`);
    const runner = runnerWith({ binary, noMatchCache: false });
    await runner.runEvent("PreToolUse", pre("warm"));
    const outcome = await runner.runEvent("PreToolUse", pre("a"));
    expect(outcome.blocked).toBe(false);
    expect(outcome.warnings.join("\n")).toContain("answers no request");
  });

  test("a server that hangs is stopped once the handlers' time limits and the margin have passed", async () => {
    const binary = fakeBinary(`${ANSWER_FIRST}; while read -r line; do :; done`);
    const runner = runnerWith({ binary, hangMarginMs: 300, hooks: { PreToolUse: [{ hooks: [{ command: "true", timeout: 0.5 }] }] } });
    expect((await runner.runEvent("PreToolUse", pre("warm"))).warnings).toEqual([]);
    const started = performance.now();
    const outcome = await runner.runEvent("PreToolUse", pre("a"));
    const took = performance.now() - started;
    expect(outcome.blocked).toBe(false);
    expect(outcome.warnings.join("\n")).toContain("no answer within 2300 ms");
    expect(took).toBeGreaterThan(2000);
    expect(took).toBeLessThan(10_000);
  });

  test("a server that hangs on disk settings gets the limit of the handlers that would run", async () => {
    const project = join(dir, "p");
    writeProjectHooks(project, { PreToolUse: [{ matcher: "a", hooks: [{ command: "true", timeout: 0.2 }] }, { matcher: "b", hooks: [{ command: "true", timeout: 60 }] }] });
    const binary = fakeBinary(`${ANSWER_FIRST}; while read -r line; do :; done`);
    // Without the no-match cache, the runner sends no probe: the first line is the "warm" event.
    const runner = runnerWith({ binary, hangMarginMs: 300, noMatchCache: false });
    await runner.runEvent("PreToolUse", { ...pre("warm"), cwd: project });
    const outcome = await runner.runEvent("PreToolUse", { ...pre("a"), cwd: project });
    expect(outcome.warnings.join("\n")).toContain("no answer within 2000 ms");
  });

  test("a server that never answers its first line is given up, and events go to run", async () => {
    const binary = fakeBinary(`exec sleep 30`);
    const runner = runnerWith({ binary, startTimeoutMs: 500, hooks: { PreToolUse: [{ hooks: [{ command: "echo by run >&2; exit 2" }] }] } });
    const started = performance.now();
    const outcome = await runner.runEvent("PreToolUse", pre("a"));
    expect(performance.now() - started).toBeLessThan(5000);
    expect(outcome.blocked).toBe(true);
    expect(outcome.warnings.join("\n")).toContain("did not answer its first line within 500 ms");
  });

  test("when serve cannot start, each event is one run", async () => {
    const binary = fakeBinary(`echo "error: unrecognized subcommand 'serve'" >&2; exit 2`);
    const runner = runnerWith({ binary, hooks: { PreToolUse: [{ hooks: [{ command: "echo by run >&2; exit 2" }] }] } });
    const first = await runner.runEvent("PreToolUse", pre("a"));
    expect(first.blocked).toBe(true);
    expect(first.reason).toBe("by run");
    expect(first.warnings.join("\n")).toContain("unrecognized subcommand 'serve'");
    const second = await runner.runEvent("PreToolUse", pre("a"));
    expect(second.blocked).toBe(true);
    expect(second.warnings).toEqual([]);
  });

  test("no binary: proceed, with the three places looked in", async () => {
    const runner = runnerWith({ env: { LEVELCODE_HOOKS_BINARY: undefined, PATH: dir } });
    const outcome = await runner.runEvent("PreToolUse", pre("a"));
    expect(outcome.blocked).toBe(false);
    const warning = outcome.warnings.join("\n");
    expect(warning).toContain("LEVELCODE_HOOKS_BINARY");
    expect(warning).toContain("@levelcode/hooks-");
    expect(warning).toContain("PATH");
  });

  test("a payload that cannot be sent, or that the dispatcher refuses, resolves too", async () => {
    const runner = runnerWith({ hooks: {} });
    const circular: Record<string, unknown> = { cwd: dir, tool_name: "a" };
    circular.self = circular;
    const outcome = await runner.runEvent("PreToolUse", circular as never);
    expect(outcome.blocked).toBe(false);
    expect(outcome.warnings[0]).toContain("no hook ran");
    const refused = await runner.runEvent("PreToolUse", { cwd: dir });
    expect(refused.blocked).toBe(false);
    expect(refused.warnings[0]).toContain("tool_name");
  });
});

describe("lifecycle", () => {
  test("close() ends the servers", async () => {
    const runner = runnerWith({ hooks: { Stop: [{ hooks: [parentPid] }] } });
    const pid = Number((await runner.runEvent("Stop", { event: "Stop", cwd: dir })).additionalContext);
    expect(alive(pid)).toBe(true);
    runner.close();
    expect(await waitUntil(() => !alive(pid), 3000)).toBe(true);
  });

  test("a host that never calls close() exits by itself, and its servers with it", () => {
    const script = join(dir, "host.ts");
    writeFileSync(
      script,
      `import { createHookRunner } from ${JSON.stringify(resolve(import.meta.dir, "../src/index.ts"))};\n` +
        `const runner = createHookRunner({ hooks: { Stop: [{ hooks: [${JSON.stringify(parentPid)}] }] } });\n` +
        `const outcome = await runner.runEvent("Stop", { event: "Stop", cwd: ${JSON.stringify(dir)} });\n` +
        `console.log(outcome.additionalContext);\n`,
    );
    const started = performance.now();
    const host = spawnSync(BUN, [script], { encoding: "utf8", timeout: 20_000 });
    expect(host.status).toBe(0);
    expect(performance.now() - started).toBeLessThan(10_000);
    const pid = Number(host.stdout.trim());
    expect(pid).toBeGreaterThan(1);
    const deadline = Date.now() + 3000;
    while (alive(pid) && Date.now() < deadline) Bun.sleepSync(20);
    expect(alive(pid)).toBe(false);
  });
});
