/**
 * levelcode's own call pattern, each case in a fresh Bun process of its own, as levelcode runs:
 * the tool executor's module-level runner with no options; the SDK's `run()`, which makes a new
 * runner for every prompt, never closes it and fires Stop without waiting, right before the CLI
 * calls `process.exit`; a model step whose tool calls all start at once; an untrusted project;
 * and the compliance log of a team run with `logToolCall` switched too, with and without
 * `LEVELCODE_TEAM` (one line per executed call either way). After each, the number
 * of `serve` processes: a few at most while the host runs, none once it is gone.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

import { alive, BINARY, BUN, perTestDir, writeProjectHooks, writeScript } from "./helpers.ts";

// Real processes, on a machine that may be loaded.
setDefaultTimeout(90_000);

const SRC = JSON.stringify(resolve(import.meta.dir, "../src/index.ts"));

let dir = "";
perTestDir((fresh) => {
  dir = fresh;
});

type Host = { status: number | null; ms: number; lines: Array<Record<string, unknown>>; stderr: string };

/**
 * Runs `body` as a Bun script in a fresh process whose current directory is `cwd`; each line it
 * prints with `say(value)` comes back parsed.
 */
function host(body: string, cwd: string, env: Record<string, string | undefined> = {}): Host {
  const script = join(dir, `host-${Math.random().toString(36).slice(2)}.ts`);
  writeFileSync(script, `import * as hooks from ${SRC};\nconst say = (value: unknown) => console.log(JSON.stringify(value));\n${body}\n`);
  const merged: Record<string, string> = {};
  for (const [name, value] of Object.entries({ ...process.env, ...env })) if (value !== undefined) merged[name] = value;
  const started = performance.now();
  const run = spawnSync(BUN, [script], { cwd, env: merged, encoding: "utf8", timeout: 60_000 });
  const lines = run.stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { status: run.status, ms: performance.now() - started, lines, stderr: run.stderr };
}

/** Whether a process runs: alive, and not a zombie waiting to be reaped by whoever adopted it. */
function running(pid: number): boolean {
  if (!alive(pid)) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return alive(pid);
  }
}

/** Waits (bounded) until none of `pids` runs; the ones still running. */
function survivors(pids: unknown, ms = 15_000): number[] {
  const list = (Array.isArray(pids) ? pids : []).filter((pid): pid is number => typeof pid === "number" && pid > 1);
  const deadline = Date.now() + ms;
  while (list.some(running) && Date.now() < deadline) Bun.sleepSync(25);
  return list.filter(running);
}

/** The tool executor as levelcode has it, for a script: module-level runner, no options. */
const EXECUTOR = `
const hookRunner = hooks.createHookRunner();
async function executeToolCall(toolName: string, input: Record<string, unknown>, team?: { name: string; agent: string; id: string }) {
  const pre = await hookRunner.runEvent("PreToolUse", { event: "PreToolUse", cwd: process.cwd(), tool_name: toolName, tool_input: input });
  if (pre.blocked) return { blocked: true, reason: pre.reason, warnings: pre.warnings, context: pre.additionalContext };
  const output = [{ type: "json", value: { ok: toolName } }];
  if (team) hooks.logToolCall(team.name, team.id, team.agent, toolName, input, toolName === "failing_tool" ? "failure" : "success");
  const post = await hookRunner.runEvent("PostToolUse", { event: "PostToolUse", cwd: process.cwd(), tool_name: toolName, tool_input: input, tool_result: JSON.stringify(output).slice(0, 2000) });
  return { blocked: false, context: post.additionalContext.trim(), warnings: [...pre.warnings, ...post.warnings], preContext: pre.additionalContext };
}
`;

/** The SDK's run(), for a script: a runner per prompt, SessionStart awaited, Stop not. */
const RUN = `
async function run(prompt: () => Promise<void>) {
  const hookRunner = hooks.createHookRunner();
  const start = await hookRunner.runEvent("SessionStart", { event: "SessionStart", cwd: process.cwd() });
  const shown = start.additionalContext.trim();
  const promise = prompt().then(() => ({ shown }));
  return promise.finally(() => {
    void hookRunner.runEvent("Stop", { event: "Stop", cwd: process.cwd() }).catch(() => {});
  });
}
`;

