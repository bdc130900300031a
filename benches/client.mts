/**
 * The per-event cost of `runEvent` from Bun through `@levelcode/hooks` (part of `make bench`),
 * beside what the same work costs without the client: `Bun.spawn` of `/bin/true`, of the handler
 * alone (`sh -c true`), and of one `levelcode-hooks run` per event.
 *
 *   LEVELCODE_HOOKS_BINARY=target/.../levelcode-hooks bun benches/client.mts
 *
 * Knobs: CLIENT_EVENTS (no-match events per measurement, default 20000), CLIENT_SPAWNS (spawns
 * per measurement, default 2000), BENCH_QUICK=1 (few of each, to check the script works).
 * Results go to target/bench/client.md (or $CARGO_TARGET_DIR/bench/). A missed goal is
 * reported, never failed: speed is not asserted anywhere.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

import { createHookRunner } from "../packages/levelcode-hooks/src/index.ts";

const quick = process.env.BENCH_QUICK === "1";
const EVENTS = Number(process.env.CLIENT_EVENTS ?? (quick ? 500 : 20000));
const SPAWNS = Number(process.env.CLIENT_SPAWNS ?? (quick ? 100 : 2000));
const CALLERS = 10;
const binary = process.env.LEVELCODE_HOOKS_BINARY;
if (!binary) throw new Error("set LEVELCODE_HOOKS_BINARY to the binary to measure (make bench does)");

const work = mkdtempSync(join(tmpdir(), "levelcode-hooks-client-bench-"));
process.on("exit", () => rmSync(work, { recursive: true, force: true }));
const home = join(work, "home");
const project = join(work, "project");
mkdirSync(join(home, ".levelcode"), { recursive: true });
mkdirSync(join(project, ".levelcode"), { recursive: true });
process.env.HOME = home;
process.env.LEVELCODE_TRUST_PROJECT_HOOKS = "1";
for (const name of ["LEVELCODE_DIR", "LEVELCODE_HOOKS_LOG", "LEVELCODE_TEAM", "LEVELCODE_HOOKS"]) delete process.env[name];

// Three layers of hooks on other tools (as in benches/bench.py), and one `true` on `bench_one`.
const otherTools = (layer: string) =>
  ["str_replace", "run_terminal_command", "code_search", "spawn_agents", "read_files"].map((tool) => ({
    matcher: tool,
    hooks: [{ command: `echo ${layer} ${tool}` }],
  }));
writeFileSync(join(home, ".levelcode", "settings.json"), JSON.stringify({ hooks: { PreToolUse: otherTools("data") } }));
mkdirSync(join(home, ".config", "levelcode"), { recursive: true });
writeFileSync(join(home, ".config", "levelcode", "settings.json"), JSON.stringify({ hooks: { PreToolUse: otherTools("user") } }));
writeFileSync(
  join(project, ".levelcode", "settings.json"),
  JSON.stringify({ hooks: { PreToolUse: [...otherTools("project"), { matcher: "bench_one", hooks: [{ command: "true" }] }] } }),
);

// Answers read from files changed in the last two seconds are not remembered (docs/levelcode.md).
const settingsWritten = Date.now();
const settingsAged = () => new Promise((r) => setTimeout(r, Math.max(0, settingsWritten + 2100 - Date.now())));

const payload = (tool: string) => ({
  event: "PreToolUse",
  cwd: project,
  tool_name: tool,
  tool_input: { path: "src/generated/a.ts", instructions: "bench", content: "x".repeat(2000) },
});

type Stats = { median: number; p99: number; n: number; perEvent: number };
type Run = { samples: number[]; wallUs: number };

function stats(run: Run): Stats {
  const sorted = [...run.samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { median: at(0.5), p99: at(0.99), n: sorted.length, perEvent: run.wallUs / sorted.length };
}

/** Microseconds per call of `once`, one call at a time. */
async function measure(n: number, once: () => Promise<unknown>): Promise<Run> {
  const samples: number[] = [];
  const begun = Bun.nanoseconds();
  for (let i = 0; i < n; i++) {
    const started = Bun.nanoseconds();
    await once();
    samples.push((Bun.nanoseconds() - started) / 1000);
  }
  return { samples, wallUs: (Bun.nanoseconds() - begun) / 1000 };
}

