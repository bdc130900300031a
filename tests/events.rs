//! The events beyond the four (contract §15), black-box: each through `run` and `serve`, in
//! levelcode's form and Claude Code's, with what its matcher is tested against and whether it
//! can block.

use serde_json::{json, Value};

use crate::common::{require, runs, server, Output, Test};

/// Each new event, a payload of it, and a matcher its group must match (`None`: the event has
/// nothing to match, and a matcher that would not match is ignored).
fn cases() -> Vec<(&'static str, Value, Option<&'static str>, &'static str)> {
    vec![
        (
            "UserPromptSubmit",
            json!({"event": "UserPromptSubmit", "prompt": "fix the build"}),
            None,
            "no_such_thing",
        ),
        (
            "SessionEnd",
            json!({"event": "SessionEnd", "reason": "logout"}),
            Some("logout"),
            "clear",
        ),
        (
            "PostToolUseFailure",
            json!({"event": "PostToolUseFailure", "tool_name": "run_terminal_command",
                   "tool_input": {"command": "make"}, "error": "exit 2"}),
            Some("run_terminal_command"),
            "write_file",
        ),
        (
            "SubagentStart",
            json!({"event": "SubagentStart", "agent_type": "file-picker", "agent_id": "a1"}),
            Some("file-picker"),
            "reviewer",
        ),
        (
            "SubagentStop",
            json!({"event": "SubagentStop", "agent_type": "file-picker", "agent_id": "a1"}),
            Some("file-picker"),
            "reviewer",
        ),
        (
            "PreCompact",
            json!({"event": "PreCompact", "trigger": "auto", "custom_instructions": ""}),
            Some("auto"),
            "manual",
        ),
        (
            "Notification",
            json!({"event": "Notification", "message": "waiting", "notification_type": "idle_prompt"}),
            Some("idle_prompt"),
            "permission_prompt",
        ),
    ]
}

/// Settings with three groups: one matching, one whose matcher does not match, and one that
/// blocks (by exit 2 and by JSON).
fn settings(event: &str, matching: Option<&str>, other: &str, protocol: &str) -> Value {
    json!({"hooks": {event: [
        {"matcher": matching.unwrap_or(""), "protocol": protocol,
         "hooks": [{"command": "cat >&2; echo matched"}]},
        {"matcher": other, "protocol": protocol, "hooks": [{"command": "echo other"}]},
        {"protocol": protocol, "hooks": [{"command": "echo refused >&2; exit 2", "name": "exit-2"}]},
    ]}})
}

/// `serve` answers for `payloads`, in their order, from one server.
fn served(test: Test, payloads: &[Value]) -> Vec<Value> {
    server::answers(test, &server::numbered(payloads))
}

fn outcomes(answer: &Value) -> Vec<String> {
    answer["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["outcome"].as_str().unwrap().to_string())
        .collect()
}

/// What a handler read on stdin, which the first handler echoes to stderr.
fn read_by_first(answer: &Value) -> Value {
    serde_json::from_str(answer["handlers"][0]["stderr"].as_str().unwrap()).unwrap()
}

fn check(event: &str, answer: &Value, protocol: &str, payload: &Value) {
    let stdouts: Vec<&str> = answer["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["stdout"].as_str().unwrap().trim())
        .collect();
    let blocks = event == "UserPromptSubmit";
    let matcher_ignored = payload.get("reason").is_none()
        && payload.get("tool_name").is_none()
        && payload.get("agent_type").is_none()
        && payload.get("trigger").is_none()
        && payload.get("notification_type").is_none();
    let mut expected = vec!["matched"];
    if matcher_ignored {
        expected.push("other");
    }
    expected.push("");
    assert_eq!(stdouts, expected, "{event} ({protocol}): {answer}");
    let last = outcomes(answer).pop().unwrap();
    if blocks {
        assert_eq!(answer["decision"], "block", "{event} ({protocol})");
        assert_eq!(answer["reason"], "refused", "{event} ({protocol})");
        assert_eq!(last, "block");
    } else {
        assert_eq!(answer["decision"], "proceed", "{event} ({protocol})");
        let expected = if protocol == "claude" {
            "proceed"
        } else {
            "error"
        };
        assert_eq!(last, expected, "{event} ({protocol})");
    }
    let read = read_by_first(answer);
    if protocol == "claude" {
        assert_eq!(read["hook_event_name"], event);
        if event == "PostToolUseFailure" {
            assert_eq!(read["tool_name"], "Bash", "Claude Code's name for the tool");
            assert_eq!(read["tool_input"]["command"], "make");
            assert_eq!(read["error"], "exit 2");
        }
        if event == "SubagentStop" {
            assert_eq!(read["stop_hook_active"], false);
        }
    } else {
        assert_eq!(read["event"], event);
    }
    for (key, value) in payload.as_object().unwrap() {
        if key != "event" && !(protocol == "claude" && key.starts_with("tool_")) {
            assert_eq!(&read[key], value, "{event} ({protocol}): {key}");
        }
    }
}

#[test]
fn each_new_event_runs_its_matching_groups_and_only_user_prompt_submit_blocks() {
    for protocol in ["levelcode", "claude"] {
        for (event, payload, matching, other) in cases() {
            let out = Test::new()
                .project_settings(settings(event, matching, other, protocol))
                .payload(&payload)
                .run();
            let answer = out.json();
            assert_eq!(
                out.status(),
                if event == "UserPromptSubmit" { 2 } else { 0 },
                "{event} ({protocol}): {}",
                out.stdout()
            );
            assert!(
                !out.warnings().iter().any(|w| w.contains("unknown event")),
                "{event}: {:?}",
                out.warnings()
            );
            check(event, &answer, protocol, &payload);
        }
    }
}

#[test]
fn serve_answers_each_new_event_as_run_does() {
    for protocol in ["levelcode", "claude"] {
        for (event, payload, matching, other) in cases() {
            let test = Test::new().project_settings(settings(event, matching, other, protocol));
            let answers = served(test, std::slice::from_ref(&payload));
            check(event, &answers[0], protocol, &payload);
        }
    }
}

#[test]
fn a_member_matcher_does_not_match_a_payload_without_the_member() {
    let settings = json!({"hooks": {"SessionEnd": [
        {"matcher": "clear", "hooks": [{"command": "echo clear"}]},
        {"hooks": [{"command": "echo any"}]},
    ]}});
    let out = Test::new()
        .project_settings(settings)
        .event("SessionEnd")
        .run();
    assert_eq!(out.stdouts(), ["any"]);
}

#[test]
fn stop_hook_active_is_the_caller_s_when_sent() {
    let settings =
        json!({"hooks": {"Stop": [{"protocol": "claude", "hooks": [{"command": "cat >&2"}]}]}});
    for (payload, active) in [
        (json!({"event": "Stop", "stop_hook_active": true}), true),
        (json!({"event": "Stop"}), false),
    ] {
        let out = Test::new()
            .project_settings(settings.clone())
            .payload(&payload)
            .run();
        assert_eq!(read_by_first(&out.json())["stop_hook_active"], active);
    }
}

/// A prompt guard as people write them for Claude Code: a Python script that reads the prompt
/// and refuses one that holds a secret, with a JSON decision, and adds context otherwise.
const PROMPT_GUARD: &str = r#"import json, re, sys
data = json.load(sys.stdin)
prompt = data.get("prompt", "")
if re.search(r"AKIA[0-9A-Z]{16}|-----BEGIN [A-Z ]*PRIVATE KEY-----", prompt):
    print(json.dumps({"decision": "block", "reason": "Your prompt seems to hold a secret; remove it and try again."}))
    sys.exit(0)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
    "additionalContext": "Project rules: run make test before committing."}}))
