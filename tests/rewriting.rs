//! Input rewriting, `ask`, `stop` and `systemMessage` for levelcode's own handlers (contract
//! §11).

use serde_json::{json, Value};

use crate::common::{group, Test};

fn pre_tool_use(handlers: Value) -> Test {
    Test::new()
        .user_settings(group("PreToolUse", Some("run_terminal_command"), handlers))
        .payload(
            &json!({"event": "PreToolUse", "tool_name": "run_terminal_command",
                         "tool_input": {"command": "npm test", "cwd": "web"}, "agent_id": "a1"}),
        )
}

/// A handler printing `reply` as its JSON answer.
fn replies(reply: Value) -> Value {
    json!({"command": format!("cat > /dev/null; echo '{reply}'")})
}

#[test]
fn updated_input_chains_and_reaches_the_caller() {
    let out = pre_tool_use(json!([
        replies(json!({"updatedInput": {"command": "bun test", "cwd": "web"}})),
        {"command": "cat > second.json"},
        replies(json!({"updatedInput": {"command": "bun test --bail", "cwd": "web"}})),
        {"command": "cat > fourth.json"},
    ]))
    .run();
    assert_eq!(out.status(), 0, "{}", out.stdout());
    let json = out.json();
    assert_eq!(
        json["updated_input"],
        json!({"command": "bun test --bail", "cwd": "web"})
    );
    let rewrote: Vec<bool> = out
        .handlers()
        .iter()
        .map(|h| h["rewrote_input"].as_bool().unwrap())
        .collect();
    assert_eq!(rewrote, [true, false, true, false]);
    // Later handlers read the new tool_input; every other member is as it was.
    let second: Value = serde_json::from_str(&out.project_text("second.json")).unwrap();
    assert_eq!(second["tool_input"]["command"], "bun test");
    assert_eq!(second["agent_id"], "a1");
    assert_eq!(second["event"], "PreToolUse");
    let fourth: Value = serde_json::from_str(&out.project_text("fourth.json")).unwrap();
    assert_eq!(fourth["tool_input"]["command"], "bun test --bail");
}

#[test]
fn a_block_leaves_the_rewrite_out() {
    let out = pre_tool_use(json!([
        replies(json!({"updatedInput": {"command": "bun test"}})),
        {"command": "echo no >&2; exit 2"},
    ]))
    .run();
    assert_eq!(out.status(), 2);
    let json = out.json();
    assert_eq!(json["decision"], "block");
    assert!(json.get("updated_input").is_none(), "{json}");
}

#[test]
fn ask_needs_a_person_and_a_later_block_still_wins() {
    let out = pre_tool_use(json!([
        replies(json!({"decision": "ask", "reason": "runs the whole suite"})),
        replies(json!({"decision": "ask"})),
        {"command": "echo ran > third.txt"},
    ]))
    .run();
    assert_eq!(out.status(), 2, "an ask exits 2");
    let json = out.json();
    assert_eq!(json["decision"], "ask");
    assert_eq!(
        json["reason"],
        format!(
            "runs the whole suite\napproval asked by PreToolUse hook: cat > /dev/null; echo '{}'",
            json!({"decision": "ask"})
        )
    );
    assert_eq!(out.outcomes(), ["ask", "ask", "proceed"]);
    assert!(out.stderr().contains("runs the whole suite"));
    assert!(
        out.project_has("third.txt"),
        "the chain goes on after an ask"
    );

    let out = pre_tool_use(json!([
        replies(json!({"decision": "ask", "reason": "sure?"})),
        {"command": "echo never >&2; exit 2"},
    ]))
    .run();
    assert_eq!(out.decision(), "block");
    assert_eq!(out.json()["reason"], "never");

    let compact = pre_tool_use(json!([replies(
        json!({"decision": "ask", "reason": "sure?"})
    )]))
    .args(["--output", "compact"])
    .run();
    assert_eq!(
        compact.stdout(),
        "{\"decision\":\"ask\",\"reason\":\"sure?\"}\n"
    );
}

#[test]
fn continue_false_stops_and_system_messages_are_collected() {
    let out = pre_tool_use(json!([
        replies(json!({"systemMessage": "checked the command"})),
        replies(json!({"continue": false, "stopReason": "out of budget", "systemMessage": "stopping"})),
        {"command": "echo never"},
    ]))
    .run();
    assert_eq!(out.status(), 2);
    let json = out.json();
    assert_eq!(json["decision"], "block");
    assert_eq!(json["reason"], "out of budget");
    assert_eq!(json["stop"], json!({"reason": "out of budget"}));
    assert_eq!(json["system_message"], "checked the command\nstopping");
    assert_eq!(out.outcomes(), ["proceed", "stop", "skipped"]);
    assert!(out.handler(2)["message"]
        .as_str()
        .unwrap()
        .contains("asked the agent to stop"));

    let stop = Test::new()
        .user_settings(group(
            "Stop",
            None,
            json!([replies(json!({"continue": false}))]),
        ))
        .event("Stop")
        .run();
    assert_eq!(stop.status(), 0);
    let json = stop.json();
    assert_eq!(json["decision"], "proceed");
    assert!(json["stop"]["reason"]
        .as_str()
        .unwrap()
        .starts_with("stopped by Stop hook: "));
}

