use super::*;
use serde_json::json;

#[test]
fn timeout_rules() {
    assert_eq!(clamp_timeout(None), (10.0, None));
    assert_eq!(clamp_timeout(Some(&Value::Null)), (10.0, None));
    assert_eq!(clamp_timeout(Some(&json!(2.5))), (2.5, None));
    assert_eq!(clamp_timeout(Some(&json!(600))), (600.0, None));
    let (secs, warning) = clamp_timeout(Some(&json!(0)));
    assert_eq!(secs, 10.0);
    assert!(warning.unwrap().contains("positive"));
    let (secs, warning) = clamp_timeout(Some(&json!(-1)));
    assert_eq!(secs, 10.0);
    assert!(warning.is_some());
    let (secs, warning) = clamp_timeout(Some(&json!("5")));
    assert_eq!(secs, 10.0);
    assert!(warning.unwrap().contains("number of seconds"));
    let (secs, warning) = clamp_timeout(Some(&json!(601)));
    assert_eq!(secs, 600.0);
    assert!(!warning.unwrap().contains("milliseconds"));
    let (secs, warning) = clamp_timeout(Some(&json!(1000)));
    assert_eq!(secs, 600.0);
    assert!(warning.unwrap().contains("unit is seconds"));
}

fn parse_text(text: &str) -> (Vec<Group>, Vec<String>) {
    let mut groups = Vec::new();
    let mut warnings = Vec::new();
    let source = Source {
        layer: LayerKind::Cli,
        file: Path::new("s.json").into(),
    };
    parse(
        source,
        text.as_bytes(),
        Events::All,
        &mut groups,
        &mut warnings,
    );
    (groups, warnings)
}

#[test]
fn one_bad_handler_keeps_its_siblings() {
    let (groups, warnings) = parse_text(
        r#"{"hooks":{"Stop":[{"hooks":[{"command":"a","argv":["b"]},{"command":"c"}]}]}}"#,
    );
    assert_eq!(groups[0].handlers.len(), 1);
    assert_eq!(groups[0].handlers[0].index, 1);
    assert_eq!(
        warnings,
        ["s.json: hooks.Stop[0].hooks[0]: both command and argv given; keep one; handler skipped"]
    );
}

