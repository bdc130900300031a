//! Property tests of the pure parts: payload parsing, settings parsing, the matcher rules and
//! output assembly, on inputs nobody would write by hand.
//!
//! These go through the library's public modules, the same code the binary runs.

use std::path::Path;
use std::time::Instant;

use proptest::prelude::*;
use serde_json::{json, Map, Value};

use levelcode_hooks::dispatch::outcome::Outcome;
use levelcode_hooks::dispatch::output::{HandlerReport, Report};
use levelcode_hooks::dispatch::payload::Payload;
use levelcode_hooks::dispatch::protocol::claude;
use levelcode_hooks::dispatch::OutputMode;
use levelcode_hooks::runner::capture::{Capture, KEEP_BYTES};
use levelcode_hooks::settings::layers::LayerKind;
use levelcode_hooks::settings::matcher::{self, Matcher};
use levelcode_hooks::settings::{self, Action, Events, Group, Program, MAX_TIMEOUT_SECS};

const FILE: &str = "/p/.levelcode/settings.json";

fn config() -> ProptestConfig {
    // 256 cases unless PROPTEST_CASES says otherwise.
    ProptestConfig {
        // Failures are printed with their minimal input; no files are written beside the tests.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Generators

/// Keys a settings file or payload uses, so generated objects reach deep into the parsers.
const KEYS: &[&str] = &[
    "hooks",
    "matcher",
    "enabled",
    "command",
    "argv",
    "args",
    "shell",
    "timeout",
    "type",
    "name",
    "Stop",
    "PreToolUse",
    "PostToolUse",
    "SessionStart",
    "event",
    "hook_event_name",
    "cwd",
    "tool_name",
    "tool_input",
    "team",
    "",
    "\u{0}",
    "é",
];

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(KEYS).prop_map(String::from),
        1 => ".{0,8}",
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        prop::sample::select(vec![
            0.0,
            -0.0,
            1e-300,
            0.5,
            600.0,
            600.000_001,
            999.9,
            1000.0,
            1e308,
            -1.0,
        ])
        .prop_map(|f| json!(f)),
        prop::sample::select(KEYS).prop_map(|k| json!(k)),
        prop::sample::select(vec![
            "", " ", "*", "command", "echo hi", "(", "a|b", "\u{0}", "\n"
        ])
        .prop_map(|s| json!(s)),
        ".{0,16}".prop_map(Value::String),
    ]
}

