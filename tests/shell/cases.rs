//! Hand-written cases, each construct of the lexer's module doc at least once, run through dash
//! and bash and compared with the lexer's reading in each dialect.

use levelcode_hooks::shell::{self, Dialect};

use super::harness::{accepts, check, shells};

/// Cases both shells accept; where they read a word differently (`$'…'`, braces), each is
/// compared with the lexer's reading in its own dialect.
const BOTH: &[&str] = &[
    // Words and quotes.
    "rec a b c",
    "rec 'a b' \"c d\" e\\ f",
    "rec a'b'\"c\"\\d ''",
    r#"rec "a\"b" "a\\b" "a\$b" "a\`b" "a\qb" 'a\qb' a\qb"#,
    "rec \"it's\" 'say \"hi\"' \"a'b'c\"",
    "rec \"$(rec inner)\" \"`rec inner2`\" after",
    "rec \"a $((3+4)) b\"",
    "rec $((1<<2)) x",
    "rec ~/x a~ \"~\"",
    "rec \\#a a#b #c",
    "rec a # comment 'with a quote\nrec b",
    // Bash's quotes: `$` and a quoted string to dash.
    "rec $'a\\tb' $'\\x41\\101' $'it'\\''s'",
    "rec $\"x y\" $'a b'",
    "sh $'g.sh'",
    "rec $'g.sh'",
    // Brace expansion, bash's alone.
    "rec {a,b} {1..3} a{,}b {x} {} {a..e..2} {\"a b\",c}",
    "rec pre{x,y{1,2}}post {01..03} {-1..1}",
    "rec {git,} push {,} z \"\" {a,\"\"}",
    // Backslash-newline: removed, between words, inside words, inside double quotes; kept in
    // single quotes.
    "rec git pu\\\nsh",
    "rec a\\\nb 'c\\\nd' \"e\\\nf\"",
    "rec a &\\\n& rec b",
    "rec a \\\n b",
    "rec a\\\\\nrec b",
    // A carriage return is a character of the word, never a blank.
    "rec x\r y",
    "rec \"x\r\" ; rec y\r",
    // Operators with and without blanks.
    "rec a;rec b&&rec c;rec d",
    "rec a&&rec b",
    "rec a ; rec b ; rec c",
    "rec a |rec b| rec c",
    "rec a & rec b; wait",
    "false || rec b",
    "(rec a; rec b)",
    "( rec a )",
    "{ rec a; rec b; }",
    "rec a\nrec b\n\nrec c",
    // Redirections, glued or not.
    "rec a 2>&1 >/dev/null </dev/null",
    "rec a>/dev/null b",
    "rec 2>/dev/null a",
    "rec a2>/dev/null b",
    "rec a >>/dev/null 2>/dev/null b",
    "rec a <>/dev/null b >|/dev/null",
    "rec '2'>/dev/null",
    // Here-documents, and `<<` that is a shift.
    ": $((1<<2))\nrec git push",
    "n=$(( 8 << 1 ))\nrec git push $n",
    "rec $((1 << 2)) a\nrec b",
    ": <<EOF\nrec no\nEOF\nrec yes",
    ": <<'EOF'\nrec no $(rec no2)\nEOF\nrec yes",
    ": <<\"EOF\"\nrec no\nEOF\nrec yes",
    ": <<\\EOF\nrec no\nEOF\nrec yes",
    ": <<-EOF\n\trec no\n\tEOF\nrec yes",
    ": <<EOF\n$(rec in body)\nEOF\nrec after",
    ": <<A; : <<B\na\nA\nb\nB\nrec after",
    ": <<EOF\nEOF\r\nrec no\nEOF\nrec yes",
    ": <<EOF\na\\\nEOF\nrec no\nEOF\nrec yes",
    "rec \"$(: <<'EOF'\nrec no ) (\nEOF\nrec in)\" after",
    ": <<EOF ; rec same line\nbody\nEOF\nrec next",
    // case, and substitutions holding it.
    "case x in x) rec match;; esac",
    "case x in (y|x) rec a; rec b;; esac; rec after",
    "rec \"$(case a in a) rec inner;; esac)\"",
    "for i in 1; do rec \"$i\"; done",
    "if true; then rec yes; fi",
    "while rec once; do break; done",
    "f() { rec in-f \"$1\"; }; f x",
    "rec x$(rec a) after",
];

/// Cases of bash's syntax alone: bash reads them, and the lexer's bash reading must agree.
const BASH: &[&str] = &[
    "rec <<<'here string' a",
    "rec a |& rec b",
    "rec a &>/dev/null b",
    "rec a &>>/dev/null b",
    "(( x = 1 << 2 ))\nrec git push",
    "(( x <<= 1 ))\nrec git push",
    "[[ a < b && -n x ]] && rec yes",
    "rec a {fd}>/dev/null b",
    "rec \"$(cat <(rec inner))\"",
    "case x in x) rec a;& y) rec b;; esac",
    "a=(x \"$(rec in-array)\" y) && rec after \"${a[1]}\"",
];

#[test]
fn the_lexer_reads_what_both_shells_run() {
    let cases: Vec<String> = BOTH.iter().map(|c| c.to_string()).collect();
    let failures = check(&cases);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_lexer_reads_bash_s_own_syntax_as_bash_runs_it() {
    let cases: Vec<String> = BASH.iter().map(|c| c.to_string()).collect();
    let Some(bash) = shells().into_iter().find(|s| s.dialect == Dialect::Bash) else {
        return;
    };
    let ran = super::harness::run(&bash, &cases);
    let mut failures = Vec::new();
    for (case, actual) in cases.iter().zip(&ran) {
        match super::harness::expected(case, Dialect::Bash) {
            Ok(expected) => {
                if let Some(why) = super::harness::differs(&expected, actual) {
                    failures.push(format!("{case:?}: {why}; it ran {actual:?}"));
                }
            }
            Err(e) => failures.push(format!("{case:?}: the lexer cannot read it ({e})")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// What a shell refuses the lexer refuses too, in the same dialect; it may refuse more (bash
/// reads `$((a); b)` again as a subshell, the lexer says it cannot), never less.
#[test]
fn what_a_shell_refuses_the_lexer_refuses() {
    const REFUSED: &[&str] = &[
        "rec 'a",
        "rec \"a",
        "rec $(a",
        "rec `a",
        "rec ${a",
        "rec $((1",
        "rec a\nrec 'b",
        "rec $'a\\'b'",
        "rec $((rec a); rec b)",
        "rec @(x) y",
        "rec (x)",
        "a=(x y)",
    ];
    for shell in shells() {
        assert!(
            !accepts(&shell, "rec 'a"),
            "{} -n reads the text",
            shell.path.display()
        );
        for case in REFUSED {
            let lexer = shell::parse(case, shell.dialect).error;
            if !accepts(&shell, case) {
                assert!(
                    lexer.is_some(),
                    "{} refuses {case:?}, the lexer reads it",
                    shell.path.display()
                );
            }
        }
    }
    // The lexer refuses these in both dialects.
    for case in &REFUSED[..7] {
        for dialect in Dialect::ALL {
            assert!(shell::parse(case, dialect).error.is_some(), "{case:?}");
        }
    }
}