#[test]
fn handler_directly_under_event_is_named() {
    let (groups, warnings) = parse_text(r#"{"hooks":{"Stop":[{"command":"x"}]}}"#);
    assert!(groups.is_empty());
    assert!(warnings[0].contains("hooks.Stop[0]: a handler written directly under the event"));
}

#[test]
fn hooks_not_object_skips_layer() {
    for (hooks, what) in [
        ("[1, {\"a\": [2]}]", "an array"),
        ("\"x\"", "a string"),
        ("\"\\u0078\"", "a string"),
        ("true", "a boolean"),
        ("-1", "a number"),
        ("1.5", "a number"),
    ] {
        let (_, warnings) = parse_text(&format!(r#"{{"hooks":{hooks},"theme":"dark"}}"#));
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with(&format!(
                "s.json: \"hooks\" must be an object of events, not {what}; layer skipped: none of its hooks run"
            )),
            "{warnings:?}"
        );
    }
    for nothing in [
        r#"{"hooks":null}"#,
        r#"{"theme":"dark"}"#,
        r#"{"hooks":{}}"#,
    ] {
        let (groups, warnings) = parse_text(nothing);
        assert!(
            groups.is_empty() && warnings.is_empty(),
            "{nothing}: {warnings:?}"
        );
    }
    let (_, warnings) = parse_text(r#"{"hooks":{"Stop":[}}"#);
    assert!(
        warnings[0].starts_with("s.json: invalid JSON: "),
        "{warnings:?}"
    );
    let (_, warnings) = parse_text("[]");
    assert!(warnings[0].contains("not a JSON object"));
}

/// The slips people make in a JSON file are named, since `serde_json`'s words do not say them.
#[test]
fn json_slips_are_named() {
    for (text, error, slip) in [
        (
            "{\n  // a guard\n  \"hooks\": {}\n}",
            "at line 2 column 3",
            "JSON allows no comments",
        ),
        ("{\"hooks\": {} /* off */}", "", "JSON allows no comments"),
        (
            "{\n  # a guard\n  \"hooks\": {}\n}",
            "",
            "JSON allows no comments",
        ),
        (
            "{\"hooks\": {\"Stop\": [\n  {\"hooks\": [{\"command\": \"true\"}]},\n]}}",
            "expected value at line 3 column 1",
            "JSON allows no trailing commas",
        ),
        (
            "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"command\": \"true\", }]}]}}",
            "key must be a string",
            "JSON allows no trailing commas",
        ),
        (
            "{\"hooks\": {}, \"theme\": \"dark\",\n}",
            "",
            "JSON allows no trailing commas",
        ),
        ("{'hooks': {}}", "", "double quotes"),
        ("[1,]", "", "JSON allows no trailing commas"),
    ] {
        let (_, warnings) = parse_text(text);
        assert_eq!(warnings.len(), 1, "{text}: {warnings:?}");
        let warning = &warnings[0];
        assert!(
            warning.starts_with("s.json: invalid JSON: ") && warning.contains(error),
            "{text}: {warning}"
        );
        assert!(warning.contains(slip), "{text}: {warning}");
        assert!(warning.contains("none of its hooks run"), "{warning}");
    }
    // Other mistakes are left as `serde_json` words them.
    for text in [
        "{\"hooks\": {\"Stop\": [}",
        "{\"hooks\": {}",
        "{\"hooks\": {}} }",
    ] {
        let (_, warnings) = parse_text(text);
        assert!(
            !warnings[0].contains("JSON allows") && !warnings[0].contains("quotes"),
            "{text}: {warnings:?}"
        );
    }
}

/// The one handler of a `Stop` group written as `handler`, or the warnings that skipped it.
fn one_handler(handler: &str) -> Result<Handler, Vec<String>> {
    let (mut groups, warnings) = parse_text(&format!(
        r#"{{"hooks":{{"Stop":[{{"hooks":[{handler}]}}]}}}}"#
    ));
    match groups.pop().and_then(|mut g| g.handlers.pop()) {
        Some(handler) => Ok(handler),
        None => Err(warnings),
    }
}

#[test]
fn the_exec_form_and_the_shell_are_read_as_claude_code_writes_them() {
    let program = |h: &str| match one_handler(h) {
        Ok(Handler {
            action: Action::Process(program),
            ..
        }) => program,
        Ok(other) => panic!("{h}: {other:?}"),
        Err(w) => panic!("{h}: {w:?}"),
    };
    assert_eq!(
        program(r#"{"command":"node","args":["a b.js","it's \"q\""]}"#),
        Program::Exec {
            program: "node".into(),
            args: vec!["a b.js".into(), "it's \"q\"".into()]
        }
    );
    assert_eq!(
        program(r#"{"command":"./guard","args":[]}"#),
        Program::Exec {
            program: "./guard".into(),
            args: vec![]
        }
    );
    assert_eq!(
        program(r#"{"command":"Get-Date","shell":"powershell"}"#),
        Program::PowerShell("Get-Date".into())
    );
    assert_eq!(
        program(r#"{"command":"echo hi","shell":"bash"}"#),
        Program::Shell("echo hi".into())
    );
}

#[test]
fn a_bad_exec_form_says_which_field_and_why() {
    let skipped = |h: &str, path: &str, words: &str| {
        let warnings = one_handler(h).err().unwrap_or_else(|| panic!("{h} ran"));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let prefix = format!("s.json: hooks.Stop[0].hooks[0]{path}: ");
        assert!(
            warnings[0].starts_with(&prefix) && warnings[0].contains(words),
            "{h}: {warnings:?}"
        );
        assert!(warnings[0].ends_with("handler skipped"), "{warnings:?}");
    };
    skipped(r#"{"args":["x"]}"#, ".args", "needs command");
    skipped(
        r#"{"argv":["a"],"args":["x"]}"#,
        ".args",
        "goes with command",
    );
    skipped(
        r#"{"command":"node","args":"x.js"}"#,
        ".args",
        "array of strings",
    );
    skipped(
        r#"{"command":"node","args":["x",1]}"#,
        ".args",
        "element 1 is a number",
    );
    skipped(
        r#"{"command":" node ","args":["x"]}"#,
        ".command",
        "spaces around it",
    );
    skipped(
        r#"{"command":"","args":["x"]}"#,
        ".command",
        "non-empty string",
    );
    skipped(r#"{"command":"x","shell":"zsh"}"#, ".shell", "not a shell");
    skipped(r#"{"command":"x","shell":1}"#, ".shell", "not a shell");
}

#[test]
fn a_shell_where_none_runs_is_ignored_with_a_warning() {
    let (groups, warnings) = parse_text(
        r#"{"hooks":{"Stop":[{"hooks":[{"command":"node","args":["g.js"],"shell":"powershell"}]}]}}"#,
    );
    assert_eq!(
        groups[0].handlers[0].action,
        Action::Process(Program::Exec {
            program: "node".into(),
            args: vec!["g.js".into()]
        })
    );
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].contains("hooks[0].shell: has no effect"),
        "{warnings:?}"
    );
}

/// Every subject a group applies to is among those `subjects_that_may_match` gives, for matchers
/// of plain names in both protocols; anything it cannot tell is `None`.
#[test]
fn subjects_that_may_match_leave_out_only_subjects_nothing_applies_to() {
    let text = r#"{"hooks":{
        "PreToolUse":[
            {"matcher":"write_file|Bash","hooks":[{"command":"a"}]},
            {"matcher":"Edit","protocol":"claude","hooks":[{"command":"b"}]},
            {"matcher":"Glob | mcp-x","hooks":[{"command":"c","protocol":"claude"}]},
            {"matcher":"never","enabled":false,"hooks":[{"command":"d"}]},
            {"matcher":"off","hooks":[{"command":"e","enabled":false}]}],
        "PostToolUse":[{"matcher":"mcp__.*","hooks":[{"command":"f"}]}],
        "SessionEnd":[{"matcher":"clear|logout","hooks":[{"command":"g"}]}],
        "Stop":[{"hooks":[{"command":"h"}]}],
        "SessionStart":[{"matcher":"compact","protocol":"claude","hooks":[{"command":"i"}]}]
    }}"#;
    let (groups, warnings) = parse_text(text);
    assert!(warnings.is_empty(), "{warnings:?}");
    let of = |event: &str| -> Vec<&Group> { groups.iter().filter(|g| g.event == event).collect() };
    let pre = subjects_that_may_match(of("PreToolUse"), EventKind::PreToolUse).unwrap();
    // `Bash` is levelcode's own name only for a levelcode group; `Edit` names str_replace for a
    // claude group; `Glob` names glob.
    assert_eq!(
        pre,
        [
            "Bash",
            "Edit",
            "Glob",
            "glob",
            "mcp-x",
            "str_replace",
            "write_file"
        ]
    );
    let candidates = [
        "write_file",
        "str_replace",
        "run_terminal_command",
        "read_files",
        "code_search",
        "glob",
        "Bash",
        "Edit",
        "MultiEdit",
        "Glob",
        "mcp-x",
        "never",
        "off",
        "spawn_agents",
        "",
    ];
    let pre_groups = of("PreToolUse");
    for tool in candidates {
        let applies = pre_groups.iter().any(|g| {
            g.enabled
                && g.handlers.iter().any(|h| h.enabled)
                && g.applies(EventKind::PreToolUse, Some(tool)) == Ok(true)
        });
        if applies {
            assert!(
                pre.iter().any(|s| s == tool),
                "{tool} applies but is left out"
            );
        }
    }
    assert!(!pre.iter().any(|s| s == "run_terminal_command"));
    assert_eq!(
        subjects_that_may_match(of("PostToolUse"), EventKind::PostToolUse),
        None
    );
    assert_eq!(
        subjects_that_may_match(of("SessionEnd"), EventKind::SessionEnd).unwrap(),
        ["clear", "logout"]
    );
    assert_eq!(subjects_that_may_match(of("Stop"), EventKind::Stop), None);
    // A claude group for `compact` never runs when levelcode starts: nothing applies.
    assert_eq!(
        subjects_that_may_match(of("SessionStart"), EventKind::SessionStart).unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(
        subjects_that_may_match(&[] as &[Group], EventKind::PreToolUse).unwrap(),
        Vec::<String>::new()
    );
}

/// Each handler's sandbox (contract §20): its own, else its group's, else its file's top-level
/// one, read the same by the fast reader and the general path.
#[test]
fn a_sandbox_comes_from_the_handler_the_group_or_the_file() {
    use crate::settings::sandbox::Origin;
    let text = r#"{"hooks":{"Stop":[
        {"hooks":[{"command":"a"},{"command":"b","sandbox":false}]},
        {"sandbox":{"write":["build"]},"hooks":[{"command":"c"},{"command":"d","sandbox":"best-effort"}]}
    ]},"sandbox":true}"#;
    let (groups, warnings) = parse_text(text);
    assert!(warnings.is_empty(), "{warnings:?}");
    let seen: Vec<(Origin, Option<bool>, usize)> = groups
        .iter()
        .flat_map(|g| &g.handlers)
        .map(|h| {
            let policy = h.sandbox.policy.as_ref();
            (
                h.sandbox.origin,
                policy.map(|p| p.best_effort),
                policy.map_or(0, |p| p.write.len()),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (Origin::Layer, Some(false), 0),
            (Origin::Handler, None, 0),
            (Origin::Group, Some(false), 1),
            (Origin::Handler, Some(true), 0),
        ]
    );
    // The file's own value comes after its hooks here, and the reader still gives it.
    let mut fast = Vec::new();
    let mut slow = Vec::new();
    for (hand_written, out) in [(true, &mut fast), (false, &mut slow)] {
        let source = Source {
            layer: LayerKind::Cli,
            file: Path::new("s.json").into(),
        };
        let mut w = Vec::new();
        parse_with(
            source,
            text.as_bytes(),
            Events::All,
            out,
            &mut w,
            hand_written,
        );
        assert!(w.is_empty(), "{w:?}");
    }
    assert_eq!(format!("{fast:?}"), format!("{slow:?}"));
}

/// A sandbox that cannot be read never leaves a handler running with more rights than meant:
/// the handler, the group or the whole file is skipped, with a warning naming where and why.
#[test]
fn a_sandbox_that_cannot_be_read_skips_what_it_was_on() {
    let (groups, warnings) = parse_text(
        r#"{"hooks":{"Stop":[{"hooks":[{"command":"a","sandbox":{"wrte":["x"]}},{"command":"b"}]},
            {"sandbox":2,"hooks":[{"command":"c"}]}]}}"#,
    );
    let labels: Vec<String> = groups
        .iter()
        .flat_map(|g| &g.handlers)
        .map(Handler::label)
        .collect();
    assert_eq!(labels, ["b"]);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].starts_with("s.json: hooks.Stop[0].hooks[0].sandbox: has no key \"wrte\""),
        "{warnings:?}"
    );
    assert!(warnings[0].ends_with("; handler skipped"), "{warnings:?}");
    assert!(
        warnings[1].contains("hooks.Stop[1].sandbox: must be true, false"),
        "{warnings:?}"
    );
    let (groups, warnings) =
        parse_text(r#"{"sandbox":"strict","hooks":{"Stop":[{"hooks":[{"command":"a"}]}]}}"#);
    assert!(groups.is_empty(), "{groups:?}");
    assert!(
        warnings[0].starts_with("s.json: sandbox: must be true")
            && warnings[0].ends_with("every handler of this file is skipped"),
        "{warnings:?}"
    );
}

/// Claude Code's own settings file has a top-level `sandbox` of its own meaning: it is not read
/// as the hooks' (a `sandbox` inside its `hooks` is).
#[test]
fn an_agent_file_keeps_its_own_top_level_sandbox() {
    let claude = crate::settings::layers::agent_layers()
        .next()
        .map(|(kind, _)| kind)
        .expect("an agent's layer");
    let mut groups = Vec::new();
    let mut warnings = Vec::new();
    let text = br#"{"sandbox":{"enabled":true},"hooks":{"Stop":[{"hooks":[{"command":"a"},{"command":"b","sandbox":true}]}]}}"#;
    let source = Source {
        layer: claude,
        file: Path::new("c.json").into(),
    };
    parse(source, text, Events::All, &mut groups, &mut warnings);
    assert!(warnings.is_empty(), "{warnings:?}");
    let policies: Vec<bool> = groups[0]
        .handlers
        .iter()
        .map(|h| h.sandbox.policy.is_some())
        .collect();
    assert_eq!(policies, [false, true]);
}
