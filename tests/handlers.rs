//! Running handlers (contract §6): every row of the outcome table, the chain, the environment,
//! the depth guard, the kill switch, the current directory and labels.

use serde_json::{json, Value};

use crate::common::{bin, group, on, Test};

/// A `PreToolUse` dispatch for `write_file` with `handlers` in one project group.
fn pre_tool_use(handlers: Value) -> Test {
    Test::new()
        .project_settings(group("PreToolUse", None, handlers))
        .tool_event("PreToolUse", "write_file")
}

// --- could not start ---

#[test]
fn a_missing_argv_program_is_a_spawn_error() {
    let out = pre_tool_use(json!([{"argv": ["levelcode-no-such-program", "x"]}])).run();
    assert_eq!(out.status(), 0, "fail-open");
    assert_eq!(out.decision(), "proceed");
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "spawn_error");
    assert_eq!(handler["exit_code"], Value::Null);
    let message = handler["message"].as_str().unwrap();
    assert!(message.contains("levelcode-no-such-program"), "{message}");
}

#[test]
fn a_non_executable_argv_program_is_a_spawn_error() {
    let out = pre_tool_use(json!([{"argv": ["./hooks/plain.sh"]}]))
        .project_file("hooks/plain.sh", "#!/bin/sh\nexit 0\n")
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.handler(0)["outcome"], "spawn_error");
    assert!(!out.handler(0)["message"].as_str().unwrap().is_empty());
}

#[test]
fn shell_reporting_127_is_an_error_saying_not_found() {
    let out = pre_tool_use(json!([{"command": "levelcode-no-such-program --flag"}])).run();
    assert_eq!(out.status(), 0);
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "error");
    assert_eq!(handler["exit_code"], 127);
    let message = handler["message"].as_str().unwrap();
    assert!(message.contains("not found"), "{message}");
}

#[test]
fn shell_reporting_126_is_an_error_saying_not_executable() {
    let out = pre_tool_use(json!([{"command": "./hooks/plain.sh"}]))
        .project_file("hooks/plain.sh", "#!/bin/sh\nexit 0\n")
        .run();
    assert_eq!(out.status(), 0);
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "error");
    assert_eq!(handler["exit_code"], 126);
    let message = handler["message"].as_str().unwrap();
    assert!(message.contains("not executable"), "{message}");
}

#[test]
fn an_argv_program_exiting_127_is_a_plain_error() {
    let out = pre_tool_use(json!([{"argv": ["sh", "-c", "exit 127"]}])).run();
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "error");
    assert_eq!(handler["exit_code"], 127);
}

// --- exit 2 ---

#[test]
fn exit_2_blocks_with_stderr_trimmed_as_the_reason() {
    let out = pre_tool_use(json!([
        {"command": "printf '  src/generated/ is produced by codegen \\n\\n' >&2; exit 2"}
    ]))
    .run();
    assert_eq!(out.status(), 2);
    let json = out.json();
    assert_eq!(json["decision"], "block");
    assert_eq!(json["reason"], "src/generated/ is produced by codegen");
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "block");
    assert_eq!(handler["exit_code"], 2);
    assert_eq!(
        handler["stderr"], "  src/generated/ is produced by codegen \n\n",
        "the result shows the kept text as captured"
    );
}

#[test]
fn exit_2_without_stderr_takes_the_reason_from_stdout_json() {
    let out = pre_tool_use(json!([
        {"command": "echo ' ' >&2; echo '{\"reason\":\" from stdout \"}'; exit 2"}
    ]))
    .run();
    assert_eq!(out.status(), 2);
    assert_eq!(out.json()["reason"], "from stdout");
}

#[test]
fn exit_2_without_any_reason_gets_the_default_reason() {
    let out =
        pre_tool_use(json!([{"command": "echo not json; exit 2", "name": "guard-write"}])).run();
    assert_eq!(out.status(), 2);
    assert_eq!(
        out.json()["reason"],
        "blocked by PreToolUse hook: guard-write"
    );
    let out = pre_tool_use(json!([{"command": "exit 2"}])).run();
    assert_eq!(out.json()["reason"], "blocked by PreToolUse hook: exit 2");
}

