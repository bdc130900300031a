//! Bytes in and out (contract §6 "stdin" and "Output", §7): large payloads, large and broken
//! output, what the dispatcher prints and how it exits.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{on, Test};

const KEEP: usize = 64 * 1024;

/// A `Stop` payload of about `len` bytes whose `cwd` is `project`, so handlers get it unchanged.
fn big_payload(project: &std::path::Path, len: usize) -> String {
    let head = json!({"event": "Stop", "cwd": project}).to_string();
    let filler: String = (0..len - head.len())
        .map(|i| char::from(b'a' + u8::try_from(i % 26).unwrap()))
        .collect();
    format!("{},\"filler\":\"{filler}\"}}", &head[..head.len() - 1])
}

#[test]
fn eight_mib_payload_to_handlers_that_never_read() {
    let test = Test::new();
    let payload = big_payload(&test.project(), 8 << 20);
    let out = test
        .project_settings(json!({"hooks": {"Stop": [{"hooks": [
            {"command": "exit 0"},
            {"command": "sleep 0.2; echo done"},
            {"argv": ["true"]},
        ]}]}}))
        .stdin(payload)
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.outcomes(), ["proceed", "proceed", "proceed"]);
    assert_eq!(out.stdouts()[1], "done");
    assert!(
        out.elapsed() < Duration::from_secs(20),
        "{:?}",
        out.elapsed()
    );
}

#[test]
fn eight_mib_payload_echoed_back_by_the_handler() {
    let test = Test::new();
    let payload = big_payload(&test.project(), 8 << 20);
    let out = test
        .project_settings(json!({"hooks": {"Stop": [{"hooks": [
            {"command": "cat"},
            {"command": "cat >&2"},
            {"command": "wc -c"},
        ]}]}}))
        .stdin(payload.clone())
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.outcomes(), ["proceed", "proceed", "proceed"]);
    let echoed = out.handler(0);
    assert_eq!(echoed["stdout"].as_str().unwrap(), &payload[..KEEP]);
    assert_eq!(echoed["stdout_truncated"], true);
    let echoed = out.handler(1);
    assert_eq!(echoed["stderr"].as_str().unwrap(), &payload[..KEEP]);
    assert_eq!(echoed["stderr_truncated"], true);
    assert_eq!(out.stdouts()[2], payload.len().to_string());
}

#[test]
fn handler_writing_megabytes_before_reading_does_not_deadlock() {
    let test = Test::new();
    let payload = big_payload(&test.project(), 4 << 20);
    let out = test
        .project_settings(on(
            "Stop",
            "head -c 6000000 /dev/zero | tr '\\0' e >&2; head -c 6000000 /dev/zero; wc -c",
        ))
        .stdin(payload.clone())
        .run();
    assert_eq!(out.status(), 0);
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "proceed");
    assert_eq!(handler["stderr_truncated"], true);
    assert_eq!(handler["stdout_truncated"], true);
    assert!(
        out.elapsed() < Duration::from_secs(20),
        "{:?}",
        out.elapsed()
    );
}

#[test]
fn five_mib_on_stdout_and_stderr_at_once_keeps_64_kib_of_each() {
    let out = Test::new()
        .project_settings(on(
            "Stop",
            "head -c 5242880 /dev/zero | tr '\\0' o & head -c 5242880 /dev/zero | tr '\\0' e >&2 & wait",
        ))
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0);
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "proceed");
    assert_eq!(handler["stdout"].as_str().unwrap(), "o".repeat(KEEP));
    assert_eq!(handler["stderr"].as_str().unwrap(), "e".repeat(KEEP));
    assert_eq!(handler["stdout_truncated"], true);
    assert_eq!(handler["stderr_truncated"], true);
}

#[test]
fn exactly_64_kib_is_not_truncated() {
    let out = Test::new()
        .project_settings(on("Stop", "head -c 65536 /dev/zero | tr '\\0' k"))
        .event("Stop")
        .run();
    let handler = out.handler(0);
    assert_eq!(handler["stdout"].as_str().unwrap().len(), KEEP);
    assert_eq!(handler["stdout_truncated"], false);
}

#[test]
fn the_cut_falls_on_a_character_boundary() {
    let out = Test::new()
        .project_settings(on(
            "Stop",
            "head -c 65535 /dev/zero | tr '\\0' a; printf '\\342\\202\\254 more'",
        ))
        .event("Stop")
        .run();
    let handler = out.handler(0);
    let stdout = handler["stdout"].as_str().unwrap();
    assert_eq!(
        stdout,
        "a".repeat(KEEP - 1),
        "a split character is dropped whole"
    );
    assert_eq!(handler["stdout_truncated"], true);
}

#[test]
fn output_that_is_not_utf8_is_replaced() {
    let out = Test::new()
        .project_settings(on(
            "Stop",
            "printf 'ok \\377\\376 end'; printf 'bad \\300 byte' >&2",
        ))
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0);
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "proceed");
    assert_eq!(handler["stdout"], "ok \u{FFFD}\u{FFFD} end");
    assert_eq!(handler["stderr"], "bad \u{FFFD} byte");
}

#[test]
fn a_reason_that_is_not_utf8_is_replaced() {
    let out = Test::new()
        .project_settings(on("PreToolUse", "printf 'no \\377 way' >&2; exit 2"))
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.status(), 2);
    assert_eq!(out.json()["reason"], "no \u{FFFD} way");
}

