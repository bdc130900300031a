//! `list`: every handler of the merged layers, and what would run for an event and tool.

use serde_json::Value;

use super::{strings, Env};

/// Settings where each PreToolUse handler has a different fate for `write_file`.
const FATES: &str = r#"{"hooks":{
  "PreToolUse":[
    {"matcher":"write_file|str_replace","hooks":[
      {"name":"guard","command":"echo guard"},
      {"command":"echo off","enabled":false}]},
    {"matcher":"code_search","hooks":[{"command":"echo search"}]},
    {"enabled":false,"hooks":[{"command":"echo group-off"}]},
    {"matcher":"write.*","hooks":[{"command":"echo guard"},{"command":"echo regex"}]},
    {"hooks":[{"command":"a","argv":["b"]}]},
    {"matcher":"(unclosed","hooks":[{"command":"echo bad-regex"}]}
  ],
  "Stop":[{"hooks":[{"command":"echo stop"}]}]
}}"#;

#[test]
fn marks_what_would_run_and_why_the_others_would_not() {
    let env = Env::new();
    env.project_settings(FATES);
    let out = env.run(&[
        "list",
        "--event",
        "PreToolUse",
        "--tool",
        "write_file",
        "--json",
    ]);
    out.status(0);
    let json = out.json();
    let handlers = &json["handlers"];
    let rows: Vec<(&str, &str)> = strings(handlers, "label")
        .into_iter()
        .zip(strings(handlers, "state"))
        .collect();
    assert_eq!(
        rows,
        [
            ("guard", "would_run"),
            ("echo off", "disabled"),
            ("echo search", "no_match"),
            ("echo group-off", "disabled"),
            ("echo guard", "duplicate"),
            ("echo regex", "would_run"),
            ("a", "invalid"),
            ("echo bad-regex", "invalid"),
            ("echo stop", "other_event"),
        ]
    );
    let order: Vec<&Value> = handlers
        .as_array()
        .unwrap()
        .iter()
        .map(|h| &h["order"])
        .collect();
    assert_eq!(order[0], 1);
    assert_eq!(order[5], 2);
    assert!(order[4].is_null());
    let why = strings(handlers, "why");
    assert!(why[2].contains("does not match write_file"), "{}", why[2]);
    assert!(why[3].contains("on its group"), "{}", why[3]);
    assert!(why[4].contains("#1"), "{}", why[4]);
    assert!(why[6].contains("both command and argv"), "{}", why[6]);
    assert!(why[7].contains("invalid regular expression"), "{}", why[7]);
}

#[test]
fn without_an_event_shows_every_handler_with_its_settings() {
    let env = Env::new();
    env.user_settings(
        r#"{"hooks":{"SessionStart":[{"hooks":[{"argv":["echo","hi"],"timeout":2.5}]}]}}"#,
    );
    env.project_settings(FATES);
    let out = env.run(&["list", "--json"]);
    out.status(0);
    let json = out.json();
    assert_eq!(
        strings(&json["layers"], "layer"),
        ["user", "data", "project"]
    );
    assert_eq!(
        strings(&json["layers"], "state"),
        ["read", "missing", "read"]
    );
    let first = &json["handlers"][0];
    assert_eq!(first["layer"], "user");
    assert_eq!(first["event"], "SessionStart");
    assert_eq!(first["path"], "hooks.SessionStart[0].hooks[0]");
    assert_eq!(first["argv"], serde_json::json!(["echo", "hi"]));
    assert_eq!(first["timeout"], 2.5);
    assert_eq!(first["state"], "enabled");
    let states = strings(&json["handlers"], "state");
    assert_eq!(states.iter().filter(|s| **s == "disabled").count(), 2);
    assert_eq!(states.iter().filter(|s| **s == "invalid").count(), 2);
    assert!(!states.contains(&"would_run"), "{states:?}");
    let warnings = json["warnings"].as_array().unwrap();
    assert!(warnings
        .iter()
        .any(|w| w.as_str().unwrap().contains("hooks.PreToolUse[4].hooks[0]")));
}

