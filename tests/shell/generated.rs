//! Generated command lines, read by the lexer and run by dash and bash: words of every kind of
//! quoting, escapes, backslash-newlines, carriage returns, bash's `$'…'` and braces, arithmetic,
//! substitutions, comments, redirections glued or not, here-documents, and operators with and
//! without blanks, in subshells and groups.

use proptest::prelude::*;

use super::harness::check;

/// Characters of quoted text: every one the lexer treats specially somewhere.
const SPECIAL: &[&str] = &[
    "a", "z", "0", " ", "\t", "\r", "\n", ";", "&", "|", "(", ")", "<", ">", "#", "*", "?", "[",
    "{", "}", ",", "~", "=", "-", "'", "\"", "\\", "$", "`", "!",
];

/// Plain text; never a `9`, the descriptor the records go to.
fn plain() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-z0-8._/=+:-]{1,5}").unwrap()
}

fn quoted_text(forbidden: &'static [&'static str]) -> impl Strategy<Value = String> {
    proptest::collection::vec(
        proptest::sample::select(SPECIAL).prop_filter("allowed", move |c| !forbidden.contains(c)),
        0..6,
    )
    .prop_map(|chars| chars.concat())
}

/// Text inside double quotes: `"`, `\`, `$` and backquotes only escaped.
fn double_quoted() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            quoted_text(&["\"", "\\", "$", "`"]),
            Just("\\\"".to_string()),
            Just("\\\\".to_string()),
            Just("\\$".to_string()),
            Just("\\`".to_string()),
            Just("\\q".to_string()),
            Just("\\\n".to_string()),
            Just("$((2*3))".to_string()),
            Just("$(rec in-dq)".to_string()),
        ],
        0..4,
    )
    .prop_map(|pieces| format!("\"{}\"", pieces.concat()))
}

/// A piece of a word.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => plain(),
        2 => quoted_text(&["'"]).prop_map(|t| format!("'{t}'")),
        2 => double_quoted(),
        2 => proptest::sample::select(SPECIAL)
            .prop_filter("not a newline", |c| *c != "\n")
            .prop_map(|c| format!("\\{c}")),
        1 => Just("\\\n".to_string()),
        1 => Just("\r".to_string()),
        1 => Just("#".to_string()),
        1 => proptest::string::string_regex("[a-z ;|]{0,4}")
            .unwrap()
            .prop_map(|t| format!("$'{t}\\t\\x41\\\\'")),
        1 => (plain(), plain()).prop_map(|(a, b)| format!("{{{a},{b}}}")),
        1 => Just("{1..3}".to_string()),
        1 => Just("$((1<<2))".to_string()),
        1 => Just("\"$(rec in-sub)\"".to_string()),
    ]
}

/// A word: its first piece never begins a comment or is removed whole.
fn word() -> impl Strategy<Value = String> {
    (plain(), proptest::collection::vec(piece(), 0..3)).prop_map(|(first, rest)| {
        let mut word = first;
        for piece in rest {
            word.push_str(&piece);
        }
        word
    })
}

fn command_word() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(&["rec", "\\rec", "'rec'", "r\"\"ec", "re\\\nc", "X=1 rec"][..])
}

fn redirect() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(
        &[
            "",
            "",
            "",
            ">/dev/null",
            " >/dev/null",
            " 2>&1",
            " 2>/dev/null",
            "</dev/null",
            " >>/dev/null",
            " 2>/dev/null >&2",
        ][..],
    )
}

/// A here-document: its operator and delimiter, and its body lines.
fn heredoc() -> impl Strategy<Value = Option<(String, String)>> {
    let body_line = prop_oneof![
        Just("rec never".to_string()),
        Just("$((1<<2)) <<X".to_string()),
        quoted_text(&["\n", "$", "`", "\\"]),
        Just("\tEOF".to_string()),
        Just("EOF ".to_string()),
    ];
    prop_oneof![
        3 => Just(None),
        1 => (
            proptest::sample::select(&["<<EOF", "<< 'EOF'", "<<\"EOF\"", "<<\\EOF", "<<-EOF"][..]),
            proptest::collection::vec(body_line, 0..3),
        )
            .prop_map(|(op, lines)| {
                // No line of the body may close it early: `<<-` takes its tabs off first.
                let body: String = lines
                    .into_iter()
                    .filter(|l| l != "EOF" && (op != "<<-EOF" || l.trim_start_matches('\t') != "EOF"))
                    .map(|l| format!("{l}\n"))
                    .collect();
                let close = if op == "<<-EOF" { "\t\tEOF" } else { "EOF" };
                Some((op.to_string(), format!("{body}{close}")))
            }),
    ]
}

/// One simple command, and its here-document if it has one.
fn simple() -> impl Strategy<Value = (String, Option<String>)> {
    (
        command_word(),
        proptest::collection::vec(
            (
                proptest::sample::select(&[" ", "  ", "\t", " \\\n "][..]),
                word(),
            ),
            0..4,
        ),
        redirect(),
        heredoc(),
    )
        .prop_map(|(first, words, redirect, heredoc)| {
            let mut text = first.to_string();
            for (blank, word) in words {
                text.push_str(blank);
                text.push_str(&word);
            }
            text.push_str(redirect);
            match heredoc {
                Some((op, body)) => {
                    text.push(' ');
                    text.push_str(&op);
                    (text, Some(body))
                }
                None => (text, None),
            }
        })
}

/// Operators between commands. Pipelines and background jobs are the hand table's
/// (`tests/shell/cases.rs`): their commands run at once, and what they record can come in any
/// order, which a generated case would have to be judged by.
fn separator() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(&[";", " ; ", "&&", " && ", "\n", " # a comment 'x\n", "\n\n"][..])
}

/// A command line of a few commands, some in a subshell or a group.
fn line() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        (
            simple(),
            separator(),
            proptest::sample::select(&[0u8, 0, 0, 1, 2][..]),
        ),
        1..4,
    )
    .prop_map(|commands| {
        let mut text = String::new();
        let mut bodies: Vec<String> = Vec::new();
        for (i, ((command, body), separator, wrap)) in commands.iter().enumerate() {
            let command = match wrap {
                1 if body.is_none() => format!("({command})"),
                2 if body.is_none() => format!("{{ {command}; }}"),
                _ => command.clone(),
            };
            text.push_str(&command);
            bodies.extend(body.clone());
            let last = i + 1 == commands.len();
            // A here-document's body follows the end of its line.
            if !bodies.is_empty() && (last || !separator.ends_with('\n')) {
                text.push_str(if last { "\n" } else { " &&\n" });
                for body in bodies.drain(..) {
                    text.push_str(&body);
                    text.push('\n');
                }
                if !last {
                    continue;
                }
            } else if !last {
                text.push_str(separator);
                if separator.ends_with('\n') {
                    for body in bodies.drain(..) {
                        text.push_str(&body);
                        text.push('\n');
                    }
                }
            }
        }
        // Background commands are waited for; the case ends with a command that cannot fail.
        text.push_str("\n:");
        text
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 16,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Each batch of 48 generated lines runs in one shell process per shell.
    #[test]
    fn generated_lines_are_read_as_the_shells_run_them(lines in proptest::collection::vec(line(), 48)) {
        let failures = check(&lines);
        prop_assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