/** The same, with `CALLERS` callers at once, each making n / CALLERS calls. */
async function measureConcurrent(n: number, once: () => Promise<unknown>): Promise<Run> {
  const begun = Bun.nanoseconds();
  const all = await Promise.all(Array.from({ length: CALLERS }, () => measure(Math.ceil(n / CALLERS), once)));
  return { samples: all.flatMap((run) => run.samples), wallUs: (Bun.nanoseconds() - begun) / 1000 };
}

/**
 * Measurements that are compared run in turns (ROUNDS rounds of each in turn), so that a change
 * in the machine's load falls on all of them alike.
 */
const ROUNDS = 10;
async function interleaved(how: typeof measure, ...fns: Array<[number, () => Promise<unknown>]>): Promise<Run[]> {
  const runs: Run[] = fns.map(() => ({ samples: [], wallUs: 0 }));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, [n, fn]] of fns.entries()) {
      const got = await how(Math.ceil(n / ROUNDS), fn);
      runs[i]!.samples.push(...got.samples);
      runs[i]!.wallUs += got.wallUs;
    }
  }
  return runs;
}

const spawnQuiet = async (cmd: string[], stdin?: string) => {
  const proc = Bun.spawn(cmd, { stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin), stdout: "ignore", stderr: "ignore" });
  await proc.exited;
};

// The transport's own figures: every event goes to a server.
const runner = createHookRunner({ binary: resolve(binary), noMatchCache: false });
// And with the no-match cache, where the platform has it.
const cachedRunner = createHookRunner({ binary: resolve(binary) });
const noMatch = payload("write_file");
const oneHandler = payload("bench_one");
const check = await runner.runEvent("PreToolUse", oneHandler);
if (check.results.length !== 1 || check.results[0]!.exitCode !== 0 || check.warnings.length > 0) {
  throw new Error(`the one-handler scenario did not run its handler: ${JSON.stringify(check)}`);
}
if ((await runner.runEvent("PreToolUse", noMatch)).results.length !== 0) throw new Error("the no-match scenario matched");

// Warm up every path, then measure.
await measure(200, () => runner.runEvent("PreToolUse", noMatch));
await measureConcurrent(200, () => runner.runEvent("PreToolUse", noMatch));
await measure(50, () => spawnQuiet(["/bin/true"]));

const rows: Array<[string, Stats]> = [];
const row = (name: string, run: Run) => {
  const s = stats(run);
  rows.push([name, s]);
  console.error(`client bench: ${name}: median ${s.median.toFixed(1)} µs, p99 ${s.p99.toFixed(1)} µs, ${s.perEvent.toFixed(1)} µs per event (${s.n})`);
  return s;
};

const line = JSON.stringify(noMatch);
const noMatchCall = () => runner.runEvent("PreToolUse", noMatch);
const oneCall = () => runner.runEvent("PreToolUse", oneHandler);
const runCall = () => spawnQuiet([resolve(binary), "run"], line);
const shCall = () => spawnQuiet(["/bin/sh", "-c", "true"]);

// One spawn per event is costly: fewer of them, in the same turns.
const [rNoMatch, rRun] = await interleaved(measure, [EVENTS, noMatchCall], [SPAWNS, runCall]);
const sNoMatch = row("runEvent, no match", rNoMatch!);
const sRun = row("Bun.spawn levelcode-hooks run, no match (one spawn per event)", rRun!);
const [rNoMatch10, rRun10] = await interleaved(measureConcurrent, [EVENTS, noMatchCall], [SPAWNS, runCall]);
const sNoMatch10 = row(`runEvent, no match, ${CALLERS} callers`, rNoMatch10!);
const sRun10 = row(`Bun.spawn levelcode-hooks run, no match, ${CALLERS} callers`, rRun10!);
const [rOne, rSh, rTrue] = await interleaved(measure, [SPAWNS, oneCall], [SPAWNS, shCall], [SPAWNS, () => spawnQuiet(["/bin/true"])]);
const sOne = row("runEvent, one `true` handler", rOne!);
const sSh = row("Bun.spawn sh -c true (the handler alone)", rSh!);
const sTrue = row("Bun.spawn /bin/true", rTrue!);
const [rOne10, rSh10] = await interleaved(measureConcurrent, [SPAWNS, oneCall], [SPAWNS, shCall]);
const sOne10 = row(`runEvent, one \`true\` handler, ${CALLERS} callers`, rOne10!);
const sSh10 = row(`Bun.spawn sh -c true, ${CALLERS} callers`, rSh10!);

