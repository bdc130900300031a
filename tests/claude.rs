//! Claude Code hook scripts run unmodified (contract §12), each through `run` and through
//! `serve`: the scripts here are written the way Claude Code's documentation and public
//! repositories write them, in Python and in shell, and know nothing of levelcode.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::{Output, Test};

/// Blocks dangerous shell commands by exiting 2 with the reason on stderr.
const BASH_GUARD_SH: &str = r#"#!/bin/sh
input=$(cat)
case "$input" in
  *'"hook_event_name":"PreToolUse"'*) ;;
  *) echo "not a PreToolUse payload: $input" >&2; exit 1 ;;
esac
command=$(printf '%s' "$input" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tool_input"]["command"])')
case "$command" in
  *"rm -rf"*|*"git push --force"*)
    echo "Blocked: '$command' is destructive; ask the user to run it themselves" >&2
    exit 2 ;;
esac
exit 0
"#;

/// Denies writes to `.env` and to `secrets/` with a JSON `permissionDecision`.
const WRITE_GUARD_PY: &str = r#"import json, os, sys

data = json.load(sys.stdin)
tool_input = data.get("tool_input", {})
file_path = tool_input.get("file_path", "")
project = os.environ["CLAUDE_PROJECT_DIR"]
relative = os.path.relpath(file_path, project)
if os.path.basename(file_path) == ".env" or relative.startswith("secrets" + os.sep):
    print(json.dumps({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": f"{relative} is protected ({data['tool_name']})",
        }
    }))
sys.exit(0)
"#;

/// Asks before `git push`.
const ASK_PY: &str = r#"import json, sys

data = json.load(sys.stdin)
if data["tool_input"].get("command", "").startswith("git push"):
    print(json.dumps({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "ask",
            "permissionDecisionReason": "pushing publishes commits; confirm first",
        },
        "systemMessage": "a push is waiting for your approval",
    }))
"#;

/// Rewrites `npm` to `bun`.
const REWRITE_NPM_PY: &str = r#"import json, sys

data = json.load(sys.stdin)
command = data["tool_input"]["command"]
if command.startswith("npm "):
    print(json.dumps({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {**data["tool_input"], "command": "bun " + command[4:]},
        }
    }))
"#;

/// Appends `--frozen-lockfile` to `bun install`: it only fires when it sees the first rewrite.
const REWRITE_FROZEN_PY: &str = r#"import json, sys

data = json.load(sys.stdin)
with open("second-saw.json", "w") as f:
    json.dump(data["tool_input"], f)
command = data["tool_input"]["command"]
if command == "bun install":
    print(json.dumps({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "updatedInput": {"command": command + " --frozen-lockfile"},
        }
    }))
"#;

/// Stops the agent.
const STOP_SH: &str = r#"#!/bin/sh
cat > /dev/null
echo '{"continue": false, "stopReason": "budget for this session is spent"}'
"#;

/// Plain text on SessionStart, and an export line for the session's commands.
const SESSION_START_SH: &str = r#"#!/bin/sh
cat > /dev/null
echo "Current branch: main; 3 files changed"
echo "export NODE_ENV=development" >> "$CLAUDE_ENV_FILE"
echo "$CLAUDE_ENV_FILE" > env-file-name.txt
"#;

/// Feedback for the model after a command, by exit 2.
const POST_LINT_PY: &str = r#"import json, sys

data = json.load(sys.stdin)
response = data["tool_response"]
if response.get("exitCode", 0) != 0:
    print(f"the command failed: {response.get('stderr', '').strip()}", file=sys.stderr)
    sys.exit(2)
"#;

/// Blocks reading `.env`, and logs every path it was asked about.
const READ_GUARD_PY: &str = r#"import json, sys

data = json.load(sys.stdin)
path = data["tool_input"]["file_path"]
with open("read-log.txt", "a") as f:
    f.write(path + "\n")
if path.endswith("/.env"):
    print(f"reading {path} would leak secrets", file=sys.stderr)
    sys.exit(2)
"#;

