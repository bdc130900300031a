//! The payload on stdin (contract §2) and the bad-input rows of §8.

use std::io::Write;

use serde_json::json;

use crate::common::{on, Test};

/// The payload limit of the contract.
const LIMIT: usize = 64 << 20;

#[test]
fn empty_stdin_is_an_error() {
    for stdin in ["", " \n\t\n"] {
        let out = Test::new()
            .project_settings(on("Stop", "echo ran"))
            .stdin(stdin)
            .run();
        let error = out.error();
        assert!(error.contains("empty"), "{error}");
        assert!(error.starts_with("payload"), "{error}");
    }
}

#[test]
fn a_closed_stdin_is_an_empty_one() {
    // Descriptor 0 closed, not merely at its end: the dispatcher must not read the payload from
    // whatever it opens first (its signal pipe, a settings file).
    let out = Test::new()
        .project_settings(on("Stop", "echo ran"))
        .closed(0)
        .run();
    let error = out.error();
    assert!(error.starts_with("payload: stdin was empty"), "{error}");
}

#[test]
fn invalid_json_is_an_error_that_says_where() {
    let out = Test::new().stdin(r#"{"event":"Stop","#).run();
    let error = out.error();
    assert!(error.contains("invalid JSON"), "{error}");
    assert!(error.contains("line 1"), "{error}");
}

#[test]
fn trailing_garbage_is_invalid_json() {
    let out = Test::new()
        .stdin(r#"{"event":"Stop"} {"event":"Stop"}"#)
        .run();
    assert!(out.error().contains("invalid JSON"));
}

#[test]
fn payload_not_utf8_is_an_error() {
    let out = Test::new()
        .project_settings(on("Stop", "touch ran"))
        .stdin(b"{\"event\":\"Stop\",\"x\":\"\xff\xfe\"}")
        .run();
    assert!(out.error().contains("UTF-8"));
    assert!(!out.project_has("ran"));
}

fn nested(levels_inside: usize) -> String {
    format!(
        "{{\"event\":\"Stop\",\"x\":{}{}}}",
        "[".repeat(levels_inside),
        "]".repeat(levels_inside)
    )
}

#[test]
fn nesting_of_128_levels_is_accepted() {
    // The object itself is one level.
    let out = Test::new().stdin(nested(127)).run();
    assert_eq!(out.status(), 0, "{}", out.stdout());
    assert_eq!(out.decision(), "proceed");
}

#[test]
fn nesting_deeper_than_128_is_an_error() {
    let out = Test::new().stdin(nested(128)).run();
    let error = out.error();
    assert!(error.contains("128"), "{error}");
    let out = Test::new().stdin(nested(100_000)).run();
    assert!(out.error().contains("128"));
}

#[test]
fn payload_not_an_object_is_an_error() {
    for stdin in ["[1,2]", r#""Stop""#, "42", "null", "true"] {
        let out = Test::new().arg("--event").arg("Stop").stdin(stdin).run();
        let error = out.error();
        assert!(error.contains("not a JSON object"), "{stdin}: {error}");
    }
}

/// A valid payload of exactly `len` bytes.
fn payload_of_len(len: usize) -> Vec<u8> {
    let head = br#"{"event":"Stop","filler":""#;
    let mut bytes = Vec::with_capacity(len);
    bytes.extend_from_slice(head);
    bytes.resize(len - 2, b'a');
    bytes.extend_from_slice(b"\"}");
    bytes
}

#[test]
fn payload_over_64_mib_is_an_error() {
    let out = Test::new()
        .project_settings(on("Stop", "touch ran"))
        .stdin_stream(|stdin| {
            let bytes = payload_of_len(LIMIT + 1);
            // The dispatcher stops reading at the limit, so the write may fail.
            let _ = stdin.write_all(&bytes);
        })
        .run();
    let error = out.error();
    assert!(error.contains("64 MiB"), "{error}");
    assert!(!out.project_has("ran"));
}

#[test]
fn payload_of_exactly_64_mib_is_accepted() {
    let out = Test::new()
        .project_settings(on("Stop", "wc -c"))
        .stdin_stream(|stdin| stdin.write_all(&payload_of_len(LIMIT)).unwrap())
        .run();
    assert_eq!(out.status(), 0, "{}", out.stdout());
    // The handler got all of it plus the appended cwd.
    let counted: usize = out.stdouts()[0].parse().unwrap();
    assert!(counted > LIMIT, "{counted}");
}

#[test]
fn no_event_is_an_error() {
    let out = Test::new()
        .payload(&json!({"tool_name": "write_file"}))
        .run();
    let error = out.error();
    assert!(error.contains("no event"), "{error}");
    assert!(error.contains("--event"), "{error}");
}

#[test]
fn event_that_is_not_a_string_is_an_error() {
    for payload in [
        json!({"event": 5}),
        json!({"event": null}),
        json!({"event": ["Stop"]}),
        json!({"hook_event_name": {"name": "Stop"}}),
    ] {
        let out = Test::new().payload(&payload).run();
        let error = out.error();
        assert!(error.contains("not a string"), "{payload}: {error}");
    }
}

#[test]
fn event_and_hook_event_name_that_disagree_are_an_error() {
    let out = Test::new()
        .project_settings(on("Stop", "touch ran"))
        .payload(&json!({"event": "Stop", "hook_event_name": "SessionStart"}))
        .run();
    let error = out.error();
    assert!(error.contains("disagree"), "{error}");
    assert!(!out.project_has("ran"));
}

#[test]
fn event_and_hook_event_name_that_agree_are_fine() {
    let out = Test::new()
        .project_settings(on("Stop", "echo ran"))
        .payload(&json!({"event": "Stop", "hook_event_name": "Stop"}))
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.outcomes(), ["proceed"]);
}

#[test]
fn event_flag_that_disagrees_with_the_payload_is_an_error() {
    for payload in [json!({"event": "Stop"}), json!({"hook_event_name": "Stop"})] {
        let out = Test::new()
            .args(["--event", "SessionStart"])
            .payload(&payload)
            .run();
        let error = out.error();
        assert!(error.contains("--event"), "{payload}: {error}");
    }
}

#[test]
fn event_flag_that_agrees_with_the_payload_is_fine() {
    let out = Test::new()
        .project_settings(on("Stop", "echo ran"))
        .args(["run", "--event", "Stop"])
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.stdouts(), ["ran"]);
}