#[test]
fn exit_2_on_another_event_is_an_error() {
    for event in ["PostToolUse", "Stop", "SessionStart"] {
        let out = Test::new()
            .project_settings(on(event, "echo no >&2; exit 2"))
            .payload(&json!({"event": event, "tool_name": "write_file"}))
            .run();
        assert_eq!(out.status(), 0, "{event}");
        assert_eq!(out.decision(), "proceed");
        assert!(out.json().get("reason").is_none());
        assert_eq!(out.handler(0)["outcome"], "error", "{event}");
        assert_eq!(out.handler(0)["exit_code"], 2);
    }
}

/// A failure's message says what goes on for the event it happened on: a tool call only on a
/// tool event.
#[test]
fn a_failure_says_what_goes_on_for_its_own_event() {
    for (event, says) in [
        ("PreToolUse", "the tool call proceeds"),
        ("PostToolUse", "the tool call proceeds"),
        ("Stop", "the dispatch goes on"),
        ("SessionStart", "the dispatch goes on"),
        ("UserPromptSubmit", "the prompt goes on to the model"),
    ] {
        for command in ["exit 1", "kill -9 $$"] {
            let out = Test::new()
                .project_settings(on(event, command))
                .payload(&json!({"event": event, "tool_name": "write_file", "prompt": "hi"}))
                .run();
            let message = out.handler(0)["message"].as_str().unwrap().to_string();
            assert!(message.contains(says), "{event} {command}: {message}");
            if !says.contains("tool") {
                assert!(
                    !message.contains("tool call"),
                    "{event} {command}: {message}"
                );
            }
        }
    }
}

// --- exit 0 and stdout JSON ---

#[test]
fn exit_0_json_block_on_pre_tool_use_blocks() {
    let out = pre_tool_use(json!([
        {"command": "echo; echo '  {\"decision\":\"block\",\"reason\":\" no writes \"}  '"}
    ]))
    .run();
    assert_eq!(out.status(), 2);
    assert_eq!(out.json()["reason"], "no writes");
    assert_eq!(out.handler(0)["outcome"], "block");
    assert_eq!(out.handler(0)["exit_code"], 0);
}

#[test]
fn exit_0_json_block_without_reason_gets_the_default_reason() {
    let out = pre_tool_use(json!([
        {"command": "echo '{\"decision\":\"block\"}'", "name": "json-guard"}
    ]))
    .run();
    assert_eq!(out.status(), 2);
    assert_eq!(
        out.json()["reason"],
        "blocked by PreToolUse hook: json-guard"
    );
}

#[test]
fn exit_0_json_block_larger_than_16_kib_is_honoured() {
    let out = pre_tool_use(json!([{"command": concat!(
        "printf '{\"decision\":\"block\",\"reason\":\"big\",\"pad\":\"'; ",
        "head -c 40000 /dev/zero | tr '\\0' x; printf '\"}'"
    )}]))
    .run();
    assert_eq!(out.status(), 2, "{}", out.stdout());
    assert_eq!(out.json()["reason"], "big");
}

#[test]
fn exit_0_json_block_on_other_events_proceeds_with_a_warning() {
    for event in ["PostToolUse", "Stop", "SessionStart"] {
        let out = Test::new()
            .project_settings(json!({"hooks": {event: [{"hooks": [{
                "command": "echo '{\"decision\":\"block\",\"reason\":\"no\"}'",
                "name": "blocker",
            }]}]}}))
            .payload(&json!({"event": event, "tool_name": "write_file"}))
            .run();
        assert_eq!(out.status(), 0, "{event}");
        assert_eq!(out.decision(), "proceed");
        assert!(out.json().get("reason").is_none());
        assert_eq!(out.handler(0)["outcome"], "proceed");
        let warning = out.warning(&["blocker"]);
        assert!(warning.contains("cannot block"), "{warning}");
    }
}

#[test]
fn additional_context_is_joined_in_order() {
    let out = Test::new()
        .user_settings(on(
            "SessionStart",
            "echo '{\"additionalContext\":\"from user\"}'",
        ))
        .project_settings(json!({"hooks": {"SessionStart": [{"hooks": [
            {"command": "echo plain text"},
            {"command": "printf '%s' '{\"additionalContext\":\"two\\nlines\"}'"},
            {"command": "echo '{\"additionalContext\":5}'"},
            {"command": "echo '{\"additionalContext\":\"last\"}'"},
        ]}]}}))
        .event("SessionStart")
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(
        out.json()["additionalContext"],
        "from user\ntwo\nlines\nlast"
    );
}