/// Returns true when the test may go on: `python3` runs, or the test fails unless
/// `LEVELCODE_HOOKS_TEST_SKIP` names `python3` (then it returns early).
fn have_python() -> bool {
    crate::common::require(
        "python3",
        crate::common::runs("python3", &["--version"]),
        "Claude Code hook scripts are written in Python",
    )
}

/// A test whose user layer holds `hooks` and whose project holds the scripts under
/// `.claude/hooks/`.
fn setup(hooks: &Value) -> Test {
    Test::new()
        .user_settings(json!({ "hooks": hooks }))
        .project_file(".claude/hooks/bash_guard.sh", BASH_GUARD_SH)
        .project_file(".claude/hooks/write_guard.py", WRITE_GUARD_PY)
        .project_file(".claude/hooks/ask.py", ASK_PY)
        .project_file(".claude/hooks/rewrite_npm.py", REWRITE_NPM_PY)
        .project_file(".claude/hooks/rewrite_frozen.py", REWRITE_FROZEN_PY)
        .project_file(".claude/hooks/stop.sh", STOP_SH)
        .project_file(".claude/hooks/session_start.sh", SESSION_START_SH)
        .project_file(".claude/hooks/post_lint.py", POST_LINT_PY)
        .project_file(".claude/hooks/read_guard.py", READ_GUARD_PY)
}

/// One Claude Code group.
fn claude_group(matcher: Option<&str>, commands: &[&str]) -> Value {
    let hooks: Vec<Value> = commands
        .iter()
        .map(|c| json!({"type": "command", "command": c}))
        .collect();
    let mut group = json!({"protocol": "claude", "hooks": hooks});
    if let Some(m) = matcher {
        group["matcher"] = json!(m);
    }
    group
}

/// The same dispatch through `run` and through `serve`: each output, and the exit status `run`
/// gave (`serve` answers on a line and exits 0).
fn both(hooks: &Value, payload: &Value) -> Vec<(&'static str, Output, Option<i32>)> {
    let run = setup(hooks).payload(payload).run();
    let status = run.status();
    let serve = setup(hooks)
        .arg("serve")
        .stdin(format!("{payload}\n"))
        .run();
    assert_eq!(serve.status(), 0, "serve: {}", serve.stderr());
    vec![("run", run, Some(status)), ("serve", serve, None)]
}

fn bash(command: &str) -> Value {
    json!({"event": "PreToolUse", "tool_name": "run_terminal_command",
           "tool_input": {"command": command, "process_type": "SYNC", "cwd": "web", "timeout_seconds": 30}})
}

#[test]
fn an_exit_2_bash_guard_blocks_with_its_stderr() {
    if !have_python() {
        return;
    }
    let hooks =
        json!({"PreToolUse": [claude_group(Some("Bash"), &["sh .claude/hooks/bash_guard.sh"])]});
    for (mode, out, status) in both(&hooks, &bash("rm -rf build")) {
        let json = out.json();
        assert_eq!(json["decision"], "block", "{mode}: {json}");
        assert_eq!(
            json["reason"],
            "Blocked: 'rm -rf build' is destructive; ask the user to run it themselves"
        );
        assert_eq!(json["handlers"][0]["protocol"], "claude");
        if let Some(status) = status {
            assert_eq!(status, 2);
            assert!(out.stderr().contains("is destructive"));
        }
    }
    for (mode, out, status) in both(&hooks, &bash("ls -la")) {
        assert_eq!(out.decision(), "proceed", "{mode}: {}", out.stdout());
        assert_eq!(out.outcomes(), ["proceed"], "{mode}");
        assert_eq!(status.unwrap_or(0), 0);
    }
}

