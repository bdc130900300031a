//! The fast path (`fast.rs`) held to the general path (`checked.rs`) and to `serde_json`:
//! differential property tests over generated settings, and the shapes it must take.

use super::*;

/// An event's array read by the general path only, as if the fast read did not exist.
fn general(source: &Arc<Source>, raw: &str) -> (Vec<Group>, Vec<String>) {
    let mut groups = Vec::new();
    let mut warnings = Vec::new();
    match serde_json::from_str::<Value>(raw) {
        Ok(value) => {
            let mut at = Location {
                file: Path::new("s.json"),
                warnings: &mut warnings,
                text: raw,
                plain_http: OnceLock::new(),
            };
            parse_event(source, "Stop", value, &mut groups, &mut at);
        }
        Err(e) => warnings.push(e.to_string()),
    }
    (groups, warnings)
}

/// One of `good` (twice as often) or of `bad`, four times in ten.
fn sometimes(
    good: Vec<&'static str>,
    bad: Vec<&'static str>,
) -> impl proptest::strategy::Strategy<Value = Option<&'static str>> {
    use proptest::prelude::*;
    prop::option::weighted(
        0.4,
        prop_oneof![2 => prop::sample::select(good), 1 => prop::sample::select(bad)],
    )
}

fn handler_text() -> impl proptest::strategy::Strategy<Value = String> {
    handler_text_with(0..2)
}

/// A handler, which in the usual shape has `odd` keys of any value.
fn handler_text_with(
    odd: std::ops::Range<usize>,
) -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let key = prop::sample::select(vec![
        "type",
        "command",
        "argv",
        "timeout",
        "enabled",
        "name",
        "note",
        "protocol",
        "if",
        "args",
        "shell",
        "onFailure",
        "statusMessage",
        "async",
        "asyncRewake",
        "once",
        "sandbox",
    ]);
    let value = prop::sample::select(vec![
        "null",
        "true",
        "false",
        "\"\"",
        "\" \"",
        "\"echo hi\"",
        "\"command\"",
        "\"e\\u0063ho \\\"x\\\"\"",
        "0",
        "-1",
        "5",
        "2.5",
        "700",
        "1e3",
        "[]",
        "[\"sh\"]",
        "[\"\", \"b\"]",
        "[\"a\", 1]",
        "{}",
        "\"claude\"",
        "\"levelcode\"",
        "\"powershell\"",
        "\"a\\u0000b\"",
        "[\"a\\u0000\"]",
        "\"block\"",
        "\"proceed\"",
        "\"b\\u006cock\"",
        "\"Block\"",
        "\"block \"",
        "\"bash\"",
        "\"\\ud800\"",
        "[\"block\"]",
        "\"best-effort\"",
        "{\"network\":true}",
        "{\"write\":[\"a\"],\"bestEffort\":false}",
    ]);
    let program = prop::sample::select(vec![
        "\"command\":\"echo hi\"",
        "\"command\":\"e\\u0063ho \\\"x\\\"\"",
        "\"argv\":[\"sh\",\"-c\",\"true\"]",
        "\"argv\":[\"prog\"]",
        "\"command\":null,\"argv\":[\"p\"]",
        "\"command\":\"node\",\"args\":[\"g.js\",\"a b\"]",
        "\"command\":\"./g\",\"args\":[]",
        "\"command\":\"Get-Date\",\"shell\":\"powershell\"",
        "\"command\":\" node\",\"args\":[\"g.js\"]",
        "\"command\":\"node\",\"args\":[\"g.js\",1]",
        "\"command\":\"node\",\"args\":\"g.js\"",
    ]);
    // `onFailure`, Claude Code's own fields and `shell` often, mostly with values the general
    // path takes (or passes over), else with values it warns about or cannot read at all (a
    // string spelled otherwise, another kind of value, a lone surrogate, a number out of range).
    let on_failure = sometimes(
        vec!["\"block\"", "\"proceed\"", "\"bl\\u006fck\"", "null"],
        vec![
            "\"Block\"",
            "\"block \"",
            "\"\"",
            "\"fail\"",
            "true",
            "0",
            "[\"block\"]",
            "{}",
        ],
    );
    let claude = sometimes(
        vec![
            "\"statusMessage\":\"Checking\"",
            "\"statusMessage\":null",
            "\"async\":true",
            "\"asyncRewake\":false",
            "\"once\":true",
        ],
        vec![
            "\"statusMessage\":\"\\ud800\"",
            "\"statusMessage\":1e400",
            "\"async\":\"\\ud800\"",
            "\"asyncRewake\":1e400",
            "\"once\":\"yes\"",
        ],
    );
    let shell = sometimes(
        vec!["\"bash\"", "\"powershell\"", "null"],
        vec!["\"zsh\"", "\"Bash\"", "1"],
    );
    let sandbox = sometimes(
        vec![
            "true",
            "false",
            "null",
            "\"best-effort\"",
            "\"best-\\u0065ffort\"",
            "{\"write\":[\"b\"]}",
        ],
        vec![
            "\"Best-effort\"",
            "1",
            "{\"x\":1}",
            "{\"write\":[\"\"]}",
            "[]",
        ],
    );
    // Mostly the usual shape, a program and a few valid keys, with now and then one
    // key of any value.
    let usual = (
        program,
        on_failure,
        claude,
        (shell, sandbox),
        prop::collection::vec((key.clone(), value.clone()), odd),
        prop::sample::subsequence(
            vec![
                "\"type\":\"command\"",
                "\"timeout\":5",
                "\"timeout\":null",
                "\"enabled\":false",
                "\"name\":\"n\"",
                "\"protocol\":\"claude\"",
                "\"if\":\"Bash(git *)\"",
            ],
            0..3,
        ),
    )
        .prop_map(
            |(program, on_failure, claude, (shell, sandbox), odd, valid)| {
                let mut fields: Vec<String> = vec![program.to_string()];
                fields.extend(on_failure.map(|v| format!("\"onFailure\":{v}")));
                fields.extend(claude.map(String::from));
                fields.extend(shell.map(|v| format!("\"shell\":{v}")));
                fields.extend(sandbox.map(|v| format!("\"sandbox\":{v}")));
                fields.extend(valid.iter().map(|v| v.to_string()));
                fields.extend(odd.iter().map(|(k, v)| format!("\"{k}\":{v}")));
                format!("{{{}}}", fields.join(","))
            },
        );
    let any = prop::collection::vec((key, value), 0..5).prop_map(|fields| {
        let fields: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
        format!("{{{}}}", fields.join(","))
    });
    // A handler written as an array of its fields in order, which serde's derive would read as
    // the struct if the fast read let it.
    let array = prop::sample::select(vec![
        "[null,\"echo hi\"]",
        "[\"command\",\"echo hi\"]",
        "[null,null,[\"prog\"]]",
    ])
    .prop_map(String::from);
    prop_oneof![6 => usual, 2 => any, 1 => array]
}

