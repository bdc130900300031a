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

const payload = (tool: string) => ({
  event: "PreToolUse",
  cwd: project,
  tool_name: tool,
  tool_input: { path: "src/generated/a.ts", instructions: "bench", content: "x".repeat(2000) },
});

type Stats = { median: number; p99: number; n: number };
function stats(samples: number[]): Stats {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { median: at(0.5), p99: at(0.99), n: sorted.length };
}

/** Microseconds per call of `once`, one call at a time. */
async function measure(n: number, once: () => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = Bun.nanoseconds();
    await once();
    samples.push((Bun.nanoseconds() - started) / 1000);
  }
  return samples;
}

/** The same, with `CALLERS` callers at once, each making n / CALLERS calls. */
async function measureConcurrent(n: number, once: () => Promise<unknown>): Promise<number[]> {
  const all = await Promise.all(Array.from({ length: CALLERS }, () => measure(Math.ceil(n / CALLERS), once)));
  return all.flat();
}

const spawnQuiet = async (cmd: string[], stdin?: string) => {
  const proc = Bun.spawn(cmd, { stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin), stdout: "ignore", stderr: "ignore" });
  await proc.exited;
};

const runner = createHookRunner({ binary: resolve(binary) });
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
const row = (name: string, samples: number[]) => {
  const s = stats(samples);
  rows.push([name, s]);
  console.error(`client bench: ${name}: median ${s.median.toFixed(1)} µs, p99 ${s.p99.toFixed(1)} µs (${s.n})`);
  return s;
};

const sNoMatch = row("runEvent, no match", await measure(EVENTS, () => runner.runEvent("PreToolUse", noMatch)));
const sNoMatch10 = row(`runEvent, no match, ${CALLERS} callers`, await measureConcurrent(EVENTS, () => runner.runEvent("PreToolUse", noMatch)));
const sOne = row("runEvent, one `true` handler", await measure(SPAWNS, () => runner.runEvent("PreToolUse", oneHandler)));
const sOne10 = row(`runEvent, one \`true\` handler, ${CALLERS} callers`, await measureConcurrent(SPAWNS, () => runner.runEvent("PreToolUse", oneHandler)));
const sTrue = row("Bun.spawn /bin/true", await measure(SPAWNS, () => spawnQuiet(["/bin/true"])));
const sSh = row("Bun.spawn sh -c true (the handler alone)", await measure(SPAWNS, () => spawnQuiet(["/bin/sh", "-c", "true"])));
const sSh10 = row(`Bun.spawn sh -c true, ${CALLERS} callers`, await measureConcurrent(SPAWNS, () => spawnQuiet(["/bin/sh", "-c", "true"])));
const line = JSON.stringify(noMatch);
const sRun = row("Bun.spawn levelcode-hooks run, no match (one spawn per event)", await measure(SPAWNS, () => spawnQuiet([resolve(binary), "run"], line)));
runner.close();

const ratio = (a: number, b: number) => (a / b).toFixed(2);
const goals = [
  ["no match, median ≤ 50 µs", `${sNoMatch.median.toFixed(1)} µs`, sNoMatch.median <= 50],
  ["no match ≥ 20× faster than one `run` per event", `${(sRun.median / sNoMatch.median).toFixed(0)}×`, sRun.median / sNoMatch.median >= 20],
  ["one `true` handler ≤ 1.1× `Bun.spawn sh -c true`", `${ratio(sOne.median, sSh.median)}×`, sOne.median <= 1.1 * sSh.median],
  [`${CALLERS} callers: no match, median ≤ 50 µs`, `${sNoMatch10.median.toFixed(1)} µs`, sNoMatch10.median <= 50],
  [`${CALLERS} callers: no match ≥ 20× faster than one \`run\` per event`, `${(sRun.median / sNoMatch10.median).toFixed(0)}×`, sRun.median / sNoMatch10.median >= 20],
  [`${CALLERS} callers: one handler ≤ 1.1× \`sh -c true\` from ${CALLERS} callers`, `${ratio(sOne10.median, sSh10.median)}×`, sOne10.median <= 1.1 * sSh10.median],
] as const;

const md = [
  `# runEvent from Bun through @levelcode/hooks`,
  "",
  `Bun ${Bun.version}, ${process.platform}-${process.arch}; binary ${binary}. Per event, in µs.`,
  "",
  "| measurement | median | p99 | n |",
  "|---|---:|---:|---:|",
  ...rows.map(([name, s]) => `| ${name} | ${s.median.toFixed(1)} | ${s.p99.toFixed(1)} | ${s.n} |`),
  "",
  "| goal | measured | met |",
  "|---|---:|---|",
  ...goals.map(([goal, value, met]) => `| ${goal} | ${value} | ${met ? "yes" : "**no**"} |`),
  "",
  `Also: /bin/true ${sTrue.median.toFixed(1)} µs; the one-handler event costs ${(sOne.median - sSh.median).toFixed(1)} µs over the handler alone.`,
  "",
].join("\n");
const out = join(process.env.CARGO_TARGET_DIR ?? resolve(import.meta.dir, "..", "target"), "bench");
mkdirSync(out, { recursive: true });
writeFileSync(join(out, "client.md"), md);
console.log(md);
