//! Unit tests of the matcher rules and of the engine choice (`matcher.rs`).

use super::*;

fn m(matcher: Option<&str>, tool: &str) -> bool {
    Matcher::compile(matcher).unwrap().matches(tool)
}

#[test]
fn missing_empty_and_star_match_everything() {
    for matcher in [None, Some(""), Some("*")] {
        assert!(m(matcher, "write_file"));
        assert!(m(matcher, "anything"));
    }
}

#[test]
fn names_are_exact() {
    assert!(m(Some("write_file|str_replace"), "str_replace"));
    assert!(m(Some(" write_file | str_replace "), "write_file"));
    assert!(!m(Some("write_file"), "write_file_v2"));
    assert!(!m(Some("write_file"), "my_write_file"));
    assert!(!m(Some("Write_File"), "write_file"));
    assert!(m(Some("run-terminal"), "run-terminal"));
}

#[test]
fn other_matchers_are_unanchored_regexes() {
    assert!(m(Some("write.*"), "write_file_v2"));
    assert!(m(Some("file$"), "write_file"));
    assert!(m(Some("^read"), "read_files"));
    assert!(!m(Some("^read"), "code_read"));
    assert!(m(Some("mcp__.*"), "x_mcp__server"));
    assert!(!m(Some("Write.*"), "write_file"));
}

/// Whatever `ruled_out` says, compiling the regex agrees whenever it rules a tool out.
#[test]
fn ruled_out_agrees_with_the_regex() {
    let patterns = [
        "^write_",
        "^write_.*",
        "_file$",
        "^ab?c",
        "^ab+",
        "^a{2}b",
        "x\\d$",
        "a\\.b$",
        "^mcp__github__.*",
        "^(?i)WRITE",
        "(?i)file$",
        "^read|write$",
        "^é.*",
        "files?$",
        "^\\w+_file$",
        "^[rw]",
        "code_search$",
        "^$",
        "^str_replace$",
        "^foo(",
        "^mcp__[a-z_]+__(delete|drop)_[a-z_]+$",
        "(delete|drop)_table_5$",
        "^[|]x",
        "^a\\|b",
        "^browser_(navigate|click|type)$",
        "^(read|write)_file$",
        "x(a|b)|^write",
        "mcp__.*__(delete|drop)_",
        "browser_(navigate|click|type)",
        "\\bdeploy\\b|release_\\w+",
        "(spawn|run)_agents?$",
        "[Ww]eb_?(fetch|search)",
        "wr+ite",
        "wri?te",
        "wx*rite",
        "w(r)ite",
        "write|",
        "a\\.b|x\\|y",
        "é+x",
        "file{2}",
    ];
    let tools = [
        "write_file",
        "read_files",
        "str_replace",
        "mcp__github__x",
        "abc",
        "aab",
        "ac",
        "x1",
        "xd",
        "a.b",
        "WRITE_FILE",
        "é_x",
        "code_search",
        "",
        "file",
    ];
    for pattern in patterns {
        for tool in tools {
            if ruled_out(pattern, tool) {
                let re = Regex::new(pattern).unwrap();
                assert!(
                    !re.is_match(tool),
                    "{pattern:?} ruled out {tool:?} but matches"
                );
            }
        }
    }
    assert!(ruled_out("^write_", "read_files"));
    assert!(ruled_out("_file$", "read_files"));
    assert!(ruled_out("^mcp__github__.*", "write_file"));
    assert!(
        !ruled_out("^foo(", "write_file"),
        "an invalid regex is left to be warned about"
    );
    assert!(!ruled_out("^(?i)WRITE", "write_file"));
    assert!(ruled_out("^browser_(navigate|click|type)$", "write_file"));
    assert!(ruled_out("(delete|drop)_table_5$", "write_file"));
    assert!(
        !ruled_out("^read_x|write_file", "write_file"),
        "top-level alternation"
    );
    // Literal runs anywhere, in each branch.
    assert!(ruled_out("mcp__.*__(delete|drop)_", "write_file"));
    assert!(ruled_out("git_(push|commit|rebase)", "write_file"));
    assert!(ruled_out("\\bdeploy\\b|release_\\w+", "write_file"));
    assert!(ruled_out("[Ww]eb_?(fetch|search)", "write_file"));
    assert!(!ruled_out("[Ww]eb_?(fetch|search)", "web_fetch"));
    assert!(!ruled_out("wr+ite", "wrrite"));
    assert!(!ruled_out("wri?te", "wrte"));
    assert!(!ruled_out("wx*rite", "write"));
    assert!(
        !ruled_out("write|", "read"),
        "an empty branch matches anything"
    );
    assert!(!ruled_out("(?i)(bash|shell)", "write_file"), "flags");
    assert!(!ruled_out("[]a]|b", "a"), "not plain: left to the regex");
    // A repeated quantifier undoes "at least once": `a+??` is `(a+?)?`, which matches "".
    // An escaped letter opens a class or a code: `\pL` is any letter, `\x41` is `A`.
    for (pattern, tool) in [
        ("^a+??", ""),
        ("a+??", "b"),
        ("^ab+??c", "ac"),
        ("x{2}*", ""),
        ("\\pL$", "write_file"),
        ("\\x41bc$", "Abc"),
        ("_\\u{66}ile$", "write_file"),
    ] {
        assert!(!ruled_out(pattern, tool), "{pattern} ruled out {tool:?}");
        let regex = regex::Regex::new(pattern).unwrap();
        assert!(regex.is_match(tool), "{pattern} does not match {tool:?}");
    }
}

