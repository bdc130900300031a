/**
 * Where this package answers differently from levelcode's in-process engine, by design (the
 * contract's **(differs)** marks). Each test checks the behaviour of this package; the list is
 * in docs/levelcode.md.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { realpathSync } from "node:fs";
import { join } from "node:path";

import { createHookRunner, parseHookDecision, type HooksConfig } from "../src/index.ts";
import { perTestDir, serverSupports, writeProjectHooks } from "./helpers.ts";

// Real processes, on a machine that may be loaded.
setDefaultTimeout(60_000);

let dir = "";
/** The runners a test makes, closed after it. */
const runners = perTestDir((fresh) => {
  dir = fresh;
});

function runnerWith(hooks?: HooksConfig, env?: Record<string, string | undefined>) {
  const runner = createHookRunner({ hooks, env });
  runners.push(runner);
  return runner;
}

const pre = (tool = "write_file") => ({ event: "PreToolUse" as const, cwd: dir, tool_name: tool, tool_input: { path: "a.ts" } });

describe("differs from the in-process engine", () => {
  test('"*" matches every tool (the engine took it for an invalid regex and never ran it)', async () => {
    const outcome = await runnerWith({ PreToolUse: [{ matcher: "*", hooks: [{ command: "exit 2" }] }] }).runEvent("PreToolUse", pre());
    expect(outcome.blocked).toBe(true);
  });

  test("a list of names matches exact names only (the engine searched it as a regex)", async () => {
    const runner = runnerWith({ PreToolUse: [{ matcher: "write_file|str_replace", hooks: [{ command: "exit 2" }] }] });
    expect((await runner.runEvent("PreToolUse", pre("write_file_v2"))).results).toHaveLength(0);
    expect((await runner.runEvent("PreToolUse", pre("str_replace"))).blocked).toBe(true);
  });

  test("the first block ends the chain; later handlers are reported as skipped (the engine ran them all)", async () => {
    const runner = runnerWith({
      PreToolUse: [{ hooks: [{ command: "echo first >&2; exit 2" }, { command: "echo second >&2; exit 2" }] }],
    });
    const outcome = await runner.runEvent("PreToolUse", pre());
    expect(outcome.reason).toBe("first");
    expect(outcome.results.map((r) => r.outcome)).toEqual(["block", "skipped"]);
  });

  test("enabled: false turns a handler off (the engine dropped the key and ran it)", async () => {
    const runner = runnerWith({ PreToolUse: [{ hooks: [{ command: "exit 2", enabled: false }] }] });
    const outcome = await runner.runEvent("PreToolUse", pre());
    expect(outcome.blocked).toBe(false);
    expect(outcome.results).toHaveLength(0);
  });

  test("the same command twice runs once (the engine ran it again)", async () => {
    const runner = runnerWith({ PreToolUse: [{ hooks: [{ command: "true" }] }, { hooks: [{ command: "true" }] }] });
    const outcome = await runner.runEvent("PreToolUse", pre());
    expect(outcome.results.map((r) => r.outcome)).toEqual(["proceed", "duplicate"]);
  });

  test("JSON on stdout counts only on exit 0 (the engine read it on any exit)", async () => {
    const runner = runnerWith({ PreToolUse: [{ hooks: [{ command: `echo '{"decision":"block","reason":"x"}'; exit 1` }] }] });
    const outcome = await runner.runEvent("PreToolUse", pre());
    expect(outcome.blocked).toBe(false);
    expect(outcome.results[0]!.outcome).toBe("error");
  });

  test("a reply over 16 KiB is read (the engine ignored it)", async () => {
    const long = "r".repeat(20 * 1024);
    expect(parseHookDecision(JSON.stringify({ decision: "block", reason: long }))?.reason).toBe(long);
    const runner = runnerWith({
      PreToolUse: [{ hooks: [{ command: `printf '{"decision":"block","reason":"%s"}' "$(head -c 20480 /dev/zero | tr '\\0' r)"` }] }],
    });
    const outcome = await runner.runEvent("PreToolUse", pre());
    expect(outcome.blocked).toBe(true);
    expect(outcome.reason).toBe(long);
  });

  test("handlers run in the project root (the engine used the agent's own directory)", async () => {
    const runner = runnerWith({ SessionStart: [{ hooks: [{ command: `printf '{"additionalContext":"%s"}' "$(pwd -P)"` }] }] });
    const outcome = await runner.runEvent("SessionStart", { event: "SessionStart", cwd: dir });
    expect(outcome.additionalContext).toBe(realpathSync(dir));
  });

  test("additionalContext is joined with newlines, without a trailing one (the engine ended each with one)", async () => {
    const runner = runnerWith({
      PostToolUse: [{ hooks: [{ command: `echo '{"additionalContext":"a"}'` }, { command: `echo '{"additionalContext":"b"}'` }] }],
    });
    const outcome = await runner.runEvent("PostToolUse", { event: "PostToolUse", cwd: dir, tool_name: "write_file" });
    expect(outcome.additionalContext).toBe("a\nb");
  });

  test("an invalid handler skips only itself; its siblings in the file still run (the engine dropped the file)", async () => {
    const project = join(dir, "p");
    writeProjectHooks(project, { PreToolUse: [{ hooks: [{ command: "true", argv: ["true"] }, { command: "echo kept >&2; exit 2" }] }] });
    const outcome = await runnerWith().runEvent("PreToolUse", { ...pre(), cwd: project });
    expect(outcome.blocked).toBe(true);
    expect(outcome.reason).toBe("kept");
    expect(outcome.warnings.some((w) => w.includes("hooks.PreToolUse[0].hooks[0]"))).toBe(true);
  });

  test("a settings file reached twice is read once (the engine ran its hooks twice)", async () => {
    // LEVELCODE_DIR is the project's .levelcode folder: one file, the data and the project layer.
    const project = join(dir, "p");
    writeProjectHooks(project, { Stop: [{ hooks: [{ command: "echo '{\"additionalContext\":\"once\"}'" }] }] });
    const runner = runnerWith(undefined, { LEVELCODE_DIR: join(project, ".levelcode") });
    const outcome = await runner.runEvent("Stop", { event: "Stop", cwd: project });
    expect(outcome.additionalContext).toBe("once");
    expect(outcome.results).toHaveLength(1);
  });

  test("a fractional timeout is honoured, and the file is kept (the engine's schema takes whole seconds and dropped the file)", async () => {
    const project = join(dir, "p");
    writeProjectHooks(project, { PreToolUse: [{ hooks: [{ command: "sleep 5", timeout: 0.5 }] }, { hooks: [{ command: "echo kept >&2; exit 2" }] }] });
    const started = performance.now();
    const outcome = await runnerWith().runEvent("PreToolUse", { ...pre(), cwd: project });
    expect(outcome.results.map((r) => r.outcome)).toEqual(["timeout", "block"]);
    expect(outcome.reason).toBe("kept");
    expect(outcome.warnings).toEqual([]);
    // Half a second, not the default ten (with room for the kill and a loaded machine).
    expect(performance.now() - started).toBeLessThan(4000);
  });

  test.skipIf(!serverSupports("trust"))("project hooks wait for trust (the engine ran any project's hooks)", async () => {
    const project = join(dir, "p");
    writeProjectHooks(project, { PreToolUse: [{ hooks: [{ command: "exit 2" }] }] });
    const outcome = await runnerWith(undefined, { LEVELCODE_TRUST_PROJECT_HOOKS: undefined }).runEvent("PreToolUse", { ...pre(), cwd: project });
    expect(outcome.blocked).toBe(false);
    expect(outcome.projectTrust?.state).toBe("untrusted");
    expect(outcome.projectTrust?.handlers).toBe(1);
  });
});
