/**
 * The cases levelcode's own engine tests (common/src/hooks/__tests__/hooks.test.ts), written
 * again against this package: real handlers, real settings files, the real dispatcher.
 * Where the contract marks a difference, the test checks this package's behaviour and
 * differs.test.ts says what changed.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import {
  createHookRunner,
  getHookConfigPaths,
  loadHooks,
  parseHookDecision,
  type HookEventOutcome,
  type HooksConfig,
} from "../src/index.ts";
import { HOOK_PROTOCOLS } from "../src/types.ts";
import { BUN, perTestDir, writeProjectHooks, writeScript } from "./helpers.ts";

// Real processes, on a machine that may be loaded.
setDefaultTimeout(60_000);

let dir = "";
/** The runners a test makes, closed after it. */
const runners = perTestDir((fresh) => {
  dir = fresh;
});

function runnerWith(hooks?: HooksConfig, onConfigWarning?: (warning: string) => void) {
  const runner = createHookRunner({ hooks, onConfigWarning });
  runners.push(runner);
  return runner;
}

const preToolUse = (extra: Record<string, unknown> = {}) => ({
  event: "PreToolUse" as const,
  cwd: dir,
  tool_name: "write_file",
  tool_input: { file_path: "src/a.ts" },
  ...extra,
});

/** A handler that runs a line of JavaScript with Bun. */
const js = (code: string, extra: Record<string, unknown> = {}) => ({ argv: [BUN, "-e", code], ...extra });

describe("parseHookDecision", () => {
  test("reads a block with its reason", () => {
    expect(parseHookDecision('{"decision":"block","reason":"not today"}')).toEqual({ decision: "block", reason: "not today" });
  });

  test("reads additionalContext alone", () => {
    expect(parseHookDecision('  {"additionalContext":"tests pass"}\n')).toEqual({ additionalContext: "tests pass" });
  });

  test("is null for plain text, nothing, JSON that is not an object, and long text", () => {
    expect(parseHookDecision("all good")).toBeNull();
    expect(parseHookDecision("")).toBeNull();
    expect(parseHookDecision("   \n")).toBeNull();
    expect(parseHookDecision("[1,2,3]")).toBeNull();
    expect(parseHookDecision('"block"')).toBeNull();
    expect(parseHookDecision("{not json")).toBeNull();
    expect(parseHookDecision("y".repeat(20 * 1024))).toBeNull();
    expect(parseHookDecision('{"unrelated":1}')).toBeNull();
  });
});

describe("parseHookDecision reads a reply as the dispatcher does", () => {
  const replies = [
    '{"decision":"block","reason":"not today"}',
    '  {"decision":"block"}  ',
    '{"additionalContext":"lint ok"}',
    '{"decision":"allow","additionalContext":"fine"}',
    '{"reason":"a reason alone"}',
    "plain text",
    "[1,2,3]",
    "{not json",
    JSON.stringify({ decision: "block", reason: "r".repeat(20 * 1024) }),
    '{"decision":"block","reason":"  padded  ","additionalContext":"and context"}',
  ];
  for (const reply of replies) {
    test(reply.length > 60 ? `${reply.slice(0, 60)}…` : reply, async () => {
      const file = join(dir, "reply.txt");
      writeFileSync(file, reply);
      const outcome = await runnerWith({ PreToolUse: [{ hooks: [{ argv: ["cat", file] }] }] }).runEvent("PreToolUse", preToolUse());
      const parsed = parseHookDecision(reply);
      expect(outcome.decision === "block").toBe(parsed?.decision === "block");
      expect(outcome.additionalContext).toBe(parsed?.additionalContext ?? "");
      if (parsed?.decision === "block" && parsed.reason !== undefined) expect(outcome.reason).toBe(parsed.reason.trim());
    });
  }
});