/// Any JSON value, biased towards the keys of the schema.
fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(8, 96, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// One handler entry: valid or broken in one of the ways the schema names.
#[derive(Clone, Debug)]
enum HandlerSpec {
    Command(String),
    Argv(Vec<String>),
    /// Anything that must be skipped with one warning.
    Broken(Value),
}

impl HandlerSpec {
    fn to_json(&self, extra: &Map<String, Value>) -> Value {
        match self {
            HandlerSpec::Command(c) => {
                let mut o = extra.clone();
                o.insert("command".into(), json!(c));
                Value::Object(o)
            }
            HandlerSpec::Argv(a) => {
                let mut o = extra.clone();
                o.insert("argv".into(), json!(a));
                Value::Object(o)
            }
            HandlerSpec::Broken(v) => v.clone(),
        }
    }

    fn program(&self) -> Option<Program> {
        match self {
            HandlerSpec::Command(c) => Some(Program::Shell(c.clone())),
            HandlerSpec::Argv(a) => Some(Program::Argv(a.clone())),
            HandlerSpec::Broken(_) => None,
        }
    }
}

fn handler_spec() -> impl Strategy<Value = HandlerSpec> {
    let broken = prop_oneof![
        Just(json!({})),
        Just(json!({"command": "a", "argv": ["b"]})),
        Just(json!({"command": ""})),
        Just(json!({"command": "   "})),
        Just(json!({"command": 5})),
        Just(json!({"argv": []})),
        Just(json!({"argv": [""]})),
        Just(json!({"argv": ["a", 1]})),
        Just(json!({"argv": "a"})),
        Just(json!({"args": ["a"]})),
        Just(json!({"command": "a", "args": "b"})),
        Just(json!({"command": "a", "args": ["b", null]})),
        Just(json!({"argv": ["a"], "args": ["b"]})),
        Just(json!({"command": "a", "shell": "fish"})),
        Just(json!({"type": "prompt", "command": "a"})),
        Just(json!({"type": 1, "command": "a"})),
        Just(json!(null)),
        Just(json!("echo hi")),
        Just(json!([{"command": "a"}])),
    ];
    prop_oneof![
        3 => "[^\u{0}]{0,3}[a-z]{1,6}[^\u{0}]{0,3}".prop_map(HandlerSpec::Command),
        2 => prop::collection::vec(".{0,6}", 0..3).prop_map(|rest| {
            let mut argv = vec!["prog".to_string()];
            argv.extend(rest);
            HandlerSpec::Argv(argv)
        }),
        2 => broken.prop_map(HandlerSpec::Broken),
    ]
}

/// Optional keys of a valid handler, including values that only warn.
fn handler_extras() -> impl Strategy<Value = Map<String, Value>> {
    let timeout = prop_oneof![
        Just(None),
        Just(Some(json!(null))),
        Just(Some(json!(0))),
        Just(Some(json!(-3))),
        Just(Some(json!(0.25))),
        Just(Some(json!(601))),
        Just(Some(json!(5000))),
        Just(Some(json!("10"))),
        any::<f64>().prop_map(|f| Some(json!(f))),
    ];
    let enabled = prop_oneof![
        Just(None),
        Just(Some(json!(true))),
        Just(Some(json!(false))),
        Just(Some(json!("no"))),
    ];
    let name = prop_oneof![
        Just(None),
        Just(Some(json!("guard"))),
        Just(Some(json!(""))),
        Just(Some(json!(7))),
    ];
    (timeout, enabled, name).prop_map(|(timeout, enabled, name)| {
        let mut o = Map::new();
        if let Some(t) = timeout {
            o.insert("timeout".into(), t);
        }
        if let Some(e) = enabled {
            o.insert("enabled".into(), e);
        }
        if let Some(n) = name {
            o.insert("name".into(), n);
        }
        o
    })
}

/// One group: its matcher and its handlers, each with its optional keys.
type GroupSpec = (Option<String>, Vec<(HandlerSpec, Map<String, Value>)>);

/// A settings file whose shape is right but whose handlers are a mix of valid and broken.
fn settings_with_handlers() -> impl Strategy<Value = (Vec<GroupSpec>, bool)> {
    let matcher = prop_oneof![
        Just(None),
        Just(Some("write_file|str_replace".to_string())),
        Just(Some("(".to_string())),
        Just(Some("*".to_string())),
    ];
    let group = (
        matcher,
        prop::collection::vec((handler_spec(), handler_extras()), 1..5),
    );
    (prop::collection::vec(group, 0..4), any::<bool>())
}

// ---------------------------------------------------------------------------------------------
// Settings parsing

fn parse_settings(bytes: &[u8], events: Events<'_>) -> (Vec<Group>, Vec<String>) {
    let mut groups = Vec::new();
    let mut warnings = Vec::new();
    let source = settings::Source {
        layer: LayerKind::Project,
        file: Path::new(FILE).into(),
    };
    settings::parse(source, bytes, events, &mut groups, &mut warnings);
    (groups, warnings)
}

/// What every parsed handler must satisfy, whatever the input was.
fn check_groups(groups: &[Group], warnings: &[String]) -> Result<(), TestCaseError> {
    for warning in warnings {
        prop_assert!(
            warning.starts_with(&format!("{FILE}: ")),
            "a warning must name its file: {warning:?}"
        );
    }
    for group in groups {
        prop_assert!(group.path().starts_with("hooks."));
        for handler in &group.handlers {
            match &handler.action {
                Action::Process(Program::Shell(c) | Program::PowerShell(c)) => {
                    prop_assert!(!c.trim().is_empty())
                }
                Action::Process(Program::Argv(a)) => {
                    prop_assert!(!a.is_empty() && !a[0].is_empty())
                }
                Action::Process(Program::Exec { program, .. }) => {
                    prop_assert!(!program.is_empty() && program.trim() == program)
                }
                Action::Http(hook) => prop_assert!(hook.url.contains("://")),
            }
            let secs = handler.timeout.as_secs_f64();
            // A positive timeout below a nanosecond rounds to zero: it runs and times out at once.
            prop_assert!((0.0..=MAX_TIMEOUT_SECS).contains(&secs), "timeout {secs}");
            prop_assert!(!handler.label().is_empty());
        }
        // A matcher may be anything; compiling it must not panic.
        let _ = group.compiled_matcher();
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Settings parsing on any JSON value never panics and only ever yields warnings.
    #[test]
    fn settings_parse_any_json_value_only_warns(value in json_value(), wrap in any::<bool>()) {
        let value = if wrap { json!({ "hooks": value }) } else { value };
        let bytes = serde_json::to_vec(&value).unwrap();
        let (groups, warnings) = parse_settings(&bytes, Events::All);
        check_groups(&groups, &warnings)?;
        let (groups, warnings) = parse_settings(&bytes, Events::Only("Stop"));
        check_groups(&groups, &warnings)?;
        prop_assert!(groups.iter().all(|g| g.event == "Stop"));
    }

    /// Any bytes at all, and every prefix of a real settings file: no panic, warnings only.
    #[test]
    fn settings_parse_any_bytes_only_warns(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let (groups, warnings) = parse_settings(&bytes, Events::All);
        check_groups(&groups, &warnings)?;
    }

    #[test]
    fn settings_parse_cut_short_only_warns(value in json_value(), cut in any::<prop::sample::Index>()) {
        let text = serde_json::to_vec(&json!({ "hooks": { "Stop": [ { "hooks": [ value ] } ] } })).unwrap();
        let bytes = &text[..cut.index(text.len() + 1)];
        let (groups, warnings) = parse_settings(bytes, Events::All);
        check_groups(&groups, &warnings)?;
        if bytes.len() < text.len() {
            prop_assert!(groups.is_empty() && warnings.len() == 1, "{warnings:?}");
        }
    }

    /// One bad handler never costs its valid siblings: exactly the valid handlers come out, in
    /// order, and each broken one is named by its path in exactly one warning.
    #[test]
    fn settings_parse_keeps_every_valid_handler((groups_spec, pre_tool) in settings_with_handlers()) {
        let event = if pre_tool { "PreToolUse" } else { "Stop" };
        let groups_json: Vec<Value> = groups_spec
            .iter()
            .map(|(matcher, handlers)| {
                let hooks: Vec<Value> = handlers.iter().map(|(h, extra)| h.to_json(extra)).collect();
                match matcher {
                    Some(m) => json!({ "matcher": m, "hooks": hooks }),
                    None => json!({ "hooks": hooks }),
                }
            })
            .collect();
        let text = serde_json::to_vec(&json!({ "other": 1, "hooks": { event: groups_json } })).unwrap();
        let (groups, warnings) = parse_settings(&text, Events::Only(event));
        check_groups(&groups, &warnings)?;
        prop_assert_eq!(groups.len(), groups_spec.len());
        for (g, (group, (_, handlers))) in groups.iter().zip(&groups_spec).enumerate() {
            prop_assert_eq!(group.index, g);
            let expected: Vec<(usize, Program)> = handlers
                .iter()
                .enumerate()
                .filter_map(|(i, (h, _))| h.program().map(|p| (i, p)))
                .collect();
            let got: Vec<(usize, Program)> =
                group.handlers.iter().filter_map(|h| match &h.action {
                    Action::Process(program) => Some((h.index, program.clone())),
                    Action::Http(_) => None,
                }).collect();
            prop_assert_eq!(got, expected);
            for (h, (spec, _)) in handlers.iter().enumerate() {
                let path = format!("{FILE}: hooks.{event}[{g}].hooks[{h}]");
                let naming = warnings
                    .iter()
                    .filter(|w| w.starts_with(&format!("{path}:")) || w.starts_with(&format!("{path}.type:"))
                        || w.starts_with(&format!("{path}.command:")) || w.starts_with(&format!("{path}.argv:"))
                        || w.starts_with(&format!("{path}.args:")) || w.starts_with(&format!("{path}.shell:")))
                    .count();
                if let HandlerSpec::Broken(_) = spec {
                    prop_assert_eq!(naming, 1, "{} in {:?}", path, warnings);
                } else {
                    prop_assert_eq!(naming, 0, "{} in {:?}", path, warnings);
                }
            }
        }
        // Another event's groups are not even looked at.
        let (others, other_warnings) = parse_settings(&text, Events::Only("SessionStart"));
        prop_assert!(others.is_empty() && other_warnings.is_empty());
    }
}

// ---------------------------------------------------------------------------------------------
// Matching

/// One alternative of a generated regular expression.
#[derive(Clone, Debug)]
struct Branch {
    start: bool,
    items: Vec<Item>,
    end: bool,
}

#[derive(Clone, Debug)]
enum Item {
    Char(char),
    /// `.`: any character but a newline.
    Any,
    /// `.*`
    AnyRun,
}

/// Rust's `regex` spelling of a branch list.
fn regex_text(branches: &[Branch]) -> String {
    branches
        .iter()
        .map(|b| {
            let mut s = String::new();
            if b.start {
                s.push('^');
            }
            for item in &b.items {
                match item {
                    Item::Char(c) => s.push(*c),
                    Item::Any => s.push('.'),
                    Item::AnyRun => s.push_str(".*"),
                }
            }
            if b.end {
                s.push('$');
            }
            s
        })
        .collect::<Vec<_>>()
        .join("|")
}

/// Does `items` match `text` exactly from its start, with the end free unless `end`?
fn items_match(items: &[Item], text: &[char], end: bool) -> bool {
    match items.split_first() {
        None => !end || text.is_empty(),
        Some((Item::Char(c), rest)) => {
            text.first() == Some(c) && items_match(rest, &text[1..], end)
        }
        Some((Item::Any, rest)) => {
            text.first().is_some_and(|c| *c != '\n') && items_match(rest, &text[1..], end)
        }
        Some((Item::AnyRun, rest)) => {
            let run = text.iter().take_while(|c| **c != '\n').count();
            (0..=run).any(|n| items_match(rest, &text[n..], end))
        }
    }
}

/// The reference model of contract §5 for the matchers generated here.
fn model(matcher: Option<&str>, branches: Option<&[Branch]>, tool: &str) -> bool {
    let Some(text) = matcher else { return true };
    if text.is_empty() || text == "*" {
        return true;
    }
    let plain = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '|' | ' '));
    if plain {
        let names: Vec<&str> = text
            .split('|')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .collect();
        return names.is_empty() || names.contains(&tool);
    }
    let branches = branches.expect("a non-name matcher here is a generated regex");
    let chars: Vec<char> = tool.chars().collect();
    branches.iter().any(|b| {
        let starts: Vec<usize> = if b.start {
            vec![0]
        } else {
            (0..=chars.len()).collect()
        };
        starts
            .into_iter()
            .any(|s| items_match(&b.items, &chars[s..], b.end))
    })
}