#[test]
fn table_names_the_files_and_explains_each_handler() {
    let env = Env::new();
    env.project_settings(FATES);
    let out = env.run(&["list", "--event", "PreToolUse", "--tool", "write_file"]);
    out.status(0);
    let text = &out.stdout;
    assert!(text.contains("STATE"), "{text}");
    assert!(text.contains("run #1"), "{text}");
    assert!(text.contains("run #2"), "{text}");
    assert!(
        text.contains("why: matcher \"code_search\" does not match write_file"),
        "{text}"
    );
    assert!(
        text.contains(".levelcode/settings.json: hooks.PreToolUse[1].hooks[0]"),
        "{text}"
    );
    assert!(text.contains("2 of 9 handler(s) would run"), "{text}");
    assert!(
        !text.contains('\x1b'),
        "colors when stdout is not a terminal"
    );
}

#[test]
fn settings_flag_replaces_the_layers() {
    let env = Env::new();
    env.project_settings(FATES);
    let file = env.scratch("only.json");
    env.write(
        &file,
        r#"{"hooks":{"Stop":[{"hooks":[{"command":"echo only"}]}]}}"#,
    );
    let out = env.run(&["list", "--json", "--settings", file.to_str().unwrap()]);
    out.status(0);
    let json = out.json();
    assert_eq!(strings(&json["layers"], "layer"), ["cli"]);
    assert_eq!(strings(&json["handlers"], "label"), ["echo only"]);
}

#[test]
fn no_project_skips_the_project_layer() {
    let env = Env::new();
    env.project_settings(FATES);
    for (args, vars) in [
        (vec!["list", "--json", "--no-project"], vec![]),
        (
            vec!["list", "--json"],
            vec![("LEVELCODE_HOOKS_NO_PROJECT", "1")],
        ),
    ] {
        let json = env.run_env(&args, &vars).status(0).json();
        assert_eq!(strings(&json["layers"], "layer"), ["user", "data"]);
        assert!(json["handlers"].as_array().unwrap().is_empty());
    }
}

#[test]
fn project_dir_is_found_as_run_finds_it() {
    let env = Env::new();
    let other = env.scratch("elsewhere");
    env.write(
        &other.join(".levelcode/settings.json"),
        r#"{"hooks":{"Stop":[{"hooks":[{"command":"echo elsewhere"}]}]}}"#,
    );
    let json = env
        .run(&["list", "--json", "--project-dir", other.to_str().unwrap()])
        .status(0)
        .json();
    assert_eq!(strings(&json["handlers"], "label"), ["echo elsewhere"]);
    assert_eq!(json["project_root"], other.to_str().unwrap());
}

#[test]
fn hooks_turned_off_run_nothing() {
    let env = Env::new();
    env.project_settings(FATES);
    let out = env.run_env(
        &["list", "--json", "--event", "Stop"],
        &[("LEVELCODE_HOOKS", "off")],
    );
    let json = out.status(0).json();
    let stop = json["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["label"] == "echo stop")
        .unwrap();
    assert_eq!(stop["state"], "off");
    assert!(json["warnings"][0].as_str().unwrap().contains("turned off"));
}

#[test]
fn a_tool_event_needs_a_tool() {
    let env = Env::new();
    let out = env.run(&["list", "--event", "PreToolUse"]);
    out.status(1);
    assert!(out.stderr.contains("--tool"), "{}", out.stderr);
}

#[test]
fn broken_files_are_warnings_not_failures() {
    let env = Env::new();
    env.project_settings("{\"hooks\": {");
    std::fs::create_dir_all(env.home().join(".levelcode/settings.json")).unwrap();
    let out = env.run(&["list", "--json"]);
    let json = out.status(0).json();
    assert_eq!(
        strings(&json["layers"], "state"),
        ["missing", "unusable", "read"]
    );
    let warnings: Vec<&str> = json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings.iter().any(|w| w.contains("is a directory")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("invalid JSON")),
        "{warnings:?}"
    );
    let text = env.run(&["list"]).status(0).stdout.clone();
    assert!(text.contains("no hooks configured"), "{text}");
    assert!(text.contains("2 warning(s):"), "{text}");
}

