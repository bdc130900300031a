#!/usr/bin/env node
// The `levelcode-hooks` command of the npm package (`npx levelcode-hooks ...`): runs this
// platform's binary with the same arguments, standard streams and exit status.
import { spawnSync } from "node:child_process";
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { findBinary } from "../dist/binary.js";

const self = realpathSync(fileURLToPath(import.meta.url));
/** On PATH this shim may come first (node_modules/.bin): never run it again. */
const isSelf = (path) => {
  try {
    return realpathSync(path) === self;
  } catch {
    return false;
  }
};

let binary;
try {
  binary = findBinary({ skip: isSelf });
} catch (error) {
  process.stderr.write(`levelcode-hooks: ${error.message}\n`);
  process.exit(1);
}

const run = spawnSync(binary, process.argv.slice(2), { stdio: "inherit" });
if (run.error) {
  process.stderr.write(`levelcode-hooks: could not run ${binary}: ${run.error.message}\n`);
  process.exit(1);
}
if (run.signal) process.kill(process.pid, run.signal);
process.exit(run.status ?? 1);