describe("loadHooks", () => {
  test("reads the project's .levelcode/settings.json", () => {
    const project = join(dir, "project");
    writeProjectHooks(project, { PreToolUse: [{ matcher: "write_file", hooks: [{ command: "echo hi" }] }] });

    const loaded = loadHooks(project);
    expect(loaded.sources).toEqual([join(project, ".levelcode", "settings.json")]);
    expect(loaded.hooks.PreToolUse).toEqual([{ matcher: "write_file", hooks: [{ command: "echo hi", timeout: 10 }] }]);
    expect(loaded.warnings).toEqual([]);
  });

  test("keeps the exec form and the shell as written", () => {
    const project = join(dir, "project");
    writeProjectHooks(project, {
      Stop: [{ hooks: [{ command: "node", args: ["guard one.js", "--x=\"y\""] }, { command: "Get-Date", shell: "powershell", timeout: 5 }] }],
    });
    const loaded = loadHooks(project);
    expect(loaded.hooks.Stop).toEqual([
      {
        hooks: [
          { command: "node", args: ["guard one.js", '--x="y"'], timeout: 10 },
          { command: "Get-Date", shell: "powershell", timeout: 5 },
        ],
      },
    ]);
    expect(loaded.warnings).toEqual([]);
  });

  test("passes each handler's sandbox through, wherever it was written", () => {
    const project = join(dir, "project");
    writeProjectHooks(project, {
      Stop: [
        { sandbox: { write: ["build"] }, hooks: [{ command: "a" }, { command: "b", sandbox: "best-effort" }] },
        { hooks: [{ command: "c", sandbox: true }, { command: "d" }, { command: "e", sandbox: { network: true } }] },
      ],
    });
    const loaded = loadHooks(project);
    const sandboxes = (loaded.hooks.Stop ?? []).flatMap((group) => group.hooks.map((h) => h.sandbox));
    expect(sandboxes).toEqual([{ write: ["build"] }, "best-effort", true, undefined, { network: true }]);
    expect(loaded.warnings).toEqual([]);
  });

  test("warns about invalid JSON in a layer, and throws nothing", () => {
    writeFileSync(join(dir, "settings.json"), "{not json");
    const before = process.env.LEVELCODE_DIR;
    process.env.LEVELCODE_DIR = dir;
    try {
      const loaded = loadHooks(dir);
      expect(loaded.warnings.some((w) => w.includes(join(dir, "settings.json")) && w.includes("invalid JSON"))).toBe(true);
      expect(loaded.hooks.PreToolUse).toBeUndefined();
    } finally {
      if (before === undefined) delete process.env.LEVELCODE_DIR;
      else process.env.LEVELCODE_DIR = before;
    }
  });

  test("passes on every protocol but the default, as written", () => {
    const project = join(dir, "project");
    const groups = HOOK_PROTOCOLS.map((protocol) => ({ matcher: "write_file", protocol, hooks: [{ command: `echo ${protocol}` }] }));
    writeProjectHooks(project, { PreToolUse: groups });
    const loaded = loadHooks(project);
    const read = (loaded.hooks.PreToolUse ?? []).map((group) => [group.hooks[0]?.command, group.hooks[0]?.protocol]);
    expect(read).toEqual(HOOK_PROTOCOLS.map((protocol, i) => [`echo ${protocol}`, i === 0 ? undefined : protocol]));
    expect(loaded.warnings).toEqual([]);
  });

  test("names a protocol it does not know (a newer binary's) instead of dropping it", () => {
    const file = join(dir, "settings.json");
    const listing = {
      layers: [{ layer: "user", file, state: "read" }],
      handlers: [{ file, event: "Stop", path: "hooks.Stop[0].hooks[0]", command: "guard", timeout: 10, enabled: true, protocol: "newer", state: "enabled" }],
      warnings: [],
    };
    const binary = writeScript(dir, "newer-levelcode-hooks", `#!/bin/sh\ncat <<'EOF'\n${JSON.stringify(listing)}\nEOF\n`);
    const before = process.env.LEVELCODE_HOOKS_BINARY;
    process.env.LEVELCODE_HOOKS_BINARY = binary;
    try {
      const loaded = loadHooks(dir);
      expect(loaded.hooks.Stop).toEqual([{ hooks: [{ command: "guard", timeout: 10 }] }]);
      expect(loaded.warnings).toHaveLength(1);
      expect(loaded.warnings[0]).toContain(`${file}: hooks.Stop[0].hooks[0]: protocol "newer"`);
    } finally {
      process.env.LEVELCODE_HOOKS_BINARY = before;
    }
  });

  test("is empty when no settings file exists", () => {
    const loaded = loadHooks(join(dir, "nowhere"));
    expect(loaded.sources).toEqual([]);
    expect(loaded.warnings).toEqual([]);
    expect(loaded.hooks).toEqual({});
  });

  test("getHookConfigPaths ends with the project's settings file", () => {
    const paths = getHookConfigPaths("/proj");
    expect(paths).toHaveLength(3);
    expect(paths[2]).toBe(join("/proj", ".levelcode", "settings.json"));
    expect(paths[0]).toBe(join(process.env.HOME!, ".config", "levelcode", "settings.json"));
  });
});

