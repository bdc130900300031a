/**
 * The npm packages `make npm` packs into target/npm/: what they hold, and a fresh project that
 * installs them with Bun, offline and from the tarballs only, then blocks a tool call through the
 * installed client (Bun and Node) and through the `levelcode-hooks` shim (bunx and npx).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";

import { platformPackages } from "../src/index.ts";
import { BUN, tempDir, writeProjectHooks } from "./helpers.ts";

// Real processes, on a machine that may be loaded.
setDefaultTimeout(60_000);

const repo = resolve(import.meta.dir, "../../..");
const npmDir = join(process.env.CARGO_TARGET_DIR ?? join(repo, "target"), "npm");
const version = (JSON.parse(readFileSync(join(import.meta.dir, "..", "package.json"), "utf8")) as { version: string }).version;
const mainTarball = join(npmDir, `levelcode-hooks-${version}.tgz`);
const hostPackage = platformPackages()[0]!;
const hostTarball = join(npmDir, `${hostPackage.replace("@levelcode/", "levelcode-")}-${version}.tgz`);

function which(program: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir && existsSync(join(dir, program))) return join(dir, program);
  }
  return null;
}
const node = which("node");
const npx = which("npx");

/** package.json of a tarball. */
function manifest(tarball: string): Record<string, unknown> {
  const out = spawnSync("tar", ["-xzOf", tarball, "package/package.json"], { encoding: "utf8" });
  return JSON.parse(out.stdout) as Record<string, unknown>;
}
function listing(tarball: string): string[] {
  return spawnSync("tar", ["-tzf", tarball], { encoding: "utf8" }).stdout.trim().split("\n").sort();
}

describe("the packed tarballs", () => {
  test("exist: `make npm` wrote them", () => {
    const hint = `run \`make npm\` in ${repo} first (it writes ${npmDir})`;
    expect(existsSync(mainTarball) ? "" : `${mainTarball} is missing: ${hint}`).toBe("");
    expect(existsSync(hostTarball) ? "" : `${hostTarball} is missing: ${hint}`).toBe("");
  });

  test("the platform package holds only the binary and says which platform it is for", () => {
    const pkg = manifest(hostTarball);
    expect(pkg.name).toBe(hostPackage);
    expect(pkg.version).toBe(version);
    expect(pkg.os).toEqual([process.platform]);
    expect(pkg.cpu).toEqual([process.arch]);
    if (process.platform === "linux") expect(pkg.libc).toEqual([hostPackage.endsWith("-musl") ? "musl" : "glibc"]);
    expect(pkg.scripts).toBeUndefined();
    expect(listing(hostTarball)).toEqual(["package/README.md", "package/bin/levelcode-hooks", "package/package.json"]);
  });

  test("the main package pins every platform package exactly, has the shim and no install script", () => {
    const pkg = manifest(mainTarball);
    expect(pkg.name).toBe("@levelcode/hooks");
    expect(pkg.scripts).toBeUndefined();
    expect(pkg.dependencies).toBeUndefined();
    expect(pkg.bin).toEqual({ "levelcode-hooks": "bin/levelcode-hooks.js" });
    const optional = pkg.optionalDependencies as Record<string, string>;
    expect(optional[hostPackage]).toBe(version);
    expect(Object.keys(optional).length).toBeGreaterThanOrEqual(6);
    for (const pinned of Object.values(optional)) expect(pinned).toBe(version);
    const files = listing(mainTarball);
    expect(files).toContain("package/dist/index.js");
    expect(files).toContain("package/dist/index.d.ts");
    expect(files).toContain("package/bin/levelcode-hooks.js");
    expect(files.some((f) => f.includes("test/") || f.includes("node_modules"))).toBe(false);
  });
});