/// Tool names from a small alphabet, so generated matchers hit them often.
fn tool() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[ab_-]{0,5}",
        1 => "[aB é\n_]{0,4}",
        1 => prop::sample::select(vec!["write_file", "write_file_v2", "str_replace", "read_files"]).prop_map(String::from),
    ]
}

fn name_list() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ab_| -]{0,10}",
        prop::sample::select(vec![
            "write_file|str_replace",
            " write_file | str_replace ",
            "write_file",
            "|",
            " ",
            "*",
            "",
        ])
        .prop_map(String::from),
    ]
}

fn branches() -> impl Strategy<Value = Vec<Branch>> {
    let item = prop_oneof![
        4 => prop::sample::select(vec!['a', 'b', '_', '-', 'é']).prop_map(Item::Char),
        1 => Just(Item::Any),
        1 => Just(Item::AnyRun),
    ];
    let branch = (
        any::<bool>(),
        prop::collection::vec(item, 0..5),
        any::<bool>(),
    )
        .prop_map(|(start, items, end)| Branch { start, items, end });
    prop::collection::vec(branch, 1..4)
}

proptest! {
    #![proptest_config(config())]

    /// Names, `*`, empty and missing matchers agree with the model: exact names, never a prefix.
    #[test]
    fn matcher_name_lists_agree_with_the_model(matcher in prop::option::of(name_list()), tool in tool()) {
        let compiled = Matcher::compile(matcher.as_deref()).expect("a name list always compiles");
        prop_assert_eq!(compiled.matches(&tool), model(matcher.as_deref(), None, &tool),
            "matcher {:?} tool {:?}", matcher, tool);
    }

    /// Regular expressions are searched unanchored and case-sensitively, as the model does.
    #[test]
    fn matcher_regexes_agree_with_the_model(branches in branches(), tool in tool()) {
        let text = regex_text(&branches);
        let compiled = Matcher::compile(Some(&text)).expect("generated regexes are valid");
        prop_assert_eq!(compiled.matches(&tool), model(Some(&text), Some(&branches), &tool),
            "matcher {:?} tool {:?}", text, tool);
    }

    /// Any string at all: compiling never panics, and only a string that is not a name list
    /// can fail.
    #[test]
    fn matcher_any_string_compiles_or_errs(matcher in ".{0,12}", tool in ".{0,8}") {
        match Matcher::compile(Some(&matcher)) {
            Ok(m) => { let _ = m.matches(&tool); }
            Err(e) => {
                prop_assert!(!matcher::is_name_list(&matcher), "{matcher:?}: {e}");
                prop_assert!(!matcher.is_empty() && matcher != "*");
            }
        }
    }

    /// The quick validity scan used for ruled-out matchers never calls valid what the regex
    /// syntax parser rejects: `parses` agrees with the parser on strings of regex fragments.
    #[test]
    fn matcher_validity_agrees_with_the_regex_parser(pattern in regex_fragments()) {
        let parser = regex_syntax::ast::parse::Parser::new().parse(&pattern).is_ok();
        prop_assert_eq!(matcher::parses(&pattern), parser, "{:?}", pattern);
    }
}