fn event_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let hooks = prop_oneof![
        8 => prop::collection::vec(handler_text(), 0..4).prop_map(|h| format!("[{}]", h.join(","))),
        1 => prop::sample::select(vec!["null", "{}", "\"x\""]).prop_map(String::from),
    ];
    let group = (
        prop::option::of(prop::sample::select(vec![
            "null",
            "\"write_file\"",
            "\"^a\"",
            "1",
        ])),
        prop::option::weighted(0.95, hooks),
        prop::option::of(prop::sample::select(vec![
            "null", "false", "true", "\"no\"",
        ])),
        prop::bool::weighted(0.1),
        prop::option::of(prop::sample::select(vec![
            "null",
            "\"claude\"",
            "\"levelcode\"",
            "\"x\"",
        ])),
    )
        .prop_map(|(matcher, hooks, enabled, extra, protocol)| {
            let mut fields = Vec::new();
            if let Some(p) = protocol {
                fields.push(format!("\"protocol\":{p}"));
            }
            if let Some(m) = matcher {
                fields.push(format!("\"matcher\":{m}"));
            }
            if let Some(h) = hooks {
                fields.push(format!("\"hooks\":{h}"));
            }
            if let Some(e) = enabled {
                fields.push(format!("\"enabled\":{e}"));
            }
            if extra {
                fields.push("\"comment\":\"x\"".into());
            }
            if fields.len() % 3 == 1 {
                fields.push("\"if\":\"Edit(src/**)\"".into());
            }
            match fields.len() % 5 {
                0 => fields.push("\"sandbox\":true".into()),
                1 => fields.push("\"sandbox\":{\"network\":true}".into()),
                2 if extra => fields.push("\"sandbox\":\"no\"".into()),
                _ => {}
            }
            format!("{{{}}}", fields.join(","))
        });
    // Now and then a group written as an array of its fields in order (see `handler_text`).
    let array = prop::collection::vec(handler_text(), 1..3)
        .prop_map(|h| format!("[\"write_file\",[{}]]", h.join(",")));
    let group = prop_oneof![12 => group, 1 => array];
    let groups = prop::collection::vec(group, 0..4).prop_map(|g| format!("[{}]", g.join(",")));
    // Often one handler alone, so that whether the event is clean is up to its fields; now and
    // then with no key of any value, so that the fields that are not always there decide.
    let single = prop_oneof![handler_text(), handler_text_with(0..1)]
        .prop_map(|h| format!("[{{\"hooks\":[{h}]}}]"));
    prop_oneof![2 => groups, 1 => single]
}