#[test]
fn rewrites_outside_pre_tool_use_are_warned_about() {
    let out = Test::new()
        .user_settings(group(
            "PostToolUse",
            None,
            json!([replies(
                json!({"updatedInput": {"command": "x"}, "decision": "ask"})
            )]),
        ))
        .payload(&json!({"event": "PostToolUse", "tool_name": "run_terminal_command"}))
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.decision(), "proceed");
    assert!(out.json().get("updated_input").is_none());
    out.warning(&["updatedInput applies to PreToolUse only"]);
    out.warning(&["cannot ask"]);

    let not_object = pre_tool_use(json!([replies(json!({"updatedInput": "bun test"}))])).run();
    assert!(not_object.json().get("updated_input").is_none());
    not_object.warning(&["updatedInput must be an object"]);
}

#[test]
fn the_log_and_stats_count_asks_and_rewrites() {
    let test = pre_tool_use(json!([
        replies(json!({"updatedInput": {"command": "bun test"}})),
        replies(json!({"decision": "ask", "reason": "sure?"})),
    ]));
    let log = test.root().join("exec.jsonl");
    let out = test.env("LEVELCODE_HOOKS_LOG", &log).run();
    assert_eq!(out.status(), 2);
    let line: Value = serde_json::from_str(std::fs::read_to_string(&log).unwrap().trim()).unwrap();
    assert_eq!(line["decision"], "ask");
    assert_eq!(line["handlers"][0]["rewrote_input"], true);
    let stats = Test::new()
        .args(["stats", "--json", "--file"])
        .arg(&log)
        .run();
    let json = stats.json();
    let handlers = json["handlers"].as_array().unwrap();
    let rewrites: u64 = handlers
        .iter()
        .map(|h| h["rewrites"].as_u64().unwrap())
        .sum();
    let asks: u64 = handlers.iter().map(|h| h["asks"].as_u64().unwrap()).sum();
    assert_eq!((rewrites, asks), (1, 1), "{json}");
}

#[test]
fn test_and_list_know_rewrites_asks_and_claude_groups() {
    let settings = json!({"hooks": {"PreToolUse": [
        {"matcher": "run_terminal_command", "hooks": [
            replies(json!({"updatedInput": {"command": "bun test"}})),
            replies(json!({"decision": "ask", "reason": "sure?"})),
        ]},
        {"matcher": "Write|Edit", "protocol": "claude", "hooks": [{"command": "true", "name": "claude-guard"}]},
    ]}});
    let out = Test::new()
        .user_settings(&settings)
        .args([
            "test",
            "--event",
            "PreToolUse",
            "--tool",
            "run_terminal_command",
            "--input",
            r#"{"command":"npm test"}"#,
        ])
        .run();
    assert_eq!(out.status(), 2, "{}", out.stdout());
    let json = out.json();
    assert_eq!(json["decision"], "ask");
    assert_eq!(json["updated_input"], json!({"command": "bun test"}));

    let list = Test::new()
        .user_settings(&settings)
        .args([
            "list",
            "--event",
            "PreToolUse",
            "--tool",
            "str_replace",
            "--json",
        ])
        .run();
    let json = list.json();
    let handlers = json["handlers"].as_array().unwrap();
    let claude = handlers
        .iter()
        .find(|h| h["label"] == "claude-guard")
        .unwrap();
    assert_eq!(claude["protocol"], "claude");
    assert_eq!(claude["state"], "would_run", "{claude}");
    assert_eq!(handlers[0]["protocol"], "levelcode");
    assert_ne!(handlers[0]["state"], "would_run");
    let text = Test::new()
        .user_settings(&settings)
        .args(["list"])
        .run()
        .stdout();
    assert!(text.contains("claude-guard (claude)"), "{text}");
}

#[test]
fn serve_answers_rewrites_asks_and_stops_as_run_does() {
    let handlers = json!([
        replies(json!({"updatedInput": {"command": "bun test"}, "systemMessage": "rewrote"})),
        replies(json!({"decision": "ask", "reason": "sure?"})),
        replies(json!({"continue": false, "stopReason": "enough"})),
    ]);
    let run = pre_tool_use(handlers.clone()).run();
    let payload = json!({"event": "PreToolUse", "tool_name": "run_terminal_command",
                         "tool_input": {"command": "npm test", "cwd": "web"}, "agent_id": "a1"});
    let serve = Test::new()
        .user_settings(group("PreToolUse", Some("run_terminal_command"), handlers))
        .arg("serve")
        .stdin(format!("{payload}\n"))
        .run();
    assert_eq!(serve.status(), 0);
    for out in [&run, &serve] {
        let json = out.json();
        assert_eq!(json["decision"], "block", "{json}");
        assert_eq!(json["reason"], "enough");
        assert_eq!(json["stop"]["reason"], "enough");
        assert_eq!(json["system_message"], "rewrote");
        assert!(
            json.get("updated_input").is_none(),
            "a block leaves the rewrite out"
        );
        assert_eq!(out.outcomes(), ["proceed", "ask", "stop"]);
    }
}

#[test]
fn suppress_output_keeps_a_claude_scripts_stdout_out_of_the_report() {
    let out = Test::new()
        .user_settings(json!({"hooks": {"PostToolUse": [{"protocol": "claude", "hooks": [
            {"command": "cat > /dev/null; echo '{\"suppressOutput\": true, \"additionalContext\": \"formatted\"}'"},
        ]}]}}))
        .payload(&json!({"event": "PostToolUse", "tool_name": "write_file"}))
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.handler(0)["stdout"], "");
    assert_eq!(out.json()["additionalContext"], "formatted");
}