/// A tool event's matcher naming no tool never matches, and a dispatch says nothing of it (its
/// tool list is levelcode's, which may grow): `list` and `test --dry-run` mark it under the
/// group with the tool probably meant, `validate` fails on it, and `-v` says a part of the
/// tool's name is not the name.
#[test]
fn a_matcher_naming_no_tool_is_marked_with_the_tool_meant() {
    let env = Env::new();
    env.project_settings(
        r#"{"hooks":{"PreToolUse":[
            {"matcher":"write|run_terminal","hooks":[{"command":"echo guard"}]},
            {"matcher":"write_file","hooks":[{"command":"echo fine"}]}]}}"#,
    );
    let json = env.run(&["list", "--json"]).status(0).json();
    let warnings = json["handlers"][0]["warnings"].to_string();
    assert!(
        warnings.contains(r#"matcher: \"write\" is not a levelcode tool and never matches; did you mean \"write_file\"?"#)
            && warnings.contains(r#"did you mean \"run_terminal_command\"?"#),
        "{warnings}"
    );
    assert_eq!(json["handlers"][1]["warnings"], serde_json::json!([]));
    let out = env.run(&["list", "--event", "PreToolUse", "--tool", "write_file"]);
    let text = &out.status(0).stdout;
    assert!(
        text.contains("warning: matcher: \"write\" is not a levelcode tool"),
        "{text}"
    );
    let dry = env
        .run(&[
            "test",
            "--event",
            "PreToolUse",
            "--tool",
            "write_file",
            "--dry-run",
            "--json",
        ])
        .status(0)
        .json();
    assert!(
        dry["not_run"][0]["warnings"]
            .to_string()
            .contains("did you mean"),
        "{dry:#}"
    );
    let problems = env.run(&["validate", "--json"]).status(1).json()["problems"].to_string();
    assert!(
        problems.contains(r#"did you mean \"write_file\"?"#)
            && problems.contains(r#"did you mean \"run_terminal_command\"?"#),
        "{problems}"
    );
    let out = env.run_stdin(
        &["-v"],
        &[],
        r#"{"event":"PreToolUse","tool_name":"write_file"}"#,
    );
    assert!(
        out.stderr.contains(
            r#"matcher "write|run_terminal" does not match write_file ("write" is part of that name, but a list of names matches whole names only)"#
        ),
        "{}",
        out.stderr
    );
    // The dispatch itself warns of nothing: the names are checked by the commands above.
    assert_eq!(out.status(0).json()["warnings"], serde_json::json!([]));
}

/// `--project-dir .` (or `sub/..`) names the project plainly: the trace, `list` and the
/// handlers' `LEVELCODE_PROJECT_DIR` say `…/project`, never `…/project/.`.
#[cfg(unix)]
#[test]
fn a_relative_project_dir_is_shown_and_given_without_dots() {
    let env = Env::new();
    env.project_settings(
        r#"{"hooks":{"Stop":[{"hooks":[{"command":"printf %s \"$LEVELCODE_PROJECT_DIR\""}]}]}}"#,
    );
    std::fs::create_dir_all(env.project().join("sub")).unwrap();
    let project = env.project().display().to_string();
    for dir in [".", "sub/..", "./sub/../."] {
        let out = env.run_stdin(&["-v", "--project-dir", dir], &[], r#"{"event":"Stop"}"#);
        let json = out.status(0).json();
        assert_eq!(json["handlers"][0]["stdout"], project.as_str(), "{dir}");
        assert!(
            out.stderr.contains(&format!(
                "project layer: {project}/.levelcode/settings.json"
            )),
            "{dir}: {}",
            out.stderr
        );
        assert!(
            !out.stderr.contains("/./") && !out.stderr.contains("/.."),
            "{dir}: {}",
            out.stderr
        );
        let listed = env
            .run(&["list", "--json", "--project-dir", dir])
            .status(0)
            .json();
        assert_eq!(listed["project_root"], project.as_str(), "{dir}");
    }
}
