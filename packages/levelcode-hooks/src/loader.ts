/**
 * The merged configuration, as the dispatcher itself reads it: `levelcode-hooks list --json`.
 * Nothing here parses settings files, so what a caller is shown is what runs.
 */
import { execFile, spawnSync } from "node:child_process";
import { homedir } from "node:os";
import { join } from "node:path";

import { findBinary } from "./binary.js";
import { HOOK_PROTOCOLS, type HookHandler, type HookMatcher, type HookProtocol, type HookSandbox, type HookSandboxPolicy, type HooksConfig, type ProjectTrust } from "./types.js";

export type LoadedHooks = {
  /** The enabled hooks of every layer, in layer order, grouped as they were written. */
  hooks: HooksConfig;
  /** Problems found in the settings files (each names its file and entry). */
  warnings: string[];
  /** The settings files that were read. */
  sources: string[];
  /** The project layer's trust state, when its hooks wait for trust. */
  projectTrust?: ProjectTrust | undefined;
};

type Json = Record<string, unknown>;

/** Whether `name` is a protocol of `HOOK_PROTOCOLS`. */
function isProtocol(name: unknown): name is HookProtocol {
  return (HOOK_PROTOCOLS as readonly unknown[]).includes(name);
}

/** The arguments of `list --json` for a project (and optionally what would run for an event). */
export function listArgs(projectRoot: string, event?: string, tool?: string): string[] {
  const args = ["list", "--json", "--project-dir", projectRoot];
  if (event) args.push("--event", event);
  if (tool) args.push("--tool", tool);
  return args;
}

