//! The reading's own tests, beside the differential suite against real shells
//! (`tests/shell/`).

use super::*;

/// Every command's words, as the shell would pass them (quotes removed, expansions as
/// written), `dialect` reading.
fn words_in(text: &str, dialect: Dialect) -> Vec<Vec<String>> {
    let parse = parse(text, dialect);
    assert_eq!(parse.error, None, "{text:?}");
    parse
        .commands
        .iter()
        .map(|c| c.words.iter().map(Word::text).collect())
        .collect()
}

fn words(text: &str) -> Vec<Vec<String>> {
    let sh = words_in(text, Dialect::Sh);
    assert_eq!(sh, words_in(text, Dialect::Bash), "{text:?}");
    sh
}

#[test]
fn operators_cut_with_or_without_blanks() {
    assert_eq!(words("a&&b"), [["a"], ["b"]]);
    assert_eq!(
        words("a && b||c;d|e&f\ng"),
        [["a"], ["b"], ["c"], ["d"], ["e"], ["f"], ["g"]]
    );
    assert_eq!(words("(a;b)"), [["a"], ["b"]]);
    assert_eq!(words("a#b #c"), [["a#b"]]);
    assert_eq!(
        words("a 'b c' \"d $e\" f\\ g"),
        [["a", "b c", "d $e", "f g"]]
    );
}

#[test]
fn backslash_newline_is_removed_and_a_carriage_return_is_a_character() {
    assert_eq!(words("git pu\\\nsh"), [["git", "push"]]);
    assert_eq!(words("a &\\\n& b"), [["a"], ["b"]]);
    assert_eq!(words("'a\\\nb'"), [["a\\\nb"]]);
    assert_eq!(words("a\r b"), [["a\r", "b"]]);
    let parse = parse("echo x\r#'\ngit push\n", Dialect::Sh);
    assert_eq!(parse.error, Some(Error::UnclosedQuote('\'')));
    // A comment ends at its newline, backslash or not.
    assert_eq!(words("a # c \\\nb"), [["a"], ["b"]]);
}

#[test]
fn here_documents_are_skipped_but_shifts_are_not_here_documents() {
    assert_eq!(words("cat <<EOF\ngit push\nEOF\nls"), [["cat"], ["ls"]]);
    assert_eq!(words("cat <<-'E'\n\tgit push\n\tE\nls"), [["cat"], ["ls"]]);
    assert_eq!(
        words("echo $((1<<2))\ngit push"),
        [["echo", "$((1<<2))"], ["git", "push"]]
    );
    assert_eq!(
        words("n=$(( 8 << 1 ))\ngit push"),
        [vec!["n=$(( 8 << 1 ))"], vec!["git", "push"]]
    );
    let bash = words_in("(( x <<= 1 ))\ngit push", Dialect::Bash);
    assert_eq!(bash, [vec!["(( x <<= 1 ))"], vec!["git", "push"]]);
    // To dash it is two subshells and a here-document that takes the next lines.
    let sh = parse("(( x <<= 1 ))\ngit push", Dialect::Sh);
    assert_eq!(sh.commands.len(), 1, "{sh:?}");
    // The body of an unquoted here-document runs its substitutions.
    assert_eq!(
        words("cat <<E\n$(git push)\nE"),
        [vec!["cat"], vec!["git", "push"]]
    );
    let doc = &parse("cat <<E\nx $y\nE\n", Dialect::Sh).commands[0].redirects[0];
    assert_eq!(doc.heredoc.as_ref().unwrap().body, "x $y\n");
}

#[test]
fn bash_quotes_and_braces_are_bash_s_alone() {
    assert_eq!(words_in("sh $'g.sh'", Dialect::Bash), [["sh", "g.sh"]]);
    assert_eq!(words_in("sh $'g.sh'", Dialect::Sh), [["sh", "$g.sh"]]);
    assert_eq!(
        words_in("x $'a\\tb\\x41\\101'", Dialect::Bash),
        [["x", "a\tbAA"]]
    );
    let parse = parse("sh {g,h}.sh", Dialect::Bash);
    let fields: Vec<String> = parse.commands[0].words[1]
        .fields(Dialect::Bash)
        .unwrap()
        .iter()
        .map(|f| text_of(f))
        .collect();
    assert_eq!(fields, ["g.sh", "h.sh"]);
    let one = parse.commands[0].words[1].fields(Dialect::Sh).unwrap();
    assert_eq!(one.len(), 1);
}

#[test]
fn words_say_what_they_are() {
    let parse = parse("A=1 \\git 'g'it g\"\"it $x ~/y *.rs", Dialect::Sh);
    let w = &parse.commands[0].words;
    assert!(w[0].is_assignment());
    assert_eq!(w[1].literal().as_deref(), Some("git"));
    assert_eq!(w[2].literal().as_deref(), Some("git"));
    assert_eq!(w[3].literal().as_deref(), Some("git"));
    assert_eq!(w[4].literal(), None);
    assert_eq!(w[5].literal(), None);
    assert_eq!(w[6].literal(), None);
    assert!(!w[1].is_assignment());
}