/// Matchers that are not name lists, `*` or empty: regular expressions for the engine.
fn is_regex_matcher(pattern: &str) -> bool {
    !pattern.is_empty() && pattern != "*" && !matcher::is_name_list(pattern)
}

/// Today's rule for a regex matcher, straight from the `regex` crate (and `fancy-regex` where
/// `regex` refuses look-around or a backreference): the answer for each name, or the error.
fn reference_answers(pattern: &str, names: &[String]) -> Result<Vec<bool>, String> {
    match regex::Regex::new(pattern) {
        Ok(re) => Ok(names.iter().map(|n| re.is_match(n)).collect()),
        Err(e) => {
            if matcher::needs_backtracking(pattern) {
                if let Ok(re) = fancy_regex::Regex::new(pattern) {
                    return Ok(names
                        .iter()
                        .map(|n| re.is_match(n).unwrap_or(false))
                        .collect());
                }
            }
            Err(e.to_string())
        }
    }
}

/// The matcher's answers equal the reference's: the same verdict on validity, the same error
/// text, the same answer for every name.
fn check_against_regex(pattern: &str, names: &[String]) -> Result<(), TestCaseError> {
    if !is_regex_matcher(pattern) {
        return Ok(());
    }
    let expected = reference_answers(pattern, names);
    match (Matcher::compile(Some(pattern)), expected) {
        (Ok(compiled), Ok(answers)) => {
            for (name, answer) in names.iter().zip(answers) {
                prop_assert_eq!(
                    compiled.matches(name),
                    answer,
                    "pattern {:?} name {:?} ({:?})",
                    pattern,
                    name,
                    compiled
                );
            }
        }
        (Err(e), Err(reference)) => prop_assert_eq!(e, reference, "{:?}", pattern),
        (got, expected) => prop_assert!(
            false,
            "pattern {:?}: got {:?}, regex says {:?}",
            pattern,
            got.map(|_| ()),
            expected.map(|_| ())
        ),
    }
    Ok(())
}

/// Names from an alphabet that reaches the places where engines differ: ASCII letters of both
/// cases (with `k` and `s`, which the Kelvin sign and the long s fold to), digits and space,
/// non-ASCII letters, digits and spaces, and newlines.
fn engine_names() -> impl Strategy<Value = Vec<String>> {
    let name = prop_oneof![
        3 => "[abkKsS_1 -]{0,6}",
        2 => "[abkKsS_1\u{212A}\u{17F}\u{e9}\u{c9}\u{663}\u{a0}\n ]{0,6}",
        1 => prop::sample::select(vec!["write_file", "mcp__github__delete_repo", "run_BASH", "Kill", "\u{212A}ill", "\u{e9}crire"]).prop_map(String::from),
    ];
    prop::collection::vec(name, 1..6)
}

/// Valid regexes, built as trees: literals (ASCII, non-ASCII, escaped), classes (ranges,
/// negated, POSIX, Perl, Unicode), `.`, anchors and word boundaries, concatenation,
/// alternation, groups, repetition (greedy, lazy, counted) and flag groups (`i`, `s`, `x`, `u`).
fn regex_tree() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(vec![
        "a",
        "b",
        "k",
        "K",
        "s",
        "_",
        "-",
        "1",
        "\u{e9}",
        "\u{c9}",
        "\u{212A}",
        "\u{17F}",
        "\\.",
        "\\-",
        ".",
        "\\w",
        "\\W",
        "\\d",
        "\\D",
        "\\s",
        "\\S",
        "\\b",
        "\\B",
        "\\pL",
        "\\p{Greek}",
        "\\PL",
        "[a-z]",
        "[^a-z]",
        "[A-Z_]",
        "[ks]",
        "[^k]",
        "[[:alpha:]]",
        "[[:^alpha:]]",
        "[[:^lower:]]",
        "[[:upper:]]",
        "[\\w-]",
        "[^\\W]",
        "[\\d\\s]",
        "[a-z&&[^k]]",
        "[\\x{212A}]",
        "\\x{17F}",
        "\\x41",
        "\\u{e9}",
        "^",
        "$",
        "\\A",
        "\\z",
        "\\<",
        "\\>",
        "\\b{start}",
        "(?m:^)",
        "[\u{e9}-\u{ff}]",
    ])
    .prop_map(String::from);
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(|v| v.concat()),
            prop::collection::vec(inner.clone(), 2..4).prop_map(|v| v.join("|")),
            inner.clone().prop_map(|r| format!("({r})")),
            inner.clone().prop_map(|r| format!("(?:{r})")),
            (
                inner.clone(),
                prop::sample::select(vec!["*", "+", "?", "*?", "{2}", "{1,3}", "{0,}"])
            )
                .prop_map(|(r, q)| format!("(?:{r}){q}")),
            (
                inner,
                prop::sample::select(vec![
                    "(?i)", "(?i:", "(?-i:", "(?s:", "(?x:", "(?u:", "(?-u:", "(?is)"
                ])
            )
                .prop_map(|(r, f)| if f.ends_with(':') {
                    format!("{f}{r})")
                } else {
                    format!("{f}{r}")
                }),
        ]
    })
}

