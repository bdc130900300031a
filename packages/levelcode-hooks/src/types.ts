/**
 * The types of the hooks API: the configuration a person writes, the payload the agent sends,
 * and the outcome it gets back. The names and the shapes of levelcode's in-process engine are
 * kept, so that a caller switches with its import lines only; the members this dispatcher adds
 * are optional or come last.
 */

/** The events levelcode fires. An event outside these is accepted; nothing can block on it. */
export const HOOK_EVENT_NAMES = [
  "SessionStart",
  "PreToolUse",
  "PostToolUse",
  "Stop",
  "UserPromptSubmit",
  "SessionEnd",
  "PostToolUseFailure",
  "SubagentStart",
  "SubagentStop",
  "PreCompact",
  "Notification",
] as const;

export type HookEventName = (typeof HOOK_EVENT_NAMES)[number];

/**
 * The tool events: those about one tool call, whose matcher is tested against `tool_name`,
 * which their payload must have (tests/client_agreement.rs checks them against the event table).
 */
export const TOOL_EVENT_NAMES = [
  "PreToolUse",
  "PostToolUse",
  "PostToolUseFailure",
] as const satisfies readonly HookEventName[];

/**
 * The payload member a group's matcher is tested against, for the events whose matcher reads
 * one of their own (tool events read `tool_name`; the others have nothing to match).
 */
export const MATCHER_MEMBERS: Readonly<Partial<Record<HookEventName, string>>> = {
  SessionEnd: "reason",
  SubagentStart: "agent_type",
  SubagentStop: "agent_type",
  PreCompact: "trigger",
  Notification: "notification_type",
};

/**
 * The protocols a handler may speak (contract §12), in the dispatcher's table's order:
 * levelcode's own, every handler's default, first; then Claude Code's. tests/client_agreement.rs
 * checks them against the table.
 */
export const HOOK_PROTOCOLS = [
  "levelcode",
  "claude",
] as const;

/**
 * What a sandboxed handler may do beyond the default policy, which writes only in the project,
 * the temporary folder and `/dev/null`, with no network and no signal outside (docs/hooks.md,
 * "Sandboxed handlers").
 */
export type HookSandboxPolicy = {
  /** More paths it may write beneath: absolute, relative to the project root, or `~/…`. */
  write?: string[] | undefined;
  /** `true` allows IP and Unix sockets alike. */
  network?: boolean | undefined;
  /** `true` runs it with what the kernel can enforce, naming the rest in its message. */
  bestEffort?: boolean | undefined;
};

/**
 * A handler's sandbox: `true` the default policy, `false` none, `"best-effort"` the default
 * policy with what the kernel can enforce, an object the default policy widened.
 */
export type HookSandbox = boolean | "best-effort" | HookSandboxPolicy;


/** Which protocol a handler speaks: levelcode's own (default) or Claude Code's. */
export type HookProtocol = (typeof HOOK_PROTOCOLS)[number];

/**
 * One handler: a command run through the shell, a program run directly (argv, or command with
 * args), or (`type: "http"`) a POST of the event to a URL, whose 2xx JSON answer is read as a
 * command's stdout on exit 0.
 */
export type HookHandler = {
  type?: "command" | "http" | undefined;
  /**
   * Shell command string, run with `/bin/sh -c` (`cmd.exe /d /s /c` on Windows); with `args`,
   * the program itself, run without a shell (Claude Code's exec form).
   */
  command?: string | undefined;
  /** With `command`: the program's arguments, each passed exactly as written, no shell. */
  args?: string[] | undefined;
  /** What runs a `command` without `args`: `bash` (the default, `/bin/sh -c`) or `powershell`. */
  shell?: "bash" | "powershell" | undefined;
  /** Direct argv, `argv[0]` looked up on `PATH`, no shell. */
  argv?: string[] | undefined;
  /**
   * `type: "http"`: where the event is POSTed. `https://` is verified against the system's
   * certificates; plain `http://` goes to loopback only unless the settings file says
   * `"allowPlainHttp": true`.
   */
  url?: string | undefined;
  /** `type: "http"`: headers; `$NAME` and `${NAME}` are filled in for `allowedEnvVars` only. */
  headers?: Record<string, string> | undefined;
  /** `type: "http"`: the variables its headers may name. */
  allowedEnvVars?: string[] | undefined;
  /** Seconds, fractions allowed; default 10, at most 600. */
  timeout?: number | undefined;
  /**
   * `block`: the handler's own failure (could not start, timed out, died by a signal, exited
   * with a code other than 0 and 2) blocks an event that can block. Default `proceed`.
   */
  onFailure?: "block" | "proceed" | undefined;
  /** `false`: not run (the in-process engine ignored this key and ran it). */
  enabled?: boolean | undefined;
  /** A label for output and logs. */
  name?: string | undefined;
  protocol?: HookProtocol | undefined;
  /**
   * A permission rule in Claude Code's syntax, `Tool` or `Tool(pattern)`, such as
   * `"Bash(git commit *)"` or `"Edit(src/**)"`: the handler runs only for the tool calls it
   * matches (docs/hooks.md, "Filtering by arguments: if").
   */
  if?: string | undefined;
  /**
   * `true`: run in the background. The event's answer does not wait for it (its result says
   * `started`); what it comes to is handed on with the next answer of the same session
   * (`background`), and a failure is told to the person at the next SessionStart. Its timeout
   * is 600 s unless given.
   */
  async?: boolean | undefined;
  /** What it and everything it starts may do; default: its group's, else its file's. */
  sandbox?: HookSandbox | undefined;
};