function guardedProject(extra: Record<string, unknown> = {}): string {
  const project = join(dir, "project");
  writeProjectHooks(project, {
    PreToolUse: [{ matcher: "guarded", hooks: [{ command: "echo 'not this one' >&2; exit 2" }] }],
    PostToolUse: [{ matcher: "write_file", hooks: [{ command: `echo '{"additionalContext":"post ran"}'` }] }],
    ...extra,
  });
  return project;
}

describe("levelcode's call sites", () => {
  test("the tool executor's module-level runner with no options: blocks, runs PostToolUse, and the host exits by itself", () => {
    const project = guardedProject();
    const got = host(
      `${EXECUTOR}
say(await executeToolCall("guarded", { a: 1 }));
say(await executeToolCall("write_file", { path: "a.ts" }));
say(await executeToolCall("read_files", { paths: ["a.ts"] }));
say(await executeToolCall("read_files", { paths: ["b.ts"] }));
say(hooks.serverCounts());`,
      project,
    );
    expect(got.stderr).toBe("");
    expect(got.status).toBe(0);
    const [guarded, write, read1, read2, counts] = got.lines;
    expect(guarded).toMatchObject({ blocked: true, reason: "not this one" });
    expect(write).toMatchObject({ blocked: false, context: "post ran", warnings: [] });
    expect(read1).toMatchObject({ blocked: false, context: "", warnings: [] });
    expect(read2).toMatchObject({ blocked: false, context: "", warnings: [] });
    // One server, started with the runner; idle servers do not hold the host (they end after 30 s).
    expect(counts).toMatchObject({ started: 1, alive: 1 });
    expect(got.ms).toBeLessThan(20_000);
    expect(survivors(counts?.pids)).toEqual([]);
  });

  test("a new runner per prompt, twenty times, never closed: one server for all of them", () => {
    const project = join(dir, "project");
    mkdirSync(project);
    writeProjectHooks(project, { SessionStart: [{ hooks: [{ command: `echo '{"additionalContext":"hello from the project"}'` }] }], Stop: [{ hooks: [{ command: "echo stop >> stops.log" }] }] });
    const got = host(
      `${EXECUTOR}${RUN}
const shown: string[] = [];
for (let i = 0; i < 20; i++) {
  const result = await run(async () => { await executeToolCall("write_file", { path: "f" + i }); });
  shown.push(result.shown);
}
say({ shown, counts: hooks.serverCounts() });
await new Promise((r) => setTimeout(r, 300));
say(hooks.serverCounts());`,
      project,
    );
    expect(got.stderr).toBe("");
    expect(got.status).toBe(0);
    const [first, last] = got.lines;
    expect(first?.shown).toEqual(Array.from({ length: 20 }, () => "hello from the project"));
    expect((first?.counts as { started: number }).started).toBeLessThanOrEqual(2);
    expect((last as { alive: number }).alive).toBeLessThanOrEqual(2);
    expect(survivors(last?.pids)).toEqual([]);
    // Every Stop ran, the last one's too, though the host did not wait for it.
    const deadline = Date.now() + 10_000;
    const stops = () => (existsSync(join(project, "stops.log")) ? readFileSync(join(project, "stops.log"), "utf8").split("\n").filter(Boolean).length : 0);
    while (stops() < 20 && Date.now() < deadline) Bun.sleepSync(25);
    expect(stops()).toBe(20);
  });

  test("a step of 200 concurrent PreToolUse calls in a fresh process: all answered, at most 2 servers", () => {
    const project = guardedProject();
    const got = host(
      `${EXECUTOR}
const tools = Array.from({ length: 200 }, (_, i) => (i === 117 ? "guarded" : "tool_" + (i % 40)));
const outcomes = await Promise.all(tools.map((tool) => hookRunner.runEvent("PreToolUse", { event: "PreToolUse", cwd: process.cwd(), tool_name: tool, tool_input: { i: 1 } })));
say({ blocked: outcomes.filter((o) => o.blocked).length, reason: outcomes[117]!.reason, warnings: outcomes.flatMap((o) => o.warnings), counts: hooks.serverCounts() });`,
      project,
    );
    expect(got.stderr).toBe("");
    expect(got.status).toBe(0);
    const [step] = got.lines;
    expect(step).toMatchObject({ blocked: 1, reason: "not this one", warnings: [] });
    // The second server, started to share the burst, does not hold the host either (idle
    // servers end after 30 s).
    expect(got.ms).toBeLessThan(20_000);
    expect((step?.counts as { alive: number }).alive).toBeLessThanOrEqual(2);
    expect(survivors((step?.counts as { pids: number[] }).pids)).toEqual([]);
  });

  test("the first tool call of a fresh process is answered from what the runner asked when it was made", async () => {
    const project = guardedProject();
    // Settings older than two seconds: their stamps alone tell that nothing changed.
    await Bun.sleep(2100);
    const got = host(
      `${EXECUTOR}
await new Promise((r) => setTimeout(r, 300));
const first = await hookRunner.runEvent("PreToolUse", { event: "PreToolUse", cwd: process.cwd(), tool_name: "write_file", tool_input: { path: "a" } });
const afterFirst = hookRunner.cacheStats();
const guarded = await hookRunner.runEvent("PreToolUse", { event: "PreToolUse", cwd: process.cwd(), tool_name: "guarded", tool_input: {} });
say({ first: first.blocked, afterFirst, guarded: guarded.blocked, reason: guarded.reason, counts: hooks.serverCounts() });`,
      project,
    );
    expect(got.stderr).toBe("");
    expect(got.status).toBe(0);
    const [seen] = got.lines;
    expect(seen).toMatchObject({ first: false, afterFirst: { hits: 1 }, guarded: true, reason: "not this one" });
    expect((seen?.counts as { alive: number }).alive).toBe(1);
    expect(survivors((seen?.counts as { pids: number[] }).pids)).toEqual([]);
  });

  test("a runner made where an earlier process kept its answers remembers them as it is made, and still sees an edit at once", async () => {
    const project = guardedProject();
    await Bun.sleep(2100);
    const first = host(`${EXECUTOR}\nsay(await executeToolCall("read_files", { paths: ["a"] }));\nawait new Promise((r) => setTimeout(r, 300));`, project);
    expect(first.status).toBe(0);
    const settings = join(project, ".levelcode", "settings.json");
    const guarded = JSON.stringify({ hooks: { PreToolUse: [{ matcher: "read_files", hooks: [{ command: "echo 'now guarded' >&2; exit 2" }] }] } });
    const got = host(
      `import { renameSync, writeFileSync } from "node:fs";
${EXECUTOR}
const made = hookRunner.cacheStats();
const before = await hookRunner.runEvent("PreToolUse", { event: "PreToolUse", cwd: process.cwd(), tool_name: "read_files", tool_input: {} });
const answered = hookRunner.cacheStats();
writeFileSync(${JSON.stringify(`${settings}.tmp`)}, ${JSON.stringify(guarded)});
renameSync(${JSON.stringify(`${settings}.tmp`)}, ${JSON.stringify(settings)});
const after = await hookRunner.runEvent("PreToolUse", { event: "PreToolUse", cwd: process.cwd(), tool_name: "read_files", tool_input: {} });
say({ made, answered, before: before.blocked, after: after.blocked, reason: after.reason });`,
      project,
    );
    expect(got.stderr).toBe("");
    expect(got.status).toBe(0);
    const [seen] = got.lines as Array<{ made: { stored: number }; answered: { hits: number }; before: boolean; after: boolean; reason: string }>;
    // Remembered (watched, then checked) before any call; the first call is answered from it.
    expect(seen!.made.stored).toBeGreaterThan(0);
    expect(seen!.answered.hits).toBe(1);
    expect(seen!.before).toBe(false);
    expect(seen).toMatchObject({ after: true, reason: "now guarded" });
  });

  test("Stop fired without await, then process.exit (levelcode -p): its handler still runs", () => {
    const project = join(dir, "project");
    mkdirSync(project);
    const mark = join(project, "stopped");
    writeProjectHooks(project, { Stop: [{ hooks: [{ command: `sleep 0.5; echo ran > ${JSON.stringify(mark)}` }] }] });
    const got = host(
      `${EXECUTOR}${RUN}
await run(async () => { await executeToolCall("write_file", { path: "a" }); });
say(hooks.serverCounts());
process.exit(0);`,
      project,
    );
    expect(got.status).toBe(0);
    expect(existsSync(mark)).toBe(false); // the host did not wait for it
    const deadline = Date.now() + 15_000;
    while (!existsSync(mark) && Date.now() < deadline) Bun.sleepSync(25);
    expect(existsSync(mark) ? readFileSync(mark, "utf8") : "").toBe("ran\n");
    // The server finished what it was given, then ended by itself.
    expect(survivors(got.lines[0]?.pids)).toEqual([]);
  });

  test("the same in a process that exits right after creating the runner and firing Stop", () => {
    const project = join(dir, "project");
    mkdirSync(project);
    const mark = join(project, "stopped");
    writeProjectHooks(project, { Stop: [{ hooks: [{ command: `echo ran > ${JSON.stringify(mark)}` }] }] });
    const got = host(
      `const runner = hooks.createHookRunner();
void runner.runEvent("Stop", { event: "Stop", cwd: process.cwd() });
say(hooks.serverCounts());
process.exit(0);`,
      project,
    );
    expect(got.status).toBe(0);
    const deadline = Date.now() + 15_000;
    while (!existsSync(mark) && Date.now() < deadline) Bun.sleepSync(25);
    expect(existsSync(mark)).toBe(true);
    expect(survivors(got.lines[0]?.pids)).toEqual([]);
  });

  test("a host that returns from its main without close() exits as fast as with the engine", async () => {
    const project = guardedProject({ SessionStart: [{ hooks: [{ command: "true" }] }] });
    // Settings older than two seconds: answers are remembered, their folders watched, and kept.
    await Bun.sleep(2100);
    const script = join(dir, "host-returns.ts");
    // The tool executor's runner, and a runner for each of three prompts, as levelcode's run()
    // makes them (never closed); every event awaited.
    writeFileSync(
      script,
      `import * as hooks from ${SRC};\n${EXECUTOR}
async function main() {
  for (let i = 0; i < 3; i++) {
    const prompt = hooks.createHookRunner();
    await prompt.runEvent("SessionStart", { event: "SessionStart", cwd: process.cwd() });
    for (const tool of ["write_file", "read_files", "str_replace", "read_files"]) await executeToolCall(tool, { path: "a.ts" });
    await prompt.runEvent("Stop", { event: "Stop", cwd: process.cwd() });
  }
  // Done: the host has nothing left to do but exit.
  console.log(performance.timeOrigin + performance.now());
}
await main();
`,
    );
    const exits: number[] = [];
    for (let i = 0; i < 5; i++) {
      const child = Bun.spawn([BUN, script], { cwd: project, stdout: "pipe", stderr: "pipe", env: { ...process.env } });
      const [stdout, stderr] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
      const ended = performance.timeOrigin + performance.now();
      expect(stderr).toBe("");
      exits.push(ended - Number(stdout.trim()));
    }
    exits.sort((a, b) => a - b);
    if (exits[0]! >= 10 || exits[2]! >= 50) console.error(`exits after the last await, in ms: ${exits.map((ms) => ms.toFixed(1)).join(" ")}`);
    // The goal, on the run the machine's load disturbed least (load only adds), and a generous
    // bound for the median on a loaded 2-core machine; the engine's is 2 to 3 ms (docs/BENCHMARKS.md).
    expect(exits[0]!).toBeLessThan(10);
    expect(exits[2]!).toBeLessThan(50);
  });

  test("as the host exits, a process of their own takes the watches' last reference, holds nothing else, and ends", async () => {
    const project = guardedProject();
    await Bun.sleep(2100);
    const got = host(
      `import { readdirSync, readFileSync, readlinkSync, writeSync } from "node:fs";
import { Watches } from ${JSON.stringify(resolve(import.meta.dir, "../src/inotify.ts"))};
${EXECUTOR}
for (let i = 0; i < 3; i++) {
  await executeToolCall("read_files", { paths: ["a"] });
  await new Promise((r) => setTimeout(r, 20));
}
say({ hits: hookRunner.cacheStats().hits, holder: Watches.get()?.holderPid ?? null });
// After the client's own exit handler, which started the holder.
process.on("exit", () => {
  const pid = Watches.get()?.holderPid ?? null;
  // It is started just now: until it runs the shell it is still the spawn's copy of this
  // process, whose other descriptors go at its exec. What it holds is read once it has (at
  // most 2 s).
  const until = Date.now() + 2000;
  while (pid !== null && Date.now() < until && !readFileSync("/proc/" + pid + "/cmdline", "latin1").startsWith("/bin/sh")) Bun.sleepSync(2);
  const fds = pid === null ? [] : readdirSync("/proc/" + pid + "/fd").map((fd) => [fd, readlinkSync("/proc/" + pid + "/fd/" + fd)]);
  writeSync(1, JSON.stringify({ pid, fds }) + "\\n");
});`,
      project,
    );
    expect(got.stderr).toBe("");
    expect(got.status).toBe(0);
    const [during, atExit] = got.lines as [{ hits: number; holder: number | null }, { pid: number | null; fds: Array<[string, string]> }];
    expect(during.hits).toBeGreaterThan(0);
    // Nothing runs beside the host while it lives.
    expect(during.holder).toBeNull();
    expect(atExit.pid).toBeGreaterThan(1);
    const fds = Object.fromEntries(atExit.fds);
    expect(fds["3"]).toBe("anon_inode:inotify");
    // Its output goes nowhere, and nothing of the host's but its input and the instance is open.
    expect(fds["1"]).toBe("/dev/null");
    expect(fds["2"]).toBe("/dev/null");
    expect(Object.keys(fds).sort()).toEqual(["0", "1", "2", "3"]);
    expect(survivors([atExit.pid])).toEqual([]);
  });

  test("an untrusted project: SessionStart tells the person once, with the command that trusts it; the model is told nothing", () => {
    const project = guardedProject();
    const home = join(dir, "home");
    mkdirSync(join(home, ".config", "levelcode"), { recursive: true });
    // And a user settings file that cannot be read as settings.
    writeFileSync(join(home, ".config", "levelcode", "settings.json"), "{ not json");
    const got = host(
      `${EXECUTOR}${RUN}
for (let i = 0; i < 2; i++) {
  const result = await run(async () => { say({ call: await executeToolCall("guarded", {}) }); });
  say({ shown: result.shown });
}
say(hooks.serverCounts());`,
      project,
      { HOME: home, LEVELCODE_TRUST_PROJECT_HOOKS: undefined },
    );
    expect(got.stderr).toBe("");
    expect(got.status).toBe(0);
    const [call1, shown1, call2, shown2, counts] = got.lines;
    const first = String(shown1?.shown);
    expect(first).toContain(join(project, ".levelcode", "settings.json"));
    expect(first).toContain(`levelcode-hooks trust --project-dir ${project}`);
    expect(first).toContain(join(home, ".config", "levelcode", "settings.json"));
    expect(first.split("\n").every((line) => line.startsWith("levelcode-hooks"))).toBe(true);
    // Once per process: the second prompt's SessionStart says nothing more.
    expect(shown2?.shown).toBe("");
    // The guard did not run (untrusted), and nothing of this reaches the model's side.
    for (const call of [call1, call2]) {
      expect(call?.call).toMatchObject({ blocked: false, context: "", preContext: "" });
    }
    expect(survivors(counts?.pids)).toEqual([]);
  });

  test("logToolCall switched too: one signed line per executed tool call, accepted by compliance verify and by levelcode's own check", () => {
    const project = guardedProject();
    const data = join(dir, "data");
    const got = host(
      `${EXECUTOR}
const team = (id: string) => ({ name: "alpha", agent: "agent-7", id });
say(await executeToolCall("guarded", {}, team("tc-0")));
say(await executeToolCall("write_file", { path: "a.ts", content: "é 1.50 \\u2028" }, team("tc-1")));
say(await executeToolCall("failing_tool", { n: 1e21, list: [1, "2", null] }, team("tc-2")));
say(await executeToolCall("read_files", { paths: ["x"] }, team("tc-3")));
// The last one as levelcode -p ends: recorded, then the process exits at once.
const event = hooks.logToolCall("alpha", "tc-4", "agent-7", "end_turn", {}, "success");
say({ event, counts: hooks.serverCounts() });
process.exit(0);`,
      project,
      { LEVELCODE_DIR: data },
    );
    expect(got.stderr).toBe("");
    expect(got.status).toBe(0);
    const last = got.lines[4] as { event: Record<string, unknown>; counts: { pids: number[] } };
    expect(survivors(last.counts.pids)).toEqual([]);

    const log = join(data, "swarm", "alpha", "compliance", "events.jsonl");
    const lines = readFileSync(log, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
    // The blocked call never executed: four executed calls and the last, one line each.
    expect(lines.map((line) => line.traceId)).toEqual(["tc-1", "tc-2", "tc-3", "tc-4"]);
    expect(lines.map((line) => (line.payload as { result: string }).result)).toEqual(["success", "failure", "success", "success"]);
    expect(lines.every((line) => line.agentId === "agent-7" && line.eventType === "tool-call")).toBe(true);
    expect(lines[3]).toMatchObject({ timestamp: last.event.timestamp, signature: last.event.signature });

    const verify = spawnSync(BINARY, ["compliance", "verify", "--team", "alpha"], { env: { ...process.env, LEVELCODE_DIR: data }, encoding: "utf8" });
    expect(verify.stdout + verify.stderr).toContain("chain intact");
    expect(verify.status).toBe(0);

    // levelcode's verifyEventIntegrity: the stored signature against a 32-bit "h * 31 + c" hash of
    // traceId:timestamp:eventType:JSON.stringify(payload) in base 36; nothing else is checked.
    const hash = (text: string) => {
      let h = 0;
      for (let i = 0; i < text.length; i++) h = (Math.imul(h, 31) + text.charCodeAt(i)) | 0;
      return h.toString(36);
    };
    for (const line of lines) {
      expect(hash(`${line.traceId}:${line.timestamp}:${line.eventType}:${JSON.stringify(line.payload)}`)).toBe(line.signature as string);
    }
  });

  test("a team run with LEVELCODE_TEAM set as well: one compliance line per executed call, as with the engine", () => {
    const project = guardedProject();
    const data = join(dir, "data");
    const got = host(
      `${EXECUTOR}
const team = (id: string) => ({ name: "alpha", agent: "agent-7", id });
say(await executeToolCall("write_file", { path: "a.ts" }, team("tc-1")));
say(await executeToolCall("read_files", { paths: ["a.ts"] }, team("tc-2")));
say(hooks.serverCounts());`,
      project,
      { LEVELCODE_DIR: data, LEVELCODE_TEAM: "alpha" },
    );
    expect(got.stderr).toBe("");
    expect(got.status).toBe(0);
    // The PostToolUse handler still ran: only the dispatch's own compliance line is left out.
    expect(got.lines[0]).toMatchObject({ blocked: false, context: "post ran", warnings: [] });
    expect(survivors(got.lines[2]?.pids)).toEqual([]);
    const log = join(data, "swarm", "alpha", "compliance", "events.jsonl");
    const lines = readFileSync(log, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((line) => line.traceId)).toEqual(["tc-1", "tc-2"]);
    const verify = spawnSync(BINARY, ["compliance", "verify", "--team", "alpha"], { env: { ...process.env, LEVELCODE_DIR: data }, encoding: "utf8" });
    expect(verify.stdout + verify.stderr).toContain("chain intact");
    expect(verify.status).toBe(0);
  });

  test("once logToolCall writes the lines, a team's PostToolUse that matches nothing is answered from memory, and every call keeps its line", async () => {
    const project = guardedProject();
    const data = join(dir, "data");
    // Settings older than two seconds: their stamps alone tell that nothing changed.
    await Bun.sleep(2100);
    const got = host(
      `${EXECUTOR}
const team = (id: string) => ({ name: "alpha", agent: "agent-7", id });
for (let i = 0; i < 8; i++) {
  await executeToolCall("read_files", { paths: ["x"] }, team("tc-" + i));
  await new Promise((r) => setTimeout(r, 20));
}
say(hookRunner.cacheStats());`,
      project,
      { LEVELCODE_DIR: data, LEVELCODE_TEAM: "alpha" },
    );
    expect(got.stderr).toBe("");
    expect(got.status).toBe(0);
    // More answers from memory than the eight PreToolUse calls could give: PostToolUse's too.
    expect((got.lines[0] as { hits: number }).hits).toBeGreaterThan(8);
    const log = join(data, "swarm", "alpha", "compliance", "events.jsonl");
    const deadline = Date.now() + 10_000;
    const traces = () => (existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean).map((line) => (JSON.parse(line) as { traceId: string }).traceId) : []);
    while (traces().length < 8 && Date.now() < deadline) Bun.sleepSync(25);
    expect(traces()).toEqual(Array.from({ length: 8 }, (_, i) => `tc-${i}`));
  });

  test("a host that never calls logToolCall keeps the dispatcher's line for each PostToolUse of a team run", () => {
    const project = guardedProject();
    const data = join(dir, "data");
    const got = host(
      `${EXECUTOR}
say(await executeToolCall("write_file", { path: "a.ts" }));
say(await executeToolCall("read_files", { paths: ["a.ts"] }));`,
      project,
      { LEVELCODE_DIR: data, LEVELCODE_TEAM: "alpha" },
    );
    expect(got.stderr).toBe("");
    expect(got.status).toBe(0);
    const log = join(data, "swarm", "alpha", "compliance", "events.jsonl");
    const tools = readFileSync(log, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => (JSON.parse(line) as { payload: { tool: string } }).payload.tool);
    expect(tools).toEqual(["write_file", "read_files"]);
  });

  test("when serve cannot start, the run of a PostToolUse is told that logToolCall records the call", () => {
    const project = guardedProject();
    const data = join(dir, "data");
    const argsLog = join(dir, "run-args");
    // `serve` fails as a binary without it would; `run` says what it was given, then runs.
    const fake = writeScript(
      dir,
      "fake-levelcode-hooks",
      `#!/bin/sh\nif [ "$1" = serve ]; then echo "error: unrecognized subcommand 'serve'" >&2; exit 2; fi\necho "$*" >> ${JSON.stringify(argsLog)}\nexec ${JSON.stringify(BINARY)} "$@"\n`,
    );
    const got = host(
      `const hookRunner = hooks.createHookRunner({ binary: ${JSON.stringify(fake)} });
for (const [i, tool] of ["write_file", "read_files"].entries()) {
  await hookRunner.runEvent("PreToolUse", { event: "PreToolUse", cwd: process.cwd(), tool_name: tool, tool_input: {} });
  hooks.logToolCall("alpha", "tc-" + i, "agent-7", tool, {}, "success");
  const post = await hookRunner.runEvent("PostToolUse", { event: "PostToolUse", cwd: process.cwd(), tool_name: tool, tool_input: {}, tool_result: "ok" });
  say({ context: post.additionalContext.trim() });
}`,
      project,
      { LEVELCODE_DIR: data, LEVELCODE_TEAM: "alpha" },
    );
    expect(got.stderr).toBe("");
    expect(got.status).toBe(0);
    expect(got.lines[0]).toEqual({ context: "post ran" });
    const runs = readFileSync(argsLog, "utf8").split("\n").filter(Boolean);
    expect(runs).toEqual(["run", "run --caller-records-compliance", "run", "run --caller-records-compliance"]);
    // logToolCall's lines, through the real binary's serve, and none of the runs'.
    const log = join(data, "swarm", "alpha", "compliance", "events.jsonl");
    const deadline = Date.now() + 10_000;
    const count = () => (existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean).length : 0);
    while (count() < 2 && Date.now() < deadline) Bun.sleepSync(25);
    expect(readFileSync(log, "utf8").split("\n").filter(Boolean).map((line) => (JSON.parse(line) as { traceId: string }).traceId)).toEqual(["tc-0", "tc-1"]);
  });
});
