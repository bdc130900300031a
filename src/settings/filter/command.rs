//! What a command line runs, as an `if` on the shell tool tests it, and what the filter cannot
//! see through (docs/hooks.md, "What the filter promises").
//!
//! The line is read as `/bin/sh` (dash) reads it and as bash does ([`crate::shell`]); each
//! simple command of either reading is tested in every form a person may have written the
//! pattern for: as written (quotes kept, as Claude Code matches), and as it runs, quotes
//! removed, the wrappers in front of the program stripped (`env` with its options and
//! assignments, `command`, `exec`, `nice`, `nohup`, `timeout` with its duration, `sudo`, `xargs`,
//! `time`, `builtin`, `stdbuf`, `coproc`, `busybox`), and the program by its name as well as by
//! its path (`/usr/bin/git push` is `git push`). An expansion is text nobody knows until the
//! command runs ([`El::Any`]): a pattern matches when it could match some value of it.
//!
//! What the filter cannot see through is listed with why ([`Reading::unseen`]): a command word
//! that is a variable or a substitution, `eval`, `source` and `.`, a shell given a string
//! (`bash -c`, `sh` reading a here-document, a here-string or a pipe), the builtins that run
//! text (`trap`, `alias`), the variables a shell runs as code (`BASH_ENV`, `PS4`, …), and the
//! places where bash evaluates a variable's value as arithmetic, which may run commands.

use super::shell::what_runs;
use crate::shell::{self, Dialect, Op, Part, Word};

pub use crate::shell::Error as SplitError;

/// One element of a command as a pattern is tested against it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum El {
    Char(char),
    /// Text known only when the command runs: any text, spaces included, or none.
    Any,
}

/// A simple command in one of its forms.
pub type Form = Vec<El>;

/// What the filter makes of a command line.
#[derive(Debug, Default)]
pub struct Reading {
    /// Every form of every simple command either shell may run.
    pub forms: Vec<Form>,
    /// What it cannot see through, each with why.
    pub unseen: Vec<String>,
}

impl Reading {
    fn unseen(&mut self, why: String) {
        if !self.unseen.contains(&why) {
            self.unseen.push(why);
        }
    }
}

/// Reads `command` as `/bin/sh` and bash would; an error when either cannot read it.
pub fn read(command: &str) -> Result<Reading, SplitError> {
    let mut reading = Reading::default();
    for dialect in Dialect::ALL {
        let parse = shell::parse(command, dialect);
        if let Some(error) = parse.error {
            return Err(error);
        }
        for cmd in &parse.commands {
            simple(cmd, dialect, &mut reading)?;
        }
    }
    reading.forms.sort_unstable();
    reading.forms.dedup();
    Ok(reading)
}

/// The shell's own words that may stand before a command.
const RESERVED: &[&str] = &[
    "!", "{", "}", "if", "then", "elif", "else", "fi", "do", "done", "while", "until", "esac",
];

/// Variables whose value a shell runs, or expands with its substitutions, as code.
const CODE_VARIABLES: &[&str] = &["BASH_ENV", "ENV", "PS0", "PS1", "PS4", "PROMPT_COMMAND"];

/// Builtins that run text the filter does not read.
const RUNS_TEXT: &[(&str, &str)] = &[
    ("eval", "eval runs its words as a command line"),
    ("source", "source runs a file's commands in this shell"),
    (".", ". runs a file's commands in this shell"),
    (
        "trap",
        "trap runs its text as a command when the signal comes",
    ),
    (
        "alias",
        "an alias runs its text wherever its name is the command",
    ),
    ("fc", "fc runs commands from the history"),
    ("mapfile", "mapfile may run its callback text"),
    ("readarray", "readarray may run its callback text"),
];

/// Shells: given a string, or reading their input, they run commands the filter does not see.
const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "zsh",
    "ksh",
    "ksh93",
    "mksh",
    "pdksh",
    "oksh",
    "lksh",
    "ash",
    "yash",
    "posh",
    "rbash",
    "fish",
    "csh",
    "tcsh",
    "pwsh",
    "powershell",
];

