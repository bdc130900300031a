//! `validate`: every problem of every layer, exit 1 when anything is wrong.

use std::path::PathBuf;

use serde_json::Value;

use super::Env;

fn mistakes_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mistakes")
}

/// (path, kind) of every problem in a `validate --json` result.
fn problems(json: &Value) -> Vec<(String, String)> {
    json["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["path"].as_str().unwrap_or("").to_string(),
                p["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn message<'a>(json: &'a Value, path: &str, kind: &str) -> &'a str {
    json["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == path && p["kind"] == kind)
        .and_then(|p| p["message"].as_str())
        .unwrap_or_else(|| panic!("no {kind} problem at {path}: {json:#}"))
}

#[cfg(unix)]
#[test]
fn catches_every_mistake_of_the_fixture() {
    let env = Env::new();
    let dir = mistakes_dir();
    let out = env.run(&["validate", "--json", "--project-dir", dir.to_str().unwrap()]);
    out.status(1);
    let json = out.json();
    assert_eq!(json["ok"], false);
    let expected = [
        ("hooks.PreToolUse[0].matchers", "unknown_key"),
        ("hooks.PreToolUse[0].hooks[0].timout", "unknown_key"),
        ("hooks.PreToolUse[1].hooks[0].comand", "unknown_key"),
        ("hooks.PreToolUse[1].hooks[0]", "invalid_entry"),
        ("hooks.PreToolUse[2].matcher", "tool_name"),
        ("hooks.PreToolUse[2].matcher", "tool_name"),
        ("hooks.PreToolUse[3].matcher", "invalid_matcher"),
        ("hooks.PreToolUse[4].hooks[0].command", "program_not_found"),
        (
            "hooks.PreToolUse[4].hooks[0].timeout",
            "timeout_milliseconds",
        ),
        ("hooks.PreToolUse[5].hooks[0].command", "script_not_found"),
        ("hooks.PreToolUse[6]", "invalid_entry"),
        ("hooks.PreToolUse[7].hooks[0]", "invalid_entry"),
        ("hooks.PreToolUse[8].hooks", "invalid_entry"),
        ("hooks.PreToolUse[9].hooks[0].argv", "not_executable"),
        ("hooks.PreToolUse[10].hooks[0].type", "invalid_entry"),
        ("hooks.PreToolUse[11].hooks[0].timeout", "timeout"),
        ("hooks.PreToolUse[12].enabled", "invalid_entry"),
        ("hooks.PreToolUse[12].hooks[0].matcher", "unknown_key"),
        (
            "hooks.PreToolUse[13].hooks[0].command",
            "unparsable_command",
        ),
        ("hooks.PostToolUse", "invalid_entry"),
        ("hooks.SessionStart[0].matcher", "matcher_ignored"),
        ("hooks.Stop[0].matcher", "matcher_ignored"),
        ("hooks.Stop[0].hooks[0].disabled", "unknown_key"),
        ("hooks.PreToolUSe", "unknown_event"),
        ("hooks.PermissionRequest", "unknown_event"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(p, k)| (p.to_string(), k.to_string()))
        .collect();
    // Exactly these, in file order: nothing missed, nothing extra.
    assert_eq!(problems(&json), expected);

    assert!(
        message(&json, "hooks.PreToolUse[0].matchers", "unknown_key")
            .contains("did you mean \"matcher\"")
    );
    assert!(
        message(&json, "hooks.PreToolUse[0].hooks[0].timout", "unknown_key")
            .contains("did you mean \"timeout\"")
    );
    assert!(
        message(&json, "hooks.PreToolUse[1].hooks[0].comand", "unknown_key")
            .contains("did you mean \"command\"")
    );
    assert!(message(
        &json,
        "hooks.PreToolUse[4].hooks[0].command",
        "program_not_found"
    )
    .contains("levelcode-no-such-program"));
    assert!(message(
        &json,
        "hooks.PreToolUse[4].hooks[0].timeout",
        "timeout_milliseconds"
    )
    .contains("\"timeout\": 5?"));
    assert!(message(
        &json,
        "hooks.PreToolUse[5].hooks[0].command",
        "script_not_found"
    )
    .contains(".levelcode/hooks/missing-guard.sh"));
    assert!(
        message(&json, "hooks.PreToolUSe", "unknown_event").contains("did you mean \"PreToolUse\"")
    );
    assert!(
        message(&json, "hooks.Stop[0].hooks[0].disabled", "unknown_key")
            .contains("\"enabled\": false")
    );

    let project = &json["files"][2];
    assert_eq!(project["layer"], "project");
    assert_eq!(project["problems"], expected.len());
}

#[cfg(unix)]
#[test]
fn text_output_groups_problems_by_file() {
    let env = Env::new();
    let dir = mistakes_dir();
    let out = env.run(&["validate", "--project-dir", dir.to_str().unwrap()]);
    out.status(1);
    let text = &out.stdout;
    assert!(text.contains("FAIL project"), "{text}");
    assert!(text.contains("ok   user"), "{text}");
    assert!(
        text.contains(
            "hooks.PreToolUse[0].matchers: unknown key \"matchers\"; did you mean \"matcher\"?"
        ),
        "{text}"
    );
    assert!(text.contains("25 problem(s) in 1 file(s)"), "{text}");
    assert!(!text.contains('\x1b'), "{text}");
}

#[test]
fn clean_settings_pass() {
    let env = Env::new();
    env.write(&env.project().join("hooks/guard.sh"), "exit 0\n");
    env.project_settings(
        r#"{"theme":"dark","hooks":{
            "PreToolUse":[{"matcher":"write_file|str_replace","hooks":[
                {"name":"guard","command":"sh hooks/guard.sh","timeout":5},
                {"argv":["sh","-c","exit 0"]},
                {"command":"FOO=1 sh \"$LEVELCODE_PROJECT_DIR/hooks/guard.sh\" 2>/dev/null && echo ok; true"}]}],
            "Stop":[{"matcher":"*","hooks":[{"command":"cd hooks && sh guard.sh"}]}]}}"#,
    );
    let out = env.run(&["validate"]);
    out.status(0);
    assert!(out.stdout.contains("no problems found"), "{}", out.stdout);
    let json = env.run(&["validate", "--json"]).status(0).json();
    assert_eq!(json["ok"], true);
    assert_eq!(json["problems"], serde_json::json!([]));
    assert_eq!(json["files"][2]["handlers"], 4);
}

/// A group or handler written as an array of its fields in order is refused, by `validate` and
/// by the dispatch alike, however closely the array follows the object's fields.
#[test]
fn groups_and_handlers_written_as_arrays_are_refused() {
    let env = Env::new();
    env.project_settings(
        r#"{"hooks":{"Stop":[["*",[{"command":"echo group"}]],{"hooks":[[null,"echo handler"]]}]}}"#,
    );
    let json = env.run(&["validate", "--json"]).status(1).json();
    assert_eq!(
        problems(&json),
        [
            ("hooks.Stop[0]".to_string(), "invalid_entry".to_string()),
            (
                "hooks.Stop[1].hooks[0]".to_string(),
                "invalid_entry".to_string()
            ),
        ]
    );
    assert!(message(&json, "hooks.Stop[0]", "invalid_entry").contains("not an array"));
    let answer = env
        .run_stdin(
            &["run"],
            &[("LEVELCODE_TRUST_PROJECT_HOOKS", "1")],
            r#"{"event":"Stop"}"#,
        )
        .status(0)
        .json();
    assert_eq!(answer["handlers"], serde_json::json!([]), "{answer:#}");
    let warnings = answer["warnings"].to_string();
    assert!(
        warnings.contains("hooks.Stop[0]: a group must be an object"),
        "{warnings}"
    );
    assert!(
        warnings.contains("hooks.Stop[1].hooks[0]: a handler must be an object"),
        "{warnings}"
    );
}

#[test]
fn no_settings_at_all_is_fine() {
    let env = Env::new();
    let out = env.run(&["validate"]);
    out.status(0);
    assert!(out.stdout.contains("nothing to check"), "{}", out.stdout);
}

#[test]
fn checks_every_standard_layer() {
    let env = Env::new();
    env.user_settings(r#"{"hooks":{"Stop":[{"hooks":[{"command":"true","timout":3}]}]}}"#);
    env.write(
        &env.home().join(".levelcode/settings.json"),
        r#"{"hooks":{"Stop":[{"hooks":[{"command":"true"}]}]}}"#,
    );
    env.project_settings(r#"{"hooks":{"Stop":{"hooks":[]}}}"#);
    let json = env.run(&["validate", "--json"]).status(1).json();
    let layers: Vec<&str> = json["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["layer"].as_str().unwrap())
        .collect();
    assert_eq!(layers, ["user", "project"]);
    assert_eq!(json["files"][1]["problems"], 0);
}

#[test]
fn settings_flag_checks_exactly_those_files() {
    let env = Env::new();
    env.project_settings(r#"{"hooks":{"Stop":[{"hooks":[{"comand":"x"}]}]}}"#);
    let good = env.scratch("good.json");
    env.write(
        &good,
        r#"{"hooks":{"Stop":[{"hooks":[{"command":"true"}]}]}}"#,
    );
    let missing = env.scratch("missing.json");
    let out = env.run(&["validate", "--json", "--settings", good.to_str().unwrap()]);
    assert_eq!(out.status(0).json()["files"].as_array().unwrap().len(), 1);

    let out = env.run(&[
        "validate",
        "--json",
        "--settings",
        good.to_str().unwrap(),
        "--settings",
        missing.to_str().unwrap(),
    ]);
    let json = out.status(1).json();
    assert_eq!(json["problems"][0]["kind"], "missing_file");
    assert_eq!(json["problems"][0]["file"], missing.to_str().unwrap());
}

#[test]
fn unusable_files_fail() {
    let env = Env::new();
    for (contents, needle) in [
        ("{\"hooks\": [1]}", "must be an object"),
        ("{\"hooks\": {\"Stop\": [}", "invalid JSON"),
        ("[]", "not a JSON object"),
        (
            "{\n  // a guard\n  \"hooks\": {}\n}",
            "JSON allows no comments",
        ),
        (
            "{\"hooks\": {\"Stop\": [\n  {\"hooks\": []},\n]}}",
            "JSON allows no trailing commas",
        ),
    ] {
        env.project_settings(contents);
        let json = env.run(&["validate", "--json"]).status(1).json();
        let problem = &json["problems"][0];
        assert_eq!(problem["kind"], "invalid_file", "{contents}");
        assert!(problem["path"].is_null());
        assert!(
            problem["message"].as_str().unwrap().contains(needle),
            "{contents}: {problem}"
        );
    }
}

#[test]
fn program_lookup_follows_path() {
    let env = Env::new();
    let bin = env.scratch("bin");
    env.write(&bin.join("my-linter"), "#!/bin/sh\nexit 0\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            bin.join("my-linter"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    env.project_settings(r#"{"hooks":{"Stop":[{"hooks":[{"command":"my-linter --fix"}]}]}}"#);
    let out = env.run_env(&["validate", "--json"], &[("PATH", "/nonexistent")]);
    let json = out.status(1).json();
    assert_eq!(json["problems"][0]["kind"], "program_not_found");
    let path = format!("{}:/usr/bin:/bin", bin.display());
    env.run_env(&["validate", "--json"], &[("PATH", path.as_str())])
        .status(0);
}

#[test]
fn disabled_handlers_are_not_looked_up() {
    let env = Env::new();
    env.project_settings(
        r#"{"hooks":{"Stop":[
            {"enabled":false,"hooks":[{"command":"levelcode-no-such-program"}]},
            {"hooks":[{"command":"levelcode-no-such-program-either","enabled":false}]}]}}"#,
    );
    env.run(&["validate"]).status(0);
}

/// Claude Code's own files, read as layers, speak its protocol: `"Bash"` there is the shell
/// tool's name, as `list` and the dispatch take it, so `validate` passes them; the same matcher
/// in levelcode's own file, without `"protocol": "claude"`, never matches and still fails.
#[test]
fn claude_codes_own_files_are_judged_by_claude_codes_tool_names() {
    let env = Env::new();
    env.user_settings(r#"{"claudeCodeHooks": true}"#);
    let guard = r#"{"hooks":{"PreToolUse":[{"matcher":"Bash|Write","hooks":[{"type":"command","command":"true"}]}],
        "SessionStart":[{"matcher":"startup","hooks":[{"type":"command","command":"true"}]}]}}"#;
    env.write(&env.home().join(".claude/settings.json"), guard);
    env.write(&env.project().join(".claude/settings.json"), guard);
    env.write(&env.project().join(".claude/settings.local.json"), guard);
    let json = env.run(&["validate", "--json"]).status(0).json();
    let layers: Vec<&str> = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["handlers"] == 2)
        .map(|f| f["layer"].as_str().unwrap())
        .collect();
    assert_eq!(
        layers,
        ["claude-user", "claude-project", "claude-local"],
        "{json:#}"
    );
    // A group of levelcode's protocol in Claude Code's file is judged by levelcode's names.
    env.write(
        &env.project().join(".claude/settings.local.json"),
        r#"{"hooks":{"PreToolUse":[{"matcher":"Bash","protocol":"levelcode","hooks":[{"command":"true"}]}]}}"#,
    );
    let json = env.run(&["validate", "--json"]).status(1).json();
    assert_eq!(
        problems(&json),
        [(
            "hooks.PreToolUse[0].matcher".to_string(),
            "tool_name".to_string()
        )]
    );
    assert_eq!(json["problems"][0]["layer"], "claude-local");
    // levelcode's own file: the same matcher without a protocol never matches.
    env.write(&env.project().join(".claude/settings.local.json"), guard);
    env.project_settings(
        r#"{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"command":"true"}]}]}}"#,
    );
    let json = env.run(&["validate", "--json"]).status(1).json();
    assert_eq!(json["problems"][0]["layer"], "project", "{json:#}");
    assert_eq!(json["problems"][0]["kind"], "tool_name");
}

/// A misspelled event's groups are judged as under the event meant, so following the advice and
/// then fixing the name leaves the guard as it was meant: a tool event's matcher is never
/// called ignored; a name that means nothing gets no matcher advice at all.
#[test]
fn a_misspelled_event_gets_advice_that_holds_once_the_name_is_fixed() {
    let env = Env::new();
    env.project_settings(
        r#"{"hooks":{
            "PreToolUSe":[{"matcher":"run_terminal_command","hooks":[{"command":"true"}]},
                          {"matcher":"Bash","hooks":[{"command":"true"}]}],
            "BeforeTool":[{"matcher":"write_file","hooks":[{"command":"true"}]}],
            "SessionStrat":[{"matcher":"startup","hooks":[{"command":"true"}]}],
            "Frobnicate":[{"matcher":"write_file","hooks":[{"command":"true"}]}]}}"#,
    );
    let json = env.run(&["validate", "--json"]).status(1).json();
    let s = |p: &str, k: &str| (p.to_string(), k.to_string());
    assert_eq!(
        problems(&json),
        [
            s("hooks.PreToolUSe", "unknown_event"),
            s("hooks.PreToolUSe[1].matcher", "tool_name"),
            s("hooks.BeforeTool", "unknown_event"),
            s("hooks.SessionStrat", "unknown_event"),
            s("hooks.SessionStrat[0].matcher", "matcher_ignored"),
            s("hooks.Frobnicate", "unknown_event"),
        ],
        "{json:#}"
    );
    assert!(message(&json, "hooks.PreToolUSe", "unknown_event")
        .contains("did you mean \"PreToolUse\"?"));
    assert!(
        message(&json, "hooks.SessionStrat[0].matcher", "matcher_ignored")
            .starts_with("SessionStart ignores matchers")
    );
    // What levelcode fires is said as docs/hooks.md says it: the four, and the others known.
    let unknown = message(&json, "hooks.Frobnicate", "unknown_event");
    assert!(
        unknown.contains(
            "levelcode fires SessionStart, PreToolUse, PostToolUse and Stop; the dispatcher also knows UserPromptSubmit, "
        ),
        "{unknown}"
    );
    let out = env.run_stdin(&["run"], &[], r#"{"event":"Frobnicate"}"#);
    let warnings = out.status(0).json()["warnings"].to_string();
    assert!(
        warnings.contains("levelcode fires SessionStart, PreToolUse, PostToolUse and Stop;"),
        "{warnings}"
    );
}

/// A `~` in a program started without a shell reaches it as written: `validate` says so, for
/// `argv` and the exec form alike, and leaves a `command` run by the shell alone.
#[cfg(unix)]
#[test]
fn a_tilde_without_a_shell_is_reported() {
    let env = Env::new();
    env.write(&env.home().join("hooks/guard.sh"), "exit 0\n");
    env.user_settings(
        r#"{"hooks":{"Stop":[{"hooks":[
            {"argv":["sh","~/hooks/guard.sh"]},
            {"command":"sh","args":["~/hooks/guard.sh"]},
            {"command":"sh ~/hooks/guard.sh"}]}]}}"#,
    );
    let json = env.run(&["validate", "--json"]).status(1).json();
    assert_eq!(
        problems(&json),
        [
            (
                "hooks.Stop[0].hooks[0].argv".to_string(),
                "tilde_not_expanded".to_string()
            ),
            (
                "hooks.Stop[0].hooks[1].args".to_string(),
                "tilde_not_expanded".to_string()
            ),
        ],
        "{json:#}"
    );
    let message = message(&json, "hooks.Stop[0].hooks[0].argv", "tilde_not_expanded");
    assert!(
        message.starts_with("element 1 \"~/hooks/guard.sh\" starts with ~"),
        "{message}"
    );
}

/// `validate` reads a command as `/bin/sh` does, operators glued to their words or not: it once
/// reported `./missing.sh` in `true && ./missing.sh` and said nothing of `true&&./missing2.sh`,
/// which `/bin/sh` runs just the same.
#[cfg(unix)]
#[test]
fn a_missing_program_is_reported_whether_or_not_blanks_surround_the_operator() {
    let env = Env::new();
    env.project_settings(
        r#"{"hooks":{"Stop":[{"hooks":[
            {"command":"true && ./missing.sh"},
            {"command":"true&&./missing2.sh"},
            {"command":"true;./missing3.sh|cat"},
            {"command":"(./missing4.sh)"}
        ]}]}}"#,
    );
    let json = env.run(&["validate", "--json"]).status(1).json();
    for (i, script) in [
        "./missing.sh",
        "./missing2.sh",
        "./missing3.sh",
        "./missing4.sh",
    ]
    .iter()
    .enumerate()
    {
        let at = format!("hooks.Stop[0].hooks[{i}].command");
        assert!(
            message(&json, &at, "program_not_found").contains(script),
            "{at}: {json:#}"
        );
    }
}
