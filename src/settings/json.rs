//! A strict reader of JSON for the usual case of a settings file or a payload. It borrows the
//! text's strings, builds nothing it is not asked for, and passes over the values nobody asked
//! about (the other events and keys of settings.json, a payload's `tool_input`) at a few
//! instructions a byte, where `serde_json` spends tens on each token.
//!
//! It vouches only for what it reads exactly as `serde_json` reads it, and answers [`Unsure`]
//! for anything else: invalid JSON, an escape in a key, a `\u` escape of a surrogate in a
//! string it must decode, nesting deeper than 64, any shape it was not asked for. The caller
//! then hands the same text to `serde_json`, which decides and words the error, so a text this
//! reader does not take costs what it cost before and reads exactly as before.

use std::borrow::Cow;

/// The reader cannot vouch for the text: `serde_json` must read it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Unsure;

pub(crate) type Read<T> = Result<T, Unsure>;

/// Containers deeper than this in a value passed over are left to `serde_json` (which limits
/// what it builds to 128 levels, and follows what it passes over at any depth): one bit for
/// each open container fits in a `u64`.
const MAX_DEPTH: u32 = 64;

/// A position in a JSON text.
pub(crate) struct Reader<'a> {
    text: &'a str,
    at: usize,
}

/// A string as written between its quotes, not yet decoded.
#[derive(Clone, Copy)]
pub(crate) struct Text<'a> {
    raw: &'a str,
    escaped: bool,
}

