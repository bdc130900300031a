//! `"if"` on a handler or a group (contract §16), black-box: a handler runs only for the tool
//! calls its permission rule matches, through `run` and through `serve`, in levelcode's
//! protocol and Claude Code's; an `if` that cannot be evaluated runs its handler and says so;
//! `list`, `test --dry-run`, `-v` and `validate` say what an `if` does; and an answer an `if`
//! shaped holds for its input only, never for the tool.

use serde_json::{json, Value};

use crate::common::{server, Test};

/// A guard that blocks every call it sees, saying so on stderr.
fn blocker(said: &str) -> Value {
    json!({"command": format!("cat > /dev/null; echo '{said}' >&2; exit 2"), "name": said})
}

fn bash(command: &str) -> Value {
    json!({"event": "PreToolUse", "tool_name": "run_terminal_command",
           "tool_input": {"command": command, "process_type": "SYNC"}})
}

fn edit(path: &str) -> Value {
    json!({"event": "PreToolUse", "tool_name": "str_replace",
           "tool_input": {"path": path, "replacements": [{"old": "a", "new": "b", "allowMultiple": false}]}})
}

/// The answers of `run` (one process per payload) and of one `serve` (every payload in one
/// stream), for `payloads` in their order, with the settings `hooks` in the project layer.
fn both(hooks: &Value, payloads: &[Value]) -> Vec<(&'static str, Vec<Value>)> {
    let settings = json!({ "hooks": hooks });
    let run: Vec<Value> = payloads
        .iter()
        .map(|payload| {
            let out = Test::new()
                .project_settings(&settings)
                .payload(payload)
                .run();
            let json = out.json();
            let blocked = json["decision"] == "block";
            assert_eq!(out.status(), if blocked { 2 } else { 0 }, "{json}");
            json
        })
        .collect();
    vec![("run", run), ("serve", served(&settings, payloads, false))]
}

/// One `serve`'s answers for `payloads`, in their order; `watch` asks for what each depends on.
fn served(settings: &Value, payloads: &[Value], watch: bool) -> Vec<Value> {
    let mut requests = server::numbered(payloads);
    if watch {
        for request in &mut requests {
            request["options"] = json!({"watch": true});
        }
    }
    server::answers(Test::new().project_settings(settings), &requests)
}