proptest::proptest! {
    // Most generated events have something to warn about; enough cases that each value of a
    // field the fast read takes is read by it a few dozen times.
    #![proptest_config(proptest::test_runner::Config::with_cases(5000))]

    /// Whenever the fast read takes an event, the general path reads the same groups from
    /// it and has nothing to warn about.
    #[test]
    fn the_fast_read_agrees_with_the_general_path(raw in event_text()) {
        let source = Arc::new(Source { layer: LayerKind::Project, file: Path::new("s.json").into() });
        if let Some(fast) = clean_event(&source, "Stop", &raw, None) {
            let (general, warnings) = general(&source, &raw);
            proptest::prop_assert!(warnings.is_empty(), "{}: {:?}", raw, warnings);
            proptest::prop_assert_eq!(format!("{fast:?}"), format!("{general:?}"), "{}", raw);
        }
    }
}

/// Events of groups with nothing to warn about, their matchers and switches of every kind.
fn clean_event_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let group = (
        prop::option::of(prop::sample::select(vec![
            "\"write_file\"",
            "\"^a\"",
            "\"write_file|str_replace\"",
            "\"^read_\"",
            "\"files?$\"",
            "\"\"",
            "\"*\"",
            "\" | \"",
            "\"(\"",
            "\"^x(\"",
            "\"x\"",
            "\"^(read|write)_files?$\"",
            "\"^write_file$\"",
            "\"Write|Edit\"",
            "\"^Wr\"",
            "\"Read\"",
            "null",
        ])),
        prop::option::of(prop::sample::select(vec!["true", "false", "null"])),
        prop::sample::select(vec![
            r#"[{"command":"echo hi"}]"#,
            r#"[{"argv":["true"]},{"command":"x","enabled":false}]"#,
            r#"[{"command":"c","protocol":"claude"}]"#,
            r#"[{"command":"c","protocol":"claude"},{"command":"d"}]"#,
        ]),
        prop::option::of(prop::sample::select(vec![
            "\"claude\"",
            "\"levelcode\"",
            "null",
        ])),
    )
        .prop_map(|(matcher, enabled, hooks, protocol)| {
            let mut fields = vec![format!("\"hooks\":{hooks}")];
            if let Some(p) = protocol {
                fields.push(format!("\"protocol\":{p}"));
            }
            if let Some(m) = matcher {
                fields.push(format!("\"matcher\":{m}"));
            }
            if let Some(e) = enabled {
                fields.push(format!("\"enabled\":{e}"));
            }
            format!("{{{}}}", fields.join(","))
        });
    prop::collection::vec(group, 1..6).prop_map(|g| format!("[{}]", g.join(",")))
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(2000))]

    /// Read for one tool, an event keeps every group the dispatch would use for that tool,
    /// in order, and builds no group it does not read without it.
    #[test]
    fn the_read_for_one_tool_keeps_what_the_dispatch_uses(
        raw in clean_event_text(),
        tool in proptest::sample::select(vec!["write_file", "read_files", "x"]),
    ) {
        let source = Arc::new(Source { layer: LayerKind::Project, file: Path::new("s.json").into() });
        let all = clean_event(&source, "PreToolUse", &raw, None);
        let for_tool = clean_event(&source, "PreToolUse", &raw, Some(tool));
        proptest::prop_assert_eq!(all.is_some(), for_tool.is_some());
        let (Some(all), Some(for_tool)) = (all, for_tool) else {
            return Err(proptest::test_runner::TestCaseError::fail(format!("not read fast: {raw}")));
        };
        let kept: Vec<usize> = for_tool.iter().map(|g| g.index).collect();
        let mut from_all = all.iter().filter(|g| kept.contains(&g.index));
        for group in &for_tool {
            let same = from_all.next().map(|g| format!("{g:?}"));
            proptest::prop_assert_eq!(same, Some(format!("{group:?}")));
        }
        for group in &all {
            let used = group.enabled
                && group
                    .applies(crate::settings::events::EventKind::PreToolUse, Some(tool))
                    .unwrap_or(true);
            proptest::prop_assert!(!used || kept.contains(&group.index), "{} lost group {}", raw, group.index);
        }
    }
}