/// Pieces of regex syntax, valid or not, including what only some engines take.
fn engine_fragments() -> impl Strategy<Value = String> {
    let fragment = prop::sample::select(vec![
        "a", "k", "s", "K", "\u{212A}", "\u{e9}", "_", ".", "*", "+", "?", "(", ")", "[", "]", "{",
        "}", "|", "^", "$", "\\", "\\w", "\\W", "\\d", "\\s", "\\b", "\\pL", "\\x{17F}", "\\x",
        "\\u", "\\U", "\\1", "\\e", "\\cA", "\\0", "\\<", "\\z", "\\Z", "{2}", "{2,1}", "{,3}",
        "[:", ":]", "[:^", "&&", "--", "~~", "(?", "(?i)", "(?-u)", "(?u)", "(?x)", "(?R)", "(?U)",
        "(?P<n>", "(?<n>", "(?!", "(?=", "(?<=", "(?<!", " ", "#", "\n", "-", ",",
    ]);
    prop::collection::vec(fragment, 1..12).prop_map(|parts| parts.concat())
}

/// 1,024 cases unless PROPTEST_CASES says otherwise: the engines' corners are many.
fn engine_config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(1024);
    ProptestConfig { cases, ..config() }
}

proptest! {
    #![proptest_config(engine_config())]

    /// The matcher engine answers as the `regex` crate does, for valid regexes of every kind of
    /// syntax and names in ASCII and beyond.
    #[test]
    fn matcher_engine_agrees_with_regex_on_valid_patterns(pattern in regex_tree(), names in engine_names()) {
        check_against_regex(&pattern, &names)?;
    }

    /// A regex ruled out for a name without compiling it never matches that name.
    #[test]
    fn matcher_ruled_out_never_matches(pattern in regex_tree(), names in engine_names()) {
        if let Ok(re) = regex::Regex::new(&pattern) {
            for name in names.iter().map(String::as_str).chain(["write_file", "kb_s", "a-b"]) {
                if matcher::ruled_out(&pattern, name) {
                    prop_assert!(!re.is_match(name), "{:?} ruled out {:?} but matches", pattern, name);
                }
            }
        }
    }

    /// The same on patterns of the plain syntax that literal runs are read from.
    #[test]
    fn matcher_ruled_out_plain_patterns_never_match(
        parts in prop::collection::vec(prop::sample::select(vec![
            "a", "b", "ab", "_", "\u{e9}", "\\.", "\\|", "[ab]", "[^a]", "\\w", "\\b", ".", "*", "+",
            "?", "{2}", "{0,1}", "{1,}?", "(a|b)", "(ab)+", "(a|)", "|", "^", "$",
        ]), 1..8),
        names in prop::collection::vec(prop_oneof![4 => "[ab]{0,6}", 1 => "[ab_.|\u{e9}]{0,6}"], 8..16),
    ) {
        let pattern = parts.concat();
        if let Ok(re) = regex::Regex::new(&pattern) {
            for name in &names {
                if matcher::ruled_out(&pattern, name) {
                    prop_assert!(!re.is_match(name), "{:?} ruled out {:?} but matches", pattern, name);
                }
            }
        }
    }

    /// And on strings of regex syntax that are often invalid: the same verdict, the same error.
    #[test]
    fn matcher_engine_agrees_with_regex_on_any_syntax(pattern in engine_fragments(), names in engine_names()) {
        check_against_regex(&pattern, &names)?;
    }
}

/// Strings made of the pieces regex syntax is built from, valid or not.
fn regex_fragments() -> impl Strategy<Value = String> {
    let fragment = prop::sample::select(vec![
        "a", "b", "_", "-", ".", "*", "+", "?", "(", ")", "[", "]", "{", "}", "|", "^", "$", "\\",
        "d", "w", "1", "2", ",", "[a-z]", "[^0-9_]", "{1,2}", "{2,1}", "\\d", "\\.", "é", " ", "#",
        "(?:", "(?i)", "[a-]", "[z-a]",
    ]);
    prop::collection::vec(fragment, 0..14).prop_map(|parts| parts.concat())
}

// ---------------------------------------------------------------------------------------------
// Payload parsing

fn payload_object() -> impl Strategy<Value = Vec<(String, Value)>> {
    let special = prop_oneof![
        ("event", prop_oneof![
            3 => prop::sample::select(vec!["Stop", "PreToolUse", "PostToolUse", "SessionStart", "Odd"]).prop_map(|s| json!(s)),
            1 => leaf(),
        ]),
        ("hook_event_name", prop::sample::select(vec!["Stop", "PreToolUse"]).prop_map(|s| json!(s))),
        ("cwd", prop_oneof![Just(json!("/p")), leaf()]),
        ("tool_name", prop_oneof![Just(json!("write_file")), leaf()]),
        ("team", leaf()),
    ]
    .prop_map(|(k, v)| (k.to_string(), v));
    let field = prop_oneof![
        2 => special,
        1 => (key(), json_value()),
    ];
    prop::collection::vec(field, 0..6)
}

/// Serialises fields in order, keeping repeated keys as written (a `Map` would merge them).
fn object_text(fields: &[(String, Value)], spaced: bool) -> String {
    let sep = if spaced { " , " } else { "," };
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}:{}", json!(k), v))
        .collect();
    if spaced {
        format!(" {{ {} }}\n", body.join(sep))
    } else {
        format!("{{{}}}", body.join(sep))
    }
}

