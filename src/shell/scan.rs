//! The scanner behind [`super::parse`]: one pass over the bytes, with a recursive descent into
//! subshells and substitutions that [`MAX_DEPTH`] bounds. Every decision is taken at an ASCII
//! byte, so the pieces it cuts are whole characters.

use super::{Command, Dialect, Error, Heredoc, Op, Part, Redirect, Word, MAX_DEPTH};

pub(super) struct Scanner<'a> {
    pub(super) src: &'a [u8],
    pub(super) at: usize,
    pub(super) dialect: Dialect,
    pub(super) out: Vec<Command>,
    /// Here-documents whose bodies start after the next newline.
    pending: Vec<Pending>,
    /// Where a backslash-newline was removed, in order.
    pub(super) removed: Vec<usize>,
    /// The word being read when an error stopped it, kept for the partial command.
    pub(super) broken: Option<Word>,
}

struct Pending {
    command: usize,
    redirect: usize,
    delimiter: Vec<u8>,
    strip_tabs: bool,
    quoted: bool,
}

/// The command being read.
#[derive(Default)]
struct Building {
    command: Command,
    /// Inside bash's `[[ … ]]`, where operators are words.
    cond: bool,
}

/// Where a `case` is, in the list that holds it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Case {
    /// Patterns (or `esac`) come next.
    Patterns,
    /// The commands of a pattern, until `;;` or `esac`.
    Body,
}

/// A word's parts as they are read: text is gathered until its quoting changes.
#[derive(Default)]
pub(super) struct Parts {
    parts: Vec<Part>,
    buf: Vec<u8>,
    quoted: bool,
}

impl Parts {
    pub(super) fn byte(&mut self, b: u8, quoted: bool) {
        self.bytes(&[b], quoted);
    }

    pub(super) fn bytes(&mut self, bytes: &[u8], quoted: bool) {
        if bytes.is_empty() {
            return;
        }
        if !self.buf.is_empty() && self.quoted != quoted {
            self.flush();
        }
        self.quoted = quoted;
        self.buf.extend_from_slice(bytes);
    }

    /// A quoted piece that holds nothing (`''`, `""`): the word holds a quote all the same,
    /// so `0''>x` is a word and a redirection, not a descriptor's.
    pub(super) fn empty_quoted(&mut self) {
        self.flush();
        self.parts.push(Part::Text {
            text: String::new(),
            quoted: true,
        });
    }

    /// How much has been read, to tell whether a quoted piece added anything.
    pub(super) fn size(&self) -> (usize, usize) {
        (self.parts.len(), self.buf.len())
    }

    pub(super) fn part(&mut self, part: Part) {
        self.flush();
        self.parts.push(part);
    }

    pub(super) fn flush(&mut self) {
        if !self.buf.is_empty() {
            let text = String::from_utf8_lossy(&std::mem::take(&mut self.buf)).into_owned();
            self.parts.push(Part::Text {
                text,
                quoted: self.quoted,
            });
        }
    }

    /// Forgets what was read: for text whose parts nobody keeps.
    pub(super) fn clear(&mut self) {
        self.parts.clear();
        self.buf.clear();
    }

    pub(super) fn finish(mut self) -> Vec<Part> {
        self.flush();
        if self.parts.is_empty() {
            // `''` or `""`: an empty word.
            self.parts.push(Part::Text {
                text: String::new(),
                quoted: true,
            });
        }
        self.parts
    }
}

