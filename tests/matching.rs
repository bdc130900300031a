//! Which groups apply to a tool (contract §5), and duplicates (§6).

use serde_json::{json, Value};

use crate::common::{group, on, Test};

/// Dispatches `PreToolUse` of `tool` against one group with `matcher`; returns whether it ran.
///
/// Three ways, which must agree, since each reaches the matcher differently: the usual one, where
/// settings are read for `tool` only and a group that cannot apply is never built (a pre-filter
/// that could hide a fault of the matcher itself); `-v`, where every group is built and the
/// matcher alone decides; and settings of a shape the quick reader declines (a handler with a
/// `note`), read the general way.
fn matches(matcher: Option<&str>, tool: &str) -> bool {
    let ways = [
        ("usual", json!([{"command": "echo ran"}]), false),
        ("-v", json!([{"command": "echo ran"}]), true),
        (
            "general reader",
            json!([{"command": "echo ran", "note": "not read by the quick reader"}]),
            false,
        ),
    ];
    let mut answers = Vec::new();
    for (way, handlers, verbose) in ways {
        let mut test = Test::new().user_settings(group("PreToolUse", matcher, handlers));
        if verbose {
            test = test.arg("-v");
        }
        let out = test.tool_event("PreToolUse", tool).run();
        assert_eq!(out.status(), 0, "{way}: {}", out.stdout());
        assert!(out.warnings().is_empty(), "{way}: {:?}", out.warnings());
        answers.push(match out.outcomes().as_slice() {
            [] => false,
            [one] if one == "proceed" => true,
            other => panic!("{way}: unexpected outcomes {other:?}"),
        });
    }
    assert!(
        answers.iter().all(|a| *a == answers[0]),
        "{matcher:?} against {tool:?}: the usual way, -v and the general reader disagree: {answers:?}"
    );
    answers[0]
}

#[test]
fn a_list_of_names_matches_exactly_those_tools() {
    assert!(matches(Some("write_file|str_replace"), "write_file"));
    assert!(matches(Some("write_file|str_replace"), "str_replace"));
    assert!(!matches(Some("write_file|str_replace"), "read_files"));
    assert!(matches(Some(" write_file | str_replace "), "str_replace"));
    assert!(matches(Some("run-terminal"), "run-terminal"));
}

#[test]
fn a_name_does_not_match_a_longer_name() {
    assert!(!matches(Some("write_file"), "write_file_v2"));
    assert!(!matches(Some("write_file"), "my_write_file"));
    assert!(!matches(Some("rite"), "write_file"));
}

#[test]
fn names_are_case_sensitive() {
    assert!(!matches(Some("Write_File"), "write_file"));
}

#[test]
fn star_empty_and_missing_match_every_tool() {
    for matcher in [Some("*"), Some(""), None] {
        assert!(matches(matcher, "write_file"), "{matcher:?}");
        assert!(matches(matcher, "anything_at_all"), "{matcher:?}");
    }
}

#[test]
fn null_matcher_matches_every_tool() {
    let settings = json!({"hooks": {"PreToolUse": [
        {"matcher": null, "hooks": [{"command": "echo ran"}]},
    ]}});
    let out = Test::new()
        .project_settings(settings)
        .tool_event("PreToolUse", "code_search")
        .run();
    assert_eq!(out.stdouts(), ["ran"]);
    assert_eq!(out.handler(0)["matcher"], Value::Null);
}

#[test]
fn other_matchers_are_regexes_searched_unanchored() {
    assert!(matches(Some("write.*"), "write_file_v2"));
    assert!(matches(Some("file$"), "write_file"));
    assert!(matches(Some("^read"), "read_files"));
    assert!(!matches(Some("^read"), "code_read"));
    assert!(matches(Some("mcp__.*"), "x_mcp__server"));
    assert!(matches(Some("str_.+"), "str_replace"));
    assert!(!matches(Some("Write.*"), "write_file"));
    assert!(matches(Some("^(write_file|str_replace)$"), "str_replace"));
    assert!(!matches(
        Some("^(write_file|str_replace)$"),
        "write_file_v2"
    ));
}

#[test]
fn matchers_apply_to_post_tool_use_too() {
    let settings = json!({"hooks": {"PostToolUse": [
        {"matcher": "write_file", "hooks": [{"command": "echo write"}]},
        {"matcher": "read_.*", "hooks": [{"command": "echo read"}]},
    ]}});
    let out = Test::new()
        .project_settings(settings)
        .tool_event("PostToolUse", "read_files")
        .run();
    assert_eq!(out.stdouts(), ["read"]);
}

#[test]
fn the_matcher_is_reported_as_written() {
    let out = Test::new()
        .project_settings(group(
            "PreToolUse",
            Some(" write_file | str_replace "),
            json!([{"command": "true"}]),
        ))
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.handler(0)["matcher"], " write_file | str_replace ");
    let out = Test::new()
        .project_settings(on("PreToolUse", "true"))
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.handler(0)["matcher"], Value::Null);
}

#[test]
fn an_invalid_regex_warns_and_skips_its_group() {
    let settings = json!({"hooks": {"PreToolUse": [
        {"matcher": "(write", "hooks": [{"command": "touch bad-group"}]},
        {"matcher": "*file", "hooks": [{"command": "touch star-group"}]},
        {"matcher": "write_file", "hooks": [{"command": "echo good"}]},
    ]}});
    let out = Test::new()
        .project_settings(settings)
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.stdouts(), ["good"]);
    let file = out.project().join(".levelcode/settings.json");
    let file = file.display().to_string();
    for index in 0..2 {
        let warning = out.warning(&[&file, &format!("hooks.PreToolUse[{index}]")]);
        assert!(warning.contains("regular expression"), "{warning}");
    }
    assert!(!out.project_has("bad-group"));
    assert!(!out.project_has("star-group"));
}