await settingsAged();
await cachedRunner.runEvent("PreToolUse", noMatch);
await new Promise((r) => setTimeout(r, 300));
await measure(200, () => cachedRunner.runEvent("PreToolUse", noMatch));
const cacheOn = cachedRunner.cacheStats().hits > 0;
const sCached = cacheOn ? row("runEvent, no match, from the no-match cache", await measure(EVENTS, () => cachedRunner.runEvent("PreToolUse", noMatch))) : null;
const sCached10 = cacheOn ? row(`runEvent, no match, from the no-match cache, ${CALLERS} callers`, await measureConcurrent(EVENTS, () => cachedRunner.runEvent("PreToolUse", noMatch))) : null;
if (!cacheOn) console.error("client bench: the no-match cache is not available here (Linux under Bun only)");
runner.close();
cachedRunner.close();


// ── levelcode's call pattern, each scenario in a fresh process ─────────────────────────────────
// The peer is an engine in the manner of levelcode's in-process one (common/src/hooks/): the
// three settings files read synchronously on the first event of a project and kept, matchers as
// regular expressions, and each matching handler one `Bun.spawn` with the payload on stdin.
const PEER = String.raw`
import { readFileSync } from "node:fs";
import { join } from "node:path";
export function createPeerRunner() {
  let config = null, root = null;
  const load = (project) => {
    const hooks = {};
    const home = process.env.HOME;
    for (const file of [join(home, ".config", "levelcode", "settings.json"), join(home, ".levelcode", "settings.json"), join(project, ".levelcode", "settings.json")]) {
      let parsed;
      try { parsed = JSON.parse(readFileSync(file, "utf8")); } catch { continue; }
      for (const [event, groups] of Object.entries(parsed.hooks ?? {})) (hooks[event] ??= []).push(...groups);
    }
    return hooks;
  };
  const one = async (handler, payload) => {
    const proc = Bun.spawn({ cmd: handler.argv ?? ["sh", "-c", handler.command], stdin: new TextEncoder().encode(JSON.stringify(payload)), stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { exitCode, stdout, stderr };
  };
  async function runEvent(event, payload) {
    if (!config || root !== payload.cwd) { config = load(payload.cwd); root = payload.cwd; }
    const outcome = { blocked: false, additionalContext: "", results: [] };
    for (const group of config[event] ?? []) {
      if (group.matcher) { let re; try { re = new RegExp(group.matcher); } catch { continue; } if (!re.test(payload.tool_name ?? "")) continue; }
      for (const handler of group.hooks) {
        const result = await one(handler, payload);
        outcome.results.push(result);
        if (event === "PreToolUse" && result.exitCode === 2) { outcome.blocked = true; outcome.reason = result.stderr.trim(); }
      }
    }
    return outcome;
  }
  return { runEvent };
}
`;
const peerFile = join(work, "peer.mjs");
writeFileSync(peerFile, PEER);
const clientModule = resolve(import.meta.dir, "../packages/levelcode-hooks/src/index.ts");

/**
 * One scenario in a fresh Bun process, with the runner made at module level as levelcode's tool
 * executor makes it; the script's last line is a JSON object of figures.
 */
