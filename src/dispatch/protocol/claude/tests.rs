//! Unit tests of the Claude Code translation.
use std::path::Path;

use serde_json::{json, Map, Value};

use super::*;
use crate::dispatch::outcome::Outcome;
use crate::dispatch::protocol::{Rewrite, ToolCall};

const ROOT: &str = "/home/u/proj";

fn calls(tool: &str, input: Value) -> Vec<ToolCall> {
    tool_calls(tool, &input, Path::new(ROOT))
}

#[test]
fn write_file_is_write_with_an_absolute_normalized_path() {
    let got = calls(
        "write_file",
        json!({"path": "./src/../lib/a.ts", "content": "x", "instructions": "i"}),
    );
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].name, "Write");
    assert_eq!(
        got[0].input,
        json!({"file_path": "/home/u/proj/lib/a.ts", "content": "x"})
    );
    let outside = calls("write_file", json!({"path": "../../etc/passwd"}));
    assert_eq!(outside[0].input["file_path"], "/home/etc/passwd");
    let abs = calls("write_file", json!({"path": "/tmp/./x/../y"}));
    assert_eq!(abs[0].input["file_path"], "/tmp/y");
}

#[test]
fn str_replace_is_edit_or_multiedit() {
    let one = calls(
        "str_replace",
        json!({"path": "a", "replacements": [{"old": "x", "new": "y", "allowMultiple": true}]}),
    );
    assert_eq!(one[0].name, "Edit");
    assert_eq!(
        one[0].input,
        json!({"file_path": "/home/u/proj/a", "old_string": "x", "new_string": "y", "replace_all": true})
    );
    let two = calls(
        "str_replace",
        json!({"path": "a", "replacements": [{"old": "x", "new": "y"}, {"old": "p", "new": "q"}]}),
    );
    assert_eq!(two[0].name, "MultiEdit");
    assert_eq!(
        two[0].input["edits"][1],
        json!({"old_string": "p", "new_string": "q", "replace_all": false})
    );
}

#[test]
fn run_terminal_command_is_bash() {
    let got = calls(
        "run_terminal_command",
        json!({"command": "rm -rf /", "process_type": "BACKGROUND", "cwd": "sub", "timeout_seconds": 30}),
    );
    assert_eq!(got[0].name, "Bash");
    assert_eq!(
        got[0].input,
        json!({"command": "rm -rf /", "description": "", "timeout": 30000, "run_in_background": true})
    );
    let none = calls(
        "run_terminal_command",
        json!({"command": "ls", "timeout_seconds": -1}),
    );
    assert_eq!(
        none[0].input,
        json!({"command": "ls", "description": "", "run_in_background": false})
    );
    let frac = calls(
        "run_terminal_command",
        json!({"command": "ls", "timeout_seconds": 1.5}),
    );
    assert_eq!(frac[0].input["timeout"], json!(1500));
}

#[test]
fn read_files_is_one_read_per_path() {
    let got = calls("read_files", json!({"paths": ["a", "b/../c"]}));
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].input, json!({"file_path": "/home/u/proj/c"}));
    assert_eq!(got[1].part, Some(1));
    assert_eq!(calls("read_files", json!({"paths": []})).len(), 1);
}

#[test]
fn search_tools_and_others() {
    let grep = calls(
        "code_search",
        json!({"pattern": "foo", "flags": "-i", "cwd": "src"}),
    );
    assert_eq!(grep[0].name, "Grep");
    assert_eq!(
        grep[0].input,
        json!({"pattern": "foo", "path": "/home/u/proj/src"})
    );
    let glob = calls("glob", json!({"pattern": "*.rs"}));
    assert_eq!(glob[0].input, json!({"pattern": "*.rs"}));
    let other = calls("spawn_agents", json!({"agents": []}));
    assert_eq!(other[0].name, "");
    assert_eq!(other[0].input, json!({"agents": []}));
}

fn back(tool: &str, original: Value, updated: Value) -> Value {
    let call = &calls(tool, original.clone())[0];
    input_from_claude(
        tool,
        &original,
        call,
        updated.as_object().unwrap(),
        Path::new(ROOT),
    )
}

