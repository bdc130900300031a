/** Shared by the tests: temporary projects, and asking the binary what it supports. */
import { afterEach, beforeEach } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const BUN = process.execPath;
export const BINARY = process.env.LEVELCODE_HOOKS_BINARY!;

/** A fresh temporary folder, removed by `cleanup()`. */
export function tempDir(prefix = "levelcode-hooks-test-"): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * For each test of the calling file: a fresh temporary folder, handed to `onFolder` before the
 * test and removed after it, and the returned list's runners closed after it.
 */
export function perTestDir(onFolder: (dir: string) => void): Array<{ close: () => void }> {
  const runners: Array<{ close: () => void }> = [];
  let cleanup = () => {};
  beforeEach(() => {
    const fresh = tempDir();
    cleanup = fresh.cleanup;
    onFolder(fresh.dir);
  });
  afterEach(() => {
    for (const runner of runners.splice(0)) runner.close();
    cleanup();
  });
  return runners;
}

/** Writes `<project>/.levelcode/settings.json` with these hooks. */
export function writeProjectHooks(project: string, hooks: unknown): string {
  mkdirSync(join(project, ".levelcode"), { recursive: true });
  const file = join(project, ".levelcode", "settings.json");
  writeFileSync(file, JSON.stringify({ hooks }));
  return file;
}

/** Writes an executable script and returns its path. */
export function writeScript(dir: string, name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text, { mode: 0o755 });
  return file;
}

const supported = new Map<string, boolean>();

function serveAnswers(lines: string[], env: NodeJS.ProcessEnv = process.env): Record<string, unknown>[] {
  const run = spawnSync(BINARY, ["serve"], { input: lines.join("\n") + "\n", encoding: "utf8", env, timeout: 20_000 });
  return run.stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/**
 * Whether the binary under test has a feature of the contract that is built separately:
 * `inline` (§14 `options.hooks`), `trust` (§13 and the §14 trust ops), `rewrite` (§11 `ask`,
 * `updatedInput`, `stop`, `systemMessage`). Asked of the binary itself, once per feature.
 */
export function serverSupports(feature: "inline" | "trust" | "rewrite"): boolean {
  const known = supported.get(feature);
  if (known !== undefined) return known;
  const { dir, cleanup } = tempDir();
  let answer = false;
  try {
    if (feature === "inline") {
      const [reply] = serveAnswers([JSON.stringify({ id: 1, event: "Stop", cwd: dir, options: { hooks: { Stop: [{ hooks: [{ command: "echo '{\"additionalContext\":\"inline\"}'" }] }] } } })]);
      answer = reply?.additionalContext === "inline";
    } else if (feature === "trust") {
      const [reply] = serveAnswers([JSON.stringify({ id: 1, op: "trust_status", options: { project_dir: dir } })]);
      answer = reply !== undefined && typeof reply.error !== "string";
    } else {
      const settings = join(dir, "settings.json");
      writeFileSync(settings, JSON.stringify({ hooks: { PreToolUse: [{ hooks: [{ command: "echo '{\"decision\":\"ask\",\"reason\":\"r\"}'" }] }] } }));
      const [reply] = serveAnswers([JSON.stringify({ id: 1, event: "PreToolUse", tool_name: "write_file", cwd: dir, options: { settings: [settings] } })]);
      answer = reply?.decision === "ask";
    }
  } finally {
    cleanup();
  }
  supported.set(feature, answer);
  return answer;
}

/** Whether a process is still alive. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