/// The forms of one simple command, and what of it cannot be seen through.
fn simple(cmd: &shell::Command, dialect: Dialect, reading: &mut Reading) -> Result<(), SplitError> {
    let bash = dialect == Dialect::Bash;
    // As written, as Claude Code matches it.
    let written: Vec<&str> = cmd.words.iter().map(|w| w.written.as_str()).collect();
    let text = what_runs(&written).join(" ");
    if !text.is_empty() {
        reading.forms.push(text.chars().map(El::Char).collect());
    }
    for word in &cmd.words {
        let text = word.text();
        if let Some(name) = CODE_VARIABLES.iter().find(|v| {
            text.strip_prefix(**v)
                .is_some_and(|rest| rest.starts_with('=') || rest.starts_with("+="))
        }) {
            reading.unseen(format!("it sets {name}, which a shell runs as code"));
        }
        if bash {
            if let Some(why) = bash_arithmetic(word) {
                reading.unseen(why);
            }
        }
    }
    let mut start = 0;
    while let Some(word) = cmd.words.get(start) {
        if RESERVED.iter().any(|r| word.is(r)) || word.is_assignment() {
            start += 1;
        } else {
            break;
        }
    }
    let mut fields: Vec<Vec<Part>> = Vec::new();
    for word in &cmd.words[start..] {
        fields.extend(word.fields(dialect)?);
    }
    let Some(first) = fields.first() else {
        return Ok(());
    };
    // Bash's `((…))`: no program runs.
    if matches!(first.as_slice(), [Part::Arithmetic { written, .. }] if written.starts_with("((")) {
        return Ok(());
    }
    // The whole command, wrappers and all.
    reading.forms.push(form(None, &fields, false));
    let mut at = 0;
    let mut appends = false;
    loop {
        let Some(field) = fields.get(at) else {
            return Ok(());
        };
        let (path, name) = match program(field) {
            Ok(found) => found,
            Err(why) => {
                reading.unseen(why);
                return Ok(());
            }
        };
        let rest = &fields[at + 1..];
        match wrapper(&name, rest) {
            Some(Ok(skip)) => {
                appends |= skip.appends;
                at += 1 + skip.words;
                continue;
            }
            Some(Err(why)) => {
                reading.unseen(why);
                return Ok(());
            }
            None => {}
        }
        let with_path = form(Some(&path), rest, appends);
        if path != name {
            reading.forms.push(with_path);
        }
        reading.forms.push(form(Some(&name), rest, appends));
        if let Some((_, why)) = RUNS_TEXT.iter().find(|(builtin, _)| *builtin == name) {
            reading.unseen(why.to_string());
        }
        if bash {
            if let Some(why) = bash_arithmetic_builtin(&name, rest) {
                reading.unseen(why);
            }
        }
        if SHELLS.contains(&name.as_str()) {
            if let Some(why) = shell_given_text(&name, rest, cmd) {
                reading.unseen(why);
            }
        }
        return Ok(());
    }
}

/// A field as a form: its text, an expansion as [`El::Any`]; whether it may vanish (an unquoted
/// expansion that makes no word at all).
fn template(field: &[Part]) -> (Vec<El>, bool) {
    // `"$@"` makes no word when there are no arguments, quoted or not.
    let vanishes = field.iter().all(|p| match p {
        Part::Parameter { quoted, written } => !quoted || written.contains('@'),
        Part::Command { quoted, .. } => !quoted,
        _ => false,
    });
    let mut out = Vec::new();
    let any = |out: &mut Vec<El>| {
        if out.last() != Some(&El::Any) {
            out.push(El::Any);
        }
    };
    for part in field {
        match part {
            Part::Text { text, quoted: true } => out.extend(text.chars().map(El::Char)),
            Part::Text {
                text,
                quoted: false,
            } => {
                if is_bracket_pattern(text) {
                    // A bracket expression stands for one character of a set: the field for any
                    // names it may match.
                    return (vec![El::Any], false);
                }
                for c in text.chars() {
                    match c {
                        '*' | '?' => any(&mut out),
                        c => out.push(El::Char(c)),
                    }
                }
            }
            _ => any(&mut out),
        }
    }
    (out, vanishes)
}