"#;

fn prompt_guard_test() -> Test {
    Test::new()
        .project_file(".claude/hooks/prompt_guard.py", PROMPT_GUARD)
        .project_settings(json!({"hooks": {"UserPromptSubmit": [{"protocol": "claude", "hooks": [
            {"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/prompt_guard.py"}
        ]}]}}))
}

fn prompt(text: &str) -> Value {
    json!({"event": "UserPromptSubmit", "session_id": "s1", "prompt": text})
}

fn check_guard(secret: &Value, fine: &Value) {
    assert_eq!(secret["decision"], "block", "{secret}");
    assert_eq!(
        secret["reason"],
        "Your prompt seems to hold a secret; remove it and try again."
    );
    assert_eq!(fine["decision"], "proceed", "{fine}");
    assert_eq!(
        fine["additionalContext"],
        "Project rules: run make test before committing."
    );
}

#[test]
fn a_claude_code_prompt_guard_refuses_a_secret_and_adds_context_otherwise() {
    if !require(
        "python3",
        runs("python3", &["-c", ""]),
        "the guard is a Python script",
    ) {
        return;
    }
    let secret = prompt("deploy with key AKIAABCDEFGHIJKLMNOP please");
    let fine = prompt("fix the failing test");
    let blocked: Output = prompt_guard_test().payload(&secret).run();
    assert_eq!(blocked.status(), 2);
    let proceeded = prompt_guard_test().payload(&fine).run();
    assert_eq!(proceeded.status(), 0);
    check_guard(&blocked.json(), &proceeded.json());
    let answers = served(prompt_guard_test(), &[secret, fine]);
    check_guard(&answers[0], &answers[1]);
}

#[test]
fn a_native_prompt_guard_blocks_with_exit_2() {
    let settings = json!({"hooks": {"UserPromptSubmit": [{"hooks": [
        {"command": "if grep -q 'rm -rf /'; then echo 'that prompt asks for rm -rf /' >&2; exit 2; fi"},
    ]}]}});
    let out = Test::new()
        .project_settings(settings.clone())
        .payload(&prompt("please rm -rf / now"))
        .run();
    assert_eq!(out.status(), 2);
    assert_eq!(out.json()["reason"], "that prompt asks for rm -rf /");
    let out = Test::new()
        .project_settings(settings)
        .payload(&prompt("list the files"))
        .run();
    assert_eq!((out.status(), out.decision()), (0, "proceed".to_string()));
}

#[test]
fn serve_tests_a_member_matcher_against_each_request_s_own_member() {
    let settings = json!({"hooks": {"SessionEnd": [
        {"matcher": "clear", "hooks": [{"command": "echo cleared"}]},
    ]}});
    let answers = served(
        Test::new().project_settings(settings),
        &[
            json!({"event": "SessionEnd", "reason": "logout"}),
            json!({"event": "SessionEnd", "reason": "clear"}),
            json!({"event": "SessionEnd"}),
        ],
    );
    let ran: Vec<usize> = answers
        .iter()
        .map(|a| a["handlers"].as_array().unwrap().len())
        .collect();
    assert_eq!(ran, [0, 1, 0], "{answers:?}");
    assert_eq!(answers[1]["handlers"][0]["stdout"], "cleared\n");
}
