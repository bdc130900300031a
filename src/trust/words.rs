//! The words of a handler's `command` that may name a file it runs, split as `/bin/sh` splits
//! them (contract §13), for the files the digest covers outside the hooks folder.
//!
//! The words are the shell's reading ([`crate::shell`], the one the `if` filter and `validate`
//! use): quotes (`'…'`, `"…"`, `$'…'`, backslashes), comments, line breaks, the operators (`;`,
//! `&`, `|`, `(`, `)`) and redirections, glued to a word or not (`g.sh>log`, `2>&1`, `sh<g.sh`,
//! `0<g.sh`, `<>g.sh`, `&>log`), here-documents. The target of an output redirection is left
//! out: a file a hook writes to is not a file it runs, and hashing it would change the digest
//! with every run. The target of an input redirection is kept: `sh < g.sh` runs `g.sh`.
//!
//! A command is read as `/bin/sh` reads it and as bash does, and every word of both readings
//! counts: `sh $'g.sh'` runs `g.sh` in bash and `$g.sh` in dash, `sh {g,h}.sh` two scripts in
//! bash and one in dash. [`Words::readings`] lists the words the two read differently, for the
//! review to show.
//!
//! No splitter short of a shell gets every command right, so what it cannot follow (a quote left
//! open, command substitution, a command nested deeper than [`NESTING`]) makes it fall back to
//! something that hashes more, never less: every token of the text, cut at white space, quotes
//! and operators. [`Words::fallback`] says so, and the review shows it.
//!
//! The work is bounded: past [`MAX_READ_BYTES`] of commands read (words read again as commands
//! included), or a word that bash's braces make more than [`shell::MAX_FIELDS`] words of, the
//! words cannot be known, and [`Words::refused`] says why.

use std::collections::{BTreeMap, BTreeSet};

use crate::shell::{self, text_of, Dialect, Part, Word};

/// How deep commands inside commands (`sh -c '…'`) are split.
pub const NESTING: usize = 3;

/// How much text a layer's handlers' commands may hold, words read again as commands included:
/// no review takes in more, and the reading stays short.
pub const MAX_READ_BYTES: usize = 256 << 10;

/// A word that `/bin/sh` and bash read differently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reading {
    /// As written.
    pub written: String,
    /// What `/bin/sh` (dash) makes of it.
    pub sh: Vec<String>,
    /// What bash makes of it.
    pub bash: Vec<String>,
}

/// The candidate words of a handler, and whether any part of it had to fall back.
#[derive(Debug, Default)]
pub struct Words {
    pub words: BTreeSet<String>,
    pub fallback: bool,
    /// The words `/bin/sh` and bash read differently, each reading among [`Self::words`].
    pub readings: Vec<Reading>,
    /// Why the words cannot be known at all, once the reading went past its bounds.
    pub refused: Option<String>,
    /// The bytes read so far.
    read: usize,
}

impl Words {
    /// Adds the words of a `command` run by `/bin/sh -c`.
    pub fn add_command(&mut self, command: &str) {
        self.command(command, 0);
    }