#[test]
fn updated_input_comes_back_in_levelcode_form() {
    assert_eq!(
        back(
            "run_terminal_command",
            json!({"command": "npm test", "cwd": "web", "timeout_seconds": 30}),
            json!({"command": "bun test", "description": "", "timeout": 60000, "run_in_background": true}),
        ),
        json!({"command": "bun test", "cwd": "web", "timeout_seconds": 60, "process_type": "BACKGROUND"})
    );
    assert_eq!(
        back(
            "write_file",
            json!({"path": "a.ts", "content": "x", "instructions": "i"}),
            json!({"file_path": "/home/u/proj/b/c.ts", "content": "y"}),
        ),
        json!({"path": "b/c.ts", "content": "y", "instructions": "i"})
    );
    // Only what changed: a partial updatedInput keeps the rest.
    assert_eq!(
        back(
            "str_replace",
            json!({"path": "a", "replacements": [{"old": "x", "new": "y", "extra": 1}]}),
            json!({"new_string": "z"}),
        ),
        json!({"path": "a", "replacements": [{"old": "x", "new": "z", "extra": 1}]})
    );
    assert_eq!(
        back(
            "str_replace",
            json!({"path": "a", "replacements": [{"old": "x", "new": "y"}, {"old": "p", "new": "q"}]}),
            json!({"edits": [{"old_string": "x", "new_string": "y", "replace_all": false},
                             {"old_string": "p", "new_string": "Q", "replace_all": false}]}),
        ),
        json!({"path": "a", "replacements": [{"old": "x", "new": "y"}, {"old": "p", "new": "Q", "allowMultiple": false}]})
    );
    assert_eq!(
        back(
            "write_file",
            json!({"path": "a"}),
            json!({"file_path": "/elsewhere/x"})
        ),
        json!({"path": "/elsewhere/x"})
    );
    let original = json!({"paths": ["a", "b", "c"]});
    let second = &calls("read_files", original.clone())[1];
    assert_eq!(
        input_from_claude(
            "read_files",
            &original,
            second,
            json!({"file_path": "/home/u/proj/B"}).as_object().unwrap(),
            Path::new(ROOT)
        ),
        json!({"paths": ["a", "B", "c"]})
    );
}