fn check_payload(bytes: Vec<u8>, flag: Option<&str>) -> Result<(), TestCaseError> {
    let Ok(payload) = Payload::parse(bytes, flag) else {
        return Ok(());
    };
    let root = Path::new("/project root");
    let input = payload.handler_input(root);
    let handed: Value = serde_json::from_slice(&input).map_err(|e| {
        TestCaseError::fail(format!(
            "handler input is not JSON ({e}): {}",
            String::from_utf8_lossy(&input)
        ))
    })?;
    let original: Value = serde_json::from_slice(payload.raw()).unwrap();
    let (handed, original) = (handed.as_object().unwrap(), original.as_object().unwrap());
    // Every original field, unchanged and in order, then the appended ones.
    let keys: Vec<&String> = handed.keys().collect();
    let original_keys: Vec<&String> = original.keys().collect();
    prop_assert_eq!(&keys[..original_keys.len()], &original_keys[..]);
    for (k, v) in original {
        prop_assert_eq!(&handed[k], v);
    }
    prop_assert!(handed.contains_key("cwd"));
    prop_assert!(handed.contains_key("event"));
    if !original.contains_key("event") {
        prop_assert_eq!(&handed["event"], &json!(payload.event));
    }
    if !original.contains_key("cwd") {
        prop_assert_eq!(&handed["cwd"], &json!("/project root"));
    }
    if payload.kind.is_tool_event() {
        prop_assert!(payload.tool_name.is_some());
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Any bytes: an error or a payload, never a panic.
    #[test]
    fn payload_parse_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..128), flag in prop::option::of("Stop|PreToolUse")) {
        check_payload(bytes, flag.as_deref())?;
    }

    /// Objects shaped like payloads: when accepted, handlers get every field unchanged and in
    /// order, with `event` and `cwd` always present.
    #[test]
    fn payload_handler_input_keeps_fields_and_adds_event_and_cwd(
        fields in payload_object(),
        spaced in any::<bool>(),
        flag in prop::option::of(prop::sample::select(vec!["Stop", "PreToolUse", "Odd"])),
    ) {
        check_payload(object_text(&fields, spaced).into_bytes(), flag)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Output assembly

/// Output that handlers print: arbitrary bytes, invalid UTF-8, NUL, and runs past 64 KiB.
fn handler_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => prop::collection::vec(any::<u8>(), 0..200),
        1 => (any::<u8>(), KEEP_BYTES - 4..KEEP_BYTES + 8, prop::collection::vec(any::<u8>(), 0..8))
            .prop_map(|(fill, n, tail)| {
                let mut v = vec![fill; n];
                v.extend(tail);
                v
            }),
        1 => (KEEP_BYTES - 4..KEEP_BYTES + 4).prop_map(|n| "é€😀".repeat(n / 9 + 1).into_bytes()[..n].to_vec()),
    ]
}

fn capture_of(bytes: &[u8], chunks: usize) -> Capture {
    let mut capture = Capture::default();
    let size = (bytes.len() / chunks.max(1)).max(1);
    for chunk in bytes.chunks(size) {
        capture.push(chunk);
    }
    capture
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop::sample::select(vec![
        Outcome::Proceed,
        Outcome::Block,
        Outcome::Error,
        Outcome::Timeout,
        Outcome::SpawnError,
        Outcome::Duplicate,
        Outcome::Skipped,
        Outcome::Interrupted,
    ])
}

