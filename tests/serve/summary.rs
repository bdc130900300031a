//! What an answer says of other subjects than its own (`no_match_except`), and the probe that
//! asks it without running anything (`options.probe`, docs/serve.md): the subjects left out of
//! the list are exactly those no group applies to.

use serde_json::{json, Value};

use super::World;
use crate::common::write;

fn request(id: u64, event: &str, tool: &str, options: Value) -> Value {
    json!({"id": id, "event": event, "cwd": ".", "tool_name": tool, "tool_input": {}, "options": options})
}

#[test]
fn a_no_match_answer_lists_the_subjects_a_group_may_apply_to() {
    let world = World::new();
    let mark = world.root().join("ran");
    write(
        &world.user_settings(),
        json!({"hooks": {
            "PreToolUse": [
                {"matcher": "str_replace|spawn_agents", "hooks": [{"command": format!("echo pre >> '{}'", mark.display())}]},
                {"matcher": "Bash", "protocol": "claude", "hooks": [{"command": "true"}]}],
            "PostToolUse": [{"matcher": "mcp__.*", "hooks": [{"command": "true"}]}]
        }})
        .to_string(),
    );
    let mut server = world.serve(&[]);
    let watch = json!({"watch": true});
    let answer = server.ask(&request(1, "PreToolUse", "write_file", watch.clone()));
    assert_eq!(answer["handlers"], json!([]), "{answer}");
    // A claude group's `Bash` applies to levelcode's run_terminal_command too.
    assert_eq!(
        answer["no_match_except"],
        json!([
            "Bash",
            "run_terminal_command",
            "spawn_agents",
            "str_replace"
        ])
    );
    let watched: Vec<&str> = answer["watch"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry[0].as_str().unwrap())
        .collect();
    assert!(
        watched
            .iter()
            .any(|path| path.ends_with("managed-settings.json")),
        "the managed layer's file is watched too: {watched:?}"
    );

    // An answer that ran a handler says nothing of other subjects; one without `watch` neither.
    let ran = server.ask(&request(2, "PreToolUse", "str_replace", watch.clone()));
    assert_eq!(ran["handlers"].as_array().unwrap().len(), 1, "{ran}");
    assert!(ran.get("no_match_except").is_none(), "{ran}");
    let plain = server.ask(&request(3, "PreToolUse", "glob", json!({})));
    assert!(plain.get("no_match_except").is_none(), "{plain}");
    // A regular expression cannot tell its subjects: no list.
    let post = server.ask(&request(4, "PostToolUse", "write_file", watch));
    assert_eq!(post["handlers"], json!([]), "{post}");
    assert!(post.get("no_match_except").is_none(), "{post}");
    assert_eq!(std::fs::read_to_string(&mark).unwrap(), "pre\n");
}

#[test]
fn a_probe_runs_nothing_even_where_every_group_applies() {
    let world = World::new();
    let mark = world.root().join("ran");
    write(
        &world.user_settings(),
        json!({"hooks": {
            "PreToolUse": [{"hooks": [{"command": format!("echo any >> '{}'", mark.display())}]}],
            "Stop": [{"matcher": "write_file", "hooks": [{"command": "true"}]}]
        }})
        .to_string(),
    );
    let mut server = world.serve(&[]);
    let probe = json!({"watch": true, "probe": true});
    let answer = server.ask(&request(1, "PreToolUse", "", probe.clone()));
    assert_eq!(answer["decision"], "proceed", "{answer}");
    assert_eq!(answer["handlers"], json!([]), "{answer}");
    // A group without a matcher applies to every tool: nothing can be left out.
    assert!(answer.get("no_match_except").is_none(), "{answer}");
    assert!(answer["watch"].is_array(), "{answer}");
    assert!(!mark.exists(), "a probe ran a handler");
    // Stop's matcher is not consulted: its group runs whatever the payload says.
    let stop = server.ask(&json!({"id": 2, "event": "Stop", "cwd": ".", "options": probe}));
    assert!(stop.get("no_match_except").is_none(), "{stop}");
    let (status, rest) = server.finish();
    assert_eq!((status, rest), (0, Vec::<String>::new()));
    assert!(!mark.exists(), "a probe ran a handler");
}