/// Returns true if and only if unquoted `text` holds a `[` with a `]` after it.
fn is_bracket_pattern(text: &str) -> bool {
    text.find('[')
        .is_some_and(|at| text[at + 1..].contains(']'))
}

/// The form of a command: `name` (or the first field) and the fields after it, joined by one
/// space; `appends` when `xargs` adds words of its input at the end.
fn form(name: Option<&str>, fields: &[Vec<Part>], appends: bool) -> Form {
    let mut out: Form = Vec::new();
    let rest = match name {
        Some(name) => {
            out.extend(name.chars().map(El::Char));
            fields
        }
        None => {
            let (first, _) = template(&fields[0]);
            out.extend(first);
            &fields[1..]
        }
    };
    for field in rest {
        let (els, vanishes) = template(field);
        if vanishes {
            // The space before a word that may not be there is part of what may vanish.
            if out.last() != Some(&El::Any) {
                out.push(El::Any);
            }
        } else {
            out.push(El::Char(' '));
            out.extend(els);
        }
    }
    if appends && out.last() != Some(&El::Any) {
        out.push(El::Any);
    }
    out
}

/// The program a command word names, as written and by its name alone; why it cannot be known
/// when an expansion makes it.
fn program(field: &[Part]) -> Result<(String, String), String> {
    let written = shell::text_of(field);
    let mut path = String::new();
    for (i, part) in field.iter().enumerate() {
        match part {
            Part::Text { text, quoted } => {
                if !quoted && (text.contains(['*', '?']) || is_bracket_pattern(text)) {
                    return Err(format!(
                        "the command word {written:?} is a pattern: the program is whichever file it matches"
                    ));
                }
                path.push_str(text);
            }
            // `~/bin/git` is a `git`, wherever the home directory is.
            Part::Tilde(tilde) if i == 0 => path.push_str(tilde),
            Part::Command { .. } | Part::Process { .. } => {
                return Err(format!(
                    "the command word {written:?} is what a substitution prints, known only when it runs"
                ))
            }
            _ => {
                return Err(format!(
                    "the command word {written:?} is a variable's value, known only when it runs"
                ))
            }
        }
    }
    let name = path.rsplit('/').next().unwrap_or(&path).to_string();
    if name.is_empty() {
        return Err(format!("the command word {written:?} names no program"));
    }
    Ok((path, name))
}

/// What a wrapper takes before the command it runs.
struct Skip {
    words: usize,
    /// `xargs`: the words of its input come after the command's.
    appends: bool,
}

/// A wrapper's options: those that take the next word as their value, and those that make it
/// run something the filter cannot see.
struct Options {
    valued: &'static str,
    long_valued: &'static [&'static str],
    unseen: &'static [(&'static str, &'static str)],
}