describe("createHookRunner, real handlers", () => {
  test("PreToolUse: a JSON block on stdout blocks the tool", async () => {
    const runner = runnerWith({
      PreToolUse: [{ matcher: "write_file", hooks: [js('process.stdout.write(JSON.stringify({decision:"block",reason:"no writes today"}))')] }],
    });
    const outcome = await runner.runEvent("PreToolUse", preToolUse());
    expect(outcome.blocked).toBe(true);
    expect(outcome.decision).toBe("block");
    expect(outcome.reason).toBe("no writes today");
  });

  test("PreToolUse: exit 2 blocks with stderr as the reason", async () => {
    const runner = runnerWith({ PreToolUse: [{ hooks: [js('process.stderr.write("forbidden"); process.exit(2)')] }] });
    const outcome = await runner.runEvent("PreToolUse", preToolUse());
    expect(outcome.blocked).toBe(true);
    expect(outcome.reason).toBe("forbidden");
    expect(outcome.results[0]!.exitCode).toBe(2);
  });

  test("PreToolUse: exit 0 lets the tool run", async () => {
    const runner = runnerWith({ PreToolUse: [{ hooks: [{ command: "exit 0" }] }] });
    const outcome = await runner.runEvent("PreToolUse", preToolUse());
    expect(outcome.blocked).toBe(false);
    expect(outcome.reason).toBeUndefined();
    expect(outcome.results).toHaveLength(1);
  });

  test("a matcher that does not match the tool runs nothing", async () => {
    const runner = runnerWith({ PreToolUse: [{ matcher: "^bash$", hooks: [{ command: "exit 2" }] }] });
    const outcome = await runner.runEvent("PreToolUse", preToolUse({ tool_name: "write_file" }));
    expect(outcome.results).toHaveLength(0);
    expect(outcome.blocked).toBe(false);
    const other = await runner.runEvent("PreToolUse", preToolUse({ tool_name: "bash" }));
    expect(other.results).toHaveLength(1);
    expect(other.blocked).toBe(true);
  });

  test("a handler gets the payload as JSON on stdin", async () => {
    const script = join(dir, "echo-payload.mjs");
    writeFileSync(
      script,
      "const p = JSON.parse(await Bun.stdin.text());\n" +
        "process.stdout.write(JSON.stringify({ additionalContext: `tool=${p.tool_name} file=${p.tool_input.file_path} event=${p.event}` }));\n",
    );
    const runner = runnerWith({ PreToolUse: [{ hooks: [{ argv: [BUN, script] }] }] });
    const outcome = await runner.runEvent("PreToolUse", preToolUse());
    expect(outcome.blocked).toBe(false);
    expect(outcome.additionalContext).toBe("tool=write_file file=src/a.ts event=PreToolUse");
  });

  test("PostToolUse collects additionalContext and cannot block", async () => {
    const runner = runnerWith({ PostToolUse: [{ hooks: [js('process.stdout.write(JSON.stringify({additionalContext:"formatting applied"}))')] }] });
    const outcome = await runner.runEvent("PostToolUse", { event: "PostToolUse", cwd: dir, tool_name: "write_file", tool_result: "ok" });
    expect(outcome.blocked).toBe(false);
    expect(outcome.additionalContext).toBe("formatting applied");
  });

  test("a failing handler (exit 1) fails open and is recorded", async () => {
    const runner = runnerWith({ PreToolUse: [{ hooks: [{ command: "exit 1" }] }] });
    const outcome = await runner.runEvent("PreToolUse", preToolUse());
    expect(outcome.blocked).toBe(false);
    expect(outcome.results[0]!.exitCode).toBe(1);
    expect(outcome.results[0]!.outcome).toBe("error");
  });

  test("a program that cannot start fails open and says so", async () => {
    const runner = runnerWith({
      PreToolUse: [{ hooks: [{ command: "definitely-not-a-real-command-xyz" }, { argv: ["definitely-not-a-real-program-xyz"] }] }],
    });
    const outcome = await runner.runEvent("PreToolUse", preToolUse());
    expect(outcome.blocked).toBe(false);
    // Through the shell: the shell's 127, reported as an error.
    expect(outcome.results[0]!.exitCode).toBe(127);
    expect(outcome.results[0]!.message).toContain("not found");
    // Run directly: a spawn error.
    expect(outcome.results[1]!.spawnError).toBeString();
    expect(outcome.results[1]!.outcome).toBe("spawn_error");
  });

  test("a handler past its timeout fails open and is marked timedOut", async () => {
    const runner = runnerWith({ PreToolUse: [{ hooks: [js("await new Promise((r) => setTimeout(r, 10_000))", { timeout: 1 })] }] });
    const started = performance.now();
    const outcome = await runner.runEvent("PreToolUse", preToolUse());
    expect(performance.now() - started).toBeLessThan(8000);
    expect(outcome.blocked).toBe(false);
    expect(outcome.results[0]!.timedOut).toBe(true);
    expect(outcome.results[0]!.outcome).toBe("timeout");
  });

  test("hooks come from the settings files when none are given, and run", async () => {
    const script = join(dir, "block-all.mjs");
    writeFileSync(script, 'process.stdout.write(JSON.stringify({decision:"block",reason:"from the settings file"}));');
    const project = join(dir, "project");
    writeProjectHooks(project, { PreToolUse: [{ hooks: [{ argv: [BUN, script] }] }] });

    const warnings: string[] = [];
    const runner = runnerWith(undefined, (w) => warnings.push(w));
    const outcome = await runner.runEvent("PreToolUse", preToolUse({ cwd: project }));
    expect(outcome.blocked).toBe(true);
    expect(outcome.reason).toBe("from the settings file");
    expect(outcome.results[0]!.layer).toBe("project");
    expect(warnings).toEqual([]);
  });

  test("a settings warning reaches onConfigWarning once", async () => {
    const project = join(dir, "project");
    mkdirSync(join(project, ".levelcode"), { recursive: true });
    writeFileSync(join(project, ".levelcode", "settings.json"), "{not json");
    const warnings: string[] = [];
    const runner = runnerWith(undefined, (w) => warnings.push(w));
    const first = await runner.runEvent("PreToolUse", preToolUse({ cwd: project }));
    await runner.runEvent("PreToolUse", preToolUse({ cwd: project }));
    expect(first.warnings.some((w) => w.includes("invalid JSON"))).toBe(true);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(join(project, ".levelcode", "settings.json"));
    runner.invalidate();
    await runner.runEvent("PreToolUse", preToolUse({ cwd: project }));
    expect(warnings).toHaveLength(2);
  });

  test("a command string runs through the shell", async () => {
    const runner = runnerWith({ PreToolUse: [{ hooks: [{ command: "true && test -n \"$LEVELCODE_PROJECT_DIR\"" }] }] });
    const outcome = await runner.runEvent("PreToolUse", preToolUse());
    expect(outcome.blocked).toBe(false);
    expect(outcome.results[0]!.exitCode).toBe(0);
  });

  test("a script written to disk runs as a command", async () => {
    const script = join(dir, "ok.mjs");
    writeFileSync(script, "process.exit(0)");
    const runner = runnerWith({ PreToolUse: [{ hooks: [{ command: `${BUN} ${script}` }] }] });
    const outcome = await runner.runEvent("PreToolUse", preToolUse());
    expect(outcome.results[0]!.exitCode).toBe(0);
    expect(outcome.results[0]!.label).toBe(`${BUN} ${script}`);
  });

  test("the engine's outcome type still fits code that builds one, and runEvent's answer is one", async () => {
    // Both lines are checked by `tsc --noEmit`: an outcome built by hand, as code written for
    // the engine does, and the richer answer used where the engine's type is expected.
    const off: HookEventOutcome = { blocked: false, additionalContext: "", results: [] };
    const answered: HookEventOutcome = await runnerWith({ Stop: [{ hooks: [{ command: "true" }] }] }).runEvent("Stop", { event: "Stop", cwd: dir });
    expect(answered.blocked).toBe(off.blocked);
    expect(answered.results[0]!.outcome).toBe("proceed");
  });
});
