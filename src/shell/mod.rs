//! A command line read as a POSIX shell reads it (dash, `/bin/sh` on Debian and Ubuntu), or as
//! bash does: the one reading that trust's named files, the `if` filter and `validate` share.
//!
//! [`parse`] gives every simple command of the text, those inside subshells, command and process
//! substitutions and the here-documents of unquoted delimiters included, each with its words and
//! its redirections. A word keeps what it was written as and its parts after quote removal: text
//! (quoted or not), a tilde prefix, parameter expansions, command substitutions, arithmetic.
//!
//! What it reads as the shell does: blanks are space and tab (a carriage return is an ordinary
//! character); `'…'`, `"…"` and backslashes; a backslash-newline is removed wherever a shell
//! removes it (not inside single quotes, nor in the body of a here-document with a quoted
//! delimiter); `#` begins a comment only where a word would begin; `&&`, `||`, `;`, `;;`, `|`,
//! `|&`, `&`, newlines, `(` and `)` with or without blanks around them; redirections (`2>&1`,
//! `&>`, `<<<`, `<>`, `{fd}>`); here-documents (`<<`, `<<-`, quoted delimiters), whose bodies are
//! read at the next newline and never taken for commands, while `<<` inside `$((…))` or `((…))`
//! is a shift; `case` patterns; bash's `[[ … ]]`, where `<`, `&&` and `(` are words.
//!
//! Where bash and `/bin/sh` read the same text differently, the two [`Dialect`]s say so, and a
//! caller that must cover whatever runs reads both: `$'…'` and `$"…"` (bash's quotes; dash reads
//! `$'g.sh'` as `$g.sh`), brace expansion (`{a,b}`, bash only, see [`Word::fields`]), `((…))`
//! (bash's arithmetic command; two subshells to dash) and `[[ … ]]`.
//!
//! The reading is linear in the text, its nesting bounded by [`MAX_DEPTH`], and it never panics.
//! What it cannot read (a quote or a substitution left open, nesting past the bound, a `(` after
//! a command's words, which both shells refuse and bash reads as a pattern only with an option
//! on) is an [`Error`], with every command read before it. It may refuse more than a shell
//! would (bash reads `$((a); b)` again as a substitution), never less.

mod brace;
mod scan;
pub mod scripts;
mod word;

#[cfg(test)]
mod tests;

use std::fmt;

/// How deep subshells, substitutions, `${…}` and arithmetic may nest.
pub const MAX_DEPTH: usize = 16;

/// How many words one word may become by bash's brace expansion.
pub const MAX_FIELDS: usize = 256;

/// Which shell reads the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// A POSIX shell, as dash reads it.
    Sh,
    /// Bash.
    Bash,
}

impl Dialect {
    /// Both, `/bin/sh` first.
    pub const ALL: [Dialect; 2] = [Dialect::Sh, Dialect::Bash];

    pub fn name(self) -> &'static str {
        match self {
            Dialect::Sh => "/bin/sh",
            Dialect::Bash => "bash",
        }
    }
}

/// Why a text cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// A quote opened and never closed.
    UnclosedQuote(char),
    /// `$(`, `(`, `${`, `$((` or `` ` `` opened and never closed.
    Unclosed(&'static str),
    /// Nested more than [`MAX_DEPTH`] levels deep.
    TooDeep,
    /// Something the shell would refuse, said in a few words.
    Syntax(&'static str),
    /// One word that bash's brace expansion makes more than [`MAX_FIELDS`] words of.
    TooManyFields,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnclosedQuote(q) => write!(f, "a {q} quote is never closed"),
            Error::Unclosed(what) => write!(f, "a {what} is never closed"),
            Error::TooDeep => {
                write!(f, "commands are nested more than {MAX_DEPTH} levels deep")
            }
            Error::Syntax(what) => f.write_str(what),
            Error::TooManyFields => write!(
                f,
                "a word makes more than {MAX_FIELDS} words by bash's brace expansion"
            ),
        }
    }
}

/// What [`parse`] read: every simple command, in the order each ends (the commands of a
/// substitution before the command that holds it), and the error that stopped it, if any.
#[derive(Clone, Debug)]
pub struct Parse {
    pub dialect: Dialect,
    pub commands: Vec<Command>,
    pub error: Option<Error>,
}

/// Reads `text` as `dialect` reads it.
pub fn parse(text: &str, dialect: Dialect) -> Parse {
    let (commands, error) = scan::Scanner::read(text.as_bytes(), dialect);
    Parse {
        dialect,
        commands,
        error,
    }
}

/// One simple command: its words in order (the shell's own words such as `if` or `{`, and
/// leading assignments, included), and its redirections.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Command {
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
}

/// One word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    /// Where it starts, in the text read.
    pub start: usize,
    /// As written, with the backslash-newlines the shell removes removed.
    pub written: String,
    pub parts: Vec<Part>,
}

/// A piece of a word after quote removal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Text; `quoted` when it was inside quotes or escaped by a backslash.
    Text { text: String, quoted: bool },
    /// `~` or `~name` at the start of a word.
    Tilde(String),
    /// `$name`, `$1`, `$@`, `${…}`, as written.
    Parameter { written: String, quoted: bool },
    /// `$(…)` or `` `…` ``, as written; its commands are among the parse's.
    Command { written: String, quoted: bool },
    /// `$((…))` as written (bash's `((…))` command is a word of this one part).
    Arithmetic { written: String, quoted: bool },
    /// `<(…)` or `>(…)`, as written; its commands are among the parse's.
    Process { written: String },
}