#[test]
fn redirections_are_not_words() {
    let parse = parse("sh g.sh>log 2>&1 <in &>all {fd}>x", Dialect::Bash);
    let c = &parse.commands[0];
    assert_eq!(
        c.words.iter().map(Word::text).collect::<Vec<_>>(),
        ["sh", "g.sh"]
    );
    let ops: Vec<(Option<&str>, Op, String)> = c
        .redirects
        .iter()
        .map(|r| (r.fd.as_deref(), r.op, r.target.text()))
        .collect();
    assert_eq!(
        ops,
        [
            (None, Op::Output, "log".to_string()),
            (Some("2"), Op::DupOutput, "1".to_string()),
            (None, Op::Input, "in".to_string()),
            (None, Op::OutputBoth, "all".to_string()),
            (Some("{fd}"), Op::Output, "x".to_string()),
        ]
    );
}

#[test]
fn case_patterns_are_not_commands() {
    assert_eq!(
        words("case $x in a|b) git push;; (c) ls;; esac; echo done"),
        [
            vec!["case", "$x", "in"],
            vec!["git", "push"],
            vec!["ls"],
            vec!["echo", "done"]
        ]
    );
    assert_eq!(
        words("y=$(case a in a) echo x;; esac)"),
        [
            vec!["case", "a", "in"],
            vec!["echo", "x"],
            vec!["y=$(case a in a) echo x;; esac)"]
        ]
    );
}

#[test]
fn what_cannot_be_read_is_an_error_with_what_came_before() {
    for (text, error) in [
        ("a; b 'c", Error::UnclosedQuote('\'')),
        ("a; b \"c", Error::UnclosedQuote('"')),
        ("a; $(b", Error::Unclosed("( … )")),
        ("a; `b", Error::Unclosed("` … `")),
        ("a; ${b", Error::Unclosed("${ … }")),
        ("a; $((b", Error::Unclosed("$(( … ))")),
    ] {
        let parse = parse(text, Dialect::Sh);
        assert_eq!(parse.error, Some(error), "{text:?}");
        assert_eq!(parse.commands[0].words[0].text(), "a", "{text:?}");
    }
    let deep = format!("{}x{}", "$(".repeat(40), ")".repeat(40));
    assert_eq!(parse(&deep, Dialect::Sh).error, Some(Error::TooDeep));
}

#[test]
fn a_long_word_is_read_in_linear_time() {
    let long = format!("sh /{}", "a/".repeat(1 << 20));
    for dialect in Dialect::ALL {
        let parse = parse(&long, dialect);
        assert_eq!(parse.commands[0].words[1].written.len(), (2 << 20) + 1);
    }
    let braces = format!("x {}", "{a,b}".repeat(1 << 18));
    let parse_braces = parse(&braces, Dialect::Bash);
    assert_eq!(
        parse_braces.commands[0].words[1].fields(Dialect::Bash),
        Err(Error::TooManyFields)
    );
    let continued = format!("x a{}b", "\\\n".repeat(1 << 20));
    assert_eq!(words(&continued), [["x", "ab"]]);
    // Linear, told by how the time grows rather than by a bound on it, which a loaded machine
    // could miss: four times the text takes about four times as long (sixteen if it were
    // quadratic). The time is the thread's own on the processor where the system says it
    // (`CLOCK_THREAD_CPUTIME_ID`), so that waiting for a busy processor does not count;
    // each size's best of three runs.
    let best = |text: &str| {
        (0..3)
            .map(|_| {
                let (wall, cpu) = (std::time::Instant::now(), on_cpu_ns());
                let _ = parse(text, Dialect::Bash);
                match (cpu, on_cpu_ns()) {
                    (Some(before), Some(after)) => (after - before) as f64,
                    _ => wall.elapsed().as_nanos() as f64,
                }
            })
            .fold(f64::MAX, f64::min)
    };
    for unit in ["a/", "\\\n", "'a'", "$x"] {
        let small = format!("sh /{}", unit.repeat(1 << 15));
        let large = format!("sh /{}", unit.repeat(1 << 17));
        let (small, large) = (best(&small), best(&large));
        let ratio = large / small.max(1.0);
        assert!(
            ratio < 10.0,
            "{unit:?}: {small} ns then {large} ns for four times the text"
        );
    }
}

/// How long this thread has run on a processor, in nanoseconds.
#[cfg(not(unix))]
fn on_cpu_ns() -> Option<u64> {
    None
}

/// How long this thread has run on a processor, in nanoseconds.
#[cfg(unix)]
fn on_cpu_ns() -> Option<u64> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec for the call to fill; the clock id is a
    // constant the kernel knows.
    let done = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    (done == 0).then(|| now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Whatever the text, the reading ends, and every word's fields can be asked for.
    #[test]
    fn any_text_is_read_without_a_panic(
        pieces in proptest::collection::vec(proptest::sample::select(&[
            "a", " ", "\t", "\n", "\r", "\\", "\\\n", "'", "\"", "`", "$", "$(", "$((", "${", "$'",
            "(", ")", "((", "))", "{", "}", ",", "..", ";", ";;", "&", "&&", "|", "||", "<", ">",
            "<<", "<<-", "<<<", "&>", "2>&1", "#", "*", "?", "[", "]", "~", "=", "case", "in",
            "esac", "[[", "]]", "EOF", "é", "\u{0}", "{1..3}", "-",
        ][..]), 0..40)
    ) {
        let text: String = pieces.concat();
        for dialect in Dialect::ALL {
            let parse = parse(&text, dialect);
            for command in &parse.commands {
                for word in &command.words {
                    let _ = word.fields(dialect);
                    let _ = word.literal();
                    let _ = word.is_assignment();
                }
            }
        }
    }
}
