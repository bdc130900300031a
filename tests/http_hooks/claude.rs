//! A Claude Code settings file with http hooks (contract §12, §19) runs the same read in place
//! (`claudeCodeHooks`), after `import claude`, and with `"protocol": "claude"` written by hand:
//! the service gets Claude Code's payload and its `permissionDecision` and `updatedInput` are
//! read as Claude Code reads them.

use serde_json::{json, Value};

use super::Service;
use crate::common::Test;

/// Claude Code's settings: one http guard on `Write`, answered with `reply`.
fn claude_settings(service: &Service, reply: &str) -> Value {
    json!({
        "permissions": { "allow": ["Bash(ls)"] },
        "hooks": {
            "PreToolUse": [{
                "matcher": "Write",
                "hooks": [{
                    "type": "http",
                    "url": service.url("/reply/200"),
                    "headers": { "X-Reply": reply, "Authorization": "Bearer $POLICY_TOKEN" },
                    "allowedEnvVars": ["POLICY_TOKEN"],
                    "timeout": 5
                }]
            }]
        }
    })
}

const DENY: &str = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no writes to .env"}}"#;

/// A `write_file` of `.env`, as levelcode sends it.
fn write_env(test: Test) -> Test {
    test.env("POLICY_TOKEN", "tok").payload(&json!({
        "event": "PreToolUse",
        "tool_name": "write_file",
        "tool_input": { "path": ".env", "content": "SECRET=1" },
        "session_id": "s-1"
    }))
}

/// The service got Claude Code's payload of that write, with the token.
fn got_claude_payload(service: &Service) {
    let request = service.request();
    let body = &request["body"];
    assert_eq!(body["hook_event_name"], "PreToolUse", "{request}");
    assert_eq!(body["tool_name"], "Write");
    assert!(body["tool_input"]["file_path"]
        .as_str()
        .unwrap()
        .ends_with("/.env"));
    assert_eq!(body["session_id"], "s-1");
    assert_eq!(request["headers"]["authorization"], "Bearer tok");
}

#[test]
fn claude_code_s_file_with_an_http_hook_runs_in_place_and_after_import() {
    let Some(service) = Service::start() else {
        return;
    };
    let settings = claude_settings(&service, DENY);
    // In place: the project's .claude/settings.json, turned on by the user layer.
    let out = write_env(
        Test::new()
            .user_settings(json!({ "claudeCodeHooks": true }))
            .project_file(".claude/settings.json", settings.to_string()),
    )
    .run();
    assert_eq!(out.status(), 2, "{}", out.stdout());
    assert_eq!(out.json()["reason"], "no writes to .env");
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
    assert_eq!(out.handler(0)["layer"], "claude-project");
    assert_eq!(out.handler(0)["http_status"], 200);
    got_claude_payload(&service);

    // Imported: the http handler is kept, with its headers and variables.
    let test = Test::new().project_file(".claude/settings.json", settings.to_string());
    let out = test.args(["import", "claude"]).run();
    assert_eq!(out.status(), 0, "{}", out.stderr());
    assert!(!out.stderr().contains("left out"), "{}", out.stderr());
    let imported: Value = serde_json::from_str(&out.stdout()).unwrap();
    let handler = &imported["hooks"]["PreToolUse"][0]["hooks"][0];
    assert_eq!(handler["type"], "http");
    assert_eq!(handler["url"], service.url("/reply/200"));
    assert_eq!(handler["allowedEnvVars"], json!(["POLICY_TOKEN"]));
    assert_eq!(imported["hooks"]["PreToolUse"][0]["protocol"], "claude");
    // And runs the same as levelcode's own settings.
    let out = write_env(Test::new().user_settings(&imported)).run();
    assert_eq!(out.status(), 2, "{}", out.stdout());
    assert_eq!(out.json()["reason"], "no writes to .env");
    got_claude_payload(&service);
}

#[test]
fn claude_code_s_updated_input_comes_back_in_levelcode_s_terms() {
    let Some(service) = Service::start() else {
        return;
    };
    let rewrite = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"file_path":"notes/env.txt","content":"redacted"}}}"#;
    let out = write_env(
        Test::new()
            .user_settings(json!({ "claudeCodeHooks": true }))
            .project_file(
                ".claude/settings.json",
                claude_settings(&service, rewrite).to_string(),
            ),
    )
    .run();
    assert_eq!(out.status(), 0, "{}", out.stdout());
    let updated = &out.json()["updated_input"];
    assert!(
        updated["path"].as_str().unwrap().ends_with("notes/env.txt"),
        "{updated}"
    );
    assert_eq!(updated["content"], "redacted");
    assert_eq!(out.handler(0)["rewrote_input"], true);
    got_claude_payload(&service);
}