proptest! {
    #![proptest_config(config())]

    /// What a capture keeps: the first 64 KiB at most, cut only at a character boundary, bad
    /// bytes replaced, `truncated` exactly when more was written.
    #[test]
    fn capture_keeps_a_prefix(bytes in handler_bytes(), chunks in 1usize..5) {
        let capture = capture_of(&bytes, chunks);
        prop_assert_eq!(capture.truncated(), bytes.len() > KEEP_BYTES);
        let text = capture.text();
        if bytes.len() <= KEEP_BYTES {
            prop_assert_eq!(text, String::from_utf8_lossy(&bytes).into_owned());
        } else {
            let candidates: Vec<String> = (KEEP_BYTES - 3..=KEEP_BYTES)
                .map(|n| String::from_utf8_lossy(&bytes[..n]).into_owned())
                .collect();
            prop_assert!(candidates.contains(&text));
            if std::str::from_utf8(&bytes).is_ok() {
                prop_assert!(!text.contains(char::REPLACEMENT_CHARACTER));
            }
        }
    }

    /// Whatever the handlers printed and whatever the labels and warnings hold, the result is
    /// one JSON object on one line, and it carries the captured text unchanged.
    #[test]
    fn report_is_one_json_object_whatever_handlers_print(
        handlers in prop::collection::vec(
            (handler_bytes(), handler_bytes(), outcome(), ".{0,12}", prop::option::of(any::<i32>()), any::<f64>()),
            0..4,
        ),
        warnings in prop::collection::vec(".{0,12}", 0..3),
        context in prop::collection::vec(".{0,12}", 0..3),
        reason in prop::option::of(".{0,12}"),
        asks in prop::collection::vec(".{0,8}", 0..3),
        // Without floats: serde_json reads some back a last digit off, which is not ours to test.
        updated in prop::option::of((".{0,8}", any::<i64>()).prop_map(|(c, n)| json!({"command": c, "n": n}))),
        stop in prop::option::of(".{0,8}"),
        interrupted in prop::option::of(1i32..65),
        tool in prop::option::of(".{0,8}"),
    ) {
        let mut report = Report::new(Some("PreToolUse".into()), tool, Instant::now());
        for (out, err, outcome, label, exit_code, duration) in &handlers {
            let (out, err) = (capture_of(out, 2), capture_of(err, 3));
            report.handlers.push(HandlerReport {
                layer: "project",
                source: FILE.into(),
                event: "PreToolUse".into(),
                matcher: Some(label.clone()),
                label: label.clone(),
                outcome: *outcome,
                exit_code: *exit_code,
                signal: None,
                http_status: None,
                duration_ms: *duration,
                stdout: out.text(),
                stderr: err.text(),
                stdout_truncated: out.truncated(),
                stderr_truncated: err.truncated(),
                message: Some(label.clone()),
                rewrote_input: false,
                reason: None,
                protocol: Default::default(),
            });
        }
        report.warnings = warnings;
        report.additional_context = context;
        report.reason = reason;
        report.asks = asks;
        report.updated_input = updated;
        report.stop = stop;
        report.interrupted = interrupted;
        for mode in [OutputMode::Full, OutputMode::Compact] {
            let line = report.to_json(mode);
            prop_assert!(!line.contains('\n'), "one line");
            let value: Value = serde_json::from_str(&line).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let object = value.as_object().expect("an object");
            prop_assert!(!object.contains_key("error"), "{line}");
            let decision = match (&report.reason, report.asks.is_empty()) {
                (Some(_), _) => "block",
                (None, false) => "ask",
                (None, true) => "proceed",
            };
            prop_assert_eq!(&object["decision"], decision);
            prop_assert_eq!(object.get("reason").is_some(), decision != "proceed");
            // A block's input is not to be run, rewritten or not.
            prop_assert_eq!(
                object.get("updated_input"),
                report.updated_input.as_ref().filter(|_| decision != "block")
            );
            prop_assert_eq!(object.get("stop").is_some(), report.stop.is_some());
            prop_assert_eq!(object.get("interrupted").is_some(), report.interrupted.is_some());
            if mode == OutputMode::Full {
                let printed = object["handlers"].as_array().unwrap();
                prop_assert_eq!(printed.len(), report.handlers.len());
                for (p, h) in printed.iter().zip(&report.handlers) {
                    prop_assert_eq!(p["stdout"].as_str().unwrap(), h.stdout.as_str());
                    prop_assert_eq!(p["stderr"].as_str().unwrap(), h.stderr.as_str());
                    prop_assert_eq!(p["stdout_truncated"].as_bool().unwrap(), h.stdout_truncated);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Regexes that need a backtracking engine (contract §5)

/// Regex pieces with look-around and backreferences among them.
fn js_regex_fragments() -> impl Strategy<Value = String> {
    let fragment = prop::sample::select(vec![
        "a", "b", "_", ".", "*", "+", "?", "(", ")", "[ab]", "|", "^", "$", "\\", "\\1", "\\d",
        "(?=", "(?!", "(?<=", "(?<!", "(?:", "(a)", "read_", "{2}",
    ]);
    prop::collection::vec(fragment, 0..10).prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(config())]

    /// The backtracking engine is never built for a pattern the `regex` crate accepts, and is
    /// built only for what `regex` rejects for look-around or backreferences.
    #[test]
    fn matcher_backtracking_engine_only_where_regex_cannot(pattern in js_regex_fragments(), tool in tool()) {
        let fast = regex::Regex::new(&pattern);
        match Matcher::compile(Some(&pattern)) {
            Ok(Matcher::Backtracking(re)) => {
                prop_assert!(fast.is_err(), "{pattern:?} was accepted by regex");
                prop_assert!(matcher::needs_backtracking(&pattern), "{pattern:?}");
                let compiled = Matcher::Backtracking(re);
                prop_assert_eq!(compiled.matches(&tool), fancy_regex::Regex::new(&pattern).unwrap().is_match(&tool).unwrap_or(false));
            }
            Ok(Matcher::Pattern(re)) => {
                prop_assert!(fast.is_ok());
                prop_assert_eq!(re.is_match(&tool), fast.unwrap().is_match(&tool));
            }
            Ok(lite @ Matcher::Lite(_)) => {
                prop_assert!(fast.is_ok(), "{pattern:?} is invalid for regex");
                prop_assert_eq!(lite.matches(&tool), fast.unwrap().is_match(&tool));
            }
            Ok(_) => prop_assert!(matcher::is_name_list(&pattern) || pattern.is_empty() || pattern == "*"),
            Err(_) => prop_assert!(fast.is_err(), "{pattern:?} is valid for regex"),
        }
    }

    /// `^(?!x)` and `^(?=x)` mean what they mean in JavaScript.
    #[test]
    fn matcher_look_ahead_agrees_with_the_model(prefix in "[ab_]{1,3}", tool in tool()) {
        let not = Matcher::compile(Some(&format!("^(?!{prefix})"))).unwrap();
        prop_assert_eq!(not.matches(&tool), !tool.starts_with(&prefix));
        let yes = Matcher::compile(Some(&format!("^(?={prefix})"))).unwrap();
        prop_assert_eq!(yes.matches(&tool), tool.starts_with(&prefix));
    }
}

// ---------------------------------------------------------------------------------------------
// The Claude Code translation (contract §12)

fn text_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => "[a-z./ é_-]{0,10}".prop_map(Value::String),
        1 => prop::sample::select(vec!["../x", "/abs/./p", ".", "", "a/../../b"]).prop_map(|s| json!(s)),
        1 => leaf(),
    ]
}

/// A levelcode tool and an input for it: the fields its translation reads, with values of the
/// right shape or not, and fields it knows nothing of.
fn tool_call() -> impl Strategy<Value = (String, Value)> {
    let tool = prop::sample::select(vec![
        "write_file",
        "str_replace",
        "run_terminal_command",
        "read_files",
        "code_search",
        "glob",
        "spawn_agents",
    ]);
    let replacement = prop::collection::vec(
        (
            prop::sample::select(vec!["old", "new", "allowMultiple", "x"]),
            text_value(),
        ),
        0..4,
    )
    .prop_map(|pairs| Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()));
    let value = prop_oneof![
        4 => text_value(),
        1 => json_value(),
        2 => prop::collection::vec(replacement, 0..3).prop_map(Value::Array),
        2 => prop::collection::vec(text_value(), 0..4).prop_map(Value::Array),
        2 => prop::sample::select(vec![json!(-1), json!(30), json!(1.5), json!(0), json!("BACKGROUND"), json!("SYNC"), json!(true)]),
    ];
    let key = prop::sample::select(vec![
        "path",
        "content",
        "instructions",
        "replacements",
        "command",
        "process_type",
        "cwd",
        "timeout_seconds",
        "paths",
        "pattern",
        "flags",
        "extra",
    ]);
    let input = prop_oneof![
        9 => prop::collection::vec((key, value), 0..7)
            .prop_map(|pairs| Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        1 => json_value(),
    ];
    (tool.prop_map(String::from), input)
}

proptest! {
    #![proptest_config(config())]

    /// An input translated to Claude Code's form and handed back unchanged as `updatedInput`
    /// gives the original levelcode input, every run of it (`read_files` has one per path).
    #[test]
    fn claude_unchanged_updated_input_gives_the_original((tool, input) in tool_call(), root in prop::sample::select(vec!["/p", "/home/u/my proj", "/"])) {
        let root = Path::new(root);
        let calls = claude::tool_calls(&tool, &input, root);
        prop_assert!(!calls.is_empty());
        for call in &calls {
            if let Some(given) = call.input.as_object() {
                let back = claude::input_from_claude(&tool, &input, call, given, root);
                prop_assert_eq!(&back, &input, "{} {:?}", tool, call);
            }
        }
    }

    /// A changed command, content or path comes back in its levelcode field, and every other
    /// field keeps its value.
    #[test]
    fn claude_changed_fields_come_back((tool, input) in tool_call(), new in "[a-z ]{1,8}") {
        let root = Path::new("/p");
        let Some(original) = input.as_object() else { return Ok(()) };
        let (theirs, ours) = match tool.as_str() {
            "write_file" => ("content", "content"),
            "run_terminal_command" => ("command", "command"),
            "code_search" | "glob" => ("pattern", "pattern"),
            _ => return Ok(()),
        };
        let call = &claude::tool_calls(&tool, &input, root)[0];
        let mut updated = call.input.as_object().unwrap().clone();
        let value = json!(format!("{new}!"));
        updated.insert(theirs.into(), value.clone());
        let back = claude::input_from_claude(&tool, &input, call, &updated, root);
        let back = back.as_object().unwrap();
        prop_assert_eq!(&back[ours], &value);
        for (key, v) in original {
            if key != ours {
                prop_assert_eq!(&back[key], v, "{}", key);
            }
        }
    }

    /// The payload a Claude Code script reads starts with Claude Code's envelope, in its order,
    /// with the project root as `cwd`, and keeps every other member of ours.
    #[test]
    fn claude_payload_has_the_envelope_first(
        extra in prop::collection::vec(("[a-z_]{1,6}", leaf()), 0..4),
        (tool, input) in tool_call(),
        event in prop::sample::select(vec!["PreToolUse", "PostToolUse", "SessionStart", "Stop", "Other"]),
    ) {
        let mut fields = Map::new();
        for (k, v) in &extra {
            fields.insert(k.clone(), v.clone());
        }
        fields.insert("tool_input".into(), input.clone());
        let kind = levelcode_hooks::settings::events::EventKind::of(event);
        let runs = claude::payloads(&fields, event, kind, Some(&tool), Some(&input), Path::new("/p"));
        for (_, payload) in runs {
            let keys: Vec<&str> = payload.keys().map(String::as_str).collect();
            prop_assert_eq!(&keys[..5], &["session_id", "transcript_path", "cwd", "permission_mode", "hook_event_name"]);
            prop_assert_eq!(&payload["cwd"], "/p");
            prop_assert_eq!(&payload["hook_event_name"], event);
            prop_assert_eq!(payload.contains_key("tool_input"), kind.is_tool_event());
            let envelope = ["event", "hook_event_name", "cwd", "session_id", "transcript_path",
                "permission_mode", "tool_name", "tool_input", "source", "stop_hook_active"];
            for (k, v) in &fields {
                if !envelope.contains(&k.as_str()) {
                    prop_assert_eq!(&payload[k], v, "{}", k);
                }
            }
        }
    }

    /// Any reply is read without panicking; only `PreToolUse` blocks or asks, and a block never
    /// carries a rewrite.
    #[test]
    fn claude_any_reply_is_an_outcome(
        code in prop::sample::select(vec![0, 2]),
        stdout in prop_oneof![".{0,20}", json_value().prop_map(|v| v.to_string()), Just(r#"{"hookSpecificOutput":{"permissionDecision":"deny","updatedInput":{"command":"x"}}}"#.to_string())],
        stderr in ".{0,10}",
        event in prop::sample::select(vec!["PreToolUse", "PostToolUse", "SessionStart", "Stop"]),
    ) {
        let kind = levelcode_hooks::settings::events::EventKind::of(event);
        let judgement = claude::judge(kind, event, "h", code, &stdout, &stderr, None);
        if kind != levelcode_hooks::settings::events::EventKind::PreToolUse {
            prop_assert!(!matches!(judgement.outcome, Outcome::Block | Outcome::Ask));
        }
        if judgement.outcome == Outcome::Block {
            prop_assert!(judgement.updated_input.is_none());
            prop_assert!(judgement.reason.is_some());
        }
    }
}