#[test]
fn the_fast_read_takes_the_usual_shape() {
    let source = Arc::new(Source {
        layer: LayerKind::Project,
        file: Path::new("s.json").into(),
    });
    let raw = r#"[{"matcher":"write_file","hooks":[{"type":"command","command":"./x.sh","timeout":5,"name":"x"},{"argv":["a","b"],"enabled":false}]},{"hooks":[{"command":"e\u0063ho"}],"enabled":null}]"#;
    let fast = clean_event(&source, "Stop", raw, None).expect("the usual shape is read fast");
    assert_eq!(
        format!("{fast:?}"),
        format!("{:?}", general(&source, raw).0)
    );
    assert_eq!(
        fast[1].handlers[0].action,
        Action::Process(Program::Shell("echo".into()))
    );
    for unusual in [
        r#"[{"hooks":[{"command":"a","extra":1}]}]"#,
        r#"[{"hooks":[{"command":"a","command":"b"}]}]"#,
        r#"[{"hooks":[{"command":"a","timeout":0}]}]"#,
        r#"[{"hooks":[]}]"#,
    ] {
        assert!(
            clean_event(&source, "Stop", unusual, None).is_none(),
            "{unusual}"
        );
    }
}

/// `onFailure` and the fields Claude Code writes on a handler are read fast, by the hand-written
/// reader and by `serde_json`, into the handlers the general path reads; a value the general
/// path warns about leaves the event to it.
#[test]
fn the_fast_read_takes_on_failure_and_claude_code_fields() {
    let source = Arc::new(Source {
        layer: LayerKind::Project,
        file: Path::new("s.json").into(),
    });
    let raw = r#"[{"matcher":"Bash","hooks":[
        {"type":"command","command":"python3 g.py","timeout":5,"onFailure":"block","statusMessage":"Checking","async":false},
        {"command":"node","args":["g.js","a b"],"onFailure":"pro\u0063eed","shell":"bash"},
        {"command":"Get-Date","shell":"powershell","onFailure":null,"once":true,"asyncRewake":null},
        {"argv":["g"],"onFailure":"block","shell":null,"args":null}]}]"#;
    let (general_groups, warnings) = general(&source, raw);
    assert!(warnings.is_empty(), "{warnings:?}");
    let general_groups = format!("{general_groups:?}");
    let file = format!(r#"{{"hooks":{{"Stop":{raw}}}}}"#);
    let read = fast::hooks_of(&file, &source, Events::Only("Stop"))
        .expect("taken by the hand-written reader")
        .0
        .expect("has hooks");
    let [(_, Reading::Clean(by_hand))] = &read[..] else {
        panic!("not read fast by the hand-written reader");
    };
    assert_eq!(format!("{by_hand:?}"), general_groups);
    let by_serde = fast::serde_event(&source, "Stop", raw, None).expect("taken by serde_json");
    assert_eq!(format!("{by_serde:?}"), general_groups);
    let handlers = &by_hand[0].handlers;
    let on_failure: Vec<OnFailure> = handlers.iter().map(|h| h.on_failure).collect();
    assert_eq!(
        on_failure,
        [
            OnFailure::Block,
            OnFailure::Proceed,
            OnFailure::Proceed,
            OnFailure::Block
        ]
    );
    assert_eq!(
        handlers[1].action,
        Action::Process(Program::Exec {
            program: "node".into(),
            args: vec!["g.js".into(), "a b".into()]
        })
    );
    assert_eq!(
        handlers[2].action,
        Action::Process(Program::PowerShell("Get-Date".into()))
    );
    for (handler, key) in [
        (r#"{"command":"a","onFailure":"Block"}"#, "onFailure"),
        (r#"{"command":"a","onFailure":"block "}"#, "onFailure"),
        (r#"{"command":"a","onFailure":1}"#, "onFailure"),
        (r#"{"command":"a","onFailure":true}"#, "onFailure"),
        (r#"{"command":"a","onFailure":["block"]}"#, "onFailure"),
        (r#"{"command":"a","onFailure":{}}"#, "onFailure"),
        (
            r#"{"command":"a","args":["x"],"shell":"powershell"}"#,
            "shell",
        ),
        (r#"{"argv":["a"],"shell":"powershell"}"#, "shell"),
        (r#"{"command":"a","shell":"zsh"}"#, "shell"),
        (r#"{"command":" a","args":[]}"#, "command"),
        (r#"{"command":"a","args":[1]}"#, "args"),
        (r#"{"argv":["a"],"args":[]}"#, "args"),
    ] {
        let raw = format!(r#"[{{"hooks":[{handler}]}}]"#);
        assert!(clean_event(&source, "Stop", &raw, None).is_none(), "{raw}");
        let (_, warnings) = general(&source, &raw);
        assert_eq!(warnings.len(), 1, "{raw}: {warnings:?}");
        assert!(
            warnings[0].contains(&format!("hooks[0].{key}: ")),
            "{raw}: {warnings:?}"
        );
    }
}

/// A whole settings file: `hooks` (sometimes twice, or under a key spelled with an escape),
/// other keys of every kind of value, and events of every shape, compact or spaced out.
fn file_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let event_name = prop::sample::select(vec![
        "\"PreToolUse\"",
        "\"Stop\"",
        "\"PostToolUse\"",
        "\"Pre\\u0054oolUse\"",
    ]);
    let event_value = prop_oneof![
        4 => event_text(),
        4 => clean_event_text(),
        1 => prop::sample::select(vec!["null", "{}", "\"x\"", "[1,[2,{\"a\":[]}]]"]).prop_map(String::from),
    ];
    let events = prop::collection::vec((event_name, event_value), 0..4).prop_map(|events| {
        let members: Vec<String> = events.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        format!("{{{}}}", members.join(","))
    });
    let hooks = prop_oneof![
        8 => events,
        1 => prop::sample::select(vec!["null", "[]", "\"x\"", "1", "true"]).prop_map(String::from),
    ];
    let other = prop::sample::select(vec![
        "\"dark\"",
        "-0.5e+3",
        "0",
        "[1, 2.25, -3E2, true, false, null]",
        "{\"a\":{\"b\":[{\"c\":\"\\u00e9\\n\\\"\"}]},\"d\":[]}",
        "\"\\ud800 lone\"",
        "\"caf\u{e9} \\/ \\\\\"",
        "1e400",
    ]);
    let member = prop_oneof![
        4 => hooks.prop_map(|h| format!("\"hooks\":{h}")),
        2 => other.prop_map(|v| format!("\"theme\":{v}")),
        1 => Just("\"ho\\u006fks\":{}".to_string()),
        1 => Just("\"trustAllProjectHooks\":false".to_string()),
        1 => prop::sample::select(vec![
            "true",
            "false",
            "null",
            "\"best-effort\"",
            "{\"write\":[\"x\"],\"network\":false}",
            "\"x\"",
            "{\"read\":[]}",
        ])
        .prop_map(|v| format!("\"sandbox\":{v}")),
    ];
    (prop::collection::vec(member, 0..4), any::<bool>()).prop_map(|(members, spaced)| {
        let text = format!("{{{}}}", members.join(","));
        if spaced {
            text.replace(',', " ,\n\t")
                .replace(':', " : ")
                .replace('[', "[ \r\n")
        } else {
            text
        }
    })
}

/// `text` with one byte of JSON syntax (or one that breaks it) put in, or one taken out, at
/// `at` (a fraction of the length): most such files are invalid somewhere.
fn mutated(text: &str, at: f64, edit: usize) -> String {
    let mut bytes = text.as_bytes().to_vec();
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let at = ((bytes.len() as f64) * at) as usize;
    let at = at.min(bytes.len());
    let inserts: [&[u8]; 12] = [
        b"\"",
        b",",
        b"]",
        b"}",
        b"\\",
        b" ",
        b"0",
        b"\n",
        b"\x01",
        "\u{e9}".as_bytes(),
        b"{",
        b"-",
    ];
    match edit % 14 {
        12 if at < bytes.len() => {
            bytes.remove(at);
        }
        13 => bytes.truncate(at),
        n => {
            let insert = inserts[n.min(11)];
            bytes.splice(at..at, insert.iter().copied());
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// What reading `text` for `events` gives, by the hand-written reader first or by
/// `serde_json` alone: the groups as `Debug` prints them, and the warnings.
fn read_as(text: &str, events: Events<'_>, hand_written: bool) -> (String, Vec<String>) {
    let mut groups = Vec::new();
    let mut warnings = Vec::new();
    let source = Source {
        layer: LayerKind::Project,
        file: Path::new("s.json").into(),
    };
    parse_with(
        source,
        text.as_bytes(),
        events,
        &mut groups,
        &mut warnings,
        hand_written,
    );
    (format!("{groups:?}"), warnings)
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(3000))]

    /// The hand-written reader changes nothing: every file, valid or not, gives the same
    /// groups and the same warnings as when `serde_json` reads it alone, for a dispatch (one
    /// event, for one tool or any), `list` and `validate` (every event).
    #[test]
    fn the_hand_written_reader_reads_as_serde_json_alone(
        text in file_text(),
        edit in proptest::option::weighted(0.4, (0.0..1.0f64, 0..14usize)),
    ) {
        let text = match edit {
            Some((at, edit)) => mutated(&text, at, edit),
            None => text,
        };
        for events in [
            Events::All,
            Events::Only("Stop"),
            Events::Only("PreToolUse"),
            Events::OnlyFor("PreToolUse", "write_file"),
            Events::OnlyFor("PreToolUse", "read_files"),
        ] {
            let fast = read_as(&text, events, true);
            let serde = read_as(&text, events, false);
            proptest::prop_assert_eq!(fast, serde, "{}", text);
        }
    }
}

#[test]
fn the_hand_written_reader_takes_the_usual_file_and_leaves_the_rest() {
    let source = Arc::new(Source {
        layer: LayerKind::Project,
        file: Path::new("s.json").into(),
    });
    let usual = r#"{"theme":"dark","n":[1,-2.5e3,{"x":null}],"hooks":{"Stop":[{"hooks":[{"command":"a"}]}],"PreToolUse":[{"matcher":"^x","hooks":[{"argv":["b"],"timeout":5}]}]}}"#;
    let read = fast::hooks_of(usual, &source, Events::Only("PreToolUse"))
        .expect("taken")
        .0
        .expect("has hooks");
    assert_eq!(read.len(), 1, "the events not wanted are passed over");
    assert!(
        matches!(&read[0], (name, Reading::Clean(groups)) if name == "PreToolUse" && groups.len() == 1)
    );
    for left in [
        r#"{"hooks":{},"hooks":{}}"#,
        r#"{"ho\u006fks":{}}"#,
        r#"{"hooks":{"Pre\u0054oolUse":[]}}"#,
        r#"{"hooks":[]}"#,
        r#"{"hooks":{}} x"#,
        r#"{"hooks":{"Stop":[}}"#,
        "\u{feff}{}",
    ] {
        assert_eq!(
            fast::hooks_of(left, &source, Events::All).err(),
            Some(crate::settings::json::Unsure),
            "{left}"
        );
    }
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(3000))]

    /// `may_apply` reads a list of names in the one pass that tells it is one: the same answer
    /// as telling it first and splitting it then.
    #[test]
    fn a_list_of_names_is_read_as_it_is_told(
        matcher in "[ab_ |-]{0,8}|[ab_ |.^$]{0,8}",
        tool in proptest::sample::select(vec!["a", "ab", "b_", "a-b", "", "x"]),
    ) {
        let told = if matcher::is_name_list(&matcher) {
            let mut names = matcher.split('|').map(str::trim).filter(|n| !n.is_empty()).peekable();
            names.peek().is_none() || names.any(|n| n == tool)
        } else {
            !matcher::ruled_out(&matcher, tool)
        };
        proptest::prop_assert_eq!(fast::may_apply(Some(&matcher), tool), told, "{:?} {:?}", matcher, tool);
    }
}

/// The reader's fields are those of the kinds table: every handler's, and `command`'s.
#[test]
fn the_reader_reads_the_fields_the_kinds_table_gives_a_command() {
    let mut read: Vec<&str> = HANDLER_FIELDS.iter().map(|(name, _)| *name).collect();
    let mut table: Vec<&str> = crate::settings::kind::COMMON_FIELDS
        .iter()
        .chain(Kind::Command.entry().fields)
        .copied()
        .collect();
    read.sort_unstable();
    table.sort_unstable();
    assert_eq!(read, table);
    // Each flag is its own field's, and each name reads as its field.
    for (i, (name, field)) in HANDLER_FIELDS.iter().enumerate() {
        assert_eq!(*field as usize, i);
        assert_eq!(HandlerField::of(name).map(usize::from), Some(i), "{name}");
    }
    for (i, (name, field)) in GROUP_FIELDS.iter().enumerate() {
        assert_eq!(*field as usize, i);
        assert_eq!(GroupField::of(name).map(usize::from), Some(i), "{name}");
    }
    assert!(HandlerField::of("url").is_none() && GroupField::of("hook").is_none());
}