#[test]
fn event_flag_supplies_a_missing_event() {
    let out = Test::new()
        .project_settings(on("SessionStart", "echo started"))
        .args(["--event", "SessionStart"])
        .stdin("{}")
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.json()["event"], "SessionStart");
    assert_eq!(out.stdouts(), ["started"]);
}

#[test]
fn hook_event_name_is_an_alias_of_event() {
    let out = Test::new()
        .project_settings(on("Stop", "echo ran"))
        .payload(&json!({"hook_event_name": "Stop"}))
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.json()["event"], "Stop");
    assert_eq!(out.stdouts(), ["ran"]);
}

#[test]
fn tool_event_without_tool_name_is_an_error() {
    for event in ["PreToolUse", "PostToolUse"] {
        let out = Test::new()
            .project_settings(on(event, "touch ran"))
            .payload(&json!({"event": event}))
            .run();
        let error = out.error();
        assert!(error.contains("tool_name"), "{event}: {error}");
        assert!(!out.project_has("ran"));
    }
}

#[test]
fn tool_event_with_a_tool_name_that_is_not_a_string_is_an_error() {
    for name in [json!(5), json!(null), json!(["write_file"])] {
        let out = Test::new()
            .payload(&json!({"event": "PreToolUse", "tool_name": name}))
            .run();
        let error = out.error();
        assert!(error.contains("tool_name"), "{name}: {error}");
    }
}

#[test]
fn tool_name_is_not_needed_outside_tool_events() {
    for name in [json!(5), json!("write_file")] {
        let out = Test::new()
            .project_settings(on("Stop", "echo ran"))
            .payload(&json!({"event": "Stop", "tool_name": name}))
            .run();
        assert_eq!(out.status(), 0);
        assert_eq!(out.stdouts(), ["ran"]);
        assert!(out.json().get("tool_name").is_none(), "{name}");
    }
}

#[test]
fn errors_print_the_error_form_whatever_the_output_mode() {
    let out = Test::new()
        .args(["--output", "compact"])
        .stdin("not json")
        .run();
    assert!(out.error().contains("invalid JSON"));
}

#[test]
fn unknown_event_warns_and_its_hooks_run() {
    let out = Test::new()
        .project_settings(on("TeammateIdle", "echo idle"))
        .event("TeammateIdle")
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.json()["event"], "TeammateIdle");
    assert_eq!(out.stdouts(), ["idle"]);
    out.warning(&["unknown event", "TeammateIdle"]);
}