impl<'a> Text<'a> {
    /// The string, when it has no escape: what it is written as.
    pub(crate) fn plain(self) -> Option<&'a str> {
        (!self.escaped).then_some(self.raw)
    }

    /// The string decoded, borrowed when it has no escape. A `\u` escape of a surrogate (whose
    /// pairing `serde_json` checks) is [`Unsure`].
    #[inline(always)]
    pub(crate) fn decoded(self) -> Read<Cow<'a, str>> {
        if !self.escaped {
            return Ok(Cow::Borrowed(self.raw));
        }
        self.unescaped().map(Cow::Owned)
    }

    /// The string of [`Text::decoded`], which has escapes.
    #[inline(never)]
    fn unescaped(self) -> Read<String> {
        let mut out = String::with_capacity(self.raw.len());
        let mut rest = self.raw;
        while let Some(at) = rest.find('\\') {
            out.push_str(&rest[..at]);
            let escape = rest.as_bytes()[at + 1];
            rest = &rest[at + 2..];
            out.push(match escape {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                // `u`, with four hex digits the reader has checked.
                _ => {
                    let code = u32::from_str_radix(&rest[..4], 16).map_err(|_| Unsure)?;
                    rest = &rest[4..];
                    char::from_u32(code).ok_or(Unsure)?
                }
            });
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// Returns true if and only if `b` is JSON whitespace.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\t' | b'\r')
}

/// The index of the first byte at or after `from` that ends a plain run of string text: a
/// quote, a backslash or a control character; `bytes.len()` when there is none. Sixteen bytes
/// at a time where SSE2 is there (every x86-64 processor), else eight, as `serde_json` does.
/// The SSE2 scan saves 4 % of a no-match dispatch's instructions and 11 % of S5's
/// (docs/BENCHMARKS.md, "The settings model below trust").
#[inline(always)]
fn string_stop(bytes: &[u8], from: usize) -> usize {
    let mut i = from;
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    while i + 16 <= bytes.len() {
        // SAFETY: SSE2 is enabled for this build (the `cfg`), and `i + 16 <= bytes.len()`.
        let stops = unsafe { sse2::stops(bytes, i) };
        if stops != 0 {
            return i + stops.trailing_zeros() as usize;
        }
        i += 16;
    }
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES << 7;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        // Each term has the high bit of a byte set where that byte is below 0x20, a quote or
        // a backslash, and may have it set in later bytes too, but never in an earlier one:
        // the first byte flagged is the first stop. A byte of 0x80 or more is never flagged
        // (`& !x` clears its high bit).
        let stops = ((word.wrapping_sub(ONES * 0x20) & !word)
            | (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash))
            & HIGH;
        if stops != 0 {
            return i + (stops.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < bytes.len() && !matches!(bytes[i], b'"' | b'\\' | 0..=0x1f) {
        i += 1;
    }
    i
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod sse2 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };

    /// A bit for each of the sixteen bytes from `at` that is a quote, a backslash or a
    /// control character, the first byte's the lowest.
    ///
    /// # Safety
    ///
    /// `at + 16 <= bytes.len()`, and the processor has SSE2.
    #[inline]
    #[target_feature(enable = "sse2")]
    pub(crate) unsafe fn stops(bytes: &[u8], at: usize) -> u32 {
        debug_assert!(at + 16 <= bytes.len());
        // SAFETY: the caller promises that the sixteen bytes from `at` are inside `bytes`; the
        // load has no alignment requirement.
        let chunk = unsafe { _mm_loadu_si128(bytes.as_ptr().add(at).cast()) };
        let quote = _mm_cmpeq_epi8(chunk, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(chunk, _mm_set1_epi8(b'\\' as i8));
        // A byte at most 0x1f is its own maximum with 0x1f, compared as unsigned.
        let control = _mm_cmpeq_epi8(
            _mm_max_epu8(chunk, _mm_set1_epi8(0x1f)),
            _mm_set1_epi8(0x1f),
        );
        let stops = _mm_or_si128(_mm_or_si128(quote, backslash), control);
        #[allow(clippy::cast_sign_loss)] // the sixteen bits of the mask
        let mask = _mm_movemask_epi8(stops) as u32;
        mask
    }
}

impl<'a> Reader<'a> {
    pub(crate) fn new(text: &'a str) -> Reader<'a> {
        Reader { text, at: 0 }
    }

    /// Where the reader stands, for [`Reader::set_position`].
    pub(crate) fn position(&self) -> usize {
        self.at
    }

    /// Goes back to where [`Reader::position`] said it stood.
    pub(crate) fn set_position(&mut self, at: usize) {
        self.at = at;
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte that is not whitespace, not consumed.
    #[inline(always)]
    pub(crate) fn peek(&mut self) -> Option<u8> {
        let bytes = self.bytes();
        match bytes.get(self.at) {
            // Every byte above the space is no whitespace: the usual case, at one comparison.
            Some(&b) if b > b' ' => Some(b),
            _ => self.peek_past_space(),
        }
    }

    /// [`Reader::peek`] past whitespace.
    #[inline(never)]
    fn peek_past_space(&mut self) -> Option<u8> {
        let bytes = self.bytes();
        while self.at < bytes.len() && is_space(bytes[self.at]) {
            self.at += 1;
        }
        bytes.get(self.at).copied()
    }

    /// Consumes `b`, after any whitespace.
    #[inline(always)]
    pub(crate) fn eat(&mut self, b: u8) -> Read<()> {
        if self.peek() != Some(b) {
            return Err(Unsure);
        }
        self.at += 1;
        Ok(())
    }

    /// Consumes `b` when it comes next, after any whitespace.
    #[inline(always)]
    pub(crate) fn eat_if(&mut self, b: u8) -> bool {
        let next = self.peek() == Some(b);
        self.at += usize::from(next);
        next
    }

    /// The end of the text: nothing but whitespace is left.
    pub(crate) fn end(&mut self) -> Read<()> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(Unsure),
        }
    }

    /// A string, after any whitespace.
    #[inline(always)]
    pub(crate) fn string(&mut self) -> Read<Text<'a>> {
        self.eat(b'"')?;
        self.string_body()
    }

    /// The rest of a string whose opening quote was consumed: escapes are checked as
    /// `serde_json` checks those of a string it passes over. Most strings have none, and
    /// take the few instructions inlined here.
    #[inline(always)]
    fn string_body(&mut self) -> Read<Text<'a>> {
        let bytes = self.bytes();
        let start = self.at;
        let stop = string_stop(bytes, start);
        if bytes.get(stop) != Some(&b'"') {
            return self.escaped_string_body(start, stop);
        }
        self.at = stop + 1;
        Ok(Text {
            raw: &self.text[start..stop],
            escaped: false,
        })
    }

    /// [`Reader::string_body`] from its first stop, `i`, that is not its closing quote.
    #[inline(never)]
    fn escaped_string_body(&mut self, start: usize, mut i: usize) -> Read<Text<'a>> {
        let bytes = self.bytes();
        loop {
            match bytes.get(i) {
                Some(b'"') => break,
                Some(b'\\') => match bytes.get(i + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                    Some(b'u')
                        if bytes
                            .get(i + 2..i + 6)
                            .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit)) =>
                    {
                        i += 6;
                    }
                    _ => return Err(Unsure),
                },
                // A control character, or the end of the text.
                _ => return Err(Unsure),
            }
            i = string_stop(bytes, i);
        }
        self.at = i + 1;
        Ok(Text {
            raw: &self.text[start..i],
            escaped: true,
        })
    }

    /// `null`, `true` or `false`: `None` for `null`.
    #[inline(always)]
    pub(crate) fn null_or_bool(&mut self) -> Read<Option<bool>> {
        let value = match self.peek() {
            Some(b'n') => (b"null".as_slice(), None),
            Some(b't') => (b"true".as_slice(), Some(true)),
            Some(b'f') => (b"false".as_slice(), Some(false)),
            _ => return Err(Unsure),
        };
        self.literal(value.0)?;
        Ok(value.1)
    }

    /// Consumes `word` (`null`, `true`, `false`), which must come next.
    #[inline(always)]
    fn literal(&mut self, word: &[u8]) -> Read<()> {
        if !self.bytes()[self.at..].starts_with(word) {
            return Err(Unsure);
        }
        self.at += word.len();
        Ok(())
    }

    /// `null`: true, and consumed, when it comes next.
    #[inline(always)]
    pub(crate) fn null(&mut self) -> Read<bool> {
        if self.peek() != Some(b'n') {
            return Ok(false);
        }
        self.literal(b"null")?;
        Ok(true)
    }

    /// A number's text, checked against JSON's grammar as `serde_json` checks it.
    pub(crate) fn number(&mut self) -> Read<&'a str> {
        self.peek();
        let bytes = self.bytes();
        let start = self.at;
        let mut i = start + usize::from(bytes.get(start) == Some(&b'-'));
        let digits = |i: usize| bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        match bytes.get(i) {
            // One leading zero: a digit after it is refused by whatever reads on (`01` is
            // not a value, nor is `0` followed by `1` in any container).
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i += digits(i),
            _ => return Err(Unsure),
        }
        if bytes.get(i) == Some(&b'.') {
            let n = digits(i + 1);
            if n == 0 {
                return Err(Unsure);
            }
            i += 1 + n;
        }
        if matches!(bytes.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(bytes.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let n = digits(i);
            if n == 0 {
                return Err(Unsure);
            }
            i += n;
        }
        self.at = i;
        Ok(&self.text[start..i])
    }

    /// The members of an object, after any whitespace: `member` is given each key and must
    /// consume its value.
    pub(crate) fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, Text<'a>) -> Read<()>,
    ) -> Read<()> {
        self.eat(b'{')?;
        if self.eat_if(b'}') {
            return Ok(());
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            member(self, key)?;
            if self.eat_if(b'}') {
                return Ok(());
            }
            self.eat(b',')?;
        }
    }

    /// The elements of an array, after any whitespace: `element` must consume each.
    pub(crate) fn array(&mut self, mut element: impl FnMut(&mut Self) -> Read<()>) -> Read<()> {
        self.eat(b'[')?;
        if self.eat_if(b']') {
            return Ok(());
        }
        loop {
            element(self)?;
            if self.eat_if(b']') {
                return Ok(());
            }
            self.eat(b',')?;
        }
    }

    /// The text of the next value, after any whitespace, checked and passed over.
    pub(crate) fn value(&mut self) -> Read<&'a str> {
        self.peek();
        let start = self.at;
        self.skip()?;
        Ok(&self.text[start..self.at])
    }

    /// Passes over the next value, checking it as `serde_json` checks a value it ignores.
    /// Containers are followed with one bit each (set for an object) instead of recursion.
    pub(crate) fn skip(&mut self) -> Read<()> {
        let mut objects: u64 = 0;
        let mut depth: u32 = 0;
        loop {
            // A value.
            match self.peek() {
                Some(b'"') => {
                    self.at += 1;
                    self.string_body()?;
                }
                Some(open @ (b'{' | b'[')) => {
                    self.at += 1;
                    let close = if open == b'{' { b'}' } else { b']' };
                    if !self.eat_if(close) {
                        if depth == MAX_DEPTH {
                            return Err(Unsure);
                        }
                        objects = (objects << 1) | u64::from(open == b'{');
                        depth += 1;
                        if open == b'{' {
                            self.string()?;
                            self.eat(b':')?;
                        }
                        continue;
                    }
                }
                Some(b'n') => self.literal(b"null")?,
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(b'-' | b'0'..=b'9') => {
                    self.number()?;
                }
                _ => return Err(Unsure),
            }
            // What follows a value: the end of its containers, or a comma and the next.
            loop {
                if depth == 0 {
                    return Ok(());
                }
                let in_object = objects & 1 == 1;
                match self.peek() {
                    Some(b',') => {
                        self.at += 1;
                        if in_object {
                            self.string()?;
                            self.eat(b':')?;
                        }
                        break;
                    }
                    Some(b'}') if in_object => {}
                    Some(b']') if !in_object => {}
                    _ => return Err(Unsure),
                }
                self.at += 1;
                objects >>= 1;
                depth -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Returns true if and only if the reader passes over the whole of `text` as one value.
    fn skips(text: &str) -> bool {
        let mut reader = Reader::new(text);
        reader.skip().is_ok() && reader.end().is_ok()
    }

    #[test]
    fn what_serde_json_refuses_the_reader_refuses() {
        for bad in [
            "",
            "[1,]",
            "{\"a\":1,}",
            "[01]",
            "[-]",
            "[1.]",
            "[1e]",
            "[.5]",
            "[+1]",
            "\"a\u{1}b\"",
            "\"\\x\"",
            "\"\\u12g4\"",
            "\"\\u12\"",
            "\"abc",
            "{\"a\" 1}",
            "{1:2}",
            "[tru]",
            "[nul]",
            "[1 2]",
            "{\"a\":1 \"b\":2}",
            "[}",
            "{]",
            "[\u{a0}1]",
            "[1]]",
        ] {
            assert!(!skips(bad), "{bad:?}");
            assert!(
                serde_json::from_str::<serde::de::IgnoredAny>(bad).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn what_it_takes_serde_json_takes() {
        for good in [
            "0",
            "-0",
            "-12.5e+3",
            "1E-2",
            "\"\\u00e9\\ud800\\/\\n\"",
            "\"caf\u{e9}\"",
            " { \"a\" : [ 1 , { } , [ ] , null , true , false ] , \"b\" : \"\" } ",
            "[[[[[[]]]]]]",
            "\"abcdefghijklmnopqrstuvwxyz\\\"0123456789\"",
        ] {
            assert!(skips(good), "{good:?}");
            assert!(
                serde_json::from_str::<serde::de::IgnoredAny>(good).is_ok(),
                "{good:?}"
            );
        }
    }

    #[test]
    fn deep_nesting_is_left_to_serde_json() {
        // The innermost array is empty, so 65 brackets open 64 containers with something in.
        let deep = format!("{}{}", "[".repeat(66), "]".repeat(66));
        assert!(!skips(&deep));
        assert!(serde_json::from_str::<serde::de::IgnoredAny>(&deep).is_ok());
        let fine = format!("{}{}", "[".repeat(65), "]".repeat(65));
        assert!(skips(&fine));
        let objects = format!("{}1{}", "{\"a\":[".repeat(32), "]}".repeat(32));
        assert!(skips(&objects));
        assert!(!skips(&objects.replace("1", "{\"b\":1}")));
    }

    #[test]
    fn strings_decode_as_serde_json_decodes_them() {
        for text in [
            r#""plain""#,
            r#""a\"b\\c\/d\be\ff\ng\rh\ti""#,
            r#""\u0041\u00e9\u4e2d\u0000""#,
            r#""caf\u00e9 \"x\"""#,
        ] {
            let mut reader = Reader::new(text);
            let decoded = reader.string().unwrap().decoded().unwrap();
            assert_eq!(decoded, serde_json::from_str::<String>(text).unwrap());
        }
        for surrogate in [r#""\ud83d\ude00""#, r#""\udc00""#] {
            let mut reader = Reader::new(surrogate);
            assert_eq!(reader.string().unwrap().decoded(), Err(Unsure));
        }
    }

    /// JSON values of every kind, nested, with the number and string forms that are easy to
    /// get wrong.
    fn value_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let leaf = prop::sample::select(vec![
            "0",
            "-0",
            "7",
            "-12",
            "1.5",
            "0.25",
            "1e5",
            "1E+5",
            "2.5e-3",
            "10",
            "true",
            "false",
            "null",
            r#""""#,
            r#""a""#,
            r#""\u00e9\n""#,
            r#""\"q\\""#,
            "\"caf\u{e9}\"",
            r#""sixteen bytes, and then some more""#,
            r#""\ud83d\ude00""#,
        ])
        .prop_map(String::from);
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec(inner, 0..4).prop_map(|v| {
                    let members: Vec<String> = v
                        .iter()
                        .enumerate()
                        .map(|(i, v)| format!("\"k{i}\" : {v}"))
                        .collect();
                    format!("{{ {} }}", members.join(" , "))
                }),
            ]
        })
    }

    /// Pieces of JSON syntax, right and wrong.
    const TOKENS: &[&str] = &[
        "{", "}", "[", "]", ",", ":", " ", "\n", "\u{c}", "\"", "\"k\"", "\\", "\\u12", "\\x", "0",
        "01", "-", ".", "5", "e", "E+", "true", "tru", "null", "nul", "false", "\u{1}", "\u{e9}",
        "\u{a0}",
    ];

    /// The pieces of syntax that make a value's structure.
    const STRUCTURE: &[&str] = &["{", "}", "[", "]", ",", ":", "\"k\"", "1", "-", "."];

    /// `value` with `token` put in at `at` (a fraction of its length), or the character there
    /// taken out or replaced by it.
    fn edited(value: &str, (at, token, how): (f64, &str, u8)) -> String {
        let mut edited = value.to_string();
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let mut at = ((value.len() as f64) * at) as usize;
        while !edited.is_char_boundary(at) {
            at -= 1;
        }
        let next = edited[at..].chars().next().map_or(0, char::len_utf8);
        match how {
            0 => edited.insert_str(at, token),
            1 => edited.replace_range(at..at + next, ""),
            _ => edited.replace_range(at..at + next, token),
        }
        edited
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(3000))]

        /// The reader passes over exactly the values `serde_json` passes over, and refuses the
        /// rest: valid values, the same with one piece of syntax put in, taken out or swapped,
        /// and short runs of syntax that are mostly wrong.
        #[test]
        fn the_reader_passes_over_what_serde_json_passes_over(
            value in value_text(),
            edits in proptest::collection::vec(
                (0.0..1.0f64, proptest::sample::select(TOKENS), 0..3u8), 16),
            soups in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(STRUCTURE), 1..7), 16),
        ) {
            let texts = std::iter::once(value.clone())
                .chain(edits.into_iter().map(|edit| edited(&value, edit)))
                .chain(soups.iter().map(|soup| soup.concat()));
            for text in texts {
                let serde = serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok();
                proptest::prop_assert_eq!(skips(&text), serde, "{}", text);
            }
        }
    }

    #[test]
    fn the_stop_is_found_in_every_position() {
        for len in 0..40 {
            for stop in [b'"', b'\\', b'\n', 0] {
                let mut bytes = vec![b'a'; len];
                bytes.push(stop);
                bytes.extend_from_slice(b"bbbbbbbbb\"");
                assert_eq!(string_stop(&bytes, 0), len);
            }
            let bytes = "\u{e9}".repeat(len);
            assert_eq!(string_stop(bytes.as_bytes(), 0), bytes.len());
        }
    }
}