    /// Adds the words of an `argv`: each element, and the words of each element that reads as
    /// a command of its own (white space, quotes or operators in it, as in
    /// `["sh", "-c", "./g.sh;true"]`).
    pub fn add_argv<'a>(&mut self, argv: impl IntoIterator<Item = &'a String>) {
        for word in argv {
            self.word(word.clone(), 0);
        }
    }

    /// Counts `bytes` more read as a command; false once past [`MAX_READ_BYTES`]. (A word that
    /// is not read as a command costs a comparison, and one too long to be a path no look-up.)
    fn budget(&mut self, bytes: usize) -> bool {
        if self.refused.is_some() {
            return false;
        }
        self.read = self.read.saturating_add(bytes);
        if self.read > MAX_READ_BYTES {
            self.refused = Some(format!(
                "the handlers' commands hold more than {} KiB of text to read for the files \
                 they name",
                MAX_READ_BYTES >> 10
            ));
            return false;
        }
        true
    }

    fn command(&mut self, command: &str, depth: usize) {
        if !self.budget(command.len()) {
            return;
        }
        let split = split(command);
        if split.too_many_fields {
            self.refused = Some(format!(
                "a word of the handlers' commands makes more than {} words by bash's brace \
                 expansion",
                shell::MAX_FIELDS
            ));
            return;
        }
        if split.fallback {
            self.fallback = true;
            for token in tokens(command) {
                self.insert(token);
            }
        }
        for reading in split.readings {
            if !self.readings.contains(&reading) {
                self.readings.push(reading);
            }
        }
        for word in split.words {
            self.word(word, depth);
        }
        // A here-document's lines are split as commands: a shell reading them runs them, and
        // splitting them can only add words.
        for body in split.heredocs {
            self.nested(&body, depth);
        }
    }

    /// The words of `text`, a command inside a command, as deep as [`NESTING`] allows.
    fn nested(&mut self, text: &str, depth: usize) {
        if depth < NESTING {
            self.command(text, depth + 1);
        } else {
            self.fallback = true;
            for token in tokens(text) {
                self.insert(token);
            }
        }
    }

    fn word(&mut self, word: String, depth: usize) {
        // Inserted first, so that a word that splits into itself (`a#b`) is split once.
        let new = !self.words.contains(&word);
        self.insert(word.clone());
        if !new || !looks_like_a_command(&word) {
            return;
        }
        self.nested(&word, depth);
    }

    /// One word, with the forms a handler may see it in: the project-directory variables at its
    /// start as the root, and what follows the first `=` (`--config=./x.sh`).
    fn insert(&mut self, word: String) {
        if word.is_empty() {
            return;
        }
        if let Some((_, value)) = word.split_once('=') {
            if !value.is_empty() {
                let value = value.to_string();
                if let Some(expanded) = expand_project_dir(&value) {
                    self.words.insert(expanded);
                }
                self.words.insert(value);
            }
        }
        if let Some(expanded) = expand_project_dir(&word) {
            self.words.insert(expanded);
        }
        self.words.insert(word);
    }
}

/// Returns true if and only if `word` holds something a shell would split it at.
fn looks_like_a_command(word: &str) -> bool {
    word.contains(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                ';' | '&' | '|' | '(' | ')' | '<' | '>' | '\'' | '"' | '`' | '\\' | '#'
            )
    })
}

/// Every token of `text` cut at white space, quotes, operators, `=` and backslashes: the
/// fallback, which finds every path written in the text, whatever the quoting around it (a
/// token that starts with a project-directory variable is the root, as any word).
fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                ';' | '&' | '|' | '(' | ')' | '<' | '>' | '\'' | '"' | '`' | '\\' | '='
            )
    })
    .filter(|t| !t.is_empty())
    .map(str::to_string)
    .collect()
}

/// `$LEVELCODE_PROJECT_DIR/x`, `${CLAUDE_PROJECT_DIR}/x` and the like, as handlers see them:
/// the root, written `.`.
fn expand_project_dir(word: &str) -> Option<String> {
    for var in ["LEVELCODE_PROJECT_DIR", "CLAUDE_PROJECT_DIR"] {
        for form in [format!("${var}"), format!("${{{var}}}")] {
            if let Some(rest) = word.strip_prefix(form.as_str()) {
                if rest.is_empty() || rest.starts_with('/') {
                    return Some(format!(".{rest}"));
                }
            }
        }
    }
    None
}

/// What one pass of the splitter gave.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// The words of both readings.
    pub words: Vec<String>,
    /// Something in the text the splitter cannot follow as a shell would.
    pub fallback: bool,
    /// The bodies of its here-documents: a shell reading one (`sh <<EOF`) runs its lines.
    pub heredocs: Vec<String>,
    /// The words `/bin/sh` and bash read differently.
    pub readings: Vec<Reading>,
    /// A word makes more than [`shell::MAX_FIELDS`] words by bash's brace expansion.
    pub too_many_fields: bool,
}