#[test]
fn plain_patterns_are_valid_without_the_parser() {
    for pattern in [
        "^mcp__server17__(read|write)_[a-z]+$",
        "(delete|drop)_table_19$",
        "^write_",
        "files?$",
        "^\\w+_file$",
        "a\\.b$",
        "^a{2}b",
        "^a{2,}b{1,3}?",
        "[^a-z0-9_]x",
        "^[rw]",
        "x\\d$",
        "^$",
        "é.*",
        "((a|b)c)+",
    ] {
        assert!(plainly_valid(pattern), "{pattern:?}");
    }
    for pattern in [
        "^foo(",
        "*a",
        "a**",
        "a{2,1}",
        "(?i)a",
        "a|",
        "(|a)",
        "[]a]",
        "[a-]",
        "[z-a]",
        "[[:alpha:]]",
        "\\q",
        "a{",
        "a{1",
        "a{x}",
        ")",
        "a]",
        "^*",
        "[a",
        "\\",
    ] {
        assert!(!plainly_valid(pattern), "{pattern:?}");
    }
}

#[test]
fn look_around_and_backreferences_are_backtracking_regexes() {
    let not_read = Matcher::compile(Some("^(?!read_)")).unwrap();
    assert!(matches!(not_read, Matcher::Backtracking(_)));
    assert!(not_read.matches("write_file"));
    assert!(!not_read.matches("read_files"));
    assert!(m(Some("(?<=mcp__)github"), "mcp__github__x"));
    assert!(!m(Some("(?<=mcp__)github"), "github"));
    assert!(m(Some("^(\\w)\\1"), "aab"));
    assert!(!m(Some("^(\\w)\\1"), "abc"));
    assert!(matches!(
        Matcher::compile(Some("^write_")).unwrap(),
        Matcher::Lite(_)
    ));
    // Invalid for both engines: the `regex` crate's message.
    let error = Matcher::compile(Some("(?!a")).unwrap_err();
    assert!(error.contains("look-around"), "{error}");
    assert!(!needs_backtracking("(unclosed"));
}

#[test]
fn most_regexes_run_on_regex_lite() {
    for pattern in [
        "mcp__.*__(delete|drop)_",
        "(?i)(bash|shell)",
        "\\bdeploy\\b|release_\\w+",
        "(spawn|run)_agents?$",
        "[Ww]eb_?(fetch|search)",
        "é.*",
    ] {
        assert!(
            matches!(Matcher::compile(Some(pattern)), Ok(Matcher::Lite(_))),
            "{pattern:?}"
        );
    }
    assert!(m(Some("(?i)(bash|shell)"), "run_BASH"));
    assert!(m(Some("release_\\w+"), "release_v2"));
    assert!(!m(Some("\\bdeploy\\b"), "redeploy"));
}