#[test]
fn a_probe_that_would_leave_a_trace_is_declined() {
    let world = World::new();
    let log = world.root().join("exec.jsonl");
    write(
        &world.user_settings(),
        json!({"hooks": {"PreToolUse": [{"matcher": "str_replace", "hooks": [{"command": "true"}]}]}})
            .to_string(),
    );
    let probe = json!({"watch": true, "probe": true});
    let mut server = world.serve(&[]);
    let team = server.ask(&json!({"id": 1, "event": "PostToolUse", "cwd": ".", "tool_name": "", "tool_input": {}, "team": "alpha", "options": probe}));
    assert_eq!(team["probe"], "declined", "{team}");
    assert!(
        team["reason"].as_str().unwrap().contains("compliance"),
        "{team}"
    );
    assert!(
        !world.home().join(".levelcode/swarm").exists(),
        "a probe wrote to a compliance log"
    );
    let pre = server.ask(&request(2, "PreToolUse", "", probe.clone()));
    assert_eq!(pre["no_match_except"], json!(["str_replace"]), "{pre}");
    drop(server);

    let world = world.env("LEVELCODE_HOOKS_LOG", log.to_string_lossy());
    let mut server = world.serve(&[]);
    let logged = server.ask(&request(1, "PreToolUse", "", probe));
    assert_eq!(logged["probe"], "declined", "{logged}");
    assert!(
        logged["reason"]
            .as_str()
            .unwrap()
            .contains("LEVELCODE_HOOKS_LOG"),
        "{logged}"
    );
    drop(server);
    assert!(!log.exists(), "a probe wrote to the execution log");
}

/// The managed layer's file, mode 0644, named by the variable while nothing is at the system path.
fn with_managed(world: World, settings: &Value) -> World {
    use std::os::unix::fs::PermissionsExt;
    let path = world.root().join("policy/managed-settings.json");
    write(&path, settings.to_string());
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    world.env("LEVELCODE_MANAGED_SETTINGS", path.to_string_lossy())
}

/// A client that answers `write_file` from the summary of a `read_files` call that ran nothing
/// would skip the organisation's guard: the managed layer's groups are in the list, beside every
/// other layer's, whatever turns the other layers off.
#[test]
fn a_summary_lists_the_managed_layer_s_subjects_too() {
    let guard = json!({"hooks": {"PreToolUse": [
        {"matcher": "write_file", "hooks": [{"command": "echo 'managed: no writes' >&2; exit 2"}]}]}});
    let user = json!({"hooks": {"PreToolUse": [{"matcher": "str_replace", "hooks": [{"command": "true"}]}]}});
    let watch = json!({"watch": true});
    let only = {
        let mut only = guard.clone();
        only["managedHooksOnly"] = json!(true);
        only
    };
    for (managed, extra, expected) in [
        (&guard, None, json!(["str_replace", "write_file"])),
        // The other layers do not run: the list may name their subjects, never leave out the
        // managed layer's.
        (&only, None, json!(["str_replace", "write_file"])),
        (
            &guard,
            Some(("LEVELCODE_HOOKS", "0")),
            json!(["write_file"]),
        ),
    ] {
        let mut world = with_managed(World::new(), managed);
        if let Some((key, value)) = extra {
            world = world.env(key, value);
        }
        write(&world.user_settings(), user.to_string());
        let mut server = world.serve(&[]);
        let read = server.ask(&request(1, "PreToolUse", "read_files", watch.clone()));
        assert_eq!(read["decision"], "proceed", "{read}");
        assert_eq!(read["handlers"], json!([]), "{read}");
        let except = &read["no_match_except"];
        assert!(
            except.is_null() || *except == expected,
            "{managed} {extra:?}: {read}"
        );
        assert!(
            except
                .as_array()
                .is_none_or(|list| list.contains(&json!("write_file"))),
            "the managed guard's tool is left out of the summary: {read}"
        );
        let write = server.ask(&request(2, "PreToolUse", "write_file", watch.clone()));
        assert_eq!(write["decision"], "block", "{write}");
        assert_eq!(write["reason"], "managed: no writes", "{write}");
    }
}