impl Part {
    /// Returns true if and only if the part is known only when the command runs.
    pub fn expands(&self) -> bool {
        !matches!(self, Part::Text { .. })
    }

    /// Returns true if and only if the part is quoted (an expansion in double quotes is one
    /// field, never split).
    pub fn quoted(&self) -> bool {
        match self {
            Part::Text { quoted, .. }
            | Part::Parameter { quoted, .. }
            | Part::Command { quoted, .. }
            | Part::Arithmetic { quoted, .. } => *quoted,
            Part::Tilde(_) | Part::Process { .. } => false,
        }
    }
}

impl Word {
    /// The word with its quotes removed and its expansions as written: `"$HOME"/x` is
    /// `$HOME/x`, `'a b'` is `a b`.
    pub fn text(&self) -> String {
        text_of(&self.parts)
    }

    /// What the word is when it holds no expansion and no pattern a shell would match against
    /// file names (an unquoted `*`, `?` or `[`): `\git`, `'git'` and `g""it` are all `git`.
    pub fn literal(&self) -> Option<String> {
        literal_of(&self.parts)
    }

    /// Returns true if and only if the word is `word` itself, unquoted: how the shell's own
    /// words (`case`, `in`, `esac`, `[[`) are recognised.
    pub fn is(&self, word: &str) -> bool {
        matches!(self.parts.as_slice(), [Part::Text { text, quoted: false }] if text == word)
    }

    /// Returns true if and only if the word is an assignment, `NAME=value`, `NAME+=value` or
    /// (bash) `NAME[subscript]=value`, its name unquoted.
    pub fn is_assignment(&self) -> bool {
        let Some(Part::Text {
            text,
            quoted: false,
        }) = self.parts.first()
        else {
            return false;
        };
        let name_end = text
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(text.len());
        if name_end == 0 || text.starts_with(|c: char| c.is_ascii_digit()) {
            return false;
        }
        let rest = &text[name_end..];
        if rest.starts_with('=') || rest.starts_with("+=") {
            return true;
        }
        // A subscript may hold expansions: what follows its `]` in the whole word decides.
        rest.starts_with('[') && {
            let whole = self.text();
            whole[name_end..]
                .find(']')
                .map(|end| &whole[name_end + end + 1..])
                .is_some_and(|after| after.starts_with('=') || after.starts_with("+="))
        }
    }

    /// The words `dialect` makes of this one before any expansion runs: bash's brace expansion
    /// (`{a,b}.sh` is `a.sh` and `b.sh`, `{1..3}` is three words, `{git,}` is `git` alone),
    /// one word as it is to `/bin/sh`.
    pub fn fields(&self, dialect: Dialect) -> Result<Vec<Vec<Part>>, Error> {
        match dialect {
            Dialect::Sh => Ok(vec![self.parts.clone()]),
            Dialect::Bash => brace::expand(&self.parts),
        }
    }
}

/// [`Word::text`] of parts.
pub fn text_of(parts: &[Part]) -> String {
    let mut out = String::new();
    for part in parts {
        match part {
            Part::Text { text, .. } => out.push_str(text),
            Part::Tilde(text) => out.push_str(text),
            Part::Parameter { written, .. }
            | Part::Command { written, .. }
            | Part::Arithmetic { written, .. }
            | Part::Process { written } => out.push_str(written),
        }
    }
    out
}

/// [`Word::literal`] of parts.
pub fn literal_of(parts: &[Part]) -> Option<String> {
    let mut out = String::new();
    for part in parts {
        match part {
            Part::Text {
                text,
                quoted: false,
            } if text.contains(['*', '?', '[']) => return None,
            Part::Text { text, .. } => out.push_str(text),
            _ => return None,
        }
    }
    Some(out)
}

/// One redirection: `2>&1` is descriptor `2`, [`Op::DupOutput`], target `1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirect {
    /// The descriptor written before the operator (`2`, or bash's `{name}`).
    pub fd: Option<String>,
    pub op: Op,
    /// The file, descriptor, string or here-document delimiter.
    pub target: Word,
    /// A here-document's body, once the line that opened it has ended.
    pub heredoc: Option<Heredoc>,
}

/// A redirection's operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Input,
    /// `<>`
    ReadWrite,
    /// `<&`
    DupInput,
    /// `>`
    Output,
    /// `>>`
    Append,
    /// `>|`
    Clobber,
    /// `>&`
    DupOutput,
    /// `&>` (bash)
    OutputBoth,
    /// `&>>` (bash)
    AppendBoth,
    /// `<<`, or `<<-` (`strip_tabs`)
    Heredoc { strip_tabs: bool },
    /// `<<<` (bash)
    HereString,
}

impl Op {
    /// Returns true if and only if the command reads what the target names or holds (a file,
    /// a here-string, a here-document) rather than writing to it.
    pub fn reads(self) -> bool {
        match self {
            Op::Input | Op::ReadWrite | Op::DupInput | Op::Heredoc { .. } | Op::HereString => true,
            Op::Output | Op::Append | Op::Clobber | Op::DupOutput | Op::OutputBoth => false,
            Op::AppendBoth => false,
        }
    }
}

/// A here-document's body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Heredoc {
    /// The lines, each with its newline, without the delimiter's line (leading tabs removed for
    /// `<<-`). With an unquoted delimiter its expansions are as written; their commands are
    /// among the parse's.
    pub body: String,
    /// Whether the delimiter was quoted, so that the body is taken as it is.
    pub quoted: bool,
}