#[test]
fn what_regex_lite_reads_differently_goes_to_regex() {
    // Unicode classes and set operations: regex-lite refuses them.
    for pattern in ["\\pL+", "[\\w&&[^_]]+"] {
        assert!(
            matches!(Matcher::compile(Some(pattern)), Ok(Matcher::Pattern(_))),
            "{pattern:?}"
        );
    }
    assert!(m(Some("^\\pL+$"), "écrire"));
    // The Kelvin sign and the long s fold to `k` and `s` in Unicode only.
    for (pattern, tool) in [
        ("(?i)\u{212A}ill", "kill"),
        ("(?i)\\x{17F}hell", "shell"),
        ("(?i)^[\\x{212A}]", "k"),
    ] {
        assert!(!lite_reads_as_regex(pattern), "{pattern:?}");
        assert!(m(Some(pattern), tool), "{pattern:?} on {tool:?}");
    }
    // regex folds a negated POSIX class before negating it, regex-lite after.
    assert!(!lite_reads_as_regex("(?i)^[[:^lower:]]"));
    assert!(!m(Some("(?i)^[[:^lower:]]"), "k"));
    // regex refuses what could match invalid UTF-8; regex-lite ignores `u`.
    assert!(!lite_reads_as_regex("(?-u:.)"));
    assert!(Matcher::compile(Some("(?-u:.)")).is_err());
    assert!(Matcher::compile(Some("(?-u)\\W")).is_err());
    assert!(m(Some("(?-u:\\w)x"), "ax"));
    // regex-lite repeats what precedes a flag group; regex finds nothing to repeat.
    assert!(!lite_reads_as_regex("a(?i)*"));
    assert!(Matcher::compile(Some("a(?i)*")).is_err());
    // Long patterns: nesting limits differ.
    let deep = format!("{}a{}", "(".repeat(60), ")".repeat(60));
    assert!(matches!(
        Matcher::compile(Some(&deep)),
        Ok(Matcher::Pattern(_))
    ));
}

#[test]
fn names_that_are_not_ascii_are_tested_by_regex() {
    // regex-lite's `\w`, `\d`, `\s` and `\b` are ASCII; `regex`'s are Unicode.
    let word = Matcher::compile(Some("^\\w+$")).unwrap();
    assert!(matches!(word, Matcher::Lite(_)));
    assert!(word.matches("write_file"));
    assert!(word.matches("écrire"));
    assert!(!word.matches("a-b"));
    assert!(m(Some("^\\d$"), "\u{663}"));
    assert!(m(Some("a\\sb"), "a\u{a0}b"));
    assert!(!m(Some("\\bé"), "aé"));
    assert!(m(Some("(?i)^É$"), "é"));
}

/// Whatever `regex-lite` builds within [`LITE_SIZE_LIMIT`], `regex` builds too: for the
/// constructs whose `regex` automaton is largest against `regex-lite`'s, the most copies
/// `regex-lite` accepts are accepted by `regex`.
#[test]
fn regex_lite_size_limit_is_within_regex_limit() {
    let lite_accepts = |p: &str| {
        regex_lite::RegexBuilder::new(p)
            .size_limit(LITE_SIZE_LIMIT)
            .build()
            .is_ok()
    };
    for construct in [
        "\\w",
        "\\W",
        "[\\w-]",
        "[\\w\\s]",
        "[^\\w\\d]",
        "(?i)\\w",
        "\\S",
        "\\D",
        ".",
        "[^a]",
    ] {
        let (mut low, mut high) = (1usize, 100_000usize);
        while low < high {
            let mid = (low + high).div_ceil(2);
            if lite_accepts(&format!("(?:{construct}){{{mid}}}")) {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        assert!(low > 1, "{construct}");
        let most = format!("(?:{construct}){{{low}}}");
        assert!(Regex::new(&most).is_ok(), "{most}");
        // And with room to spare: twice as many still fit.
        let twice = format!("(?:{construct}){{{}}}", 2 * low);
        assert!(Regex::new(&twice).is_ok(), "{twice}");
    }
}

#[test]
fn invalid_regex_is_an_error() {
    assert!(Matcher::compile(Some("(unclosed")).is_err());
    assert!(Matcher::compile(Some("*foo")).is_err());
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(4000))]

    /// The one scan of a plainly valid pattern tells what the separate scans tell: whether it
    /// has a top-level alternation and the text `(?`, and that it stacks no quantifier.
    #[test]
    fn the_plain_scan_tells_what_the_separate_scans_tell(
        parts in proptest::collection::vec(proptest::sample::select(vec![
            "a", "b", "_", "\u{e9}", ".", "*", "+", "?", "??", "+?", "(", ")", "[", "]", "{", "}",
            "|", "^", "$", "\\", "\\(", "\\)", "\\|", "\\[", "\\?", "\\d", "\\w", "[a-z]", "[^0-9_]",
            "[\\d]", "{1,2}", "{2}", "{0,}?", "(?", "(a|b)", "[|]",
        ]), 0..12),
    ) {
        let pattern = parts.concat();
        if let Some(shape) = plain_shape(&pattern) {
            proptest::prop_assert_eq!(shape.top_level_alternation, has_top_level_alternation(&pattern), "{}", pattern);
            proptest::prop_assert_eq!(shape.flag_text, pattern.contains("(?"), "{}", pattern);
            proptest::prop_assert!(!has_stacked_quantifiers(&pattern), "{}", pattern);
        }
    }
}
