//! A handler whose script is not there (contract §6, amended): `error`, not run, and never a
//! `block`, whatever the interpreter's exit code for a missing script (dash, `/bin/sh` on Debian
//! and Ubuntu, exits 2, and so does python3).

use serde_json::{json, Value};

use crate::common::{group, Test};

/// A `PreToolUse` dispatch for `write_file` with `handlers` in one project group.
fn pre_tool_use(handlers: Value) -> Test {
    Test::new()
        .project_settings(group("PreToolUse", None, handlers))
        .tool_event("PreToolUse", "write_file")
}

/// The interpreter really does exit 2 on the missing script: the block this used to be.
#[test]
fn the_shell_itself_exits_2_on_a_missing_script() {
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("/bin/sh")
        .arg(".levelcode/hooks/gaurd.sh")
        .current_dir(dir.path())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    // dash exits 2 and bash 127: either way not a reply, and with dash a block without the check.
    assert!(matches!(status.code(), Some(2 | 127)), "{status:?}");
}

#[test]
fn a_mistyped_script_path_is_an_error_not_a_block() {
    for handler in [
        json!({"command": "sh .levelcode/hooks/gaurd.sh"}),
        json!({"command": "true&&python3 scripts/check.py --strict"}),
        json!({"argv": ["sh", ".levelcode/hooks/gaurd.sh"]}),
        json!({"command": "sh", "args": ["$LEVELCODE_PROJECT_DIR/.levelcode/hooks/gaurd.sh"]}),
    ] {
        let out = pre_tool_use(json!([handler]))
            .project_script(".levelcode/hooks/guard.sh", "exit 2")
            .run();
        assert_eq!(out.status(), 0, "{handler}: {}", out.stdout());
        assert_eq!(out.decision(), "proceed", "{handler}");
        let entry = out.handler(0);
        assert_eq!(entry["outcome"], "error", "{handler}: {entry}");
        assert_eq!(entry["exit_code"], Value::Null, "not run: {entry}");
        let message = entry["message"].as_str().unwrap();
        assert!(message.contains("does not exist"), "{message}");
        assert!(
            message.contains("gaurd.sh") || message.contains("check.py"),
            "{message}"
        );
    }
}

#[test]
fn a_missing_script_of_a_guard_that_fails_closed_blocks_saying_so() {
    let out =
        pre_tool_use(json!([{"command": "sh .levelcode/hooks/gaurd.sh", "onFailure": "block"}]))
            .run();
    assert_eq!(out.status(), 2);
    assert_eq!(out.decision(), "block");
    let reason = out.json()["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("failed"), "{reason}");
}

#[test]
fn a_script_that_is_there_runs_and_a_missing_one_in_home_is_an_error() {
    let out = pre_tool_use(json!([{"command": "sh .levelcode/hooks/guard.sh"}]))
        .project_script(".levelcode/hooks/guard.sh", "echo no >&2; exit 2")
        .run();
    assert_eq!(out.decision(), "block", "{}", out.stdout());
    let out = Test::new()
        .user_settings(group(
            "PreToolUse",
            None,
            json!([{"command": "sh ~/hooks/gone.sh"}]),
        ))
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.decision(), "proceed");
    assert_eq!(out.handler(0)["outcome"], "error");
    // A file the handler creates, not runs, is nobody's business here.
    let out = pre_tool_use(json!([{"command": "touch made.txt && cat made.txt"}])).run();
    assert_eq!(out.handler(0)["outcome"], "proceed", "{}", out.stdout());
}