/// Claude Code reads only stderr on exit 2: a guard that exits 2 with its reason on stdout
/// blocks with the default reason, and `-v` shows that reason, the one the decision used, not
/// the one stdout holds.
#[test]
fn the_trace_gives_the_reason_an_exit_2_with_empty_stderr_blocked_with() {
    let guard = json!({"name": "stdout-guard",
                       "command": r#"echo '{"reason":"only on stdout"}'; exit 2"#});
    let hooks = json!({"PreToolUse": [
        {"matcher": "Bash", "protocol": "claude", "hooks": [guard]}
    ]});
    let out = setup(&hooks).arg("-v").payload(&bash("ls")).run();
    assert_eq!(out.status(), 2, "{}", out.stdout());
    let default = "blocked by PreToolUse hook: stdout-guard";
    assert_eq!(out.json()["reason"], default);
    let trace = out.stderr();
    let reason = trace
        .lines()
        .find_map(|line| line.split_once("reason: ").map(|(_, r)| r))
        .unwrap_or_else(|| panic!("no reason in the trace: {trace}"));
    assert_eq!(reason, default, "{trace}");
    assert!(!reason.contains("only on stdout"), "{trace}");
}

#[test]
fn a_json_deny_guard_on_write_and_edit_blocks() {
    if !have_python() {
        return;
    }
    let hooks = json!({"PreToolUse": [claude_group(Some("Write|Edit"), &["python3 .claude/hooks/write_guard.py"])]});
    let cases = [
        (
            json!({"event": "PreToolUse", "tool_name": "write_file",
                   "tool_input": {"path": "config/../.env", "content": "KEY=1", "instructions": "add a key"}}),
            Some(".env is protected (Write)"),
        ),
        (
            json!({"event": "PreToolUse", "tool_name": "str_replace",
                   "tool_input": {"path": "secrets/key.txt", "replacements": [{"old": "a", "new": "b"}]}}),
            Some("secrets/key.txt is protected (Edit)"),
        ),
        (
            // Two replacements: Claude Code calls it MultiEdit; a guard on Edit still sees it.
            json!({"event": "PreToolUse", "tool_name": "str_replace",
                   "tool_input": {"path": "secrets/key.txt", "replacements": [{"old": "a", "new": "b"}, {"old": "c", "new": "d"}]}}),
            Some("secrets/key.txt is protected (MultiEdit)"),
        ),
        (
            json!({"event": "PreToolUse", "tool_name": "write_file",
                   "tool_input": {"path": "src/app.ts", "content": "x"}}),
            None,
        ),
    ];
    for (payload, reason) in cases {
        for (mode, out, status) in both(&hooks, &payload) {
            let json = out.json();
            match reason {
                Some(reason) => {
                    assert_eq!(json["decision"], "block", "{mode}: {json}");
                    assert_eq!(json["reason"], reason, "{mode}");
                    assert_eq!(status.unwrap_or(2), 2);
                }
                None => {
                    assert_eq!(json["decision"], "proceed", "{mode}: {json}");
                    assert_eq!(json["handlers"][0]["exit_code"], 0);
                }
            }
        }
    }
    // A native group with the same matcher never sees levelcode's tools.
    let native = json!({"PreToolUse": [{"matcher": "Write|Edit", "hooks": [{"command": "python3 .claude/hooks/write_guard.py"}]}]});
    let out = setup(&native)
        .payload(&json!({"event": "PreToolUse", "tool_name": "write_file", "tool_input": {"path": ".env"}}))
        .run();
    assert_eq!(out.handlers().len(), 0, "{}", out.stdout());
}

#[test]
fn an_ask_asks_and_exits_2() {
    if !have_python() {
        return;
    }
    let hooks =
        json!({"PreToolUse": [claude_group(Some("Bash"), &["python3 .claude/hooks/ask.py"])]});
    for (mode, out, status) in both(&hooks, &bash("git push origin main")) {
        let json = out.json();
        assert_eq!(json["decision"], "ask", "{mode}: {json}");
        assert_eq!(json["reason"], "pushing publishes commits; confirm first");
        assert_eq!(
            json["system_message"],
            "a push is waiting for your approval"
        );
        assert_eq!(json["handlers"][0]["outcome"], "ask");
        if let Some(status) = status {
            assert_eq!(status, 2, "an ask exits 2 like a block");
        }
    }
}

#[test]
fn two_rewriters_chain_and_the_second_sees_the_first() {
    if !have_python() {
        return;
    }
    let hooks = json!({"PreToolUse": [claude_group(Some("Bash"), &[
        "python3 .claude/hooks/rewrite_npm.py",
        "python3 .claude/hooks/rewrite_frozen.py",
    ])]});
    for (mode, out, status) in both(&hooks, &bash("npm install")) {
        let json = out.json();
        assert_eq!(json["decision"], "proceed", "{mode}: {json}");
        // Back in levelcode's form: the fields Claude Code has no place for are kept.
        assert_eq!(
            json["updated_input"],
            json!({"command": "bun install --frozen-lockfile", "process_type": "SYNC", "cwd": "web", "timeout_seconds": 30}),
            "{mode}"
        );
        assert_eq!(json["handlers"][0]["rewrote_input"], true);
        assert_eq!(json["handlers"][1]["rewrote_input"], true);
        let saw: Value = serde_json::from_str(&out.project_text("second-saw.json")).unwrap();
        assert_eq!(
            saw,
            json!({"command": "bun install", "description": "", "timeout": 30000, "run_in_background": false}),
            "{mode}"
        );
        assert_eq!(status.unwrap_or(0), 0);
    }
}

#[test]
fn continue_false_stops_the_agent() {
    let hooks = json!({
        "PreToolUse": [claude_group(None, &["sh .claude/hooks/stop.sh", "echo never"])],
        "PostToolUse": [claude_group(None, &["sh .claude/hooks/stop.sh", "echo never"])],
    });
    for (mode, out, status) in both(&hooks, &bash("ls")) {
        let json = out.json();
        assert_eq!(json["decision"], "block", "{mode}: {json}");
        assert_eq!(json["reason"], "budget for this session is spent");
        assert_eq!(
            json["stop"],
            json!({"reason": "budget for this session is spent"})
        );
        assert_eq!(out.outcomes(), ["stop", "skipped"], "{mode}");
        assert_eq!(status.unwrap_or(2), 2);
    }
    let post = json!({"event": "PostToolUse", "tool_name": "run_terminal_command", "tool_input": {"command": "ls"}});
    for (mode, out, status) in both(&hooks, &post) {
        let json = out.json();
        assert_eq!(json["decision"], "proceed", "{mode}: {json}");
        assert_eq!(json["stop"]["reason"], "budget for this session is spent");
        assert_eq!(out.outcomes(), ["stop", "skipped"], "{mode}");
        assert_eq!(status.unwrap_or(0), 0);
    }
}

#[test]
fn session_start_plain_text_is_context_and_the_env_file_comes_back() {
    let hooks = json!({"SessionStart": [
        claude_group(Some("startup"), &["sh .claude/hooks/session_start.sh"]),
        claude_group(Some("resume|compact"), &["echo not on startup"]),
        claude_group(None, &["test -n \"$CLAUDE_PROJECT_DIR\" && echo \"project $CLAUDE_PROJECT_DIR\""]),
        {"hooks": [{"command": "echo \"levelcode handler: ${CLAUDE_ENV_FILE:-no env file}\""}]},
    ]});
    for (mode, out, status) in both(&hooks, &json!({"event": "SessionStart"})) {
        let json = out.json();
        let project = out.project().display().to_string();
        assert_eq!(
            json["additionalContext"],
            format!("Current branch: main; 3 files changed\nproject {project}"),
            "{mode}: {json}"
        );
        assert_eq!(json["session_env"], "export NODE_ENV=development\n");
        assert_eq!(
            out.handlers().len(),
            3,
            "{mode}: the resume group does not run"
        );
        assert_eq!(out.stdouts()[2], "levelcode handler: no env file", "{mode}");
        let file = out.project_text("env-file-name.txt");
        assert!(!file.trim().is_empty());
        assert!(
            !Path::new(file.trim()).exists(),
            "{mode}: the env file is removed"
        );
        assert_eq!(status.unwrap_or(0), 0);
    }
}

#[test]
fn post_tool_use_exit_2_is_feedback_for_the_model() {
    if !have_python() {
        return;
    }
    let hooks = json!({"PostToolUse": [claude_group(Some("Bash"), &["python3 .claude/hooks/post_lint.py"])]});
    // levelcode's result: a list of output parts, as a JSON string.
    let result = json!([{"type": "json", "value": {"command": "npm test", "stdout": "", "stderr": "2 tests failed\n", "exitCode": 1}}]);
    let payload = json!({"event": "PostToolUse", "tool_name": "run_terminal_command",
                         "tool_input": {"command": "npm test"}, "tool_result": result.to_string()});
    for (mode, out, status) in both(&hooks, &payload) {
        let json = out.json();
        assert_eq!(json["decision"], "proceed", "{mode}: {json}");
        assert_eq!(
            json["additionalContext"],
            "the command failed: 2 tests failed"
        );
        assert_eq!(out.outcomes(), ["proceed"]);
        assert_eq!(status.unwrap_or(0), 0);
    }
}

#[test]
fn read_files_runs_once_per_path_and_the_first_block_ends_it() {
    if !have_python() {
        return;
    }
    let hooks = json!({"PreToolUse": [claude_group(Some("Read"), &["python3 .claude/hooks/read_guard.py"])]});
    let payload = json!({"event": "PreToolUse", "tool_name": "read_files",
                         "tool_input": {"paths": ["README.md", ".env", "src/main.rs"]}});
    for (mode, out, status) in both(&hooks, &payload) {
        let json = out.json();
        let project = out.project().display().to_string();
        assert_eq!(json["decision"], "block", "{mode}: {json}");
        assert_eq!(
            json["reason"],
            format!("reading {project}/.env would leak secrets")
        );
        assert_eq!(out.outcomes(), ["proceed", "block"], "{mode}");
        assert_eq!(
            out.project_text("read-log.txt"),
            format!("{project}/README.md\n{project}/.env\n"),
            "{mode}: the third path is never asked about"
        );
        assert_eq!(status.unwrap_or(2), 2);
    }
}

#[test]
fn a_look_ahead_matcher_works_as_in_javascript() {
    let hooks =
        json!({"PreToolUse": [{"matcher": "^(?!read_)", "hooks": [{"command": "echo matched"}]}]});
    for (tool, runs) in [("write_file", 1), ("read_files", 0), ("str_replace", 1)] {
        let payload = json!({"event": "PreToolUse", "tool_name": tool});
        for (mode, out, _) in both(&hooks, &payload) {
            assert_eq!(
                out.handlers().len(),
                runs,
                "{mode} {tool}: {}",
                out.stdout()
            );
            assert!(out.warnings().is_empty(), "{mode}: {:?}", out.warnings());
        }
    }
    let invalid =
        json!({"PreToolUse": [{"matcher": "^(?!read_", "hooks": [{"command": "echo x"}]}]});
    let out = setup(&invalid)
        .payload(&json!({"event": "PreToolUse", "tool_name": "write_file"}))
        .run();
    assert!(out.handlers().is_empty());
    out.warning(&["invalid regular expression"]);
}

#[test]
fn import_of_a_realistic_claude_settings_file() {
    if !have_python() {
        return;
    }
    let claude = json!({
        "$schema": "https://json.schemastore.org/claude-code-settings.json",
        "permissions": {"allow": ["Bash(npm run test:*)"], "deny": ["Read(./.env)"]},
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/bash_guard.sh", "timeout": 10}]},
                {"matcher": "Write|Edit|MultiEdit", "hooks": [{"type": "command", "command": "python3 .claude/hooks/write_guard.py"}]}
            ],
            "PostToolUse": [
                {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "npx prettier --write \"$(jq -r .tool_input.file_path)\""}]}
            ],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "date"}]}],
            "Notification": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send Claude"}]}],
            "Stop": [{"hooks": [{"type": "prompt", "prompt": "Are all tasks done?"}]}]
        }
    });
    let test = || {
        setup(&json!({}))
            .project_file(".claude/settings.json", claude.to_string())
            .env("LEVELCODE_TRUST_PROJECT_HOOKS", "1")
    };
    let printed = test().args(["import", "claude"]).run();
    assert_eq!(printed.status(), 0, "{}", printed.stderr());
    let settings: Value = serde_json::from_str(&printed.stdout()).unwrap();
    let pre = settings["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 2);
    assert_eq!(pre[0]["protocol"], "claude");
    assert_eq!(pre[0]["hooks"][0]["timeout"], 10);
    assert_eq!(
        pre[1]["hooks"][0]["timeout"], 600,
        "Claude Code's default timeout"
    );
    assert_eq!(
        settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"],
        "date"
    );
    assert_eq!(settings["hooks"]["Notification"][0]["protocol"], "claude");
    assert!(settings["hooks"].get("Stop").is_none());
    let stderr = printed.stderr();
    assert!(stderr.contains("type \"prompt\""), "{stderr}");
    assert!(!stderr.contains("hooks.UserPromptSubmit"), "{stderr}");

    // validate suggests the import before it, and is quiet about it after.
    let before = test().args(["validate"]).run();
    assert!(
        before.stdout().contains("import claude --write"),
        "{}",
        before.stdout()
    );

    // --write merges into the project's settings, keeping what is there, once.
    let test = test().project_file(
        ".levelcode/settings.json",
        json!({"model": "x", "hooks": {"Stop": [{"hooks": [{"command": "echo bye"}]}]}})
            .to_string(),
    );
    let root = test.root().to_path_buf();
    let project = test.project();
    let written = test.args(["import", "claude", "--write"]).run();
    assert_eq!(written.status(), 0, "{}", written.stderr());
    assert!(
        written.stderr().contains("5 group(s) added"),
        "{}",
        written.stderr()
    );
    let merged: Value = serde_json::from_str(
        &std::fs::read_to_string(project.join(".levelcode/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(merged["model"], "x");
    assert_eq!(merged["hooks"]["Stop"].as_array().unwrap().len(), 1);
    assert_eq!(merged["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);

    // The imported guards run as written.
    let run = |payload: &Value| {
        let out = crate::common::command(&root.join("home"), &project)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(payload.to_string().as_bytes())?;
                child.wait_with_output()
            })
            .unwrap();
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.code(), json)
    };
    let (code, json) = run(&bash("rm -rf /"));
    assert_eq!(
        (code, &json["decision"]),
        (Some(2), &json!("block")),
        "{json}"
    );
    let (code, json) = run(&json!({"event": "PreToolUse", "tool_name": "write_file",
                                   "tool_input": {"path": ".env", "content": ""}}));
    assert_eq!(
        (code, &json["reason"]),
        (Some(2), &json!(".env is protected (Write)")),
        "{json}"
    );
    let again = crate::common::command(&root.join("home"), &project)
        .args(["import", "claude", "--write"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stderr).contains("0 group(s) added"));
    let after = crate::common::command(&root.join("home"), &project)
        .args(["validate"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&after.stdout);
    assert!(!text.contains("import claude"), "{text}");
}

#[test]
fn a_protocol_that_does_not_exist_skips_its_handler() {
    let hooks = json!({"PreToolUse": [
        {"matcher": "Bash", "protocol": "claud", "hooks": [{"command": "exit 2"}]},
        {"hooks": [{"command": "echo ok"}, {"command": "exit 2", "protocol": 7}]},
    ]});
    let out = setup(&hooks).payload(&bash("ls")).run();
    assert_eq!(out.status(), 0, "{}", out.stdout());
    assert_eq!(out.stdouts(), ["ok"]);
    let group = out.warning(&["hooks.PreToolUse[0].protocol"]);
    assert!(
        group.contains("\"claud\" is not a protocol") && group.contains("group skipped"),
        "{group}"
    );
    let handler = out.warning(&["hooks.PreToolUse[1].hooks[1].protocol"]);
    assert!(handler.contains("handler skipped"), "{handler}");
}

#[test]
fn validate_names_tools_levelcode_does_not_have() {
    let out = Test::new()
        .user_settings(json!({"hooks": {"PreToolUse": [
            {"matcher": "write_file|edit_file", "hooks": [{"command": "true"}]},
            {"matcher": "mcp__github__create_issue|Bash", "hooks": [{"command": "true"}]},
            {"matcher": "Write|Edit|Bash", "protocol": "claude", "hooks": [{"command": "true"}]},
            {"matcher": "Wirte|str_replace", "protocol": "claude", "hooks": [{"command": "true"}]},
        ]}}))
        .args(["validate", "--json"])
        .run();
    assert_eq!(out.status(), 1);
    let json = out.json();
    let problems: Vec<(String, String)> = json["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "tool_name")
        .map(|p| {
            (
                p["path"].as_str().unwrap().to_string(),
                p["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert_eq!(problems[2].0, "hooks.PreToolUse[3].matcher");
    assert!(
        problems[2].1.contains("did you mean \"Write\""),
        "{problems:?}"
    );
    assert_eq!(problems[0].0, "hooks.PreToolUse[0].matcher");
    assert!(
        problems[0].1.contains("\"edit_file\"")
            && problems[0].1.contains("did you mean \"str_replace\""),
        "{problems:?}"
    );
    assert_eq!(problems[1].0, "hooks.PreToolUse[1].matcher");
    assert!(
        problems[1].1.contains("\"protocol\": \"claude\""),
        "{problems:?}"
    );
}

/// `validate` suggests the import whenever Claude Code has hooks levelcode does not run, not only
/// when levelcode has none; the person's own `~/.claude/settings.json` is imported into their
/// user (or data) layer, where it runs with no trust, and is then not suggested again.
#[test]
fn import_is_suggested_for_every_claude_file_not_run_and_goes_to_the_user_layer() {
    let guard = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "echo no >&2; exit 2"}]}]}});
    let test = Test::new()
        .user_settings(crate::common::on("Stop", "true"))
        .file("home/.claude/settings.json", guard.to_string())
        .project_file(
            ".claude/settings.json",
            json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo lint"}]}]}})
                .to_string(),
        );
    let (home, project) = (test.home(), test.project());
    let run = |args: &[&str], stdin: &str| {
        use std::io::Write;
        let mut child = crate::common::command(&home, &project)
            .env_remove(crate::common::TRUST)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let notes = |text: &str| -> Vec<String> {
        let json: Value = serde_json::from_str(text).unwrap();
        json["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap().to_string())
            .collect()
    };
    let (_, before, _) = run(&["validate", "--json"], "");
    let before = notes(&before);
    assert_eq!(before.len(), 2, "{before:#?}");
    assert!(
        before[0].contains("home/.claude/settings.json")
            && before[0].contains("import claude --user"),
        "{before:#?}"
    );
    assert!(
        before[1].contains("project/.claude/settings.json")
            && before[1].contains("import claude --write"),
        "{before:#?}"
    );

    let (status, _, stderr) = run(&["import", "claude", "--user"], "");
    assert_eq!(status, Some(0), "{stderr}");
    assert!(
        stderr.contains("1 group(s) added to the user layer") && stderr.contains("no trust needed"),
        "{stderr}"
    );
    let user: Value = serde_json::from_str(
        &std::fs::read_to_string(home.join(".config/levelcode/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(user["hooks"]["Stop"][0]["hooks"][0]["command"], "true");
    assert_eq!(user["hooks"]["PreToolUse"][0]["protocol"], "claude");
    // It runs with no trust, as the person's own settings do.
    let (status, answer, _) = run(&["run"], &bash("git push --force").to_string());
    assert_eq!(status, Some(2), "{answer}");
    let (_, after, _) = run(&["validate", "--json"], "");
    let after = notes(&after);
    assert_eq!(after.len(), 1, "{after:#?}");
    assert!(
        after[0].contains("project/.claude/settings.json"),
        "{after:#?}"
    );

    // Read as layers, the files are run where they are: nothing to suggest.
    std::fs::write(
        home.join(".config/levelcode/settings.json"),
        json!({"claudeCodeHooks": true}).to_string(),
    )
    .unwrap();
    let (_, read, _) = run(&["validate", "--json"], "");
    assert_eq!(notes(&read), Vec::<String>::new());

    // --data writes into the data layer; --write with the person's own file says where it belongs.
    let (status, _, stderr) = run(&["import", "claude", "--data"], "");
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stderr.contains("added to the data layer"), "{stderr}");
    let data: Value = serde_json::from_str(
        &std::fs::read_to_string(home.join(".levelcode/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(data["hooks"]["PreToolUse"][0]["matcher"], "Bash");
    let own = home.join(".claude/settings.json");
    let (status, _, stderr) = run(&["import", "claude", own.to_str().unwrap(), "--write"], "");
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stderr.contains("import claude --user"), "{stderr}");
    let (status, _, stderr) = run(&["import", "claude", "--user", "--write"], "");
    assert_eq!(status, Some(1), "{stderr}");
}