#[test]
fn additional_context_is_absent_when_empty() {
    let out = Test::new()
        .project_settings(on("SessionStart", "echo '{\"additionalContext\":\"\"}'"))
        .event("SessionStart")
        .run();
    assert!(
        out.json().get("additionalContext").is_none(),
        "{}",
        out.stdout()
    );
}

#[test]
fn additional_context_of_a_blocking_pre_tool_use_is_kept() {
    let out = pre_tool_use(json!([
        {"command": "echo '{\"additionalContext\":\"before\"}'"},
        {"command": "echo '{\"decision\":\"block\",\"reason\":\"no\",\"additionalContext\":\"with block\"}'"},
    ]))
    .run();
    assert_eq!(out.status(), 2);
    assert_eq!(out.json()["additionalContext"], "before\nwith block");
}

#[test]
fn stdout_starting_with_a_brace_that_is_not_json_warns() {
    let out = pre_tool_use(json!([
        {"command": "echo '{not json'", "name": "broken"},
        {"command": "echo '{\"decision\":\"block\"} trailing'", "name": "trailing"},
    ]))
    .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.outcomes(), ["proceed", "proceed"]);
    out.warning(&["broken"]);
    out.warning(&["trailing"]);
}

#[test]
fn plain_text_stdout_is_kept_in_the_result_only() {
    let out = pre_tool_use(json!([
        {"command": "echo 'decision: block'; echo '[\"not\", \"an object\"]'"}
    ]))
    .run();
    assert_eq!(out.status(), 0);
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "proceed");
    assert_eq!(
        handler["stdout"],
        "decision: block\n[\"not\", \"an object\"]\n"
    );
    assert_eq!(handler["message"], Value::Null);
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
    assert!(out.json().get("additionalContext").is_none());
}

#[test]
fn other_exit_codes_are_errors_and_stdout_json_is_not_honoured() {
    let out = pre_tool_use(json!([
        {"command": "echo '{\"decision\":\"block\",\"reason\":\"no\"}'; exit 1"},
        {"command": "echo '{\"additionalContext\":\"ignored\"}'; exit 3"},
        {"command": "exit 255"},
    ]))
    .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.decision(), "proceed");
    assert_eq!(out.outcomes(), ["error", "error", "error"]);
    let codes: Vec<Value> = out
        .handlers()
        .iter()
        .map(|h| h["exit_code"].clone())
        .collect();
    assert_eq!(codes, [json!(1), json!(3), json!(255)]);
    assert!(out.json().get("additionalContext").is_none());
    assert!(out.json().get("reason").is_none());
}

#[test]
fn a_handler_killed_by_a_signal_is_an_error() {
    let out = pre_tool_use(json!([
        {"command": "kill -TERM $$"},
        {"command": "echo '{\"decision\":\"block\"}'; kill -KILL $$"},
    ]))
    .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.outcomes(), ["error", "error"]);
    assert_eq!(out.handler(0)["signal"], 15);
    assert_eq!(out.handler(0)["exit_code"], Value::Null);
    assert_eq!(out.handler(1)["signal"], 9);
    assert!(out.handler(0)["message"].as_str().is_some());
}

// --- the chain ---

#[test]
fn the_first_block_ends_the_chain() {
    let out = Test::new()
        .user_settings(group(
            "PreToolUse",
            Some("write_file"),
            json!([
                {"command": "echo first reason >&2; exit 2"},
                {"command": "touch same-group; echo second reason >&2; exit 2"},
            ]),
        ))
        .project_settings(on("PreToolUse", "touch next-layer"))
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.status(), 2);
    assert_eq!(out.json()["reason"], "first reason");
    assert_eq!(out.outcomes(), ["block", "skipped", "skipped"]);
    assert!(!out.project_has("same-group"));
    assert!(!out.project_has("next-layer"));
    assert_eq!(out.handler(2)["layer"], "project");
}

#[test]
fn handlers_before_a_block_run_in_order() {
    let out = pre_tool_use(json!([
        {"command": "echo 1 >> order"},
        {"command": "echo 2 >> order; echo no >&2; exit 2"},
    ]))
    .run();
    assert_eq!(out.outcomes(), ["proceed", "block"]);
    assert_eq!(out.project_text("order"), "1\n2\n");
}

