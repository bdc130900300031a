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

/** A small seeded generator (mulberry32): a failing world is made again from its seed. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TOOLS = ["write_file", "read_files", "str_replace", "run_terminal_command", "code_search", "glob", "spawn_agents"];
/** Mostly lists of names, which let an answer summarize; now and then one that cannot. */
const MATCHERS: Array<{ matcher?: string; protocol?: "claude" }> = [
  { matcher: "write_file" },
  { matcher: "write_file" },
  { matcher: "read_files" },
  { matcher: "str_replace|write_file" },
  { matcher: "code_search|glob" },
  { matcher: "spawn_agents" },
  { matcher: "Bash", protocol: "claude" },
  { matcher: "Write|Edit", protocol: "claude" },
  { matcher: "Read", protocol: "claude" },
  { matcher: "^read_" },
  { matcher: "*" },
];
const FILTERS = ["Bash(git push*)", "Read(secrets/**)", "Edit(src/**)"];
const TRUST = ["variable", "none", "store", "everywhere"] as const;

type World = { env: Env; project: string; calls: HookPayload[]; description: Record<string, unknown> & { calls?: string[] } };

/**
 * A world: the managed layer (maybe `managedHooksOnly`), the user, data and project layers,
 * each perhaps absent, with groups on the tool events; the project's hooks trusted by the
 * variable, by the store, by `trustAllProjectHooks`, or not at all; and the calls to make.
 */
function makeWorld(root: string, seed: number): World {
  const next = generator(seed);
  const chance = (p: number) => next() < p;
  const pick = <T,>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const home = join(root, "home");
  const project = join(root, "project");
  mkdirSync(home, { recursive: true });
  mkdirSync(project, { recursive: true });
  const hooksOf = (layer: string) => {
    const hooks: Record<string, unknown[]> = {};
    const groups = 1 + Math.floor(next() * 3);
    for (let g = 0; g < groups; g++) {
      const event = pick(["PreToolUse", "PreToolUse", "PostToolUse"]);
      const label = `${layer}-${g}`;
      const handler = pick([
        { command: `echo '${label} blocks' >&2; exit 2` },
        { command: `printf '{"additionalContext":"${label}"}'` },
        { command: "true" },
        { command: `echo '${label} off' >&2; exit 2`, enabled: false },
      ]);
      const group: Record<string, unknown> = { ...pick(MATCHERS), hooks: [handler] };
      if (chance(0.15)) group.if = pick(FILTERS);
      (hooks[event] ??= []).push(group);
    }
    return hooks;
  };
  const env: Env = { HOME: home, XDG_CACHE_HOME: undefined, LEVELCODE_DIR: undefined, LEVELCODE_MANAGED_SETTINGS: undefined, LEVELCODE_TRUST_PROJECT_HOOKS: undefined };
  const description: World["description"] = { seed };
  if (chance(0.6)) {
    const managed = join(root, "policy", "managed-settings.json");
    const settings: Record<string, unknown> = { hooks: hooksOf("managed") };
    if (chance(0.2)) settings.managedHooksOnly = true;
    writeManaged(managed, settings);
    env.LEVELCODE_MANAGED_SETTINGS = managed;
    description.managed = settings;
  }
  const trust = pick(TRUST);
  description.trust = trust;
  const user: Record<string, unknown> = chance(0.7) ? { hooks: hooksOf("user") } : {};
  if (trust === "everywhere") user.trustAllProjectHooks = true;
  if (Object.keys(user).length > 0) {
    mkdirSync(join(home, ".config", "levelcode"), { recursive: true });
    writeFileSync(join(home, ".config", "levelcode", "settings.json"), JSON.stringify(user));
    description.user = user;
  }
  if (chance(0.3)) {
    const data = { hooks: hooksOf("data") };
    mkdirSync(join(home, ".levelcode"), { recursive: true });
    writeFileSync(join(home, ".levelcode", "settings.json"), JSON.stringify(data));
    description.data = data;
  }
  if (chance(0.7)) {
    const settings = { hooks: hooksOf("project") };
    mkdirSync(join(project, ".levelcode"), { recursive: true });
    writeFileSync(join(project, ".levelcode", "settings.json"), JSON.stringify(settings));
    description.project = settings;
    if (trust === "store") {
      const run = spawnSync(BINARY, ["trust", "--yes", "--project-dir", project], { env: merged(env), encoding: "utf8", timeout: 60_000 });
      expect({ seed, trusted: run.status, stderr: run.stderr.slice(0, 300) }).toMatchObject({ seed, trusted: 0 });
    }
  }
  if (trust === "variable") env.LEVELCODE_TRUST_PROJECT_HOOKS = "1";
  const calls: HookPayload[] = [];
  for (let c = 0; c < 6; c++) {
    const tool = pick(TOOLS);
    const input = pick([
      { path: "src/a.ts", paths: ["src/a.ts"], command: "ls" },
      { path: "secrets/key", paths: ["secrets/key"], pattern: "x", command: "git push origin" },
      { path: "docs/b.md", paths: ["docs/b.md"], command: "echo" },
    ]);
    calls.push({ event: pick(["PreToolUse", "PreToolUse", "PostToolUse"]), cwd: project, tool_name: tool, tool_input: input });
  }
  description.calls = calls.map((c) => `${c.event} ${c.tool_name} ${JSON.stringify(c.tool_input)}`);
  return { env, project, calls, description };
}

const WORLDS = Number(process.env.ANSWERS_WORLDS ?? 40);
const SEED = Number(process.env.ANSWERS_SEED ?? Math.floor(Math.random() * 2 ** 31));

describe.skipIf(!cacheAvailable)("random worlds", () => {
  test(`the client's answers, fresh, from memory, side by side, from a kept file and in a new process, are the dispatcher's (seed ${SEED})`, async () => {
    const worlds = Array.from({ length: WORLDS }, (_, i) => makeWorld(join(dir, `world-${i}`), SEED + i));
    // Older than two seconds: answers read from these files may be remembered and kept.
    await sleep(2100);
    let hits = 0;
    let keptHits = 0;
    for (const world of worlds) {
      const truth = world.calls.map((c) => dispatcher(world.env, c));
      const check = (mode: string, got: Array<ReturnType<typeof said>>) => {
        for (const [i, answer] of got.entries()) {
          expect({ world: world.description, mode, call: world.description.calls?.[i], answer }).toEqual({
            world: world.description,
            mode,
            call: world.description.calls?.[i],
            answer: truth[i]!,
          });
        }
      };
      const runner = createHookRunner({ env: world.env });
      runners.push(runner);
      const inTurn = async (r: typeof runner) => {
        const out = [];
        for (const c of world.calls) out.push(said(await r.runEvent(c.event!, c)));
        return out;
      };
      check("fresh", await inTurn(runner));
      check("again at once", await inTurn(runner));
      await sleep(30);
      check("from memory", await inTurn(runner));
      check("side by side", (await Promise.all(world.calls.map((c) => runner.runEvent(c.event!, c)))).map(said));
      hits += runner.cacheStats().hits;
      runner.close();
      const second = createHookRunner({ env: world.env });
      runners.push(second);
      check("a new runner", await inTurn(second));
      second.close();
      const next = newProcess(world.env, world.project, world.calls);
      check("a new process", next.said);
      keptHits += next.hits;
    }
    // The memory and the kept answers were put to the test, not passed by.
    expect(hits).toBeGreaterThan(0);
    expect(keptHits).toBeGreaterThan(0);
  });
});