#[test]
fn a_matcher_that_is_not_a_string_warns_and_skips_its_group() {
    let settings = json!({"hooks": {"PreToolUse": [
        {"matcher": ["write_file"], "hooks": [{"command": "touch bad-group"}]},
        {"hooks": [{"command": "echo good"}]},
    ]}});
    let out = Test::new()
        .project_settings(settings)
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.stdouts(), ["good"]);
    out.warning(&["hooks.PreToolUse[0]", "matcher"]);
    assert!(!out.project_has("bad-group"));
}

#[test]
fn matchers_are_ignored_on_events_without_a_tool() {
    for event in ["SessionStart", "Stop", "UserPromptSubmit", "TeammateIdle"] {
        let settings = json!({"hooks": {event: [
            {"matcher": "no_such_tool", "hooks": [{"command": "echo names"}]},
            {"matcher": "(unclosed", "hooks": [{"command": "echo invalid"}]},
            {"matcher": "^x$", "hooks": [{"command": "echo regex"}]},
        ]}});
        let out = Test::new().project_settings(settings).event(event).run();
        assert_eq!(out.status(), 0);
        assert_eq!(out.stdouts(), ["names", "invalid", "regex"], "{event}");
        let unexpected: Vec<String> = out
            .warnings()
            .into_iter()
            .filter(|w| !w.contains("unknown event"))
            .collect();
        assert!(unexpected.is_empty(), "{event}: {unexpected:?}");
    }
}

#[test]
fn the_same_command_in_two_layers_runs_once() {
    let out = Test::new()
        .user_settings(on("Stop", "echo x >> count"))
        .project_settings(on("Stop", "echo x >> count"))
        .event("Stop")
        .run();
    assert_eq!(out.outcomes(), ["proceed", "duplicate"]);
    assert_eq!(out.project_text("count"), "x\n");
    let duplicate = out.handler(1);
    assert_eq!(duplicate["layer"], "project");
    assert_eq!(duplicate["label"], "echo x >> count");
    assert_eq!(duplicate["exit_code"], Value::Null);
}

#[test]
fn the_same_argv_in_two_groups_runs_once() {
    let settings = json!({"hooks": {"PreToolUse": [
        {"matcher": "write_file", "hooks": [{"argv": ["sh", "-c", "echo x >> count"], "name": "a"}]},
        {"hooks": [{"argv": ["sh", "-c", "echo x >> count"], "name": "b", "timeout": 3}]},
    ]}});
    let out = Test::new()
        .project_settings(settings)
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.outcomes(), ["proceed", "duplicate"]);
    assert_eq!(out.labels(), ["a", "b"]);
    assert_eq!(out.project_text("count"), "x\n");
}

#[test]
fn a_command_and_an_argv_are_never_equal() {
    let settings = json!({"hooks": {"Stop": [{"hooks": [
        {"command": "echo x >> count"},
        {"argv": ["echo x >> count"]},
        {"command": "echo"},
        {"argv": ["echo"]},
    ]}]}});
    let out = Test::new().project_settings(settings).event("Stop").run();
    assert_ne!(out.outcomes()[1], "duplicate");
    assert_eq!(out.outcomes()[2..], ["proceed", "proceed"]);
}

#[test]
fn commands_that_differ_in_spacing_are_not_duplicates() {
    let settings = json!({"hooks": {"Stop": [{"hooks": [
        {"command": "echo x >> count"},
        {"command": "echo  x >> count"},
    ]}]}});
    let out = Test::new().project_settings(settings).event("Stop").run();
    assert_eq!(out.outcomes(), ["proceed", "proceed"]);
    assert_eq!(out.project_text("count"), "x\nx\n");
}

#[test]
fn a_handler_of_a_group_that_did_not_match_is_no_duplicate() {
    let settings = json!({"hooks": {"PreToolUse": [
        {"matcher": "read_files", "hooks": [{"command": "echo x"}]},
        {"matcher": "write_file", "hooks": [{"command": "echo x"}]},
    ]}});
    let out = Test::new()
        .project_settings(settings)
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.outcomes(), ["proceed"]);
    assert_eq!(out.stdouts(), ["x"]);
}

/// Duplicates are checked against every handler already run, not only the one before: in
/// `[A, B, A]` the second A is the duplicate, however far from the first.
#[test]
fn a_command_repeated_after_another_is_still_a_duplicate() {
    let settings = json!({"hooks": {"Stop": [
        {"hooks": [{"command": "echo a >> count"}, {"command": "echo b >> count"}]},
        {"hooks": [{"command": "echo a >> count"}]},
    ]}});
    let out = Test::new().user_settings(settings).event("Stop").run();
    assert_eq!(out.outcomes(), ["proceed", "proceed", "duplicate"]);
    assert_eq!(out.project_text("count"), "a\nb\n");
    let settings = json!({"hooks": {"Stop": [{"hooks": [
        {"argv": ["sh", "-c", "echo a >> count"]},
        {"command": "echo b >> count"},
        {"argv": ["sh", "-c", "echo a >> count"]},
        {"command": "echo b >> count"},
    ]}]}});
    let out = Test::new().user_settings(settings).event("Stop").run();
    assert_eq!(
        out.outcomes(),
        ["proceed", "proceed", "duplicate", "duplicate"]
    );
    assert_eq!(out.project_text("count"), "a\nb\n");
}
