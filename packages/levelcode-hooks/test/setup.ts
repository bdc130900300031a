/**
 * Preloaded before every test file: the tests never see the real HOME, and they run the binary
 * built from this repository (`cargo build`), unless LEVELCODE_HOOKS_BINARY names another.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const repo = resolve(import.meta.dir, "../../..");
const built = join(process.env.CARGO_TARGET_DIR ?? join(repo, "target"), "debug", "levelcode-hooks");
const binary = process.env.LEVELCODE_HOOKS_BINARY || built;
if (!existsSync(binary)) {
  throw new Error(`the tests need the levelcode-hooks binary at ${binary}: run \`cargo build\` in ${repo} first, or set LEVELCODE_HOOKS_BINARY`);
}
process.env.LEVELCODE_HOOKS_BINARY = binary;

const home = mkdtempSync(join(tmpdir(), "levelcode-hooks-test-home-"));
process.env.HOME = home;
// LEVELCODE_AGENT and CLAUDECODE: a suite run from inside an agent's shell must still be able
// to record trust (the client's `trust()` refuses under them).
for (const name of ["LEVELCODE_AGENT", "CLAUDECODE", "LEVELCODE_DIR", "LEVELCODE_HOOKS", "LEVELCODE_HOOKS_NO_PROJECT", "LEVELCODE_HOOKS_DEPTH", "LEVELCODE_HOOKS_LOG", "LEVELCODE_TEAM", "NEXT_PUBLIC_CB_ENVIRONMENT", "LEVELCODE_MANAGED_SETTINGS", "XDG_CACHE_HOME"]) {
  delete process.env[name];
}
// Tests that are not about trust run the project layer as before trust existed (contract §13).
process.env.LEVELCODE_TRUST_PROJECT_HOOKS = "1";
process.on("exit", () => rmSync(home, { recursive: true, force: true }));