#[test]
fn failures_before_a_block_do_not_stop_the_chain() {
    let out = pre_tool_use(json!([
        {"argv": ["levelcode-no-such-program"]},
        {"command": "exit 1"},
        {"command": "echo no >&2; exit 2"},
    ]))
    .run();
    assert_eq!(out.outcomes(), ["spawn_error", "error", "block"]);
    assert_eq!(out.status(), 2);
}

// --- environment ---

const SHOW_ENV: &str = "printf '%s|%s|%s|%s|%s\\n' \"$LEVELCODE_PROJECT_DIR\" \"$LEVELCODE_HOOK_EVENT\" \"${LEVELCODE_TOOL_NAME-unset}\" \"$LEVELCODE_HOOKS_DEPTH\" \"$INHERITED\"";

#[test]
fn handlers_get_the_four_variables_on_tool_events() {
    let out = pre_tool_use(json!([{"command": SHOW_ENV}]))
        .env("INHERITED", "yes")
        .run();
    let expected = format!("{}|PreToolUse|write_file|1|yes", out.project().display());
    assert_eq!(out.stdouts(), [expected]);
}

#[test]
fn handlers_get_no_tool_name_on_other_events() {
    let out = Test::new()
        .project_settings(on("Stop", SHOW_ENV))
        .env("LEVELCODE_TOOL_NAME", "stale")
        .env("INHERITED", "yes")
        .event("Stop")
        .run();
    let expected = format!("{}|Stop|unset|1|yes", out.project().display());
    assert_eq!(out.stdouts(), [expected]);
}

#[test]
fn handlers_get_depth_one_more_than_the_dispatcher() {
    for (own, expected) in [("2", "3"), ("3", "4"), ("abc", "1"), ("", "1")] {
        let out = Test::new()
            .project_settings(on("Stop", "echo $LEVELCODE_HOOKS_DEPTH"))
            .env("LEVELCODE_HOOKS_DEPTH", own)
            .event("Stop")
            .run();
        assert_eq!(out.stdouts(), [expected], "LEVELCODE_HOOKS_DEPTH={own:?}");
    }
}

#[test]
fn depth_4_or_more_runs_nothing_and_warns() {
    for depth in ["4", "9"] {
        let out = Test::new()
            .project_settings(on("Stop", "touch ran"))
            .env("LEVELCODE_HOOKS_DEPTH", depth)
            .event("Stop")
            .run();
        assert_eq!(out.status(), 0);
        assert!(out.handlers().is_empty());
        assert!(!out.project_has("ran"));
        out.warning(&["LEVELCODE_HOOKS_DEPTH"]);
    }
}

#[test]
fn a_hook_that_fires_hooks_stops_at_depth_4() {
    let command = format!(
        "echo $LEVELCODE_HOOKS_DEPTH >> depths; echo '{{\"event\":\"Stop\"}}' | '{}' > /dev/null",
        bin().display()
    );
    let out = Test::new()
        .project_settings(on("Stop", &command))
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.outcomes(), ["proceed"]);
    assert_eq!(out.project_text("depths"), "1\n2\n3\n4\n");
}

#[test]
fn kill_switch_runs_nothing_with_exactly_one_warning() {
    for value in ["0", "false", "OFF", "Off"] {
        let out = Test::new()
            .user_settings("not even json")
            .project_settings(on("PreToolUse", "touch ran; echo no >&2; exit 2"))
            .env("LEVELCODE_HOOKS", value)
            .tool_event("PreToolUse", "write_file")
            .run();
        assert_eq!(out.status(), 0, "LEVELCODE_HOOKS={value}");
        assert_eq!(out.decision(), "proceed");
        assert!(out.handlers().is_empty());
        assert_eq!(out.warnings().len(), 1, "{:?}", out.warnings());
        assert!(out.warnings()[0].contains("LEVELCODE_HOOKS"));
        assert!(!out.project_has("ran"));
    }
}

#[test]
fn kill_switch_on_values_run_hooks() {
    for value in ["1", "true", "on", ""] {
        let out = Test::new()
            .project_settings(on("Stop", "echo ran"))
            .env("LEVELCODE_HOOKS", value)
            .event("Stop")
            .run();
        assert_eq!(out.stdouts(), ["ran"], "LEVELCODE_HOOKS={value:?}");
    }
}

// --- where handlers run ---

