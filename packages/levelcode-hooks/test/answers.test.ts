/**
 * The client's answers are the dispatcher's: whether an answer comes fresh from a server, from
 * this runner's memory, or from what an earlier process kept on disk, it is what one
 * `levelcode-hooks run` answers for the same call. First the case that once broke (a managed
 * guard skipped after a call that ran nothing), then random worlds of layers, trust states and
 * tool calls.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

import { outcomeFromAnswer } from "../src/answer.ts";
import { NoMatchCache } from "../src/cache.ts";
import { inotifyReady } from "../src/inotify.ts";
import { createHookRunner, type HookDispatchOutcome, type HookPayload } from "../src/index.ts";
import { BINARY, BUN, perTestDir } from "./helpers.ts";

// Real processes, on a machine that may be loaded.
setDefaultTimeout(120_000);

const cacheAvailable = (await inotifyReady) !== null && NoMatchCache.available();
const SRC = JSON.stringify(resolve(import.meta.dir, "../src/index.ts"));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let dir = "";
const runners = perTestDir((fresh) => {
  dir = fresh;
});

type Env = Record<string, string | undefined>;

/** What an answer says, without its timing: what is compared. */
function said(outcome: HookDispatchOutcome) {
  return {
    decision: outcome.decision,
    blocked: outcome.blocked,
    reason: outcome.reason ?? null,
    additionalContext: outcome.additionalContext,
    stop: outcome.stop ?? null,
    ran: outcome.results.map((r) => `${r.layer} ${r.label}: ${r.outcome}`),
    warnings: outcome.warnings,
    trust: outcome.projectTrust?.state ?? null,
  };
}

/** The process environment with `env` applied (`undefined` removes a variable). */
function merged(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries({ ...process.env, ...env })) if (value !== undefined) out[name] = value;
  return out;
}

/** The dispatcher's own answer: one `levelcode-hooks run`. */
function dispatcher(env: Env, payload: HookPayload) {
  const run = spawnSync(BINARY, ["run"], { input: JSON.stringify(payload), env: merged(env), encoding: "utf8", timeout: 60_000 });
  return said(outcomeFromAnswer(JSON.parse(run.stdout) as Record<string, unknown>));
}

/**
 * The answers of a runner in a new Bun process, started in `cwd`, to `calls` one after another,
 * and its cache's hits.
 */
function newProcess(env: Env, cwd: string, calls: HookPayload[]): { said: Array<ReturnType<typeof said>>; hits: number } {
  const script = join(dir, `host-${Math.random().toString(36).slice(2)}.ts`);
  writeFileSync(
    script,
    `import { createHookRunner } from ${SRC};
const runner = createHookRunner();
const out = [];
for (const call of ${JSON.stringify(calls)}) out.push(await runner.runEvent(call.event, call));
console.log(JSON.stringify({ out, hits: runner.cacheStats().hits }));
runner.close();
`,
  );
  const run = spawnSync(BUN, [script], { cwd, env: merged(env), encoding: "utf8", timeout: 60_000 });
  expect(run.stderr).toBe("");
  const { out, hits } = JSON.parse(run.stdout) as { out: HookDispatchOutcome[]; hits: number };
  return { said: out.map(said), hits };
}

/** A managed file (mode 0644, the person's own: what the variable's file must be). */
function writeManaged(path: string, settings: unknown): void {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, JSON.stringify(settings));
  chmodSync(path, 0o644);
}

const call = (cwd: string, event: string, tool: string, path = "src/a.ts"): HookPayload => ({ event, cwd, tool_name: tool, tool_input: { path, paths: [path] } });

describe.skipIf(!cacheAvailable)("a managed guard after a call that ran nothing", () => {
  test("blocks write_file fresh, from memory, with calls side by side, and in a new process that read the kept answer", async () => {
    const home = join(dir, "home");
    const project = join(dir, "project");
    mkdirSync(home, { recursive: true });
    mkdirSync(project, { recursive: true });
    const managed = join(dir, "policy", "managed-settings.json");
    writeManaged(managed, { hooks: { PreToolUse: [{ matcher: "write_file", hooks: [{ command: "echo 'managed: no writes' >&2; exit 2" }] }] } });
    const env: Env = { HOME: home, XDG_CACHE_HOME: undefined, LEVELCODE_DIR: undefined, LEVELCODE_MANAGED_SETTINGS: managed };
    // Older than two seconds: answers read from these files may be remembered and kept.
    await sleep(2100);
    const read = call(project, "PreToolUse", "read_files");
    const write = call(project, "PreToolUse", "write_file");
    const guarded = dispatcher(env, write);
    expect(guarded.decision).toBe("block");
    expect(guarded.reason).toBe("managed: no writes");
    expect(dispatcher(env, read).ran).toEqual([]);

    const runner = createHookRunner({ env });
    runners.push(runner);
    expect(said(await runner.runEvent("PreToolUse", read))).toEqual(dispatcher(env, read));
    // Before the answer is remembered (its watches come on the next turn), then after.
    expect(said(await runner.runEvent("PreToolUse", write))).toEqual(guarded);
    await sleep(100);
    expect(said(await runner.runEvent("PreToolUse", read)).ran).toEqual([]);
    expect(runner.cacheStats().hits).toBeGreaterThan(0);
    expect(said(await runner.runEvent("PreToolUse", write))).toEqual(guarded);
    runner.close();

    // Side by side: write_file waits for read_files's answer, which may say no group applies to it.
    const second = createHookRunner({ env });
    runners.push(second);
    const [first, then] = await Promise.all([second.runEvent("PreToolUse", read), second.runEvent("PreToolUse", write)]);
    expect(said(first).ran).toEqual([]);
    expect(said(then)).toEqual(guarded);
    second.close();

    // A new process, whose first calls are answered from what this one kept.
    const next = newProcess(env, project, [read, write, write]);
    expect(next.said[0]!.ran).toEqual([]);
    expect(next.hits).toBeGreaterThan(0);
    expect(next.said.slice(1)).toEqual([guarded, guarded]);
  });
});