#[test]
fn unknown_event_cannot_block() {
    let settings = json!({"hooks": {"TeammateIdle": [{"hooks": [
        {"command": "echo stop there >&2; exit 2"},
        {"command": r#"echo '{"decision":"block","reason":"no"}'"#},
        {"command": "echo still ran"},
    ]}]}});
    let out = Test::new()
        .project_settings(settings)
        .event("TeammateIdle")
        .run();
    assert_eq!(out.status(), 0, "{}", out.stdout());
    assert_eq!(out.decision(), "proceed");
    assert!(out.json().get("reason").is_none());
    assert_eq!(out.outcomes(), ["error", "proceed", "proceed"]);
}

#[test]
fn cwd_that_is_not_a_string_warns_and_uses_the_current_directory() {
    let out = Test::new()
        .project_settings(on("Stop", "pwd -P"))
        .payload(&json!({"event": "Stop", "cwd": 7}))
        .run();
    assert_eq!(out.status(), 0);
    out.warning(&["cwd"]);
    assert_eq!(out.stdouts(), [out.project().display().to_string()]);
}

/// Runs a `Stop`/`PreToolUse` handler that saves its stdin, and returns what it got.
fn delivered(test: Test, payload: &[u8], event_flag: Option<&str>) -> (Vec<u8>, String) {
    let settings = json!({"hooks": {
        "Stop": [{"hooks": [{"command": "cat > got.bin"}]}],
        "PreToolUse": [{"hooks": [{"command": "cat > got.bin"}]}],
    }});
    let mut test = test.project_settings(settings).stdin(payload);
    if let Some(event) = event_flag {
        test = test.args(["--event", event]);
    }
    let out = test.run();
    assert_eq!(out.status(), 0, "{}", out.stdout());
    assert_eq!(out.outcomes(), ["proceed"], "{}", out.stdout());
    (
        out.project_bytes("got.bin"),
        out.project().display().to_string(),
    )
}

#[test]
fn payload_with_event_and_cwd_reaches_handlers_byte_for_byte() {
    let test = Test::new();
    let project = test.project().display().to_string();
    let payload = format!(
        "{{ \"zeta\" : 1.50, \"cwd\":\"{project}\",\"event\":\"PreToolUse\",\n  \"tool_name\":\"write_file\",\
         \"tool_input\":{{\"path\":\"a\\u00e9.txt\",\"content\":\"line\\nnext \u{1F600}\"}},\"alpha\":[true,null,-0,1e3],\"tool_response\":\"x\"}}"
    );
    let (got, _) = delivered(test, payload.as_bytes(), None);
    assert_eq!(String::from_utf8(got).unwrap(), payload);
}

#[test]
fn missing_cwd_is_appended_at_the_end() {
    let payload = br#"{"tool_name":"write_file","event":"PreToolUse","tool_input":{"b":2,"a":1}}"#;
    let (got, project) = delivered(Test::new(), payload, None);
    let expected = format!(
        r#"{{"tool_name":"write_file","event":"PreToolUse","tool_input":{{"b":2,"a":1}},"cwd":{}}}"#,
        json!(project)
    );
    assert_eq!(String::from_utf8(got).unwrap(), expected);
}

#[test]
fn missing_event_is_appended_at_the_end() {
    let test = Test::new();
    let project = test.project().display().to_string();
    let payload = format!(r#"{{"cwd":{},"z":[1, 2],"a":"x"}}"#, json!(project));
    let (got, _) = delivered(test, payload.as_bytes(), Some("Stop"));
    let expected = format!(
        r#"{{"cwd":{},"z":[1, 2],"a":"x","event":"Stop"}}"#,
        json!(project)
    );
    assert_eq!(String::from_utf8(got).unwrap(), expected);
}

#[test]
fn missing_event_and_cwd_are_appended_in_that_order() {
    let (got, project) = delivered(Test::new(), b"{}", Some("Stop"));
    let expected = format!(r#"{{"event":"Stop","cwd":{}}}"#, json!(project));
    assert_eq!(String::from_utf8(got).unwrap(), expected);
}

#[test]
fn aliases_reach_handlers_unchanged_with_event_appended() {
    let payload = br#"{"hook_event_name":"Stop","tool_response":{"ok":true},"n":10}"#;
    let (got, project) = delivered(Test::new(), payload, None);
    let expected = format!(
        r#"{{"hook_event_name":"Stop","tool_response":{{"ok":true}},"n":10,"event":"Stop","cwd":{}}}"#,
        json!(project)
    );
    assert_eq!(String::from_utf8(got).unwrap(), expected);
}

#[test]
fn handlers_get_no_trailing_newline() {
    let (got, project) = delivered(Test::new(), b"{\"event\":\"Stop\"}\n", None);
    let expected = format!(r#"{{"event":"Stop","cwd":{}}}"#, json!(project));
    assert_eq!(String::from_utf8(got).unwrap(), expected);
}