#[test]
fn handlers_run_in_the_project_root() {
    let test = Test::new();
    let project = test.project();
    let elsewhere = test.root().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let out = test
        .project_script("hooks/hello.sh", "echo hello from $(pwd -P)")
        .project_settings(json!({"hooks": {"Stop": [{"hooks": [
            {"command": "pwd -P"},
            {"command": "./hooks/hello.sh"},
            {"argv": ["./hooks/hello.sh"]},
            {"argv": ["sh", "hooks/hello.sh"]},
        ]}]}}))
        .current_dir(&elsewhere)
        .payload(&json!({"event": "Stop", "cwd": project}))
        .run();
    assert_eq!(out.status(), 0);
    let here = out.project().display().to_string();
    let hello = format!("hello from {here}");
    assert_eq!(out.stdouts(), [here, hello.clone(), hello.clone(), hello]);
}

#[test]
fn project_dir_flag_wins_over_the_payload_cwd() {
    let test = Test::new();
    let other = test.root().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let project = test.project();
    let out = test
        .project_settings(on("Stop", "pwd -P; echo $LEVELCODE_PROJECT_DIR"))
        .file(
            "other/.levelcode/settings.json",
            on("Stop", "touch other-ran").to_string(),
        )
        .arg("--project-dir")
        .arg(&project)
        .payload(&json!({"event": "Stop", "cwd": other}))
        .run();
    let here = out.project().display().to_string();
    assert_eq!(out.stdouts(), [format!("{here}\n{here}")]);
    assert!(!other.join("other-ran").exists());
}

#[test]
fn a_relative_project_dir_is_made_absolute() {
    let test = Test::new();
    let root = test.root().to_path_buf();
    let out = test
        .project_settings(on("Stop", "echo $LEVELCODE_PROJECT_DIR"))
        .current_dir(&root)
        .args(["--project-dir", "project"])
        .event("Stop")
        .run();
    let printed = out.stdouts()[0].clone();
    assert!(printed.starts_with('/'), "{printed}");
    assert_eq!(
        std::path::Path::new(&printed).canonicalize().unwrap(),
        out.project()
    );
}

#[test]
fn a_missing_project_dir_warns_and_handlers_still_run() {
    let test = Test::new();
    let missing = test.root().join("missing");
    let here = test.root().join("here");
    std::fs::create_dir_all(&here).unwrap();
    let out = test
        .user_settings(on("Stop", "pwd -P; echo $LEVELCODE_PROJECT_DIR"))
        .current_dir(&here)
        .payload(&json!({"event": "Stop", "cwd": missing}))
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.outcomes(), ["proceed"]);
    assert_eq!(
        out.stdouts(),
        [format!("{}\n{}", here.display(), missing.display())]
    );
    out.warning(&[&missing.display().to_string(), "does not exist"]);
}

// --- how handlers start ---

/// A line of `/proc/self/status` as a bit mask: `SigBlk`, `SigIgn`, `SigCgt`.
fn signal_mask(status: &str, field: &str) -> u64 {
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .unwrap_or_else(|| panic!("no {field} in {status}"));
    u64::from_str_radix(line.trim_start_matches(':').trim(), 16).unwrap()
}

#[test]
#[cfg(target_os = "linux")]
fn handlers_start_with_no_signal_blocked_and_none_of_the_dispatchers_ignored() {
    // cat is executed directly, so its status shows what the dispatcher handed over.
    let out = pre_tool_use(json!([{"argv": ["cat", "/proc/self/status"]}])).run();
    assert_eq!(out.outcomes(), ["proceed"]);
    let status = out.handler(0)["stdout"].as_str().unwrap().to_string();
    assert_eq!(signal_mask(&status, "SigBlk"), 0, "{status}");
    // The dispatcher ignores SIGPIPE and catches SIGINT, SIGTERM and SIGHUP; a handler gets
    // the defaults (a caught signal could otherwise only be inherited as ignored by mistake).
    let ignored = signal_mask(&status, "SigIgn");
    for sig in [libc::SIGPIPE, libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        assert_eq!(
            ignored & (1 << (sig - 1)),
            0,
            "signal {sig} ignored: {status}"
        );
    }
}