/** `list --json`, synchronously; the listing, or an error message. */
function listSync(projectRoot: string, env?: NodeJS.ProcessEnv): Json | string {
  let binary: string;
  try {
    binary = findBinary({ env: env ?? process.env });
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  const run = spawnSync(binary, listArgs(projectRoot), {
    encoding: "utf8",
    env: env ?? process.env,
    timeout: 30_000,
    maxBuffer: 64 * 1024 * 1024,
    windowsHide: true,
  });
  if (run.error) return `could not run ${binary} list: ${run.error.message}`;
  return parseListing(run.stdout, run.stderr, binary);
}

/** `list --json`, without blocking the event loop. */
export function listAsync(binary: string, args: string[], env: NodeJS.ProcessEnv): Promise<Json | string> {
  return new Promise((resolve) => {
    execFile(binary, args, { encoding: "utf8", env, timeout: 30_000, maxBuffer: 64 * 1024 * 1024, windowsHide: true }, (error, stdout, stderr) => {
      if (error && !stdout) resolve(`could not run ${binary} list: ${error.message}`);
      else resolve(parseListing(stdout, stderr, binary));
    });
  });
}

function parseListing(stdout: string, stderr: string, binary: string): Json | string {
  try {
    const listing: unknown = JSON.parse(stdout);
    if (listing !== null && typeof listing === "object" && !Array.isArray(listing)) {
      const error = (listing as Json).error;
      return typeof error === "string" ? `${binary} list: ${error}` : (listing as Json);
    }
  } catch {
    // below
  }
  return `${binary} list did not print a listing: ${(stderr || stdout).trim().slice(0, 300)}`;
}

/**
 * Reads the hooks of the user, data and project layers for a project, as `run` would merge
 * them, with every warning. Never throws: a problem (no binary, say) is a warning.
 */
export function loadHooks(projectRoot: string): LoadedHooks {
  const listing = listSync(projectRoot);
  if (typeof listing === "string") return { hooks: {}, warnings: [listing], sources: [] };

  const sources = (Array.isArray(listing.layers) ? listing.layers : [])
    .filter((layer): layer is Json => typeof layer === "object" && layer !== null && (layer as Json).state === "read")
    .map((layer) => String(layer.file));

  const hooks: HooksConfig = {};
  const unknown: string[] = [];
  // Handlers come in layer, group and handler order; `path` says which group each belongs to.
  let lastGroup = "";
  for (const entry of Array.isArray(listing.handlers) ? listing.handlers : []) {
    if (typeof entry !== "object" || entry === null) continue;
    const h = entry as Json;
    if (h.enabled === false || (typeof h.state === "string" && h.state !== "enabled" && h.state !== "would_run" && h.state !== "no_match")) {
      continue;
    }
    const event = String(h.event);
    const path = typeof h.path === "string" ? h.path : "";
    const groupKey = `${String(h.file)}\0${path.replace(/\.hooks\[\d+\]$/, "")}`;
    const handler: HookHandler = {};
    if (typeof h.command === "string") handler.command = h.command;
    if (Array.isArray(h.args)) handler.args = h.args.map(String);
    if (h.shell === "powershell") handler.shell = h.shell;
    if (Array.isArray(h.argv)) handler.argv = h.argv.map(String);
    // An http handler (contract §19) is passed on with what it sends and where.
    if (typeof h.url === "string") {
      handler.type = "http";
      handler.url = h.url;
      if (h.headers !== null && typeof h.headers === "object" && !Array.isArray(h.headers)) {
        handler.headers = Object.fromEntries(Object.entries(h.headers as Json).map(([k, v]) => [k, String(v)]));
      }
      if (Array.isArray(h.allowedEnvVars)) handler.allowedEnvVars = h.allowedEnvVars.map(String);
    }
    if (typeof h.timeout === "number") handler.timeout = h.timeout;
    if (typeof h.name === "string") handler.name = h.name;
    // Only a protocol that is not the default: what a person would have had to write. One this
    // package does not know (a newer binary's) is said, not dropped.
    if (isProtocol(h.protocol) && h.protocol !== HOOK_PROTOCOLS[0]) handler.protocol = h.protocol;
    else if (typeof h.protocol === "string" && !isProtocol(h.protocol)) {
      unknown.push(`${String(h.file)}: ${path}: protocol "${h.protocol}" is not one this version of @levelcode/hooks knows (${HOOK_PROTOCOLS.join(", ")}); update the package to see it`);
    }
    if (typeof h.if === "string") handler.if = h.if;
    if (h.async === true) handler.async = true;
    const sandbox = sandboxOf(h.sandbox);
    if (sandbox !== undefined) handler.sandbox = sandbox;
    const groups = (hooks[event] ??= []);
    if (groupKey !== lastGroup || groups.length === 0) {
      const group: HookMatcher = { hooks: [] };
      if (typeof h.matcher === "string") group.matcher = h.matcher;
      if (typeof h.group_if === "string") group.if = h.group_if;
      groups.push(group);
      lastGroup = groupKey;
    }
    groups[groups.length - 1]!.hooks.push(handler);
  }

  const warnings = [...(Array.isArray(listing.warnings) ? listing.warnings.map(String) : []), ...unknown];
  const loaded: LoadedHooks = { hooks, warnings, sources };
  const trust = listing.project_trust;
  if (trust !== null && typeof trust === "object") {
    const t = trust as Json;
    loaded.projectTrust = {
      state: String(t.state ?? "untrusted"),
      digest: String(t.digest ?? ""),
      path: String(t.path ?? ""),
      handlers: typeof t.handlers === "number" ? t.handlers : 0,
    };
    if (typeof t.layer === "string") loaded.projectTrust.layer = t.layer;
  }
  return loaded;
}

/**
 * A handler's sandbox as `list --json` gives it (its policy, wherever it was written) in the
 * form settings write it: `true` for the default policy, `"best-effort"`, or an object.
 */
function sandboxOf(listed: unknown): HookSandbox | undefined {
  if (listed === null || typeof listed !== "object") return undefined;
  const policy = listed as Json;
  const write = Array.isArray(policy.write) ? policy.write.map(String) : [];
  const network = policy.network === true;
  const bestEffort = policy.best_effort === true;
  if (write.length === 0 && !network) return bestEffort ? "best-effort" : true;
  const widened: HookSandboxPolicy = {};
  if (write.length > 0) widened.write = write;
  if (network) widened.network = true;
  if (bestEffort) widened.bestEffort = true;
  return widened;
}

function configEnvSuffix(env: NodeJS.ProcessEnv): string {
  const name = env.NEXT_PUBLIC_CB_ENVIRONMENT;
  return name && name !== "prod" ? `-${name}` : "";
}

/**
 * The settings files of the layers, in load order: user, data, project, and with
 * `"claudeCodeHooks": true` Claude Code's own files among them (contract §12). Asked of the
 * dispatcher when it can be found, so the answer is the files it reads; the three of contract §3
 * worked out here when it cannot.
 */
export function getHookConfigPaths(projectRoot: string): string[] {
  const listing = listSync(projectRoot);
  if (typeof listing !== "string" && Array.isArray(listing.layers)) {
    const files = listing.layers.map((layer) => String((layer as Json).file));
    if (files.length > 0) return files;
  }
  const home = process.env.HOME || homedir();
  const data = process.env.LEVELCODE_DIR || join(home, ".levelcode");
  return [
    join(home, ".config", `levelcode${configEnvSuffix(process.env)}`, "settings.json"),
    join(data, "settings.json"),
    join(projectRoot, ".levelcode", "settings.json"),
  ];
}