/// `Some` when `name` is a wrapper: what it takes before its command, or why the command cannot
/// be known.
fn wrapper(name: &str, rest: &[Vec<Part>]) -> Option<Result<Skip, String>> {
    const NONE: Options = Options {
        valued: "",
        long_valued: &[],
        unseen: &[],
    };
    let options = match name {
        "env" => Options {
            valued: "uCP",
            long_valued: &["--unset", "--chdir"],
            unseen: &[
                ("-S", "env -S splits its text into a command line"),
                (
                    "--split-string",
                    "env -S splits its text into a command line",
                ),
            ],
        },
        "command" | "builtin" | "nohup" | "coproc" | "busybox" => NONE,
        "exec" => Options {
            valued: "a",
            ..NONE
        },
        "nice" => Options {
            valued: "n",
            long_valued: &["--adjustment"],
            ..NONE
        },
        "timeout" => Options {
            valued: "sk",
            long_valued: &["--signal", "--kill-after"],
            ..NONE
        },
        "sudo" => Options {
            valued: "ugCDhprtTUR",
            long_valued: &[
                "--user",
                "--group",
                "--close-from",
                "--chdir",
                "--host",
                "--prompt",
                "--role",
                "--type",
                "--command-timeout",
                "--other-user",
                "--chroot",
            ],
            unseen: &[
                (
                    "-s",
                    "sudo -s joins its words into a line for a shell to run",
                ),
                (
                    "-i",
                    "sudo -i joins its words into a line for a shell to run",
                ),
                (
                    "--shell",
                    "sudo -s joins its words into a line for a shell to run",
                ),
                (
                    "--login",
                    "sudo -i joins its words into a line for a shell to run",
                ),
            ],
        },
        "xargs" => Options {
            valued: "adEILnPs",
            long_valued: &[
                "--arg-file",
                "--delimiter",
                "--eof",
                "--replace",
                "--max-lines",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            ],
            ..NONE
        },
        "time" => Options {
            valued: "fo",
            long_valued: &["--format", "--output"],
            ..NONE
        },
        "stdbuf" => Options {
            valued: "ioe",
            long_valued: &["--input", "--output", "--error"],
            ..NONE
        },
        _ => return None,
    };
    Some(skip_options(name, &options, rest))
}

fn skip_options(name: &str, options: &Options, rest: &[Vec<Part>]) -> Result<Skip, String> {
    let mut i = 0;
    let mut replaces = false;
    while let Some(field) = rest.get(i) {
        let Some(word) = shell::literal_of(field) else {
            return Err(format!(
                "a word after {name} is known only when it runs, so the command it runs is too"
            ));
        };
        if word == "--" {
            i += 1;
            break;
        }
        let option = word.len() > 1 && word.starts_with('-') || (name == "env" && word == "-");
        if !option {
            break;
        }
        let flag = word.split('=').next().unwrap_or(&word);
        let letters = word.strip_prefix('-').unwrap_or(&word);
        let unseen = options.unseen.iter().find(|(o, _)| {
            *o == flag || (o.len() == 2 && !word.starts_with("--") && letters.contains(&o[1..]))
        });
        if let Some((_, why)) = unseen {
            return Err(why.to_string());
        }
        if name == "xargs" && (flag == "--replace" || letters.starts_with(['I', 'i'])) {
            replaces = true;
        }
        if word.starts_with("--") {
            i += if !word.contains('=') && options.long_valued.contains(&flag) {
                2
            } else {
                1
            };
            continue;
        }
        // `-n5` carries its value; `-n 5` takes the next word.
        i += 1;
        if let Some(at) = letters.find(|c| options.valued.contains(c)) {
            if at + 1 == letters.len() {
                i += 1;
            }
        }
    }
    match name {
        // Its duration.
        "timeout" => i += 1,
        "env" => {
            while rest.get(i).is_some_and(|f| {
                shell::literal_of(f).is_some_and(|w| {
                    w.split_once('=').is_some_and(|(n, _)| {
                        !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    })
                })
            }) {
                i += 1;
            }
        }
        _ => {}
    }
    if replaces {
        return Err("xargs -I puts the words of its input inside the command it runs".into());
    }
    Ok(Skip {
        words: i.min(rest.len()),
        appends: name == "xargs",
    })
}