fn fields(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[test]
fn the_envelope_comes_first_and_the_rest_follows() {
    let ours = fields(json!({
        "event": "PreToolUse", "tool_name": "write_file", "sessionId": "s1",
        "tool_input": {"path": "a", "content": "c"}, "toolCallId": "t9", "agent_id": "x",
        "cwd": "/elsewhere"
    }));
    let runs = payloads(
        &ours,
        "PreToolUse",
        EventKind::PreToolUse,
        Some("write_file"),
        ours.get("tool_input"),
        Path::new(ROOT),
    );
    assert_eq!(runs.len(), 1);
    let text = serde_json::to_string(&runs[0].1).unwrap();
    assert_eq!(
        text,
        r#"{"session_id":"s1","transcript_path":"","cwd":"/home/u/proj","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"/home/u/proj/a","content":"c"},"tool_use_id":"t9","agent_id":"x"}"#
    );
    let start = payload(
        &fields(json!({"event": "SessionStart"})),
        "SessionStart",
        EventKind::SessionStart,
        None,
        None,
        Path::new(ROOT),
    );
    assert_eq!(start["source"], "startup");
    let stop = payload(
        &fields(json!({"event": "Stop"})),
        "Stop",
        EventKind::Stop,
        None,
        None,
        Path::new(ROOT),
    );
    assert_eq!(stop["stop_hook_active"], false);
}

#[test]
fn tool_response_is_unwrapped() {
    let parts = json!([{"type": "json", "value": {"stdout": "hi", "exitCode": 0}}]);
    assert_eq!(
        tool_response(&parts),
        json!({"stdout": "hi", "exitCode": 0})
    );
    assert_eq!(
        tool_response(&Value::String(parts.to_string())),
        json!({"stdout": "hi", "exitCode": 0})
    );
    let cut = Value::String("[{\"type\":\"json\",\"value\":{\"stdout\":\"h".into());
    assert_eq!(tool_response(&cut), cut);
    let two = json!([{"type": "json", "value": 1}, {"type": "json", "value": 2}]);
    assert_eq!(tool_response(&two), two);
    let post = payload(
        &fields(json!({"event": "PostToolUse", "tool_name": "x", "tool_result": parts})),
        "PostToolUse",
        EventKind::PostToolUse,
        None,
        Some("x"),
        Path::new(ROOT),
    );
    assert_eq!(post["tool_response"]["stdout"], "hi");
    assert!(post.get("tool_result").is_none());
}

fn reply(kind: EventKind, code: i32, stdout: &str, stderr: &str) -> Judgement {
    let event = kind.event().map_or("Other", |e| e.name);
    judge(kind, event, "guard", code, stdout, stderr, None)
}

#[test]
fn exit_two_blocks_a_pre_tool_use_and_informs_elsewhere() {
    let j = reply(EventKind::PreToolUse, 2, "", " rm -rf is not allowed \n");
    assert_eq!(j.outcome, Outcome::Block);
    assert_eq!(j.reason.as_deref(), Some("rm -rf is not allowed"));
    let j = reply(EventKind::PostToolUse, 2, "", "lint failed");
    assert_eq!(j.outcome, Outcome::Proceed);
    assert_eq!(j.context.as_deref(), Some("lint failed"));
    let j = reply(EventKind::Stop, 2, "", "tests fail");
    assert_eq!(j.context.as_deref(), Some("tests fail"));
    assert!(j.warning.unwrap().contains("without waiting"));
}

#[test]
fn json_replies() {
    let deny = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no .env"}}"#;
    let j = reply(EventKind::PreToolUse, 0, deny, "");
    assert_eq!(
        (j.outcome, j.reason.as_deref()),
        (Outcome::Block, Some("no .env"))
    );
    let ask =
        r#"{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"sure?"}}"#;
    let j = reply(EventKind::PreToolUse, 0, ask, "");
    assert_eq!(
        (j.outcome, j.reason.as_deref()),
        (Outcome::Ask, Some("sure?"))
    );
    let allow = r#"{"hookSpecificOutput":{"permissionDecision":"allow"},"systemMessage":"ok","suppressOutput":true}"#;
    let j = reply(EventKind::PreToolUse, 0, allow, "");
    assert_eq!(j.outcome, Outcome::Proceed);
    assert_eq!(j.system_message.as_deref(), Some("ok"));
    assert!(j.suppress_output);
    let legacy = r#"{"decision":"block","reason":"legacy"}"#;
    let j = reply(EventKind::PreToolUse, 0, legacy, "");
    assert_eq!(
        (j.outcome, j.reason.as_deref()),
        (Outcome::Block, Some("legacy"))
    );
    let j = reply(EventKind::PostToolUse, 0, legacy, "");
    assert_eq!(j.outcome, Outcome::Proceed);
    assert_eq!(j.context.as_deref(), Some("legacy"));
    let approve = r#"{"decision":"approve","reason":"fine"}"#;
    assert_eq!(
        reply(EventKind::PreToolUse, 0, approve, "").outcome,
        Outcome::Proceed
    );
    let stop = r#"{"continue":false,"stopReason":"budget spent","decision":"approve"}"#;
    let j = reply(EventKind::PreToolUse, 0, stop, "");
    assert_eq!(j.outcome, Outcome::Stop);
    assert_eq!(j.stop.as_deref(), Some("budget spent"));
    assert_eq!(j.reason.as_deref(), Some("budget spent"));
    let j = reply(EventKind::PostToolUse, 0, r#"{"continue":false}"#, "");
    assert_eq!(j.outcome, Outcome::Stop);
    assert!(j.reason.is_none());
    let contexts = r#"{"hookSpecificOutput":{"additionalContext":"a"},"additionalContext":"b","additional_context":"c"}"#;
    let j = reply(EventKind::PostToolUse, 0, contexts, "");
    assert_eq!(j.context.as_deref(), Some("a\nb\nc"));
}

#[test]
fn plain_stdout_counts_on_session_start_only() {
    let j = reply(EventKind::SessionStart, 0, "branch: main\n", "");
    assert_eq!(j.context.as_deref(), Some("branch: main"));
    let j = reply(EventKind::SessionStart, 0, "{not json", "");
    assert_eq!(j.context.as_deref(), Some("{not json"));
    let j = reply(EventKind::PostToolUse, 0, "done", "");
    assert!(j.context.is_none());
    let j = reply(EventKind::PostToolUse, 0, "{not json", "");
    assert!(j.warning.is_some());
}

#[test]
fn updated_input_is_carried_back_unless_blocked() {
    let original = json!({"command": "npm test", "timeout_seconds": 30});
    let call = &calls("run_terminal_command", original.clone())[0];
    let rewrite = Rewrite {
        tool: "run_terminal_command",
        input: &original,
        call,
        root: Path::new(ROOT),
    };
    let out = r#"{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"npm test -- --ci"}}}"#;
    let j = judge(
        EventKind::PreToolUse,
        "PreToolUse",
        "g",
        0,
        out,
        "",
        Some(rewrite),
    );
    assert_eq!(
        j.updated_input,
        Some(json!({"command": "npm test -- --ci", "timeout_seconds": 30}))
    );
    let denied =
        r#"{"hookSpecificOutput":{"permissionDecision":"deny","updatedInput":{"command":"x"}}}"#;
    let j = judge(
        EventKind::PreToolUse,
        "PreToolUse",
        "g",
        0,
        denied,
        "",
        Some(rewrite),
    );
    assert!(j.updated_input.is_none());
    let bad = r#"{"hookSpecificOutput":{"updatedInput":"rm"}}"#;
    let j = judge(
        EventKind::PreToolUse,
        "PreToolUse",
        "g",
        0,
        bad,
        "",
        Some(rewrite),
    );
    assert!(j.updated_input.is_none());
    assert!(j.warning.unwrap().contains("must be an object"));
}

#[test]
fn a_user_prompt_submit_blocks_and_its_plain_stdout_is_context() {
    let j = reply(
        EventKind::UserPromptSubmit,
        2,
        "",
        "no secrets in prompts\n",
    );
    assert_eq!(
        (j.outcome, j.reason.as_deref()),
        (Outcome::Block, Some("no secrets in prompts"))
    );
    let j = reply(
        EventKind::UserPromptSubmit,
        0,
        r#"{"decision":"block","reason":"off topic"}"#,
        "",
    );
    assert_eq!(
        (j.outcome, j.reason.as_deref()),
        (Outcome::Block, Some("off topic"))
    );
    let j = reply(EventKind::UserPromptSubmit, 0, "Today is Tuesday.\n", "");
    assert_eq!(j.outcome, Outcome::Proceed);
    assert_eq!(j.context.as_deref(), Some("Today is Tuesday."));
    let j = reply(
        EventKind::UserPromptSubmit,
        0,
        r#"{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"branch main"}}"#,
        "",
    );
    assert_eq!(j.context.as_deref(), Some("branch main"));
}

#[test]
fn events_that_cannot_block_never_block() {
    for kind in [
        EventKind::SessionEnd,
        EventKind::PostToolUseFailure,
        EventKind::SubagentStart,
        EventKind::SubagentStop,
        EventKind::PreCompact,
        EventKind::Notification,
    ] {
        let j = reply(kind, 2, "", "feedback");
        assert_eq!(j.outcome, Outcome::Proceed, "{kind:?}");
        assert_eq!(j.context.as_deref(), Some("feedback"), "{kind:?}");
        let j = reply(kind, 0, r#"{"decision":"block","reason":"r"}"#, "");
        assert_eq!(j.outcome, Outcome::Proceed, "{kind:?}");
    }
    let j = reply(EventKind::SubagentStop, 2, "", "not yet");
    assert!(j.warning.unwrap().contains("SubagentStop without waiting"));
}

#[test]
fn stop_hook_active_is_the_caller_s_else_false() {
    for (kind, name) in [
        (EventKind::Stop, "Stop"),
        (EventKind::SubagentStop, "SubagentStop"),
    ] {
        let sent = payload(
            &fields(json!({"event": name, "stop_hook_active": true})),
            name,
            kind,
            None,
            None,
            Path::new(ROOT),
        );
        assert_eq!(sent["stop_hook_active"], true, "{name}");
        let unsent = payload(
            &fields(json!({"event": name, "agent_type": "x"})),
            name,
            kind,
            None,
            None,
            Path::new(ROOT),
        );
        assert_eq!(unsent["stop_hook_active"], false, "{name}");
        assert_eq!(unsent["hook_event_name"], name);
    }
    let prompt = payload(
        &fields(json!({"event": "UserPromptSubmit", "prompt": "hi"})),
        "UserPromptSubmit",
        EventKind::UserPromptSubmit,
        None,
        None,
        Path::new(ROOT),
    );
    assert_eq!(prompt["prompt"], "hi");
    assert!(prompt.get("stop_hook_active").is_none());
}