function fresh(which: "engine" | "client", body: string): Record<string, number> {
  const script = join(work, `fresh-${which}-${Math.random().toString(36).slice(2)}.mts`);
  const make = which === "engine" ? `import { createPeerRunner } from ${JSON.stringify(peerFile)}; const newRunner = createPeerRunner; const hookRunner = createPeerRunner(); const counts = () => ({ alive: 0 }); const hitsOf = () => 0;` : `import { createHookRunner, serverCounts } from ${JSON.stringify(clientModule)}; const newRunner = createHookRunner; const hookRunner = createHookRunner(); const counts = () => serverCounts(); const hitsOf = () => hookRunner.cacheStats().hits;`;
  writeFileSync(script, `${make}\nconst cwd = ${JSON.stringify(project)};\n${body}\n`);
  const run = Bun.spawnSync([process.execPath, script], { cwd: project, env: { ...process.env, LEVELCODE_HOOKS_BINARY: resolve(binary!) }, stdout: "pipe", stderr: "pipe" });
  // The moment the host was gone, for a scenario that prints when it was done (`exitMs`).
  const gone = performance.timeOrigin + performance.now();
  const lines = run.stdout.toString().trim().split("\n");
  try {
    const figures = JSON.parse(lines[lines.length - 1]!) as Record<string, number>;
    if (figures.doneAt !== undefined) return { exitMs: gone - figures.doneAt };
    return figures;
  } catch {
    throw new Error(`the ${which} scenario failed: ${run.stderr.toString()}${run.stdout.toString()}`);
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const FRESH_RUNS = quick ? 3 : 15;
/** Both sides of a scenario, FRESH_RUNS times each in turns; the medians of each figure. */
function freshPair(body: string): { engine: Record<string, number>; client: Record<string, number> } {
  const runs: Record<"engine" | "client", Array<Record<string, number>>> = { engine: [], client: [] };
  for (let i = 0; i < FRESH_RUNS; i++) for (const which of ["engine", "client"] as const) runs[which].push(fresh(which, body));
  const med = (list: Array<Record<string, number>>) => Object.fromEntries(Object.keys(list[0]!).map((k) => [k, median(list.map((r) => r[k]!))]));
  return { engine: med(runs.engine), client: med(runs.client) };
}

const step = (tool: string, delayMs: number) => `
${delayMs > 0 ? `await new Promise((r) => setTimeout(r, ${delayMs}));` : ""}
const t0 = performance.now();
const outcomes = await Promise.all(Array.from({ length: 200 }, (_, i) => hookRunner.runEvent("PreToolUse", { event: "PreToolUse", cwd, tool_name: ${JSON.stringify(tool)} === "many" ? "tool_" + (i % 40) : ${JSON.stringify(tool)}, tool_input: { i } })));
const ms = performance.now() - t0;
if (outcomes.some((o) => o.blocked)) throw new Error("blocked");
console.log(JSON.stringify({ ms, serve: counts().alive, hits: hitsOf() }));`;
const firstCall = (delayMs: number) => `
${delayMs > 0 ? `await new Promise((r) => setTimeout(r, ${delayMs}));` : ""}
const t0 = performance.now();
await hookRunner.runEvent("PreToolUse", { event: "PreToolUse", cwd, tool_name: "write_file", tool_input: { path: "a.ts" } });
console.log(JSON.stringify({ ms: performance.now() - t0, hits: hitsOf() }));`;
const perCall = `
const N = ${quick ? 2000 : 20000};
const output = [{ type: "json", value: { message: "x".repeat(3000) } }];
const call = async (tool: string, hooks: boolean) => {
  const input = { path: "src/a.ts", content: "y".repeat(500) };
  if (hooks) await hookRunner.runEvent("PreToolUse", { event: "PreToolUse", cwd, tool_name: tool, tool_input: input });
  const result = JSON.stringify(output).slice(0, 4000);
  if (hooks) await hookRunner.runEvent("PostToolUse", { event: "PostToolUse", cwd, tool_name: tool, tool_input: input, tool_result: result.length <= 2000 ? result : result.slice(0, 2000) + "…" });
};
for (let i = 0; i < 500; i++) await call("write_file", true);
await new Promise((r) => setTimeout(r, 2500));
for (let i = 0; i < 500; i++) await call("write_file", true);
let bare = 0, hooked = 0;
for (let round = 0; round < 10; round++) {
  let t = performance.now(); for (let i = 0; i < N / 10; i++) await call("write_file", false); bare += performance.now() - t;
  t = performance.now(); for (let i = 0; i < N / 10; i++) await call("write_file", true); hooked += performance.now() - t;
}
const stats = (hookRunner as { cacheStats?: () => { hits: number; misses: number } }).cacheStats?.();
console.log(JSON.stringify({ us: ((hooked - bare) * 1000) / N, hits: stats?.hits ?? 0, misses: stats?.misses ?? 0 }));`;

// A host that returns from its main without close() (levelcode -p without its process.exit): the
// tool executor's runner and a prompt's, every event awaited; then nothing but the exit.
const hostReturns = `
const prompt = newRunner();
await prompt.runEvent("SessionStart", { event: "SessionStart", cwd });
for (const tool of ["write_file", "read_files", "str_replace", "read_files"]) {
  await hookRunner.runEvent("PreToolUse", { event: "PreToolUse", cwd, tool_name: tool, tool_input: { path: "a.ts" } });
  await hookRunner.runEvent("PostToolUse", { event: "PostToolUse", cwd, tool_name: tool, tool_input: { path: "a.ts" }, tool_result: "ok" });
}
await prompt.runEvent("Stop", { event: "Stop", cwd });
console.log(JSON.stringify({ doneAt: performance.timeOrigin + performance.now() }));`;

await settingsAged();
const exits = freshPair(hostReturns);
const burst = freshPair(step("many", 0));
const burstLater = freshPair(step("many", 100));
const burstTrue = freshPair(step("bench_one", 100));
const first = freshPair(firstCall(0));
const firstLater = freshPair(firstCall(50));
const costs = freshPair(perCall);
console.error(`client bench: no-match cache in the per-call scenario: ${costs.client.hits} hits, ${costs.client.misses} misses`);
console.error(`client bench: answered from memory (median): burst ${burst.client.hits}/200, burst 100 ms after ${burstLater.client.hits}/200, first call ${first.client.hits}/1, 50 ms after ${firstLater.client.hits}/1`);
const pattern: Array<[string, string, string, string, boolean]> = [];
const patternRow = (name: string, engine: number, client: number, unit: string, goal: string, met: boolean) => {
  pattern.push([name, `${engine.toFixed(unit === "µs" ? 2 : 1)} ${unit}`, `${client.toFixed(unit === "µs" ? 2 : 1)} ${unit}`, goal, met]);
  console.error(`client bench: ${name}: engine ${engine.toFixed(2)} ${unit}, client ${client.toFixed(2)} ${unit} (${goal}: ${met ? "met" : "missed"})`);
};
patternRow("a host that returns from its main: its exit, after its last await", exits.engine.exitMs!, exits.client.exitMs!, "ms", "≤ 10 ms", exits.client.exitMs! <= 10);
patternRow("200 concurrent no-match calls, at once after the runner is made", burst.engine.ms!, burst.client.ms!, "ms", `≤ 1.2× (${(burst.client.ms! / burst.engine.ms!).toFixed(2)}×), serve left: ${burst.client.serve}`, burst.client.ms! <= 1.2 * burst.engine.ms! && burst.client.serve! <= 2);
patternRow("200 concurrent no-match calls, 100 ms after", burstLater.engine.ms!, burstLater.client.ms!, "ms", `≤ 2× (${(burstLater.client.ms! / burstLater.engine.ms!).toFixed(2)}×), serve left: ${burstLater.client.serve}`, burstLater.client.ms! <= 2 * burstLater.engine.ms! && burstLater.client.serve! <= 2);
patternRow("200 concurrent calls, one matching `true` hook each", burstTrue.engine.ms!, burstTrue.client.ms!, "ms", `≤ 1.2× (${(burstTrue.client.ms! / burstTrue.engine.ms!).toFixed(2)}×), serve left: ${burstTrue.client.serve}`, burstTrue.client.ms! <= 1.2 * burstTrue.engine.ms!);
patternRow("no-match cost per tool call (Pre + Post) over running nothing", costs.engine.us!, costs.client.us!, "µs", `≤ engine + 2 µs`, costs.client.us! <= costs.engine.us! + 2);
patternRow("first tool call of a fresh process, at once after the runner is made", first.engine.ms!, first.client.ms!, "ms", `≤ 1.5× (${(first.client.ms! / first.engine.ms!).toFixed(2)}×)`, first.client.ms! <= 1.5 * first.engine.ms!);
patternRow("first tool call of a fresh process, 50 ms after", firstLater.engine.ms!, firstLater.client.ms!, "ms", `≤ 1.5× (${(firstLater.client.ms! / firstLater.engine.ms!).toFixed(2)}×)`, firstLater.client.ms! <= 1.5 * firstLater.engine.ms!);

// Head of line: a 2-second hook in flight, and a no-match call beside it.
const slowRunner = createHookRunner({ binary: resolve(binary), noMatchCache: false, hooks: { PreToolUse: [{ matcher: "slow_tool", hooks: [{ command: "sleep 2" }] }] } });
await slowRunner.runEvent("PreToolUse", payload("warm"));
const aloneRun = await measure(20, () => slowRunner.runEvent("PreToolUse", payload("other")));
const slow = slowRunner.runEvent("PreToolUse", payload("slow_tool"));
await new Promise((r) => setTimeout(r, 50));
const besideRun = await measure(20, () => slowRunner.runEvent("PreToolUse", payload("other")));
await slow;
slowRunner.close();
const headOfLine = stats(besideRun).median - stats(aloneRun).median;
patternRow("a no-match call beside a 2 s hook, over the same call alone", 0, headOfLine / 1000, "ms", "no head-of-line wait (< 50 ms)", headOfLine < 50_000);

const ratio = (a: number, b: number) => (a / b).toFixed(2);
const goals = [
  ["no match, median ≤ 50 µs", `${sNoMatch.median.toFixed(1)} µs`, sNoMatch.median <= 50],
  ["no match ≥ 20× faster than one `run` per event (medians)", `${(sRun.median / sNoMatch.median).toFixed(0)}×`, sRun.median / sNoMatch.median >= 20],
  ["one `true` handler ≤ 1.05× `Bun.spawn sh -c true` (medians)", `${ratio(sOne.median, sSh.median)}×`, sOne.median <= 1.05 * sSh.median],
  [`${CALLERS} callers: no match ≤ 50 µs per event`, `${sNoMatch10.perEvent.toFixed(1)} µs`, sNoMatch10.perEvent <= 50],
  [`${CALLERS} callers: no match ≥ 20× faster than one \`run\` per event, ${CALLERS} callers`, `${(sRun10.perEvent / sNoMatch10.perEvent).toFixed(0)}×`, sRun10.perEvent / sNoMatch10.perEvent >= 20],
  [`${CALLERS} callers: one handler ≤ 1.1× \`sh -c true\` from ${CALLERS} callers (per event)`, `${ratio(sOne10.perEvent, sSh10.perEvent)}×`, sOne10.perEvent <= 1.1 * sSh10.perEvent],
  ...(sCached && sCached10
    ? ([
        ["no match from the no-match cache, median ≤ 5 µs", `${sCached.median.toFixed(2)} µs`, sCached.median <= 5],
        [`${CALLERS} callers: no match from the cache ≤ 5 µs per event`, `${sCached10.perEvent.toFixed(2)} µs`, sCached10.perEvent <= 5],
      ] as const)
    : []),
] as const;

const md = [
  `# runEvent from Bun through @levelcode/hooks`,
  "",
  `Bun ${Bun.version}, ${process.platform}-${process.arch}; binary ${binary}. Per event, in µs.`,
  "",
  "Median and p99 are each call's own latency; *per event* is the wall time of the whole",
  "measurement over its events, which for concurrent callers is what each event costs the host.",
  "",
  "| measurement | median | p99 | per event | n |",
  "|---|---:|---:|---:|---:|",
  ...rows.map(([name, s]) => `| ${name} | ${s.median.toFixed(1)} | ${s.p99.toFixed(1)} | ${s.perEvent.toFixed(1)} | ${s.n} |`),
  "",
  "| goal | measured | met |",
  "|---|---:|---|",
  ...goals.map(([goal, value, met]) => `| ${goal} | ${value} | ${met ? "yes" : "**no**"} |`),
  "",
  "levelcode's call pattern, each scenario in a fresh Bun process, against an engine in the manner of",
  `levelcode's in-process one; medians of ${FRESH_RUNS} runs of each, in turns:`,
  "",
  "| scenario | engine | @levelcode/hooks | goal | met |",
  "|---|---:|---:|---|---|",
  ...pattern.map(([name, engine, client, goal, met]) => `| ${name} | ${engine} | ${client} | ${goal} | ${met ? "yes" : "**no**"} |`),
  "",
  `Also: /bin/true ${sTrue.median.toFixed(1)} µs; the one-handler event costs ${(sOne.median - sSh.median).toFixed(1)} µs over the handler alone.`,
  "",
].join("\n");
const out = join(process.env.CARGO_TARGET_DIR ?? resolve(import.meta.dir, "..", "target"), "bench");
mkdirSync(out, { recursive: true });
writeFileSync(join(out, "client.md"), md);
console.log(md);
