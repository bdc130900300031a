/**
 * One `levelcode-hooks run` for one event: what a runner falls back to when `serve` cannot
 * start. Its answer is read as a server's would be, and a run that gives none is a fault, never
 * a rejection.
 */
import { spawn as nodeSpawn } from "node:child_process";

import type { Reply } from "./server.js";

type Json = Record<string, unknown>;

/**
 * Runs `bin` with `args` (`run` and its flags), the payload `json` on its stdin. `watch` starts
 * the request's watchdog (deadline.ts) and returns what stops it; the run is stopped once it
 * calls its `onHung`.
 */
export function runOnce(bin: string, args: string[], env: Record<string, string>, json: string, watch: (onHung: (ms: number) => void) => () => void): Promise<Reply> {
  return new Promise((resolve) => {
    let stdout = "";
    let settled = false;
    const finish = (reply: Reply) => {
      if (settled) return;
      settled = true;
      stop();
      resolve(reply);
    };
    const child = nodeSpawn(bin, args, { stdio: ["pipe", "pipe", "ignore"], env, windowsHide: true });
    const stop = watch((ms) => {
      child.kill("SIGTERM");
      finish({ kind: "fault", warning: `levelcode-hooks run gave no answer within ${ms} ms; it was stopped`, neverStarted: false });
    });
    child.on("error", (error) => finish({ kind: "fault", warning: `could not run ${bin}: ${error.message}`, neverStarted: false }));
    child.stdin?.on("error", () => {});
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.on("close", (code, signal) => {
      try {
        const answer: unknown = JSON.parse(stdout);
        if (answer !== null && typeof answer === "object" && !Array.isArray(answer)) {
          finish({ kind: "answer", answer: answer as Json });
          return;
        }
      } catch {
        // below
      }
      finish({ kind: "fault", warning: `levelcode-hooks run ended (${signal ?? code}) without an answer`, neverStarted: false });
    });
    child.stdin?.end(json);
  });
}