/// Splits `command` as the shell reads it ([`crate::shell`]), quotes removed, operators and
/// redirections taken off: the words of every command, subshells and substitutions included,
/// and the targets of the input redirections among them, in the order they are written, as
/// `/bin/sh` reads them and then as bash does.
pub fn split(command: &str) -> Split {
    let mut out = Split::default();
    let mut kept: BTreeSet<String> = BTreeSet::new();
    // Each word by where it is and how it is written, with what each shell makes of it.
    let mut seen: BTreeMap<(usize, String), [Option<Vec<String>>; 2]> = BTreeMap::new();
    for (d, dialect) in Dialect::ALL.into_iter().enumerate() {
        let parse = shell::parse(command, dialect);
        out.fallback |= parse.error.is_some();
        for cmd in &parse.commands {
            let targets = cmd
                .redirects
                .iter()
                .filter(|r| r.op.reads())
                .map(|r| &r.target);
            let mut named: Vec<&Word> = cmd.words.iter().chain(targets).collect();
            named.sort_by_key(|w| w.start);
            for word in named {
                // What a substitution prints becomes words nobody can know here.
                if word.parts.iter().any(|p| matches!(p, Part::Command { .. })) {
                    out.fallback = true;
                }
                let Ok(fields) = word.fields(dialect) else {
                    out.too_many_fields = true;
                    return out;
                };
                let texts: Vec<String> = fields.iter().map(|f| text_of(f)).collect();
                for text in &texts {
                    if kept.insert(text.clone()) {
                        out.words.push(text.clone());
                    }
                }
                seen.entry((word.start, word.written.clone())).or_default()[d] = Some(texts);
            }
            for doc in cmd.redirects.iter().filter_map(|r| r.heredoc.as_ref()) {
                if !doc.body.is_empty() && !out.heredocs.contains(&doc.body) {
                    out.heredocs.push(doc.body.clone());
                }
            }
        }
    }
    for ((_, written), [sh, bash]) in seen {
        if let (Some(sh), Some(bash)) = (sh, bash) {
            if sh != bash {
                out.readings.push(Reading { written, sh, bash });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(command: &str) -> Vec<String> {
        split(command).words
    }

    #[test]
    fn words_are_split_as_a_shell_would() {
        assert_eq!(
            words("bun '.levelcode/hooks/a b.ts' && ./c.sh;echo >> log.txt 2>err"),
            ["bun", ".levelcode/hooks/a b.ts", "./c.sh", "echo"]
        );
        assert_eq!(
            words("\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/x.sh < in.txt >out"),
            ["$CLAUDE_PROJECT_DIR/.claude/hooks/x.sh", "in.txt"]
        );
        assert_eq!(words("a\\ b 'c''d' \"e\\\"f\""), ["a b", "cd", "e\"f"]);
        assert_eq!(words("x # sh y.sh\nz"), ["x", "z"]);
        assert_eq!(words("a#b"), ["a#b"]);
    }

    #[test]
    fn glued_redirections_are_taken_off() {
        assert_eq!(words("sh g.sh>/dev/null"), ["sh", "g.sh"]);
        assert_eq!(words("sh g.sh>>log 2>&1"), ["sh", "g.sh"]);
        assert_eq!(words("sh g.sh &>log"), ["sh", "g.sh"]);
        assert_eq!(words("sh g.sh>|log"), ["sh", "g.sh"]);
        assert_eq!(words("sh<g.sh"), ["sh", "g.sh"]);
        assert_eq!(words("sh 0<g.sh"), ["sh", "g.sh"]);
        assert_eq!(words("sh <>g.sh"), ["sh", "g.sh"]);
        assert_eq!(words("exec<g.sh;sh"), ["exec", "g.sh", "sh"]);
        assert_eq!(words("sh g2>x"), ["sh", "g2"]);
        assert_eq!(words("sh '2'>x"), ["sh", "2"], "a quoted number is a word");
    }

    #[test]
    fn what_cannot_be_followed_falls_back() {
        let open = split("sh './g.sh'\necho '");
        assert!(open.fallback);
        assert_eq!(open.words, ["sh", "./g.sh", "echo", ""]);
        assert!(split("sh $(echo g.sh)").fallback);
        assert!(split("sh `echo g.sh`").fallback);
        assert!(!split("sh g.sh").fallback);

        let mut all = Words::default();
        all.add_command("x=\"$(cat a.sh)\" sh 'b.sh\n");
        all.add_command("sh $'c.sh' \"${LEVELCODE_PROJECT_DIR}/d.sh\"");
        assert!(all.fallback);
        for token in ["a.sh", "b.sh", "cat", "sh", "c.sh", "./d.sh"] {
            assert!(all.words.contains(token), "{token}: {:?}", all.words);
        }
    }

    #[test]
    fn commands_in_words_are_split_again() {
        let mut all = Words::default();
        all.add_argv(&["sh".into(), "-c".into(), "./g.sh;true".into()]);
        all.add_argv(&["sh".into(), "-c".into(), "./h.sh&&true".into()]);
        all.add_command("sh -c 'sh -c \"sh ./deep.sh>/dev/null\"'");
        for word in ["./g.sh", "./h.sh", "./deep.sh"] {
            assert!(all.words.contains(word), "{word}: {:?}", all.words);
        }
        assert!(!all.fallback);
    }

    #[test]
    fn every_reading_of_bash_and_sh_is_a_word_and_is_listed() {
        let mut all = Words::default();
        all.add_command("sh $'g.sh' {a,b}.sh");
        for word in ["g.sh", "$g.sh", "a.sh", "b.sh", "{a,b}.sh"] {
            assert!(all.words.contains(word), "{word}: {:?}", all.words);
        }
        assert!(!all.fallback, "both readings are known");
        let written: Vec<&str> = all.readings.iter().map(|r| r.written.as_str()).collect();
        assert_eq!(written, ["$'g.sh'", "{a,b}.sh"]);
        assert_eq!(all.readings[0].sh, ["$g.sh"]);
        assert_eq!(all.readings[0].bash, ["g.sh"]);
        assert_eq!(all.readings[1].bash, ["a.sh", "b.sh"]);
        // What dash cannot read at all falls back; bash's reading still counts.
        let mut quoted = Words::default();
        quoted.add_command("sh $'it\\'s.sh'");
        assert!(quoted.fallback);
        assert!(quoted.words.contains("it's.sh"), "{:?}", quoted.words);
    }

    #[test]
    fn the_text_read_is_bounded() {
        let mut all = Words::default();
        all.add_command(&format!("sh /{}", "a/".repeat(MAX_READ_BYTES)));
        assert!(all.refused.as_deref().unwrap().contains("256 KiB"));
        let mut braces = Words::default();
        braces.add_command(&format!("sh {}", "{a,b}".repeat(10)));
        assert!(braces
            .refused
            .as_deref()
            .unwrap()
            .contains("brace expansion"));
        let mut fine = Words::default();
        fine.add_command(&format!("sh /{} ./g.sh", "a/".repeat(MAX_READ_BYTES / 4)));
        assert!(fine.refused.is_none() && fine.words.contains("./g.sh"));
    }

    #[test]
    fn the_project_directory_and_values_after_equals_are_words() {
        let mut all = Words::default();
        all.add_command("${LEVELCODE_PROJECT_DIR}/g.sh --config=$CLAUDE_PROJECT_DIR/c.sh -- -x.sh");
        for word in ["./g.sh", "./c.sh", "-x.sh"] {
            assert!(all.words.contains(word), "{word}: {:?}", all.words);
        }
    }
}