/// Why a shell runs text the filter does not read: a string after `-c`, or its input (a
/// here-document, a here-string, a pipe) when no script file is named.
fn shell_given_text(name: &str, args: &[Vec<Part>], cmd: &shell::Command) -> Option<String> {
    let powershell = name == "pwsh" || name == "powershell";
    let mut i = 0;
    while let Some(field) = args.get(i) {
        let Some(word) = shell::literal_of(field) else {
            return Some(format!("a word after {name} is known only when it runs"));
        };
        if word == "--" || word == "-" {
            break;
        }
        let option = word.len() > 1 && (word.starts_with('-') || word.starts_with('+'));
        if !option {
            // A script file: it runs what the file holds, as any program does.
            return None;
        }
        let letters = &word[1..];
        if powershell {
            let lower = letters.to_ascii_lowercase();
            if lower.starts_with('c') || lower.starts_with('e') {
                return Some(format!("{name} {word} runs its text as commands"));
            }
        } else if !word.starts_with("--") {
            if letters.contains('c') {
                return Some(format!("{name} -c runs its text as a command line"));
            }
            if letters.contains('s') || letters.contains('i') {
                return Some(format!("{name} {word} runs the commands of its input"));
            }
            if letters.contains(['o', 'O']) {
                i += 1;
            }
        } else if matches!(word.as_str(), "--rcfile" | "--init-file") {
            i += 1;
        }
        i += 1;
    }
    let fed = cmd
        .redirects
        .iter()
        .find_map(|r| match (r.fd.as_deref(), r.op) {
            (None | Some("0"), Op::Heredoc { .. }) => Some("a here-document"),
            (None | Some("0"), Op::HereString) => Some("a here-string"),
            (None | Some("0"), Op::Input | Op::ReadWrite) => Some("a file"),
            _ => None,
        });
    match fed {
        Some("a file") => None,
        Some(what) => Some(format!("{name} runs the commands of {what} fed to it")),
        None => Some(format!("{name} runs the commands of its input")),
    }
}

/// Why bash may run a command through `word` by evaluating a variable as arithmetic: a name in
/// `$((…))` or `((…))`, a subscript or an offset of `${…}`, `[[ … -eq … ]]`, a subscript being
/// assigned.
fn bash_arithmetic(word: &Word) -> Option<String> {
    const WHY: &str =
        "bash evaluates a variable's value as arithmetic there, which may run a command";
    for part in &word.parts {
        match part {
            Part::Arithmetic { written, .. } => {
                let inner = written.trim_start_matches('$');
                if names(inner) {
                    return Some(format!("{written}: {WHY}"));
                }
            }
            Part::Parameter { written, .. } => {
                let Some(inner) = written.strip_prefix("${").and_then(|w| w.strip_suffix('}'))
                else {
                    continue;
                };
                let name_len = inner
                    .find(|c: char| {
                        !(c.is_ascii_alphanumeric() || c == '_' || c == '#' || c == '!')
                    })
                    .unwrap_or(inner.len());
                let rest = &inner[name_len..];
                let subscript = rest.starts_with('[') && names(&rest[1..].replace(['@', '*'], ""));
                let offset = rest.starts_with(':')
                    && !rest[1..].starts_with(['-', '=', '?', '+'])
                    && names(&rest[1..]);
                if subscript || offset {
                    return Some(format!("{written}: {WHY}"));
                }
            }
            _ => {}
        }
    }
    if word.is_assignment() {
        let text = word.text();
        if let Some(open) = text.find('[') {
            if text[..open]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                let sub = &text[open + 1..text[open..].find(']').map_or(text.len(), |e| open + e)];
                if names(sub) {
                    return Some(format!("{}: {WHY}", word.written));
                }
            }
        }
    }
    None
}

/// Returns true if and only if arithmetic `text` names a variable (`x`, `$x`), not counting the
/// letters of numbers (`0x1F`, `2#101`).
fn names(text: &str) -> bool {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|n| n.is_ascii_alphanumeric() || *n == '#' || *n == '_')
            {
                chars.next();
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == '$' {
            return true;
        }
    }
    false
}

/// Why a bash builtin of `name` may evaluate a variable as arithmetic: `let`, `[[ … -eq … ]]`,
/// `declare -i` and its kin.
fn bash_arithmetic_builtin(name: &str, args: &[Vec<Part>]) -> Option<String> {
    let words: Vec<String> = args.iter().map(|f| shell::text_of(f)).collect();
    let evaluates = match name {
        "let" => true,
        "[[" => words
            .iter()
            .any(|w| matches!(w.as_str(), "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge")),
        "declare" | "typeset" | "local" | "readonly" | "export" => words
            .iter()
            .any(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('i')),
        _ => false,
    };
    evaluates.then(|| {
        format!("{name} evaluates variables as arithmetic, which bash may make run a command")
    })
}

#[cfg(test)]
#[path = "command_tests.rs"]
mod tests;
