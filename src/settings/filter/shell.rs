//! The subcommands of a shell command, as an `if` on the shell tool tests them (contract §16):
//! a command is cut at `&&`, `||`, `;`, `|`, `&` and line breaks, and each part is one
//! subcommand, as is each command inside `( … )`, `$( … )`, `` ` … ` `` and `<( … )`.
//!
//! A subcommand is what runs: its words as written (quotes kept), joined by one space, without
//! the leading `VAR=value` assignments, the redirections (`> out`, `2>&1`, `<<EOF` and the here
//! document's lines), the process wrappers `timeout`, `time`, `nice`, `nohup` and `stdbuf`
//! with their options, and the shell's own words around it (`if`, `then`, `do`, `{`, `!`, …).
//! So `FOO=1 timeout 30 git commit -m "x y" 2>&1` is `git commit -m "x y"`.
//!
//! What cannot be split as a shell would split it (a quote, `$(`, `${` or `` ` `` left open, or
//! commands nested deeper than [`MAX_DEPTH`]) is an error: the `if` cannot be evaluated.

use std::fmt;

/// How deep `( … )`, `$( … )` and `` ` … ` `` may nest.
pub const MAX_DEPTH: usize = 16;

/// Why a command cannot be split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SplitError {
    /// A quote opened and never closed.
    UnclosedQuote(char),
    /// `$(`, `(`, `${` or `` ` `` opened and never closed.
    Unclosed(&'static str),
    /// Commands nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

impl fmt::Display for SplitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SplitError::UnclosedQuote(q) => write!(f, "a {q} quote is never closed"),
            SplitError::Unclosed(what) => write!(f, "a {what} is never closed"),
            SplitError::TooDeep => {
                write!(f, "commands are nested more than {MAX_DEPTH} levels deep")
            }
        }
    }
}

/// Every subcommand of `command`, in the order they end: the commands of a substitution before
/// the command that holds it.
pub fn subcommands(command: &str) -> Result<Vec<String>, SplitError> {
    let mut scanner = Scanner {
        src: command,
        at: 0,
        out: Vec::new(),
        heredocs: Vec::new(),
    };
    scanner.list(None, 0)?;
    Ok(scanner.out)
}

/// What the word being read will be, once it ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pending {
    /// A word of the command.
    Word,
    /// The target of a redirection: left out.
    Target,
    /// A here document's delimiter (`true`: `<<-`, leading tabs stripped): left out, and the
    /// document's lines skipped at the next line break.
    Delimiter(bool),
}

/// One simple command as it is read: its words as ranges of the source.
struct Command {
    words: Vec<(usize, usize)>,
    /// Where the word being read started.
    start: Option<usize>,
    pending: Pending,
}

impl Command {
    fn new() -> Command {
        Command {
            words: Vec::new(),
            start: None,
            pending: Pending::Word,
        }
    }
}

struct Scanner<'a> {
    src: &'a str,
    at: usize,
    out: Vec<String>,
    /// Here documents whose lines start after the next line break.
    heredocs: Vec<(String, bool)>,
}