/** One group: a matcher and the handlers it runs. */
export type HookMatcher = {
  /** Exact names separated by `|`, `*` or nothing for every tool, else a regular expression. */
  matcher?: string | undefined;
  enabled?: boolean | undefined;
  protocol?: HookProtocol | undefined;
  /** A permission rule each handler of the group must match too (see `HookHandler.if`). */
  if?: string | undefined;
  /** The sandbox of each handler that gives none of its own. */
  sandbox?: HookSandbox | undefined;
  hooks: HookHandler[];
};

/** The `hooks` key of settings.json. */
export type HooksConfig = Partial<Record<HookEventName, HookMatcher[]>> & {
  [event: string]: HookMatcher[] | undefined;
};

/** The payload sent to handlers (JSON on their stdin). Extra members pass through untouched. */
export type HookPayload = {
  event?: HookEventName | string | undefined;
  sessionId?: string | undefined;
  /** The project root the agent works in. */
  cwd: string;
  /** PreToolUse, PostToolUse and PostToolUseFailure only. */
  tool_name?: string | undefined;
  tool_input?: Record<string, unknown> | undefined;
  /** PostToolUse only. */
  tool_result?: unknown;
  /** PostToolUseFailure: what went wrong. */
  error?: unknown;
  /** UserPromptSubmit: the prompt as the person wrote it. */
  prompt?: string | undefined;
  /** SessionEnd: why (`clear`, `logout`, `prompt_input_exit`, `other`); its matcher reads it. */
  reason?: string | undefined;
  /** SubagentStart and SubagentStop: the agent's type (their matcher reads it) and id. */
  agent_type?: string | undefined;
  agent_id?: string | undefined;
  /** PreCompact: `manual` or `auto` (its matcher reads it), and the person's instructions. */
  trigger?: "manual" | "auto" | (string & {}) | undefined;
  custom_instructions?: string | undefined;
  /** Notification: the text, and its kind (its matcher reads it). */
  message?: string | undefined;
  notification_type?: string | undefined;
  /** Stop and SubagentStop: true once a Stop hook has already kept the agent going. */
  stop_hook_active?: boolean | undefined;
  [key: string]: unknown;
};

/** A handler's structured reply on stdout, as `parseHookDecision` reads it. */
export type HookDecision = {
  /** `block` prevents the tool; `ask` needs a person's approval; `allow` / omitted proceeds. */
  decision?: "block" | "allow" | "ask" | undefined;
  reason?: string | undefined;
  /** Added to the model's context. */
  additionalContext?: string | undefined;
  /** PreToolUse: the tool's input for later handlers and for the caller. */
  updatedInput?: Record<string, unknown> | undefined;
  /** `false`: the agent should stop its loop. */
  continue?: boolean | undefined;
  stopReason?: string | undefined;
  /** A message for the person, not the model. */
  systemMessage?: string | undefined;
};

/** What became of one handler. */
export type HookHandlerOutcome =
  | "proceed"
  | "block"
  | "ask"
  | "error"
  | "timeout"
  | "spawn_error"
  | "duplicate"
  | "skipped"
  /** A background handler (`async: true`), not waited for: see `HookEventOutcome.background`. */
  | "started"
  | (string & {});

/** One handler that matched, as the in-process engine reported it. */
export type HookRunResult = {
  /** The handler's `name`, else its `command`, else its `argv` quoted as a shell would. */
  label: string;
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** The handler could not be started (not found, not executable, ...). */
  spawnError?: string | undefined;
} & Partial<HookRunDetail>;