fn labels(answer: &Value) -> Vec<String> {
    answer["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["label"].as_str().unwrap().to_string())
        .collect()
}

fn protocols() -> [Value; 2] {
    [json!("levelcode"), json!("claude")]
}

#[test]
fn a_commit_checker_runs_for_commits_only_even_inside_a_compound_command() {
    for protocol in protocols() {
        let mut checker = blocker("commit checker");
        checker["if"] = json!("Bash(git commit *)");
        let hooks = json!({"PreToolUse": [
            {"matcher": "run_terminal_command|Bash", "protocol": protocol, "hooks": [checker]}
        ]});
        let payloads = [
            bash("git commit -m x"),
            bash("git add . && git commit -m x"),
            bash("VAR=1 git commit --amend"),
            bash("ls"),
            bash("git status; echo 'git commit -m x'"),
        ];
        for (mode, answers) in both(&hooks, &payloads) {
            for (answer, blocked) in answers.iter().zip([true, true, true, false, false]) {
                let expected = if blocked { "block" } else { "proceed" };
                assert_eq!(answer["decision"], expected, "{protocol} {mode}: {answer}");
                if blocked {
                    assert_eq!(answer["reason"], "commit checker", "{mode}: {answer}");
                    assert_eq!(labels(answer), ["commit checker"]);
                } else {
                    // Not run, and not reported.
                    assert_eq!(answer["handlers"], json!([]), "{protocol} {mode}: {answer}");
                    assert_eq!(answer["warnings"], json!([]), "{protocol} {mode}: {answer}");
                }
            }
        }
    }
}

#[test]
fn an_edit_guard_on_src_blocks_src_and_lets_docs_through() {
    for protocol in protocols() {
        for rule in ["Edit(src/**)", "str_replace(src/**)"] {
            let mut guard = blocker("src is generated");
            guard["if"] = json!(rule);
            let hooks = json!({"PreToolUse": [{"protocol": protocol, "hooks": [guard]}]});
            let payloads = [edit("src/a.rs"), edit("docs/x.md"), edit("src/deep/b.rs")];
            for (mode, answers) in both(&hooks, &payloads) {
                let decisions: Vec<&str> = answers
                    .iter()
                    .map(|a| a["decision"].as_str().unwrap())
                    .collect();
                assert_eq!(
                    decisions,
                    ["block", "proceed", "block"],
                    "{protocol} {rule} {mode}: {answers:?}"
                );
                assert_eq!(answers[1]["handlers"], json!([]), "{mode}");
            }
        }
    }
}

#[test]
fn an_if_that_cannot_be_evaluated_runs_its_handler_and_warns() {
    for protocol in protocols() {
        let mut checker = blocker("checked");
        checker["if"] = json!("Bash(git commit *)");
        let mut broken = blocker("broken rule");
        broken["if"] = json!("Bash(git commit *");
        let hooks = json!({"PreToolUse": [
            {"protocol": protocol, "hooks": [checker]},
            {"protocol": protocol, "hooks": [broken]}
        ]});
        // A quote left open: the command cannot be split, so the checker runs.
        let payloads = [bash("git commit -m 'unbalanced"), bash("ls")];
        for (mode, answers) in both(&hooks, &payloads) {
            let unsplit = &answers[0];
            assert_eq!(unsplit["decision"], "block", "{mode}: {unsplit}");
            assert_eq!(labels(unsplit), ["checked", "broken rule"], "{mode}");
            let warnings = unsplit["warnings"].to_string();
            assert!(
                warnings.contains("hooks.PreToolUse[0].hooks[0].if")
                    && warnings.contains("cannot be split")
                    && warnings.contains("quote")
                    && warnings.contains("the handler runs"),
                "{mode}: {warnings}"
            );
            // A rule that is not one: its handler runs on every call, with a warning.
            let other = &answers[1];
            assert_eq!(labels(other), ["broken rule"], "{mode}: {other}");
            assert_eq!(other["decision"], "block");
            let warnings = other["warnings"].to_string();
            assert!(
                warnings.contains("hooks.PreToolUse[1].hooks[0].if")
                    && warnings.contains("does not end with the )"),
                "{mode}: {warnings}"
            );
        }
    }
}

#[test]
fn a_group_if_applies_to_each_handler_and_both_must_match() {
    let mut own = blocker("pushes to main");
    own["if"] = json!("Bash(* main)");
    let hooks = json!({"PreToolUse": [{"if": "Bash(git push *)", "hooks": [
        {"command": "echo '{\"additionalContext\":\"a push\"}'", "name": "any push"},
        own
    ]}]});
    let payloads = [
        bash("git push origin main"),
        bash("git push origin dev"),
        bash("git checkout main"),
    ];
    for (mode, answers) in both(&hooks, &payloads) {
        assert_eq!(
            labels(&answers[0]),
            ["any push", "pushes to main"],
            "{mode}"
        );
        assert_eq!(answers[0]["decision"], "block");
        assert_eq!(labels(&answers[1]), ["any push"], "{mode}");
        assert_eq!(answers[1]["additionalContext"], "a push");
        assert_eq!(answers[2]["handlers"], json!([]), "{mode}");
    }
}

#[test]
fn a_claude_read_guard_runs_for_its_paths_only() {
    // Claude Code reads one path per call, so the guard runs once, for the secret.
    let mut guard = json!({"command": "cat; exit 0", "name": "reads"});
    guard["if"] = json!("Read(secrets/**)");
    let hooks = json!({"PreToolUse": [{"protocol": "claude", "hooks": [guard]}]});
    let read = json!({"event": "PreToolUse", "tool_name": "read_files",
                      "tool_input": {"paths": ["README.md", "secrets/key.pem", "src/a.rs"]}});
    let none = json!({"event": "PreToolUse", "tool_name": "read_files",
                      "tool_input": {"paths": ["README.md"]}});
    for (mode, answers) in both(&hooks, &[read, none]) {
        let handlers = answers[0]["handlers"].as_array().unwrap();
        assert_eq!(handlers.len(), 1, "{mode}: {}", answers[0]);
        let seen: Value = serde_json::from_str(handlers[0]["stdout"].as_str().unwrap()).unwrap();
        assert!(
            seen["tool_input"]["file_path"]
                .as_str()
                .unwrap()
                .ends_with("/secrets/key.pem"),
            "{mode}: {seen}"
        );
        assert_eq!(answers[1]["handlers"], json!([]), "{mode}");
    }
}

#[test]
fn an_if_on_an_event_without_a_tool_call_never_runs_its_handler() {
    let hooks = json!({"Stop": [{"hooks": [
        {"command": "echo ran", "if": "Bash", "name": "filtered"},
        {"command": "echo ran", "name": "plain"}
    ]}]});
    for (mode, answers) in both(&hooks, &[json!({"event": "Stop"})]) {
        assert_eq!(labels(&answers[0]), ["plain"], "{mode}");
    }
}

#[test]
fn a_handler_filtered_out_does_not_hold_back_its_duplicate() {
    // The same command twice, for two kinds of calls: the one whose rule matches runs.
    let hooks = json!({"PreToolUse": [{"hooks": [
        {"command": "echo '{\"additionalContext\":\"seen\"}'", "if": "Bash(git *)"},
        {"command": "echo '{\"additionalContext\":\"seen\"}'", "if": "Bash(npm *)"}
    ]}]});
    for (mode, answers) in both(&hooks, &[bash("npm test"), bash("git log")]) {
        for answer in &answers {
            let outcomes: Vec<&str> = answer["handlers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["outcome"].as_str().unwrap())
                .collect();
            assert_eq!(outcomes, ["proceed"], "{mode}: {answer}");
            assert_eq!(answer["additionalContext"], "seen");
        }
    }
}

#[test]
fn an_answer_an_if_shaped_holds_for_its_input_not_for_the_tool() {
    let mut checker = blocker("commit checker");
    checker["if"] = json!("Bash(git commit *)");
    let mut writes = blocker("writes");
    writes["if"] = json!("Write");
    let settings = json!({"hooks": {"PreToolUse": [{"hooks": [checker, writes]}]}});
    let answers = served(
        &settings,
        &[
            bash("ls"),
            bash("git commit -m x"),
            edit("src/a.rs"),
            json!({"event": "PreToolUse", "tool_name": "glob", "tool_input": {"pattern": "*"}}),
        ],
        true,
    );
    // `ls` ran nothing, but `git commit` would have: nothing to watch, so no client keeps the
    // answer for run_terminal_command.
    assert_eq!(answers[0]["decision"], "proceed");
    assert_eq!(answers[0]["handlers"], json!([]));
    assert!(answers[0].get("watch").is_none(), "{}", answers[0]);
    assert_eq!(answers[1]["decision"], "block");
    // For the other tools neither rule can match whatever the input: a no-match for the tool,
    // which a client may keep.
    for answer in &answers[2..] {
        assert_eq!(answer["handlers"], json!([]), "{answer}");
        let watch = answer["watch"]
            .as_array()
            .unwrap_or_else(|| panic!("{answer}"));
        assert!(!watch.is_empty(), "{answer}");
    }
}

#[test]
fn list_dry_run_and_the_trace_say_why_a_handler_was_filtered_out() {
    let mut checker = blocker("commit checker");
    checker["if"] = json!("Bash(git commit *)");
    let settings = json!({"hooks": {"PreToolUse": [{"hooks": [checker]}]}});
    let list = |args: &[&str]| {
        let out = Test::new()
            .project_settings(&settings)
            .args([
                "list",
                "--event",
                "PreToolUse",
                "--tool",
                "run_terminal_command",
                "--json",
            ])
            .args(args)
            .run();
        assert_eq!(out.status(), 0, "{}", out.stderr());
        out.json()["handlers"][0].clone()
    };
    let unknown = list(&[]);
    assert_eq!(unknown["state"], "would_run");
    assert_eq!(unknown["if"], "Bash(git commit *)");
    assert!(
        unknown["why"].as_str().unwrap().contains("only for calls"),
        "{unknown}"
    );
    let ls = list(&["--input", r#"{"command":"ls"}"#]);
    assert_eq!(ls["state"], "filtered", "{ls}");
    assert!(
        ls["why"].as_str().unwrap().contains("does not match"),
        "{ls}"
    );
    let commit = list(&["--input", r#"{"command":"git add . && git commit -m x"}"#]);
    assert_eq!(commit["state"], "would_run", "{commit}");

    let dry = Test::new()
        .project_settings(&settings)
        .args([
            "test",
            "--event",
            "PreToolUse",
            "--tool",
            "run_terminal_command",
        ])
        .args(["--input", r#"{"command":"ls"}"#, "--dry-run"])
        .run();
    assert_eq!(dry.status(), 0, "{}", dry.stderr());
    let text = dry.stdout();
    assert!(text.contains("no handler would run"), "{text}");
    assert!(
        text.contains("filtered") && text.contains("\"if\": \"Bash(git commit *)\" does not match"),
        "{text}"
    );

    let unsplit = Test::new()
        .project_settings(&settings)
        .args([
            "test",
            "--event",
            "PreToolUse",
            "--tool",
            "run_terminal_command",
        ])
        .args(["--input", r#"{"command":"git commit -m 'x"}"#, "--dry-run"])
        .run();
    let text = unsplit.stdout();
    assert!(
        text.contains("would run")
            && text.contains("cannot be evaluated")
            && text.contains("so the handler runs"),
        "{text}"
    );

    let traced = Test::new()
        .project_settings(&settings)
        .arg("-v")
        .payload(&bash("ls"))
        .run();
    assert_eq!(traced.status(), 0);
    let trace = traced.stderr();
    assert!(
        trace.contains(
            "hooks.PreToolUse[0].hooks[0]: \"if\": \"Bash(git commit *)\" does not match"
        ) && trace.contains("commit checker not run"),
        "{trace}"
    );
}

#[test]
fn validate_names_each_if_that_cannot_work_and_where_it_is() {
    let settings = json!({"hooks": {
        "PreToolUse": [{"if": "Bash(git", "hooks": [
            {"command": "true", "if": "Edit(src/[a)"},
            {"command": "true 2", "if": "Edt(src/**)"},
            {"command": "true 3", "if": 7},
            {"command": "true 4", "if": "Bash(git commit *)"}
        ]}],
        "Stop": [{"hooks": [{"command": "true", "if": "Bash"}]}]
    }});
    let out = Test::new()
        .project_settings(&settings)
        .args(["validate", "--json"])
        .run();
    assert_eq!(out.status(), 1, "{}", out.stdout());
    let problems: Vec<(String, String, String)> = out.json()["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap_or_default().to_string(),
                p["kind"].as_str().unwrap().to_string(),
                p["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let find = |path: &str| {
        problems
            .iter()
            .find(|(p, _, _)| p == path)
            .unwrap_or_else(|| panic!("no problem at {path}: {problems:#?}"))
    };
    let (_, kind, message) = find("hooks.PreToolUse[0].if");
    assert_eq!(kind, "invalid_if");
    assert!(message.contains("Tool(pattern)"), "{message}");
    let (_, kind, message) = find("hooks.PreToolUse[0].hooks[0].if");
    assert_eq!(kind, "invalid_if");
    assert!(message.contains("never closed"), "{message}");
    let (_, kind, message) = find("hooks.PreToolUse[0].hooks[1].if");
    assert_eq!(kind, "if_tool");
    assert!(message.contains("did you mean \"Edit\""), "{message}");
    let (_, kind, _) = find("hooks.PreToolUse[0].hooks[2].if");
    assert_eq!(kind, "invalid_if");
    let (_, kind, _) = find("hooks.Stop[0].hooks[0].if");
    assert_eq!(kind, "if_ignored");
    assert!(!problems
        .iter()
        .any(|(p, _, _)| p.starts_with("hooks.PreToolUse[0].hooks[3]")));
}