describe("installed into a fresh project with Bun, offline", () => {
  let dir: string;
  let cleanup: () => void;
  let project: string;
  let env: Record<string, string>;

  beforeAll(() => {
    ({ dir, cleanup } = tempDir("levelcode-hooks-install-"));
    project = join(dir, "app");
    mkdirSync(project);
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({
        name: "app",
        private: true,
        type: "module",
        dependencies: { "@levelcode/hooks": `file:${mainTarball}` },
        // The platform package the main one asks for, from its tarball rather than a registry.
        overrides: { [hostPackage]: `file:${hostTarball}` },
      }),
    );
    // No registry can be reached: everything must come from the tarballs.
    writeFileSync(join(project, "bunfig.toml"), '[install]\nregistry = "http://127.0.0.1:9/"\n');
    writeProjectHooks(project, { PreToolUse: [{ matcher: "write_file", hooks: [{ command: "echo 'generated files are read-only' >&2; exit 2" }] }] });
    // A PATH with the runtimes and the system's tools, and no levelcode-hooks of its own.
    const path = [...new Set([dirname(BUN), ...(node ? [dirname(node)] : []), "/usr/bin", "/bin"])].join(delimiter);
    env = {
      PATH: path,
      HOME: join(dir, "home"),
      BUN_INSTALL_CACHE_DIR: join(dir, "bun-cache"),
      npm_config_cache: join(dir, "npm-cache"),
      npm_config_update_notifier: "false",
      npm_config_offline: "true",
      LEVELCODE_TRUST_PROJECT_HOOKS: "1",
    };
    mkdirSync(env.HOME!);
    const install = spawnSync(BUN, ["install"], { cwd: project, env, encoding: "utf8", timeout: 120_000 });
    if (install.status !== 0) throw new Error(`bun install failed:\n${install.stdout}\n${install.stderr}`);
  });
  afterAll(() => cleanup?.());

  const payload = () => JSON.stringify({ event: "PreToolUse", cwd: project, tool_name: "write_file", tool_input: { path: "src/generated/a.ts" } });

  test("installs the main package and this platform's binary, and nothing else", () => {
    expect(readdirSync(join(project, "node_modules", "@levelcode")).sort()).toEqual(["hooks", hostPackage.replace("@levelcode/", "")]);
    expect(existsSync(join(project, "node_modules", hostPackage, "bin", "levelcode-hooks"))).toBe(true);
  });

  const script = (ext: string) => {
    const file = join(project, `guard.${ext}`);
    writeFileSync(
      file,
      `import { createHookRunner, findBinary } from "@levelcode/hooks";\n` +
        `const runner = createHookRunner();\n` +
        `const outcome = await runner.runEvent("PreToolUse", ${payload()});\n` +
        `console.log(JSON.stringify({ binary: findBinary(), blocked: outcome.blocked, reason: outcome.reason, warnings: outcome.warnings }));\n`,
    );
    return file;
  };

  const checkGuard = (run: ReturnType<typeof spawnSync>) => {
    expect(run.stderr?.toString() ?? "").toBe("");
    const answer = JSON.parse(String(run.stdout)) as { binary: string; blocked: boolean; reason: string; warnings: string[] };
    expect(answer).toEqual({
      binary: expect.stringContaining(join("node_modules", hostPackage, "bin", "levelcode-hooks")),
      blocked: true,
      reason: "generated files are read-only",
      warnings: [],
    });
  };

  test("the client, under Bun, blocks through the platform package's binary", () => {
    checkGuard(spawnSync(BUN, [script("ts")], { cwd: project, env, encoding: "utf8", timeout: 60_000 }));
  });

  test.skipIf(!node)("the client, under Node, blocks the same way", () => {
    checkGuard(spawnSync(node!, [script("mjs")], { cwd: project, env, encoding: "utf8", timeout: 60_000 }));
  });

  test("bunx levelcode-hooks runs the binary through the shim", () => {
    const run = spawnSync(BUN, ["x", "levelcode-hooks", "run"], { cwd: project, env, input: payload(), encoding: "utf8", timeout: 60_000 });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain("generated files are read-only");
    expect(JSON.parse(run.stdout).decision).toBe("block");
  });

  test.skipIf(!npx)("npx levelcode-hooks runs the binary through the shim", () => {
    const run = spawnSync(npx!, ["--no-install", "levelcode-hooks", "run"], { cwd: project, env, input: payload(), encoding: "utf8", timeout: 60_000 });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain("generated files are read-only");
    expect(JSON.parse(run.stdout).decision).toBe("block");
  });
});
