/**
 * Contract §11, §13 and §14 through the client: the richer answer (ask, updatedInput, stop,
 * systemMessage), inline hooks sent to `serve`, and the trust ops. These parts of the dispatcher
 * are built separately; each test asks the binary whether it has them.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";

import { createHookRunner, type HookRunnerOptions } from "../src/index.ts";
import { perTestDir, serverSupports, writeProjectHooks } from "./helpers.ts";

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

const reply = (json: unknown) => ({ command: `echo '${JSON.stringify(json)}'` });
const pre = (input: Record<string, unknown> = { path: "a.ts" }) => ({ event: "PreToolUse" as const, cwd: dir, tool_name: "write_file", tool_input: input });

describe("inline hooks (§14)", () => {
  test("run whether or not the binary takes them inline, and never touch the disk's layers", async () => {
    writeProjectHooks(dir, { PreToolUse: [{ hooks: [{ command: "exit 2" }] }] });
    const outcome = await runnerWith({ hooks: { PreToolUse: [{ hooks: [reply({ additionalContext: "inline ran" })] }] } }).runEvent("PreToolUse", pre());
    expect(outcome.blocked).toBe(false);
    expect(outcome.additionalContext).toBe("inline ran");
    expect(outcome.results).toHaveLength(1);
  });

  test.skipIf(!serverSupports("inline"))("are sent in the request: layer inline, no settings file", async () => {
    const outcome = await runnerWith({ hooks: { Stop: [{ hooks: [{ command: "true" }] }] } }).runEvent("Stop", { event: "Stop", cwd: dir });
    expect(outcome.results[0]!.layer).toBe("inline");
  });

  test("invalidate() reads options.hooks again", async () => {
    const hooks = { Stop: [{ hooks: [reply({ additionalContext: "first" })] }] };
    const runner = runnerWith({ hooks });
    expect((await runner.runEvent("Stop", { event: "Stop", cwd: dir })).additionalContext).toBe("first");
    hooks.Stop[0]!.hooks[0] = reply({ additionalContext: "second" });
    runner.invalidate();
    expect((await runner.runEvent("Stop", { event: "Stop", cwd: dir })).additionalContext).toBe("second");
  });
});

describe.skipIf(!serverSupports("rewrite"))("the richer answer (§11)", () => {
  test("ask: blocked for callers that know only block, decision ask for those that ask", async () => {
    const outcome = await runnerWith({ hooks: { PreToolUse: [{ hooks: [reply({ decision: "ask", reason: "really?" })] }] } }).runEvent("PreToolUse", pre());
    expect(outcome.decision).toBe("ask");
    expect(outcome.blocked).toBe(true);
    expect(outcome.reason).toBe("really?");
    expect(outcome.results[0]!.outcome).toBe("ask");
  });

  test("updatedInput reaches later handlers and the caller", async () => {
    const outcome = await runnerWith({
      hooks: { PreToolUse: [{ hooks: [reply({ updatedInput: { path: "b.ts" } }), { command: `grep -q '"b.ts"' && echo '{"additionalContext":"saw b"}'` }] }] },
    }).runEvent("PreToolUse", pre());
    expect(outcome.updatedInput).toEqual({ path: "b.ts" });
    expect(outcome.additionalContext).toBe("saw b");
    expect(outcome.results[0]!.rewroteInput).toBe(true);
  });

  test("continue: false stops the agent, and blocks a PreToolUse", async () => {
    const outcome = await runnerWith({ hooks: { PreToolUse: [{ hooks: [reply({ continue: false, stopReason: "done for today", systemMessage: "bye" })] }] } }).runEvent("PreToolUse", pre());
    expect(outcome.stop).toEqual({ reason: "done for today" });
    expect(outcome.blocked).toBe(true);
    expect(outcome.systemMessage).toBe("bye");
  });

  test("a Claude Code SessionStart script's CLAUDE_ENV_FILE lines reach the caller as sessionEnv", async () => {
    const script = { command: 'echo "export NODE_ENV=test" >> "$CLAUDE_ENV_FILE"', protocol: "claude" as const };
    const outcome = await runnerWith({ hooks: { SessionStart: [{ hooks: [script] }] } }).runEvent("SessionStart", {
      event: "SessionStart",
      cwd: dir,
    });
    expect(outcome.sessionEnv).toBe("export NODE_ENV=test\n");
    expect(outcome.blocked).toBe(false);
  });
});

describe.skipIf(!serverSupports("trust"))("trust (§13, §14)", () => {
  const untrusted = { LEVELCODE_TRUST_PROJECT_HOOKS: undefined };

  test("an untrusted project's hooks do not run; trust(digest) lets them", async () => {
    writeProjectHooks(dir, { PreToolUse: [{ hooks: [{ command: "echo guarded >&2; exit 2" }] }] });
    const runner = runnerWith({ env: untrusted });
    const before = await runner.runEvent("PreToolUse", pre());
    expect(before.blocked).toBe(false);
    expect(before.projectTrust?.state).toBe("untrusted");

    const status = await runner.trustStatus(dir);
    expect(status.state).toBe("untrusted");
    expect(status.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(status.digest).toBe(before.projectTrust!.digest);
    expect(status.hooks?.map((h) => h.command)).toEqual(["echo guarded >&2; exit 2"]);

    const trusted = await runner.trust(status.digest, dir);
    expect(trusted.state).toBe("trusted");
    const after = await runner.runEvent("PreToolUse", pre());
    expect(after.blocked).toBe(true);
    expect(after.reason).toBe("guarded");
    expect(after.projectTrust).toBeUndefined();
  });

  // A tool call of the agent (a script it runs that imports this package) or a hook: its
  // process carries the mark, and the client starts its servers from that environment.
  for (const [mark, value] of [
    ["LEVELCODE_AGENT", "1"],
    ["CLAUDECODE", " True "],
  ] as const) {
    test(`a process whose environment has ${mark}=${value.trim()} records no trust through trust()`, async () => {
      writeProjectHooks(dir, { PreToolUse: [{ hooks: [{ command: "echo guarded >&2; exit 2" }] }] });
      const saved = process.env[mark];
      process.env[mark] = value;
      try {
        // Even with the mark removed from the servers' environment by the caller.
        for (const env of [untrusted, { ...untrusted, [mark]: undefined }]) {
          const runner = runnerWith({ env });
          const status = await runner.trustStatus(dir);
          // `changed` when the folder reuses the identity of an earlier test's trusted one.
          expect(status.state).not.toBe("trusted");
          const refused = runner.trust(status.digest, dir);
          await expect(refused).rejects.toThrow(`${mark} is set`);
          await expect(refused).rejects.toThrow("nothing was recorded");
          await expect(refused).rejects.toThrow(`levelcode-hooks trust --project-dir ${dir}`);
          expect((await runner.trustStatus(dir)).state).not.toBe("trusted");
          const after = await runner.runEvent("PreToolUse", pre());
          expect(after.blocked).toBe(false);
          expect(after.projectTrust).toBeDefined();
        }
      } finally {
        if (saved === undefined) delete process.env[mark];
        else process.env[mark] = saved;
      }
    });
  }

  test("a mark that is not on (LEVELCODE_AGENT=0) refuses nothing", async () => {
    writeProjectHooks(dir, { PreToolUse: [{ hooks: [{ command: "echo guarded >&2; exit 2" }] }] });
    const saved = process.env.LEVELCODE_AGENT;
    process.env.LEVELCODE_AGENT = "0";
    try {
      const runner = runnerWith({ env: untrusted });
      const status = await runner.trustStatus(dir);
      expect((await runner.trust(status.digest, dir)).state).toBe("trusted");
      expect((await runner.runEvent("PreToolUse", pre())).blocked).toBe(true);
    } finally {
      if (saved === undefined) delete process.env.LEVELCODE_AGENT;
      else process.env.LEVELCODE_AGENT = saved;
    }
  });

  test("a digest that is not the current one is refused", async () => {
    writeProjectHooks(dir, { Stop: [{ hooks: [{ command: "true" }] }] });
    const runner = runnerWith({ env: untrusted });
    await expect(runner.trust(`sha256:${"0".repeat(64)}`, dir)).rejects.toThrow();
    expect((await runner.trustStatus(dir)).state).toBe("untrusted");
  });
});
