//! The reading of one word: quotes, escapes, expansions and substitutions, with what each
//! part is after quote removal.

use super::scan::{char_len, is_name, is_name_start, Parts, Scanner};
use super::{Error, Part, Word, MAX_DEPTH};

impl Scanner<'_> {
    /// One word at the cursor; in bash's `[[ … ]]` (`cond`), operators are part of it.
    pub(super) fn read_word(&mut self, depth: usize, cond: bool) -> Result<Word, Error> {
        let start = self.at;
        let mut parts = Parts::default();
        let result = self.word_parts(&mut parts, depth, cond);
        let word = Word {
            start,
            written: self.written(start),
            parts: parts.finish(),
        };
        match result {
            Ok(()) => Ok(word),
            Err(e) => {
                self.broken = Some(word);
                Err(e)
            }
        }
    }

    fn word_parts(&mut self, parts: &mut Parts, depth: usize, cond: bool) -> Result<(), Error> {
        let mut first = true;
        while let Some(c) = self.here() {
            match c {
                b' ' | b'\t' | b'\n' | b';' => break,
                b'&' | b'|' | b'(' | b')' | b'<' | b'>' if cond => {
                    parts.byte(c, false);
                    self.bump(1);
                }
                b'<' | b'>' if self.ahead(1) == Some(b'(') => {
                    let start = self.at;
                    self.bump(2);
                    self.list(true, depth + 1)?;
                    parts.part(Part::Process {
                        written: self.written(start),
                    });
                }
                b'&' | b'|' | b'(' | b')' | b'<' | b'>' => break,
                b'\'' => self.single_quoted(parts)?,
                b'"' => self.double_quoted(parts, depth)?,
                b'\\' => match self.src.get(self.at + 1) {
                    Some(&next) => {
                        let len = char_len(next);
                        let end = (self.at + 1 + len).min(self.src.len());
                        parts.bytes(&self.src[self.at + 1..end], true);
                        self.at = end;
                    }
                    None => {
                        parts.byte(b'\\', false);
                        self.at += 1;
                    }
                },
                b'$' => self.dollar(parts, false, depth)?,
                b'`' => self.backtick(parts, false, depth)?,
                b'~' if first => self.tilde(parts),
                _ => {
                    let len = char_len(c);
                    let end = (self.at + len).min(self.src.len());
                    parts.bytes(&self.src[self.at..end], false);
                    self.at = end;
                }
            }
            first = false;
        }
        Ok(())
    }

    /// `~` or `~name` before a `/` or the word's end; else a plain `~`.
    fn tilde(&mut self, parts: &mut Parts) {
        let start = self.at;
        let mut end = start + 1;
        while self
            .src
            .get(end)
            .is_some_and(|&b| is_name(b) || b == b'.' || b == b'-')
        {
            end += 1;
        }
        let ends_here = matches!(
            self.src.get(end),
            None | Some(
                b'/' | b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
            )
        );
        if ends_here {
            let text = String::from_utf8_lossy(&self.src[start..end]).into_owned();
            parts.part(Part::Tilde(text));
            self.at = end;
        } else {
            parts.byte(b'~', false);
            self.at += 1;
        }
    }

    fn single_quoted(&mut self, parts: &mut Parts) -> Result<(), Error> {
        let from = self.at + 1;
        match self.src[from.min(self.src.len())..]
            .iter()
            .position(|&b| b == b'\'')
        {
            Some(0) => {
                parts.empty_quoted();
                self.at = from + 1;
                Ok(())
            }
            Some(len) => {
                parts.bytes(&self.src[from..from + len], true);
                self.at = from + len + 1;
                Ok(())
            }
            None => {
                parts.bytes(&self.src[from.min(self.src.len())..], true);
                self.at = self.src.len();
                Err(Error::UnclosedQuote('\''))
            }
        }
    }

    fn double_quoted(&mut self, parts: &mut Parts, depth: usize) -> Result<(), Error> {
        self.bump(1);
        let before = parts.size();
        loop {
            let Some(c) = self.here() else {
                return Err(Error::UnclosedQuote('"'));
            };
            match c {
                b'"' => {
                    self.bump(1);
                    if parts.size() == before {
                        parts.empty_quoted();
                    }
                    return Ok(());
                }
                b'\\' => {
                    let next = self.src.get(self.at + 1).copied();
                    if let Some(escaped @ (b'$' | b'`' | b'"' | b'\\')) = next {
                        parts.byte(escaped, true);
                        self.at += 2;
                    } else {
                        parts.byte(b'\\', true);
                        self.at += 1;
                    }
                }
                b'$' => self.dollar(parts, true, depth)?,
                b'`' => self.backtick(parts, true, depth)?,
                _ => {
                    let len = char_len(c);
                    let end = (self.at + len).min(self.src.len());
                    parts.bytes(&self.src[self.at..end], true);
                    self.at = end;
                }
            }
        }
    }

    /// What a `$` begins: a parameter, a substitution, arithmetic, bash's quotes, or itself.
    pub(super) fn dollar(
        &mut self,
        parts: &mut Parts,
        quoted: bool,
        depth: usize,
    ) -> Result<(), Error> {
        let start = self.at;
        let next = self.ahead(1);
        match next {
            Some(b'(') if self.ahead(2) == Some(b'(') => {
                self.bump(3);
                self.arithmetic(depth + 1, "$(( … ))")?;
                parts.part(Part::Arithmetic {
                    written: self.written(start),
                    quoted,
                });
            }
            Some(b'(') => {
                self.bump(2);
                self.list(true, depth + 1)?;
                parts.part(Part::Command {
                    written: self.written(start),
                    quoted,
                });
            }
            Some(b'{') => {
                self.bump(2);
                self.braced(quoted, depth + 1)?;
                parts.part(Part::Parameter {
                    written: self.written(start),
                    quoted,
                });
            }
            Some(b'\'') if self.bash() && !quoted => {
                self.bump(1);
                self.ansi_quoted(parts)?;
            }
            Some(b'"') if self.bash() && !quoted => {
                self.bump(1);
                self.double_quoted(parts, depth)?;
            }
            Some(b) if is_name_start(b) => {
                self.bump(1);
                while self.here().is_some_and(is_name) {
                    self.bump(1);
                }
                parts.part(Part::Parameter {
                    written: self.written(start),
                    quoted,
                });
            }
            Some(b'0'..=b'9' | b'@' | b'*' | b'#' | b'?' | b'-' | b'$' | b'!') => {
                self.bump(2);
                parts.part(Part::Parameter {
                    written: self.written(start),
                    quoted,
                });
            }
            _ => {
                parts.byte(b'$', quoted);
                self.bump(1);
            }
        }
        Ok(())
    }

    /// `${…}` after its `${`: braces, quotes and substitutions inside it nest.
    fn braced(&mut self, quoted: bool, depth: usize) -> Result<(), Error> {
        if depth > MAX_DEPTH {
            return Err(Error::TooDeep);
        }
        let mut open = 0usize;
        let mut discard = Parts::default();
        loop {
            let Some(c) = self.here() else {
                return Err(Error::Unclosed("${ … }"));
            };
            match c {
                b'}' if open == 0 => {
                    self.bump(1);
                    return Ok(());
                }
                b'}' => {
                    open -= 1;
                    self.bump(1);
                }
                b'{' => {
                    open += 1;
                    self.bump(1);
                }
                b'\\' => self.at = (self.at + 2).min(self.src.len()),
                b'\'' if !quoted => self.single_quoted(&mut discard)?,
                b'"' => self.double_quoted(&mut discard, depth)?,
                b'$' => self.dollar(&mut discard, true, depth)?,
                b'`' => self.backtick(&mut discard, true, depth)?,
                _ => self.bump(1),
            }
            discard.clear();
        }
    }

    /// Arithmetic after its `$((` or `((`, to the `))` that closes it: `<<` is a shift there.
    pub(super) fn arithmetic(&mut self, depth: usize, what: &'static str) -> Result<(), Error> {
        if depth > MAX_DEPTH {
            return Err(Error::TooDeep);
        }
        let mut open = 0usize;
        let mut discard = Parts::default();
        loop {
            let Some(c) = self.here() else {
                return Err(Error::Unclosed(what));
            };
            match c {
                b'(' => {
                    open += 1;
                    self.bump(1);
                }
                b')' if open > 0 => {
                    open -= 1;
                    self.bump(1);
                }
                b')' if self.ahead(1) == Some(b')') => {
                    self.bump(2);
                    return Ok(());
                }
                b')' => {
                    return Err(Error::Syntax(
                        "a ) inside arithmetic closes it without a second )",
                    ))
                }
                b'\\' => self.at = (self.at + 2).min(self.src.len()),
                b'\'' => self.single_quoted(&mut discard)?,
                b'"' => self.double_quoted(&mut discard, depth)?,
                b'$' => self.dollar(&mut discard, true, depth)?,
                b'`' => self.backtick(&mut discard, true, depth)?,
                _ => self.bump(1),
            }
            discard.clear();
        }
    }

    /// `` `…` ``: its text, unescaped, read as commands of its own.
    pub(super) fn backtick(
        &mut self,
        parts: &mut Parts,
        quoted: bool,
        depth: usize,
    ) -> Result<(), Error> {
        if depth + 1 > MAX_DEPTH {
            return Err(Error::TooDeep);
        }
        let start = self.at;
        self.at += 1;
        let mut inner = Vec::new();
        loop {
            let Some(&c) = self.src.get(self.at) else {
                return Err(Error::Unclosed("` … `"));
            };
            match c {
                b'`' => {
                    self.at += 1;
                    break;
                }
                b'\\' => match self.src.get(self.at + 1) {
                    Some(&n) if matches!(n, b'$' | b'`' | b'\\') || (quoted && n == b'"') => {
                        inner.push(n);
                        self.at += 2;
                    }
                    _ => {
                        inner.push(b'\\');
                        self.at += 1;
                    }
                },
                _ => {
                    inner.push(c);
                    self.at += 1;
                }
            }
        }
        let mut nested = Scanner::new(&inner, self.dialect);
        let result = nested.list(false, depth + 1);
        self.out.append(&mut nested.out);
        result?;
        parts.part(Part::Command {
            written: self.written(start),
            quoted,
        });
        Ok(())
    }

    /// Bash's `$'…'` after its `$`: C-style escapes, taken as quoted text.
    fn ansi_quoted(&mut self, parts: &mut Parts) -> Result<(), Error> {
        self.at += 1;
        let mut text = Vec::new();
        let mut cut = false;
        loop {
            let Some(&c) = self.src.get(self.at) else {
                parts.bytes(&text, true);
                return Err(Error::UnclosedQuote('\''));
            };
            self.at += 1;
            match c {
                b'\'' => break,
                b'\\' => {
                    let decoded = self.ansi_escape();
                    // Bash ends the string at a NUL: what follows it to the quote is dropped.
                    if decoded.contains(&0) {
                        cut = true;
                    }
                    if !cut {
                        text.extend(decoded);
                    }
                }
                _ if cut => {}
                _ => text.push(c),
            }
        }
        match text.is_empty() {
            true => parts.empty_quoted(),
            false => parts.bytes(&text, true),
        }
        Ok(())
    }

    /// One escape of `$'…'`, after its backslash.
    fn ansi_escape(&mut self) -> Vec<u8> {
        let Some(&c) = self.src.get(self.at) else {
            return vec![b'\\'];
        };
        self.at += 1;
        let simple = match c {
            b'a' => Some(7),
            b'b' => Some(8),
            b'e' | b'E' => Some(27),
            b'f' => Some(12),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(11),
            b'\\' | b'\'' | b'"' | b'?' => Some(c),
            _ => None,
        };
        if let Some(b) = simple {
            return vec![b];
        }
        let digits = |scanner: &mut Scanner<'_>, radix: u32, max: usize| -> Option<u32> {
            let mut value = None;
            for _ in 0..max {
                let digit = scanner
                    .src
                    .get(scanner.at)
                    .and_then(|&b| char::from(b).to_digit(radix));
                let Some(d) = digit else { break };
                value = Some(value.unwrap_or(0) * radix + d);
                scanner.at += 1;
            }
            value
        };
        match c {
            b'0'..=b'7' => {
                self.at -= 1;
                let value = digits(self, 8, 3).unwrap_or(0);
                vec![(value & 0xFF) as u8]
            }
            b'x' => match digits(self, 16, 2) {
                Some(v) => vec![v as u8],
                None => b"\\x".to_vec(),
            },
            b'u' | b'U' => {
                let max = if c == b'u' { 4 } else { 8 };
                match digits(self, 16, max) {
                    Some(v) => char::from_u32(v)
                        .map(|ch| ch.to_string().into_bytes())
                        .unwrap_or_default(),
                    None => vec![b'\\', c],
                }
            }
            b'c' => match self.src.get(self.at) {
                Some(&b) => {
                    self.at += 1;
                    vec![b & 0x1F]
                }
                None => b"\\c".to_vec(),
            },
            _ => {
                // Unknown: the backslash stays, with the whole character after it.
                let len = char_len(c);
                let end = (self.at - 1 + len).min(self.src.len());
                let mut out = vec![b'\\'];
                out.extend_from_slice(&self.src[self.at - 1..end]);
                self.at = end;
                out
            }
        }
    }
}
