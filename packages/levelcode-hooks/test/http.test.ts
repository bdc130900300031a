/**
 * http handlers (contract §19) through this package: a policy service on loopback (Bun's own
 * server), answered by the real dispatcher; `loadHooks` passes them on as written.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";

import { createHookRunner, loadHooks } from "../src/index.ts";
import { perTestDir, writeProjectHooks } from "./helpers.ts";

setDefaultTimeout(60_000);

let dir = "";
const runners = perTestDir((fresh) => {
  dir = fresh;
});

/** What the service received: each request's body. */
const received: unknown[] = [];
const service = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    received.push(await request.json());
    const path = new URL(request.url).pathname;
    if (path === "/deny") return Response.json({ decision: "block", reason: "the policy service says no" });
    if (path === "/down") return new Response("unavailable", { status: 503 });
    return new Response(null, { status: 204 });
  },
});
afterAll(() => service.stop(true));

const url = (path: string) => `http://127.0.0.1:${service.port}${path}`;

describe("http handlers", () => {
  test("a JSON block from the service blocks, with the status in the result", async () => {
    const runner = createHookRunner({ hooks: { PreToolUse: [{ hooks: [{ type: "http", url: url("/deny") }] }] } });
    runners.push(runner);
    const outcome = await runner.runEvent("PreToolUse", { event: "PreToolUse", cwd: dir, tool_name: "write_file", tool_input: { path: "a" } });
    expect(outcome.blocked).toBe(true);
    expect(outcome.reason).toBe("the policy service says no");
    expect(outcome.results[0]!.httpStatus).toBe(200);
    expect(outcome.results[0]!.exitCode).toBeNull();
    expect(received.at(-1)).toMatchObject({ event: "PreToolUse", tool_name: "write_file" });
  });

  test("a status that is not 2xx fails open, and an empty 2xx proceeds", async () => {
    const runner = createHookRunner({
      hooks: { Stop: [{ hooks: [{ type: "http", url: url("/down") }, { type: "http", url: url("/ok") }] }] },
    });
    runners.push(runner);
    const outcome = await runner.runEvent("Stop", { event: "Stop", cwd: dir });
    expect(outcome.blocked).toBe(false);
    expect(outcome.results.map((r) => [r.outcome, r.httpStatus])).toEqual([
      ["error", 503],
      ["proceed", 204],
    ]);
  });

  test("loadHooks passes an http handler on with its url, headers and variables", () => {
    const project = join(dir, "project");
    const handler = { type: "http" as const, url: "https://policy.example.com/hooks", headers: { Authorization: "Bearer $T" }, allowedEnvVars: ["T"] };
    writeProjectHooks(project, { PreToolUse: [{ hooks: [handler] }] });
    const loaded = loadHooks(project);
    expect(loaded.hooks.PreToolUse).toEqual([{ hooks: [{ ...handler, timeout: 10 }] }]);
    expect(loaded.warnings).toEqual([]);
  });
});