#[test]
fn path_lookup_passes_over_a_name_that_is_not_executable() {
    let test = Test::new();
    let first = test.root().join("first");
    let second = test.root().join("second");
    let path = format!(
        "{}:{}:{}",
        first.display(),
        second.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = test
        .file("first/levelcode-tool", "#!/bin/sh\necho first\n")
        .file("second/levelcode-tool", "#!/bin/sh\necho second\n")
        .project_settings(group(
            "PreToolUse",
            None,
            json!([{"argv": ["levelcode-tool"]}]),
        ))
        .tool_event("PreToolUse", "write_file")
        .env("PATH", &path);
    make_executable(&second.join("levelcode-tool"));
    let out = out.run();
    assert_eq!(out.outcomes(), ["proceed"]);
    assert_eq!(out.stdouts(), ["second"]);
}

#[test]
fn path_lookup_that_finds_only_non_executable_files_says_permission_denied() {
    let test = Test::new();
    let only = test.root().join("only");
    let out = test
        .file("only/levelcode-tool", "#!/bin/sh\necho never\n")
        .project_settings(group(
            "PreToolUse",
            None,
            json!([{"argv": ["levelcode-tool"]}]),
        ))
        .tool_event("PreToolUse", "write_file")
        .env("PATH", format!("{}:/nonexistent", only.display()))
        .run();
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "spawn_error");
    let message = handler["message"].as_str().unwrap();
    assert!(message.contains("levelcode-tool"), "{message}");
    assert!(message.contains("ermission denied"), "{message}");
    assert!(message.contains("chmod +x"), "{message}");
}

#[test]
fn handlers_get_proper_streams_when_the_dispatcher_has_no_stderr() {
    // Started with descriptor 2 closed (the runtime puts /dev/null there before main), the
    // dispatcher still gives each handler its payload on 0, its stdout on 1, its stderr on 2.
    let out = pre_tool_use(json!([
        {"command": "cat; echo; echo to stdout"},
        {"command": "echo to stderr >&2; exit 2"},
    ]))
    .closed(2)
    .run();
    assert_eq!(out.status(), 2);
    let stdout = &out.stdouts()[0];
    assert!(stdout.starts_with("{\"event\":\"PreToolUse\""), "{stdout}");
    assert!(stdout.ends_with("}\nto stdout"), "{stdout}");
    assert_eq!(out.json()["reason"], "to stderr");
}

fn make_executable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

// --- labels ---

#[test]
fn labels_are_name_then_command_then_quoted_argv() {
    let out = Test::new()
        .project_settings(json!({"hooks": {"Stop": [{"hooks": [
            {"command": "true", "name": "named"},
            {"command": "echo  spaced"},
            {"argv": ["echo", "two words"]},
            {"argv": ["echo", "plain"]},
        ]}]}}))
        .event("Stop")
        .run();
    assert_eq!(
        out.labels(),
        ["named", "echo  spaced", "echo 'two words'", "echo plain"]
    );
}

#[test]
fn the_default_reason_names_an_argv_handler_by_its_quoted_argv() {
    let out = pre_tool_use(json!([{"argv": ["sh", "-c", "exit 2"]}])).run();
    assert_eq!(out.status(), 2);
    assert_eq!(
        out.json()["reason"],
        "blocked by PreToolUse hook: sh -c 'exit 2'"
    );
}

#[test]
fn a_handler_result_carries_every_field() {
    let out = Test::new()
        .project_settings(group(
            "PreToolUse",
            Some("write_file|str_replace"),
            json!([{"command": "echo out; echo err >&2"}]),
        ))
        .tool_event("PreToolUse", "write_file")
        .run();
    let handler = out.handler(0);
    let keys: Vec<&str> = handler
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "layer",
            "source",
            "event",
            "matcher",
            "label",
            "outcome",
            "exit_code",
            "signal",
            "duration_ms",
            "stdout",
            "stderr",
            "stdout_truncated",
            "stderr_truncated",
            "message",
            "rewrote_input"
        ]
    );
    assert_eq!(handler["event"], "PreToolUse");
    assert_eq!(handler["matcher"], "write_file|str_replace");
    assert_eq!(handler["exit_code"], 0);
    assert_eq!(handler["signal"], Value::Null);
    assert!(handler["duration_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(handler["stdout"], "out\n");
    assert_eq!(handler["stderr"], "err\n");
    assert_eq!(handler["stdout_truncated"], false);
    assert_eq!(handler["message"], Value::Null);
}

#[test]
fn handlers_start_with_the_default_sigpipe() {
    // A pipeline cut short by `head` ends quietly, as in a terminal.
    let out = Test::new()
        .project_settings(on("Stop", "yes | head -n 1"))
        .event("Stop")
        .run();
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "proceed");
    assert_eq!(handler["stdout"], "y\n");
    assert_eq!(handler["stderr"], "");
}