impl Scanner<'_> {
    fn byte(&self, at: usize) -> Option<u8> {
        self.src.as_bytes().get(at).copied()
    }

    /// Commands up to `close` (`)` or `` ` ``), or to the end of the text when `close` is
    /// `None`; the closing byte is consumed.
    fn list(&mut self, close: Option<u8>, depth: usize) -> Result<(), SplitError> {
        if depth > MAX_DEPTH {
            return Err(SplitError::TooDeep);
        }
        let mut cmd = Command::new();
        loop {
            let Some(c) = self.byte(self.at) else {
                return match close {
                    Some(b')') => Err(SplitError::Unclosed("( … )")),
                    Some(_) => Err(SplitError::Unclosed("` … `")),
                    None => {
                        self.finish(&mut cmd);
                        Ok(())
                    }
                };
            };
            let next = self.byte(self.at + 1);
            match c {
                b'\\' if next == Some(b'\n') => {
                    self.end_word(&mut cmd);
                    self.at += 2;
                }
                b' ' | b'\t' | b'\r' => {
                    self.end_word(&mut cmd);
                    self.at += 1;
                }
                b'\n' => {
                    self.finish(&mut cmd);
                    self.at += 1;
                    self.skip_heredocs();
                }
                _ if Some(c) == close => {
                    self.finish(&mut cmd);
                    self.at += 1;
                    return Ok(());
                }
                b'&' if next == Some(b'>') => self.redirect(&mut cmd),
                b';' | b'&' | b'|' => {
                    self.finish(&mut cmd);
                    self.at += 1;
                    // `&&`, `||`, `;;`, `|&`
                    if next == Some(c) || (c == b'|' && next == Some(b'&')) {
                        self.at += 1;
                    }
                }
                b'(' => {
                    self.finish(&mut cmd);
                    self.at += 1;
                    self.list(Some(b')'), depth + 1)?;
                }
                // A `)` that closes nothing here (a `case` pattern): it ends the command.
                b')' => {
                    self.finish(&mut cmd);
                    self.at += 1;
                }
                b'<' | b'>' if next == Some(b'(') => {
                    self.start_word(&mut cmd);
                    self.at += 2;
                    self.list(Some(b')'), depth + 1)?;
                }
                b'<' | b'>' => self.redirect(&mut cmd),
                b'#' if cmd.start.is_none() => {
                    while self.byte(self.at).is_some_and(|b| b != b'\n') {
                        self.at += 1;
                    }
                }
                _ => {
                    self.start_word(&mut cmd);
                    self.word_part(close, depth)?;
                }
            }
        }
    }

    /// One piece of a word at `self.at`: a quoted string, an expansion or substitution, an
    /// escaped byte, or a plain byte.
    fn word_part(&mut self, close: Option<u8>, depth: usize) -> Result<(), SplitError> {
        let c = self.byte(self.at).unwrap_or_default();
        let next = self.byte(self.at + 1);
        match c {
            b'\'' => self.single_quoted(),
            b'"' => self.double_quoted(depth),
            b'`' if close != Some(b'`') => {
                self.at += 1;
                self.list(Some(b'`'), depth + 1)
            }
            b'$' if next == Some(b'(') => {
                self.at += 2;
                self.list(Some(b')'), depth + 1)
            }
            b'$' if next == Some(b'{') => self.braced(depth),
            b'$' if next == Some(b'\'') => {
                self.at += 1;
                self.ansi_quoted()
            }
            b'\\' => {
                self.at = (self.at + 2).min(self.src.len());
                // Never inside a character: a backslash before a multi-byte one.
                while !self.src.is_char_boundary(self.at) {
                    self.at += 1;
                }
                Ok(())
            }
            _ => {
                self.at += 1;
                Ok(())
            }
        }
    }

    fn single_quoted(&mut self) -> Result<(), SplitError> {
        match self.src[self.at + 1..].find('\'') {
            Some(end) => {
                self.at += end + 2;
                Ok(())
            }
            None => Err(SplitError::UnclosedQuote('\'')),
        }
    }

    /// `$'…'`, with backslash escapes; `self.at` is at its quote.
    fn ansi_quoted(&mut self) -> Result<(), SplitError> {
        self.at += 1;
        loop {
            match self.byte(self.at) {
                None => return Err(SplitError::UnclosedQuote('\'')),
                Some(b'\\') => self.at += 2,
                Some(b'\'') => {
                    self.at += 1;
                    return Ok(());
                }
                Some(_) => self.at += 1,
            }
        }
    }

    fn double_quoted(&mut self, depth: usize) -> Result<(), SplitError> {
        self.at += 1;
        loop {
            let next = self.byte(self.at + 1);
            match self.byte(self.at) {
                None => return Err(SplitError::UnclosedQuote('"')),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(());
                }
                Some(b'\\') => self.at += 2,
                Some(b'$') if next == Some(b'(') => {
                    self.at += 2;
                    self.list(Some(b')'), depth + 1)?;
                }
                Some(b'$') if next == Some(b'{') => self.braced(depth)?,
                Some(b'`') => {
                    self.at += 1;
                    self.list(Some(b'`'), depth + 1)?;
                }
                Some(_) => self.at += 1,
            }
        }
    }

    /// `${…}`, which may hold quotes, substitutions and braces of its own.
    fn braced(&mut self, depth: usize) -> Result<(), SplitError> {
        self.at += 2;
        let mut open = 1;
        loop {
            let next = self.byte(self.at + 1);
            match self.byte(self.at) {
                None => return Err(SplitError::Unclosed("${ … }")),
                Some(b'}') => {
                    self.at += 1;
                    open -= 1;
                    if open == 0 {
                        return Ok(());
                    }
                }
                Some(b'{') => {
                    self.at += 1;
                    open += 1;
                }
                Some(b'"') => self.double_quoted(depth)?,
                Some(b'\\') => self.at += 2,
                Some(b'$') if next == Some(b'(') => {
                    self.at += 2;
                    self.list(Some(b')'), depth + 1)?;
                }
                Some(_) => self.at += 1,
            }
        }
    }

    /// A redirection at `self.at` (`<`, `>` or `&>`): its operator, and what it makes of the
    /// next word. A number right before it is the descriptor, part of the redirection.
    fn redirect(&mut self, cmd: &mut Command) {
        if let Some(start) = cmd.start {
            let so_far = &self.src[start..self.at];
            if !so_far.is_empty() && so_far.bytes().all(|b| b.is_ascii_digit()) {
                cmd.start = None;
            } else {
                self.end_word(cmd);
            }
        }
        let rest = &self.src.as_bytes()[self.at..];
        let operators: [(&[u8], Pending); 12] = [
            (b"&>>", Pending::Target),
            (b"&>", Pending::Target),
            (b"<<<", Pending::Target),
            (b"<<-", Pending::Delimiter(true)),
            (b"<<", Pending::Delimiter(false)),
            (b">>", Pending::Target),
            (b">|", Pending::Target),
            (b"<>", Pending::Target),
            (b">&", Pending::Target),
            (b"<&", Pending::Target),
            (b">", Pending::Target),
            (b"<", Pending::Target),
        ];
        let (op, pending) = operators
            .iter()
            .find(|(op, _)| rest.starts_with(op))
            .copied()
            .unwrap_or((b">", Pending::Target));
        self.at += op.len();
        if op.ends_with(b"&") {
            // `2>&1`, `>&-`: the descriptor is part of the operator.
            let digits = self.src.as_bytes()[self.at..]
                .iter()
                .take_while(|b| b.is_ascii_digit() || **b == b'-')
                .count();
            if digits > 0 {
                self.at += digits;
                return;
            }
        }
        cmd.pending = pending;
    }

    fn start_word(&self, cmd: &mut Command) {
        if cmd.start.is_none() {
            cmd.start = Some(self.at);
        }
    }

    fn end_word(&mut self, cmd: &mut Command) {
        let Some(start) = cmd.start.take() else {
            return;
        };
        match std::mem::replace(&mut cmd.pending, Pending::Word) {
            Pending::Word => cmd.words.push((start, self.at)),
            Pending::Target => {}
            Pending::Delimiter(strip_tabs) => {
                let word = &self.src[start..self.at];
                let delimiter: String = word.chars().filter(|c| !"'\"\\".contains(*c)).collect();
                self.heredocs.push((delimiter, strip_tabs));
            }
        }
    }

    /// Ends the command being read and adds it, as people read it, when anything of it runs.
    fn finish(&mut self, cmd: &mut Command) {
        self.end_word(cmd);
        cmd.pending = Pending::Word;
        let words: Vec<&str> = cmd
            .words
            .drain(..)
            .map(|(start, end)| &self.src[start..end])
            .collect();
        let text = what_runs(&words).join(" ");
        if !text.is_empty() {
            self.out.push(text);
        }
    }

    /// Skips the lines of the here documents started on the line just ended.
    fn skip_heredocs(&mut self) {
        for (delimiter, strip_tabs) in std::mem::take(&mut self.heredocs) {
            while self.at < self.src.len() {
                let rest = &self.src[self.at..];
                let (line, len) = match rest.find('\n') {
                    Some(end) => (&rest[..end], end + 1),
                    None => (rest, rest.len()),
                };
                self.at += len;
                let line = line.strip_suffix('\r').unwrap_or(line);
                let line = if strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line
                };
                if line == delimiter {
                    break;
                }
            }
        }
    }
}

/// The shell's own words that may stand before a command (`if`, `then`, `{`, `!`, …) or alone
/// after one (`fi`, `done`, `}`, …): not part of what runs.
const SHELL_WORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "elif", "else", "fi", "do", "done", "while", "until", "esac",
];

/// The words of a command that say what runs: without the shell's own words, the leading
/// assignments and the process wrappers in front of it.
fn what_runs<'w>(mut words: &'w [&'w str]) -> &'w [&'w str] {
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