/** What this dispatcher adds about each handler. */
export type HookRunDetail = {
  outcome: HookHandlerOutcome;
  /** Milliseconds the handler ran, `null` when it did not run. */
  durationMs: number | null;
  /** `user`, `data`, `project`, `cli` or `inline`. */
  layer: string;
  /** The settings file, or `null` for an inline configuration. */
  source: string | null;
  matcher: string | null;
  /** The signal that ended it, when one did. */
  signal: number | null;
  /** An http handler's status, in place of a process's `exitCode`; `null` for a process. */
  httpStatus: number | null;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  /** Why the outcome is what it is, when that needs saying. */
  message: string | null;
  /** The handler rewrote the tool's input. */
  rewroteInput: boolean;
};

/** A handler's result as `runEvent` gives it: every detail present. */
export type HookDispatchResult = HookRunResult & HookRunDetail;

/**
 * What a background handler (`async: true`) came to, handed on once with the next answer of its
 * session after it ended (contract §21). Its `additionalContext` and `systemMessage` are also in
 * the outcome's own, labelled with the handler; its failure is also one of the outcome's
 * `warnings`.
 */
export type HookBackgroundResult = {
  label: string;
  /** The event it ran for, which is not the event of the answer that hands it on. */
  event: string;
  outcome: HookHandlerOutcome;
  exitCode: number | null;
  signal: number | null;
  durationMs: number;
  layer: string;
  source: string | null;
  message: string | null;
  additionalContext?: string | undefined;
  systemMessage?: string | undefined;
  /** Its failure (an exit other than 0, a timeout, a spawn error), as a warning. */
  warning?: string | undefined;
};

/** The trust state of a layer inside the project (contract §13). */
export type ProjectTrust = {
  state: "trusted" | "untrusted" | "changed" | "denied" | (string & {});
  digest: string;
  /** The layer's settings file. */
  path: string;
  /**
   * The layer: `project` (`.levelcode/settings.json`), or with `claudeCodeHooks` on,
   * `claude-project` or `claude-local` (contract §12); each has its own digest.
   */
  layer?: string | undefined;
  /** How many project handlers wait for trust. */
  handlers: number;
};

/**
 * The answer to one event, as the in-process engine's type has it, with this dispatcher's
 * members optional: code written for the engine that builds such objects itself (a default
 * when hooks are off, a test's stub) still type-checks. `runEvent` gives the stricter
 * `HookDispatchOutcome`.
 */
export type HookEventOutcome = {
  /** The tool must not run: a handler blocked it, or asked for approval (see `decision`). */
  blocked: boolean;
  /** The blocking (or asking) handlers' reason. */
  reason?: string | undefined;
  /** Every handler's additionalContext, joined with newlines. */
  additionalContext: string;
  results: HookRunResult[];
  /** `ask`: the tool needs a person's approval; `blocked` is true too, to stay on the safe side. */
  decision?: "proceed" | "block" | "ask" | undefined;
  /** PreToolUse: the tool's input after the handlers' rewrites. */
  updatedInput?: Record<string, unknown> | undefined;
  /** A handler asked the agent to stop its loop. */
  stop?: { reason: string } | undefined;
  /** Messages for the person, not the model. */
  systemMessage?: string | undefined;
  /**
   * SessionStart: the `export` lines Claude Code scripts wrote to `CLAUDE_ENV_FILE`, as written,
   * for the agent to apply to the environment of the commands it runs.
   */
  sessionEnv?: string | undefined;
  /** Problems with the settings, and with reaching the dispatcher. */
  warnings?: string[] | undefined;
  /** Present when the project layer's hooks did not run for want of trust. */
  projectTrust?: ProjectTrust | undefined;
  /** The dispatch's own time in milliseconds, as the dispatcher measured it. */
  durationMs?: number | undefined;
  /** Background handlers of the session that ended since its last answer, handed on once. */
  background?: HookBackgroundResult[] | undefined;
  /**
   * SessionStart: what the person should know and has not been told in this process (project
   * hooks that did not run for want of trust, a settings file that could not be read, ...). Also
   * appended to `additionalContext`, which levelcode shows the person (docs/levelcode.md).
   */
  notices?: string[] | undefined;
};

/** The answer `runEvent` resolves: the outcome with everything this dispatcher always says. */
export type HookDispatchOutcome = HookEventOutcome & {
  results: HookDispatchResult[];
  decision: "proceed" | "block" | "ask";
  warnings: string[];
  durationMs: number;
};
