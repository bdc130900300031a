/**
 * `make npm`: writes this machine's platform package and the main package, and packs both into
 * an output folder (target/npm/), in the layout of esbuild and biome: the main package carries
 * the client and a `bin/` shim, and pins one optional dependency per platform, each of which
 * holds only the binary and says which `os`, `cpu` and (Linux) `libc` it is for.
 *
 *   bun scripts/npm.ts --binary PATH --out DIR
 */
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

type Platform = { os: string; cpu: string; libc?: string };

/** Every platform a release publishes a package for: `@levelcode/hooks-<key>`. */
export const PLATFORMS: Record<string, Platform> = {
  "linux-x64-gnu": { os: "linux", cpu: "x64", libc: "glibc" },
  "linux-arm64-gnu": { os: "linux", cpu: "arm64", libc: "glibc" },
  "linux-x64-musl": { os: "linux", cpu: "x64", libc: "musl" },
  "linux-arm64-musl": { os: "linux", cpu: "arm64", libc: "musl" },
  "darwin-x64": { os: "darwin", cpu: "x64" },
  "darwin-arm64": { os: "darwin", cpu: "arm64" },
  "win32-x64": { os: "win32", cpu: "x64" },
};

function arg(name: string): string {
  const at = process.argv.indexOf(name);
  const value = at >= 0 ? process.argv[at + 1] : undefined;
  if (!value) throw new Error(`usage: bun scripts/npm.ts --binary PATH --out DIR (missing ${name})`);
  return value;
}

function run(cmd: string[], cwd: string): string {
  const result = spawnSync(cmd[0]!, cmd.slice(1), { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (result.status !== 0) throw new Error(`${cmd.join(" ")} failed in ${cwd} (${result.error?.message ?? `status ${result.status}`})`);
  return result.stdout;
}

/** This machine's platform key; on Linux the static binary is built against glibc. */
function hostKey(): string {
  const key = process.platform === "linux" ? `linux-${process.arch}-gnu` : `${process.platform}-${process.arch}`;
  if (!PLATFORMS[key]) throw new Error(`no platform package is defined for ${key}; add it to PLATFORMS in scripts/npm.ts`);
  return key;
}

const root = resolve(import.meta.dir, "..");
const binary = resolve(arg("--binary"));
const out = resolve(arg("--out"));
const main = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as Record<string, unknown>;
const version = String(main.version);

rmSync(out, { recursive: true, force: true });
const stage = join(out, "stage");
mkdirSync(stage, { recursive: true });

// The platform package: the binary and nothing else.
const key = hostKey();
const platform = PLATFORMS[key]!;
const platformDir = join(stage, `hooks-${key}`);
mkdirSync(join(platformDir, "bin"), { recursive: true });
const exe = process.platform === "win32" ? "levelcode-hooks.exe" : "levelcode-hooks";
copyFileSync(binary, join(platformDir, "bin", exe));
chmodSync(join(platformDir, "bin", exe), 0o755);
writeFileSync(
  join(platformDir, "package.json"),
  JSON.stringify(
    {
      name: `@levelcode/hooks-${key}`,
      version,
      description: `The levelcode-hooks binary for ${key}; installed by @levelcode/hooks`,
      license: main.license,
      os: [platform.os],
      cpu: [platform.cpu],
      ...(platform.libc ? { libc: [platform.libc] } : {}),
      files: [`bin/${exe}`],
      preferUnplugged: true,
    },
    null,
    2,
  ) + "\n",
);
writeFileSync(join(platformDir, "README.md"), `# @levelcode/hooks-${key}\n\nThe \`levelcode-hooks\` binary for ${key}. Install \`@levelcode/hooks\`, which depends on this package.\n`);

// The main package: the client built for Node and Bun, its sources, the shim.
run([join(root, "node_modules", ".bin", "tsc"), "-p", "tsconfig.build.json", "--outDir", join(stage, "hooks", "dist")], root);
const mainDir = join(stage, "hooks");
cpSync(join(root, "src"), join(mainDir, "src"), { recursive: true });
cpSync(join(root, "bin"), join(mainDir, "bin"), { recursive: true });
copyFileSync(join(root, "README.md"), join(mainDir, "README.md"));
const { devDependencies: _dev, scripts: _scripts, ...published } = main;
published.optionalDependencies = Object.fromEntries(Object.keys(PLATFORMS).map((k) => [`@levelcode/hooks-${k}`, version]));
writeFileSync(join(mainDir, "package.json"), JSON.stringify(published, null, 2) + "\n");

for (const dir of [platformDir, mainDir]) {
  const file = run(["npm", "pack", "--silent", "--pack-destination", out], dir).trim().split("\n").pop();
  console.log(join(out, file ?? "?"));
}
rmSync(stage, { recursive: true, force: true });