#[test]
fn a_block_exits_2_with_the_reason_on_stderr() {
    let out = Test::new()
        .project_settings(on(
            "PreToolUse",
            "echo ' src/generated/ is codegen ' >&2; exit 2",
        ))
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.status(), 2);
    assert_eq!(out.json()["reason"], "src/generated/ is codegen");
    assert_eq!(out.stderr().trim(), "src/generated/ is codegen");
}

#[test]
fn a_proceed_exits_0_and_writes_nothing_on_stderr() {
    let out = Test::new()
        .project_settings(on("PreToolUse", "echo noise >&2"))
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.stderr(), "");
}

#[test]
fn the_full_output_has_its_fields_in_order() {
    let out = Test::new()
        .project_settings(json!({"hooks": {"PreToolUse": [{"hooks": [
            {"command": "echo '{\"additionalContext\":\"ctx\"}'"},
            {"command": "echo why >&2; exit 2"},
        ]}]}}))
        .tool_event("PreToolUse", "write_file")
        .run();
    let json = out.json();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "event",
            "tool_name",
            "decision",
            "reason",
            "additionalContext",
            "handlers",
            "warnings",
            "duration_ms"
        ]
    );
    assert_eq!(json["event"], "PreToolUse");
    assert_eq!(json["tool_name"], "write_file");
    assert!(json["duration_ms"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_full_output_leaves_out_what_does_not_apply() {
    let out = Test::new().event("Stop").run();
    let json = out.json();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["event", "decision", "handlers", "warnings", "duration_ms"]
    );
    assert_eq!(json["handlers"], json!([]));
    assert_eq!(json["warnings"], json!([]));
}

#[test]
fn compact_output_prints_only_the_decision() {
    let out = Test::new()
        .project_settings(on("PreToolUse", "echo hi"))
        .args(["--output", "compact"])
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.stdout(), "{\"decision\":\"proceed\"}\n");
}

#[test]
fn compact_output_of_a_block() {
    let out = Test::new()
        .project_settings(json!({"hooks": {"PreToolUse": [{"hooks": [
            {"command": "echo '{\"additionalContext\":\"ctx\"}'"},
            {"command": "echo why >&2; exit 2"},
        ]}]}}))
        .args(["run", "--output", "compact"])
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.status(), 2);
    assert_eq!(
        out.json(),
        json!({"decision": "block", "reason": "why", "additionalContext": "ctx"})
    );
}

#[test]
fn verbose_traces_on_stderr_and_keeps_stdout_one_object() {
    let out = Test::new()
        .project_settings(on("Stop", "echo hi"))
        .arg("-v")
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.outcomes(), ["proceed"]);
    let stderr = out.stderr();
    assert!(stderr.contains("project"), "{stderr}");
    assert!(stderr.contains("echo hi"), "{stderr}");
}

#[test]
fn bad_arguments_exit_1_with_an_error_object() {
    for args in [&["--output", "weird"][..], &["--no-such-flag"][..]] {
        let out = Test::new().args(args).event("Stop").run();
        let error = out.error();
        assert!(!error.is_empty(), "{args:?}");
    }
}

#[test]
fn a_caller_that_closes_stdout_early_gets_no_message() {
    for (settings, tool) in [
        (on("PreToolUse", "echo hi"), "write_file"),
        (on("PreToolUse", "echo why >&2; exit 2"), "write_file"),
    ] {
        let out = Test::new()
            .project_settings(settings)
            .tool_event("PreToolUse", tool)
            .close_stdout()
            .run();
        let stderr = out.stderr();
        assert!(!stderr.contains("panick"), "{stderr}");
        assert!(!stderr.to_lowercase().contains("broken pipe"), "{stderr}");
        let status = out.status();
        assert!(status == 0 || status == 2, "{status}: {stderr}");
        if status == 0 {
            assert_eq!(stderr, "");
        }
    }
}

#[test]
fn a_caller_that_closes_stdout_early_on_an_error_gets_no_message() {
    let out = Test::new().stdin("not json").close_stdout().run();
    assert_eq!(out.stderr(), "");
    assert_eq!(out.status(), 1);
}

#[test]
fn durations_are_numbers() {
    let out = Test::new()
        .project_settings(on("Stop", "sleep 0.1"))
        .event("Stop")
        .run();
    let handler_ms = out.handler(0)["duration_ms"].as_f64().unwrap();
    let total_ms = out.json()["duration_ms"].as_f64().unwrap();
    assert!(handler_ms >= 90.0, "{handler_ms}");
    assert!(total_ms >= handler_ms, "{total_ms} < {handler_ms}");
    assert!(matches!(out.json()["duration_ms"], Value::Number(_)));
}

#[test]
fn a_handler_that_reads_only_the_start_of_a_large_payload() {
    let test = Test::new();
    let payload = big_payload(&test.project(), 8 << 20);
    let out = test
        .project_settings(json!({"hooks": {"Stop": [{"hooks": [
            {"command": "head -c 9"},
            {"command": "exec 0<&-; echo closed"},
            {"command": "echo after"},
        ]}]}}))
        .stdin(payload)
        .run();
    assert_eq!(out.status(), 0, "{}", out.stderr());
    assert_eq!(out.outcomes(), ["proceed", "proceed", "proceed"]);
    assert_eq!(out.stdouts(), ["{\"event\":", "closed", "after"]);
}