/// The number of bytes of the UTF-8 character that starts with `b`.
pub(super) fn char_len(b: u8) -> usize {
    match b {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

pub(super) fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

pub(super) fn is_name(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl<'a> Scanner<'a> {
    /// Reads `src` whole: its commands, and the error that stopped the reading.
    pub(super) fn read(src: &'a [u8], dialect: Dialect) -> (Vec<Command>, Option<Error>) {
        let mut scanner = Scanner::new(src, dialect);
        let error = scanner.list(false, 0).err();
        (scanner.out, error)
    }

    pub(super) fn new(src: &'a [u8], dialect: Dialect) -> Scanner<'a> {
        Scanner {
            src,
            at: 0,
            dialect,
            out: Vec::new(),
            pending: Vec::new(),
            removed: Vec::new(),
            broken: None,
        }
    }

    pub(super) fn bash(&self) -> bool {
        self.dialect == Dialect::Bash
    }

    /// The byte at the cursor, once the backslash-newlines there are removed.
    pub(super) fn here(&mut self) -> Option<u8> {
        while self.src.get(self.at) == Some(&b'\\') && self.src.get(self.at + 1) == Some(&b'\n') {
            self.removed.push(self.at);
            self.at += 2;
        }
        self.src.get(self.at).copied()
    }

    /// The byte `n` characters after the cursor's (which [`Self::here`] has settled), across
    /// backslash-newlines.
    pub(super) fn ahead(&self, n: usize) -> Option<u8> {
        let mut at = self.at;
        for _ in 0..n {
            at += 1;
            while self.src.get(at) == Some(&b'\\') && self.src.get(at + 1) == Some(&b'\n') {
                at += 2;
            }
        }
        self.src.get(at).copied()
    }

    /// Moves past `n` characters, the backslash-newlines between them removed.
    pub(super) fn bump(&mut self, n: usize) {
        for i in 0..n {
            if i > 0 {
                self.here();
            }
            self.at = (self.at + 1).min(self.src.len());
        }
    }

    /// The text from `start` to the cursor as written, backslash-newlines removed.
    pub(super) fn written(&self, start: usize) -> String {
        let end = self.at.min(self.src.len());
        let start = start.min(end);
        let first = self.removed.partition_point(|&p| p < start);
        let mut out = Vec::with_capacity(end - start);
        let mut from = start;
        for &p in &self.removed[first..] {
            if p >= end {
                break;
            }
            out.extend_from_slice(&self.src[from..p]);
            from = p + 2;
        }
        if from < end {
            out.extend_from_slice(&self.src[from..end]);
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Commands up to the `)` that closes them (`close`) or to the end of the text.
    pub(super) fn list(&mut self, close: bool, depth: usize) -> Result<(), Error> {
        if depth > MAX_DEPTH {
            return Err(Error::TooDeep);
        }
        let mut cmd = Building::default();
        let mut cases: Vec<Case> = Vec::new();
        let result = self.commands(&mut cmd, &mut cases, close, depth);
        if result.is_err() {
            if let Some(word) = self.broken.take() {
                cmd.command.words.push(word);
            }
        }
        self.finish(&mut cmd);
        result
    }

    fn commands(
        &mut self,
        cmd: &mut Building,
        cases: &mut Vec<Case>,
        close: bool,
        depth: usize,
    ) -> Result<(), Error> {
        loop {
            let Some(c) = self.here() else {
                return match close {
                    true => Err(Error::Unclosed("( … )")),
                    false => Ok(()),
                };
            };
            let empty = cmd.command.words.is_empty() && cmd.command.redirects.is_empty();
            match c {
                b' ' | b'\t' => self.bump(1),
                b'\n' => {
                    self.finish(cmd);
                    self.bump(1);
                    self.heredocs(depth)?;
                }
                b'#' => {
                    // A comment, to the end of the line: backslash-newlines are not removed.
                    while self.src.get(self.at).is_some_and(|&b| b != b'\n') {
                        self.at += 1;
                    }
                }
                _ if cases.last() == Some(&Case::Patterns) && empty && c != b';' => {
                    self.patterns(cases, depth)?;
                }
                b';' => {
                    self.finish(cmd);
                    self.bump(1);
                    let mut ends_item = false;
                    if self.here() == Some(b';') {
                        self.bump(1);
                        ends_item = true;
                        if self.bash() && self.here() == Some(b'&') {
                            self.bump(1);
                        }
                    } else if self.bash() && self.here() == Some(b'&') {
                        self.bump(1);
                        ends_item = true;
                    }
                    if ends_item {
                        if let Some(top) = cases.last_mut() {
                            *top = Case::Patterns;
                        }
                    }
                }
                b'&' | b'|' | b'(' | b')' | b'<' | b'>' if cmd.cond => {
                    self.word(cmd, cases, depth)?
                }
                // `&>` is bash's; to dash it is `&`, then a `>` of the next command.
                b'&' if self.bash() && self.ahead(1) == Some(b'>') => {
                    self.redirect(cmd, None, depth)?
                }
                b'&' | b'|' => {
                    self.finish(cmd);
                    self.bump(1);
                    let next = self.here();
                    if next == Some(c) || (c == b'|' && next == Some(b'&')) {
                        self.bump(1);
                    }
                }
                b'(' if empty && self.bash() && self.ahead(1) == Some(b'(') => {
                    let start = self.at;
                    self.bump(2);
                    self.arithmetic(depth + 1, "(( … ))")?;
                    let written = self.written(start);
                    cmd.command.words.push(Word {
                        start,
                        written: written.clone(),
                        parts: vec![Part::Arithmetic {
                            written,
                            quoted: false,
                        }],
                    });
                }
                b'(' if !cmd.command.words.is_empty() => self.after_words(cmd, depth)?,
                b'(' => {
                    self.finish(cmd);
                    self.bump(1);
                    self.list(true, depth + 1)?;
                }
                b')' => {
                    self.finish(cmd);
                    self.bump(1);
                    if close {
                        return Ok(());
                    }
                }
                b'<' | b'>' if self.ahead(1) == Some(b'(') => self.word(cmd, cases, depth)?,
                b'<' | b'>' => self.redirect(cmd, None, depth)?,
                _ => self.word(cmd, cases, depth)?,
            }
        }
    }

    /// A `(` after the words of a command: the `()` of a function's definition, bash's array
    /// (`a=(x y)`), or what both shells refuse (`echo (x)`, and bash's `@(x)` patterns, which
    /// it reads only with an option on).
    fn after_words(&mut self, cmd: &mut Building, depth: usize) -> Result<(), Error> {
        let words = &cmd.command.words;
        let mut at = self.at + 1;
        while matches!(self.src.get(at), Some(b' ' | b'\t')) {
            at += 1;
        }
        let named = words.len() == 1 || (words.len() == 2 && words[0].is("function"));
        if named && self.src.get(at) == Some(&b')') {
            self.finish(cmd);
            self.at = at + 1;
            return Ok(());
        }
        let array = words.last().is_some_and(|w| {
            w.is_assignment()
                && w.text().ends_with('=')
                && w.start + w.written.len() <= self.at
                && !matches!(self.src.get(self.at.wrapping_sub(1)), Some(b' ' | b'\t'))
        });
        if !(self.bash() && array) {
            return Err(Error::Syntax("a ( follows the words of a command"));
        }
        self.bump(1);
        loop {
            match self.here() {
                None => return Err(Error::Unclosed("( … )")),
                Some(b')') => {
                    self.bump(1);
                    return Ok(());
                }
                Some(b' ' | b'\t' | b'\n') => self.bump(1),
                Some(b'#') => {
                    while self.src.get(self.at).is_some_and(|&b| b != b'\n') {
                        self.at += 1;
                    }
                }
                Some(b';' | b'&' | b'|' | b'(' | b'<' | b'>') => {
                    return Err(Error::Syntax("an array holds an operator"))
                }
                // Its elements are words: their substitutions run.
                Some(_) => {
                    self.read_word(depth, false)?;
                }
            }
        }
    }

    /// A word of the command being read, or the descriptor of a redirection, or the end of a
    /// `case`'s head.
    fn word(
        &mut self,
        cmd: &mut Building,
        cases: &mut Vec<Case>,
        depth: usize,
    ) -> Result<(), Error> {
        let word = self.read_word(depth, cmd.cond)?;
        if matches!(self.here(), Some(b'<' | b'>')) && self.ahead(1) != Some(b'(') && !cmd.cond {
            let descriptor = match word.parts.as_slice() {
                [Part::Text {
                    text,
                    quoted: false,
                }] if !text.is_empty()
                    && text.bytes().all(|b| b.is_ascii_digit())
                    && (self.bash() || text.len() == 1) =>
                {
                    true
                }
                [Part::Text {
                    text,
                    quoted: false,
                }] if self.bash() => text
                    .strip_prefix('{')
                    .and_then(|t| t.strip_suffix('}'))
                    .is_some_and(|name| {
                        name.bytes().next().is_some_and(is_name_start) && name.bytes().all(is_name)
                    }),
                _ => false,
            };
            if descriptor {
                return self.redirect(cmd, Some(word.text()), depth);
            }
        }
        let words = &mut cmd.command.words;
        if words.is_empty() && cmd.command.redirects.is_empty() {
            if cases.last() == Some(&Case::Body) && word.is("esac") {
                cases.pop();
                return Ok(());
            }
            if self.bash() && word.is("[[") {
                cmd.cond = true;
            }
        } else if cmd.cond && word.is("]]") {
            cmd.cond = false;
        }
        let head_of_case = words.len() == 2 && words[0].is("case") && word.is("in");
        words.push(word);
        if head_of_case {
            self.finish(cmd);
            cases.push(Case::Patterns);
        }
        Ok(())
    }

    /// A `case`'s patterns up to their `)`, or its `esac`.
    fn patterns(&mut self, cases: &mut Vec<Case>, depth: usize) -> Result<(), Error> {
        let mut first = true;
        loop {
            match self.here() {
                Some(b' ' | b'\t') => self.bump(1),
                Some(b'\n') => {
                    self.bump(1);
                    self.heredocs(depth)?;
                }
                Some(b'#') if first => {
                    while self.src.get(self.at).is_some_and(|&b| b != b'\n') {
                        self.at += 1;
                    }
                }
                Some(b'(') if first => {
                    self.bump(1);
                    first = false;
                }
                Some(b'(') => return Err(Error::Syntax("a case pattern holds a (")),
                Some(b'|') => self.bump(1),
                Some(b')') => {
                    self.bump(1);
                    if let Some(top) = cases.last_mut() {
                        *top = Case::Body;
                    }
                    return Ok(());
                }
                None => return Err(Error::Unclosed("case … esac")),
                Some(b';' | b'&' | b'<' | b'>') => {
                    return Err(Error::Syntax("a case pattern is not followed by )"))
                }
                Some(_) => {
                    let word = self.read_word(depth, false)?;
                    if first && word.is("esac") {
                        cases.pop();
                        return Ok(());
                    }
                    first = false;
                }
            }
        }
    }

    /// A redirection at the cursor (`<`, `>` or `&>`), with the descriptor written before it.
    fn redirect(
        &mut self,
        cmd: &mut Building,
        fd: Option<String>,
        depth: usize,
    ) -> Result<(), Error> {
        let c = self.here().unwrap_or(b'>');
        let (n1, n2) = (self.ahead(1), self.ahead(2));
        let (op, len) = match (c, n1, n2) {
            (b'&', _, Some(b'>')) => (Op::AppendBoth, 3),
            (b'&', _, _) => (Op::OutputBoth, 2),
            (b'<', Some(b'<'), Some(b'<')) => (Op::HereString, 3),
            (b'<', Some(b'<'), Some(b'-')) => (Op::Heredoc { strip_tabs: true }, 3),
            (b'<', Some(b'<'), _) => (Op::Heredoc { strip_tabs: false }, 2),
            (b'<', Some(b'>'), _) => (Op::ReadWrite, 2),
            (b'<', Some(b'&'), _) => (Op::DupInput, 2),
            (b'<', _, _) => (Op::Input, 1),
            (_, Some(b'>'), _) => (Op::Append, 2),
            (_, Some(b'|'), _) => (Op::Clobber, 2),
            (_, Some(b'&'), _) => (Op::DupOutput, 2),
            _ => (Op::Output, 1),
        };
        self.bump(len);
        while matches!(self.here(), Some(b' ' | b'\t')) {
            self.bump(1);
        }
        let process = self.ahead(1) == Some(b'(');
        match self.here() {
            Some(b'<' | b'>') if process => {}
            None | Some(b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>') => {
                return Err(Error::Syntax("a redirection has no target"));
            }
            Some(_) => {}
        }
        let target = self.read_word(depth, false)?;
        let heredoc = match op {
            Op::Heredoc { .. } => Some(Heredoc {
                body: String::new(),
                quoted: target.parts.iter().any(Part::quoted),
            }),
            _ => None,
        };
        cmd.command.redirects.push(Redirect {
            fd,
            op,
            target,
            heredoc,
        });
        Ok(())
    }

    /// Ends the command being read; one that holds anything joins the others.
    fn finish(&mut self, cmd: &mut Building) {
        let command = std::mem::take(&mut cmd.command);
        cmd.cond = false;
        if command.words.is_empty() && command.redirects.is_empty() {
            return;
        }
        let index = self.out.len();
        for (i, redirect) in command.redirects.iter().enumerate() {
            if let (Op::Heredoc { strip_tabs }, Some(doc)) = (redirect.op, &redirect.heredoc) {
                self.pending.push(Pending {
                    command: index,
                    redirect: i,
                    delimiter: redirect.target.text().into_bytes(),
                    strip_tabs,
                    quoted: doc.quoted,
                });
            }
        }
        self.out.push(command);
    }

    /// The bodies of the here-documents opened on the line that just ended.
    fn heredocs(&mut self, depth: usize) -> Result<(), Error> {
        for doc in std::mem::take(&mut self.pending) {
            let body = self.heredoc_body(&doc, depth)?;
            if let Some(slot) = self
                .out
                .get_mut(doc.command)
                .and_then(|c| c.redirects.get_mut(doc.redirect))
                .and_then(|r| r.heredoc.as_mut())
            {
                slot.body = body;
            }
        }
        Ok(())
    }

    fn heredoc_body(&mut self, doc: &Pending, depth: usize) -> Result<String, Error> {
        let mut body = Vec::new();
        while self.at < self.src.len() {
            // A line that is the delimiter ends it.
            let rest = &self.src[self.at..];
            let line_len = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            let mut line = &rest[..line_len];
            let mut tabs = 0;
            if doc.strip_tabs {
                tabs = line.iter().take_while(|&&b| b == b'\t').count();
                line = &line[tabs..];
            }
            if line == doc.delimiter.as_slice() {
                self.at = (self.at + line_len + 1).min(self.src.len());
                break;
            }
            self.at += tabs;
            if doc.quoted {
                body.extend_from_slice(line);
                body.push(b'\n');
                self.at = (self.at + line.len() + 1).min(self.src.len());
                continue;
            }
            // An unquoted delimiter: the body's expansions run, and a backslash-newline joins
            // the next line to this one.
            self.heredoc_line(&mut body, depth)?;
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// One line of an unquoted here-document (several, joined by backslash-newlines or by a
    /// substitution that spans them), with its newline.
    fn heredoc_line(&mut self, body: &mut Vec<u8>, depth: usize) -> Result<(), Error> {
        loop {
            let Some(c) = self.here() else {
                return Ok(());
            };
            match c {
                b'\n' => {
                    body.push(b'\n');
                    self.at += 1;
                    return Ok(());
                }
                b'\\' => {
                    let next = self.src.get(self.at + 1).copied();
                    if matches!(next, Some(b'$' | b'`' | b'\\')) {
                        body.extend_from_slice(&self.src[self.at..self.at + 2]);
                        self.at += 2;
                    } else {
                        body.push(b'\\');
                        self.at += 1;
                    }
                }
                b'$' | b'`' => {
                    let start = self.at;
                    let mut discard = Parts::default();
                    match c {
                        b'$' => self.dollar(&mut discard, true, depth + 1)?,
                        _ => self.backtick(&mut discard, true, depth + 1)?,
                    }
                    body.extend_from_slice(self.written(start).as_bytes());
                }
                _ => {
                    body.push(c);
                    self.at += 1;
                }
            }
        }
    }
}
