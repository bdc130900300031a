//! `"onFailure": "block"` (contract §16), black-box: a guard's own failure blocks an event that
//! can block, and changes nothing on one that cannot.

use serde_json::{json, Value};

use crate::common::Test;

/// Guards that fail, each in its own way, and how the reason names the way.
fn failing_guards() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        (
            "crash",
            json!({"command": "kill -9 $$", "name": "crash"}),
            "failed",
        ),
        (
            "exit 1",
            json!({"command": "exit 1", "name": "exit-1"}),
            "failed",
        ),
        (
            "timeout",
            json!({"command": "sleep 30", "timeout": 0.5, "name": "slow"}),
            "timed out",
        ),
        (
            "missing interpreter (argv)",
            json!({"argv": ["no-such-interpreter-here", "guard.py"], "name": "argv"}),
            "could not start",
        ),
        (
            "missing interpreter (shell)",
            json!({"command": "no-such-interpreter-here guard.py", "name": "shell"}),
            "failed",
        ),
    ]
}

fn with_on_failure(mut handler: Value, value: &str) -> Value {
    handler["onFailure"] = json!(value);
    handler
}

fn dispatch(event: &str, handler: Value) -> crate::common::Output {
    let settings = json!({"hooks": {event: [{"hooks": [handler]}]}});
    let payload = match event {
        "UserPromptSubmit" => json!({"event": event, "prompt": "hi"}),
        _ => json!({"event": event, "tool_name": "run_terminal_command",
                    "tool_input": {"command": "rm -rf build"}}),
    };
    Test::new()
        .project_settings(settings)
        .payload(&payload)
        .run()
}

#[test]
fn a_failing_guard_blocks_pre_tool_use_and_user_prompt_submit() {
    for event in ["PreToolUse", "UserPromptSubmit"] {
        for (what, handler, how) in failing_guards() {
            let out = dispatch(event, with_on_failure(handler, "block"));
            assert_eq!(out.status(), 2, "{event}, {what}: {}", out.stdout());
            assert_eq!(out.decision(), "block", "{event}, {what}");
            let reason = out.json()["reason"].as_str().unwrap().to_string();
            assert!(reason.contains(how), "{event}, {what}: {reason}");
            assert!(reason.contains("onFailure"), "{what}: {reason}");
            assert_eq!(out.outcomes(), ["block"], "{event}, {what}");
        }
    }
}

#[test]
fn a_failing_guard_never_blocks_post_tool_use() {
    for (what, handler, _) in failing_guards() {
        let out = dispatch("PostToolUse", with_on_failure(handler, "block"));
        assert_eq!(out.status(), 0, "{what}: {}", out.stdout());
        assert_eq!(out.decision(), "proceed", "{what}");
        assert_ne!(out.outcomes(), ["block"], "{what}");
    }
}

#[test]
fn without_on_failure_a_failing_guard_fails_open() {
    for (what, handler, _) in failing_guards() {
        for handler in [handler.clone(), with_on_failure(handler, "proceed")] {
            let out = dispatch("PreToolUse", handler);
            assert_eq!(out.status(), 0, "{what}: {}", out.stdout());
            assert_eq!(out.decision(), "proceed", "{what}");
        }
    }
}

#[test]
fn an_empty_successful_reply_is_no_failure() {
    for command in ["true", "printf ''", "echo '{}'"] {
        let out = dispatch(
            "PreToolUse",
            json!({"command": command, "onFailure": "block"}),
        );
        assert_eq!(
            (out.status(), out.decision()),
            (0, "proceed".to_string()),
            "{command}"
        );
    }
    // A guard that answers, by exit 2 or JSON, is judged as always.
    let out = dispatch(
        "PreToolUse",
        json!({"command": "echo no >&2; exit 2", "onFailure": "block"}),
    );
    assert_eq!(out.json()["reason"], "no");
}

#[test]
fn an_invalid_on_failure_warns_and_fails_open() {
    let out = dispatch(
        "PreToolUse",
        json!({"command": "exit 1", "onFailure": "deny"}),
    );
    assert_eq!(out.decision(), "proceed");
    out.warning(&["onFailure", "\"block\" or \"proceed\""]);
}
