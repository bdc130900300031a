//! The subcommands of a shell command as written, one of the forms an `if` on the shell tool
//! tests (contract §16; the others are [`super::command`]'s):
//! a command is cut at `&&`, `||`, `;`, `|`, `&` and line breaks, and each part is one
//! subcommand, as is each command inside `( … )`, `$( … )`, `` ` … ` `` and `<( … )`.
//!
//! A subcommand is what runs: its words as written (quotes kept), joined by one space, without
//! the leading `VAR=value` assignments, the redirections (`> out`, `2>&1`, `<<EOF` and the here
//! document's lines), the process wrappers `timeout`, `time`, `nice`, `nohup` and `stdbuf`
//! with their options, and the shell's own words around it (`if`, `then`, `do`, `{`, `!`, …).
//! So `FOO=1 timeout 30 git commit -m "x y" 2>&1` is `git commit -m "x y"`.
//!
//! The command is read as the shell reads it ([`crate::shell`], the reading trust and `validate`
//! share). What cannot be read (a quote, `$(`, `${` or `` ` `` left open, or commands nested
//! deeper than [`MAX_DEPTH`]) is an error: the `if` cannot be evaluated.

use crate::shell::{self, Dialect};

/// How deep `( … )`, `$( … )` and `` ` … ` `` may nest.
pub use crate::shell::MAX_DEPTH;

/// Why a command cannot be split.
pub use crate::shell::Error as SplitError;

/// Every subcommand of `command`, in the order they end: the commands of a substitution before
/// the command that holds it.
pub fn subcommands(command: &str) -> Result<Vec<String>, SplitError> {
    let parse = shell::parse(command, Dialect::Bash);
    if let Some(error) = parse.error {
        return Err(error);
    }
    Ok(parse
        .commands
        .iter()
        .filter_map(|cmd| {
            let words: Vec<&str> = cmd.words.iter().map(|w| w.written.as_str()).collect();
            let text = what_runs(&words).join(" ");
            (!text.is_empty()).then_some(text)
        })
        .collect())
}

/// The shell's own words that may stand before a command (`if`, `then`, `{`, `!`, …) or alone
/// after one (`fi`, `done`, `}`, …): not part of what runs.
const SHELL_WORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "elif", "else", "fi", "do", "done", "while", "until", "esac",
];

/// The words of a command that say what runs: without the shell's own words, the leading
/// assignments and the process wrappers in front of it.
pub(super) fn what_runs<'w>(mut words: &'w [&'w str]) -> &'w [&'w str] {
    while let Some((first, rest)) = words.split_first() {
        if SHELL_WORDS.contains(first) || is_assignment(first) {
            words = rest;
            continue;
        }
        match wrapped(first, rest) {
            Some(rest) => words = rest,
            None => break,
        }
    }
    words
}

/// Returns true if and only if `word` is a variable assignment, `NAME=value` or `NAME+=value`.
fn is_assignment(word: &str) -> bool {
    let name_end = word
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(word.len());
    let name = &word[..name_end];
    let rest = &word[name_end..];
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && (rest.starts_with('=') || rest.starts_with("+="))
}

/// What follows a process wrapper and its options (`timeout -s KILL 30 cmd` is `cmd`), when
/// `first` is one.
fn wrapped<'w>(first: &str, mut rest: &'w [&'w str]) -> Option<&'w [&'w str]> {
    // Each wrapper's options that take their value as the next word.
    let valued: &[&str] = match first {
        "nohup" => &[],
        "time" => &["-f", "-o", "--format", "--output"],
        "nice" => &["-n"],
        "timeout" => &["-s", "-k", "--signal", "--kill-after"],
        "stdbuf" => &["-i", "-o", "-e", "--input", "--output", "--error"],
        _ => return None,
    };
    while let Some((word, after)) = rest.split_first() {
        if *word == "--" {
            rest = after;
            break;
        }
        if !word.starts_with('-') || *word == "-" {
            break;
        }
        rest = after;
        if valued.contains(word) {
            rest = rest.get(1..).unwrap_or_default();
        }
    }
    if first == "timeout" {
        // Its duration.
        rest = rest.get(1..).unwrap_or_default();
    }
    Some(rest)
}
