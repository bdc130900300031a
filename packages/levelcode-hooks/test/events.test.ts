/**
 * The events beyond the four (contract §15) through the client: each is one of
 * HOOK_EVENT_NAMES, its matcher reads what the table says, and only UserPromptSubmit blocks.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";

import { createHookRunner, HOOK_EVENT_NAMES, type HookPayload, type HooksConfig } from "../src/index.ts";
import { perTestDir, writeProjectHooks } from "./helpers.ts";

setDefaultTimeout(60_000);

let dir = "";
const runners = perTestDir((fresh) => {
  dir = fresh;
});

function runnerWith(hooks: HooksConfig) {
  const runner = createHookRunner({ hooks });
  runners.push(runner);
  return runner;
}

/** Each new event: a payload, a matcher that matches it and one that does not. */
const cases: Array<[string, Omit<HookPayload, "cwd">, string, string]> = [
  ["UserPromptSubmit", { prompt: "fix the build" }, "", ""],
  ["SessionEnd", { reason: "logout" }, "logout", "clear"],
  ["PostToolUseFailure", { tool_name: "run_terminal_command", tool_input: { command: "make" }, error: "exit 2" }, "run_terminal_command", "write_file"],
  ["SubagentStart", { agent_type: "file-picker", agent_id: "a1" }, "file-picker", "reviewer"],
  ["SubagentStop", { agent_type: "file-picker", agent_id: "a1" }, "file-picker", "reviewer"],
  ["PreCompact", { trigger: "auto", custom_instructions: "" }, "auto", "manual"],
  ["Notification", { message: "waiting", notification_type: "idle_prompt" }, "idle_prompt", "permission_prompt"],
];

describe("events beyond the four", () => {
  test("HOOK_EVENT_NAMES lists them", () => {
    for (const [event] of cases) expect(HOOK_EVENT_NAMES as readonly string[]).toContain(event);
  });

  for (const protocol of ["levelcode", "claude"] as const) {
    for (const [event, fields, matching, other] of cases) {
      test(`${event} (${protocol}): its matching group runs, and only UserPromptSubmit blocks`, async () => {
        const hooks: HooksConfig = {
          [event]: [
            { matcher: matching, protocol, hooks: [{ command: "cat >&2; echo matched" }] },
            ...(other ? [{ matcher: other, protocol, hooks: [{ command: "echo other" }] }] : []),
            { protocol, hooks: [{ command: "echo refused >&2; exit 2" }] },
          ],
        };
        const outcome = await runnerWith(hooks).runEvent(event, { event, cwd: dir, ...fields });
        expect(outcome.warnings.filter((w) => w.includes("unknown event"))).toEqual([]);
        expect(outcome.results.map((r) => r.stdout.trim())).toEqual(["matched", ""]);
        const read = JSON.parse(outcome.results[0]!.stderr);
        expect(protocol === "claude" ? read.hook_event_name : read.event).toBe(event);
        if (event === "UserPromptSubmit") {
          expect(outcome.blocked).toBe(true);
          expect(outcome.reason).toBe("refused");
          expect(read.prompt).toBe("fix the build");
        } else {
          expect(outcome.blocked).toBe(false);
          expect(outcome.decision).toBe("proceed");
        }
        if (protocol === "claude" && event === "PostToolUseFailure") expect(read.tool_name).toBe("Bash");
      });
    }
  }

  test("the no-match cache holds a member event's no-match for that member's value only", async () => {
    writeProjectHooks(dir, { SessionEnd: [{ matcher: "clear", hooks: [{ command: "echo cleared" }] }] });
    const runner = createHookRunner();
    runners.push(runner);
    // The cache is ready once its watches are: a few rounds, apart, reach it.
    for (let i = 0; i < 6; i++) {
      await Bun.sleep(50);
      const logout = await runner.runEvent("SessionEnd", { event: "SessionEnd", cwd: dir, reason: "logout" });
      expect(logout.results).toEqual([]);
      const clear = await runner.runEvent("SessionEnd", { event: "SessionEnd", cwd: dir, reason: "clear" });
      expect(clear.results.map((r) => r.stdout.trim())).toEqual(["cleared"]);
    }
  });

  test("a prompt guard refuses a prompt holding a secret and adds context to others", async () => {
    const guard = [
      "const data = JSON.parse(await Bun.stdin.text());",
      "if (/AKIA[0-9A-Z]{16}/.test(data.prompt)) { console.log(JSON.stringify({ decision: 'block', reason: 'secret in prompt' })); process.exit(0); }",
      "console.log(JSON.stringify({ hookSpecificOutput: { hookEventName: 'UserPromptSubmit', additionalContext: 'run make test' } }));",
    ].join("\n");
    const runner = runnerWith({ UserPromptSubmit: [{ protocol: "claude", hooks: [{ argv: [process.execPath, "-e", guard] }] }] });
    const secret = await runner.runEvent("UserPromptSubmit", { event: "UserPromptSubmit", cwd: dir, prompt: "key AKIAABCDEFGHIJKLMNOP" });
    expect(secret.blocked).toBe(true);
    expect(secret.reason).toBe("secret in prompt");
    const fine = await runner.runEvent("UserPromptSubmit", { event: "UserPromptSubmit", cwd: dir, prompt: "fix it" });
    expect(fine.blocked).toBe(false);
    expect(fine.additionalContext).toBe("run make test");
  });
});
