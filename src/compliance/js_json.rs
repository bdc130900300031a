//! JavaScript's `JSON.parse` and `JSON.stringify`, reproduced exactly.
//!
//! levelcode's legacy signature hashes the text of `JSON.stringify(payload)`, and levelcode's own
//! report recomputes it from `JSON.parse(line).payload`. A line is only accepted there when its
//! payload is written byte for byte as a JavaScript engine writes it, so this module models JSON
//! the way JavaScript does rather than the way `serde_json` does:
//!
//! - strings are sequences of UTF-16 code units, so a lone surrogate written as `\ud800` in the
//!   input survives, and the legacy hash can run over code units as `charCodeAt` does;
//! - every number is an IEEE double, written back in `Number.prototype.toString` form (`1`, not
//!   `1.0`; `1e+21`; `1e-7`; integers beyond 2^53 rounded as JavaScript rounds them);
//! - object keys that are array indices (`"0"` … `"4294967294"`) come first in ascending order,
//!   then the other keys in insertion order, as in every JavaScript object; a repeated key keeps
//!   its first position and its last value.

use std::collections::HashMap;
use std::fmt;
use std::fmt::Write as _;

/// A JavaScript string: UTF-16 code units, not necessarily well-formed.
pub type JsString = Vec<u16>;

/// Nesting deeper than this is refused instead of risking the stack. Payloads reach this module
/// already limited to 128 levels; a log line adds two.
const MAX_DEPTH: usize = 512;

/// One JSON value as JavaScript holds it after `JSON.parse`.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(f64),
    String(JsString),
    Array(Vec<Value>),
    Object(Object),
}

impl Value {
    /// A string value from Rust text.
    pub fn string(text: &str) -> Value {
        Value::String(text.encode_utf16().collect())
    }

    /// The object behind this value, if it is one.
    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(object) => Some(object),
            _ => None,
        }
    }

    /// The code units of this value, if it is a string.
    pub fn as_js_string(&self) -> Option<&[u16]> {
        match self {
            Value::String(units) => Some(units),
            _ => None,
        }
    }

    /// The number behind this value, if it is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }
}

/// A JavaScript object: own properties with JavaScript's enumeration order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Object {
    /// Properties in insertion order; [`Object::ordered`] applies the array-index rule.
    entries: Vec<(JsString, Value)>,
    index: HashMap<JsString, usize>,
}

impl Object {
    pub fn new() -> Object {
        Object::default()
    }

    /// Sets a property as JavaScript assignment does: an existing key keeps its position.
    pub fn insert(&mut self, key: JsString, value: Value) {
        match self.index.get(&key) {
            Some(&at) => self.entries[at].1 = value,
            None => {
                self.index.insert(key.clone(), self.entries.len());
                self.entries.push((key, value));
            }
        }
    }

    /// Sets a property named by Rust text.
    pub fn set(&mut self, key: &str, value: Value) {
        self.insert(key.encode_utf16().collect(), value);
    }

    /// The value of the property named `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        let units: JsString = key.encode_utf16().collect();
        self.index.get(&units).map(|&at| &self.entries[at].1)
    }

    /// Returns true if and only if the object has an own property named `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The properties in the order `JSON.stringify` and `Object.keys` visit them.
    pub fn ordered(&self) -> Vec<(&[u16], &Value)> {
        let mut indices: Vec<(u32, usize)> = Vec::new();
        let mut others: Vec<usize> = Vec::new();
        for (at, (key, _)) in self.entries.iter().enumerate() {
            match array_index(key) {
                Some(n) => indices.push((n, at)),
                None => others.push(at),
            }
        }
        indices.sort_unstable();
        indices
            .into_iter()
            .map(|(_, at)| at)
            .chain(others)
            .map(|at| {
                let (key, value) = &self.entries[at];
                (key.as_slice(), value)
            })
            .collect()
    }
}

/// The numeric value of `key` when it is an array index: the canonical decimal form of an integer
/// from 0 to 2^32 − 2. Such keys are enumerated before all others, in ascending order.
fn array_index(key: &[u16]) -> Option<u32> {
    if key.is_empty() || key.len() > 10 || (key.len() > 1 && key[0] == u16::from(b'0')) {
        return None;
    }
    let mut n: u64 = 0;
    for &unit in key {
        let digit = unit.checked_sub(u16::from(b'0')).filter(|d| *d <= 9)?;
        n = n * 10 + u64::from(digit);
    }
    u32::try_from(n).ok().filter(|n| *n != u32::MAX)
}

/// Where and why `JSON.parse` would throw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Byte offset into the text.
    pub offset: usize,
    pub what: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.what, self.offset)
    }
}

impl std::error::Error for ParseError {}

/// Parses `text` as `JSON.parse` does (strict JSON, nothing after the value but whitespace).
pub fn parse(text: &str) -> Result<Value, ParseError> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        at: 0,
    };
    parser.skip_whitespace();
    let value = parser.value(0)?;
    parser.skip_whitespace();
    if parser.at != parser.bytes.len() {
        return Err(parser.error("unexpected text after the JSON value"));
    }
    Ok(value)
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn error(&self, what: &'static str) -> ParseError {
        ParseError {
            offset: self.at,
            what,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    fn expect_literal(&mut self, literal: &str, value: Value) -> Result<Value, ParseError> {
        if self.bytes[self.at..].starts_with(literal.as_bytes()) {
            self.at += literal.len();
            Ok(value)
        } else {
            Err(self.error("invalid literal"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        match self.peek() {
            None => Err(self.error("unexpected end of JSON input")),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().map(Value::String),
            Some(b't') => self.expect_literal("true", Value::Bool(true)),
            Some(b'f') => self.expect_literal("false", Value::Bool(false)),
            Some(b'n') => self.expect_literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error("unexpected character")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        self.at += 1;
        let mut object = Object::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(Value::Object(object));
        }
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a string key"));
            }
            let key = self.string()?;
            self.skip_whitespace();
            if self.peek() != Some(b':') {
                return Err(self.error("expected ':'"));
            }
            self.at += 1;
            self.skip_whitespace();
            let value = self.value(depth)?;
            object.insert(key, value);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Value::Object(object));
                }
                _ => return Err(self.error("expected ',' or '}'")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        self.at += 1;
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_whitespace();
            items.push(self.value(depth)?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.error("expected ',' or ']'")),
            }
        }
    }

    fn string(&mut self) -> Result<JsString, ParseError> {
        self.at += 1;
        let mut units = JsString::new();
        let mut run_start = self.at;
        loop {
            match self.peek() {
                None => return Err(self.error("unterminated string")),
                Some(b'"') => {
                    units.extend(self.text[run_start..self.at].encode_utf16());
                    self.at += 1;
                    return Ok(units);
                }
                Some(b'\\') => {
                    units.extend(self.text[run_start..self.at].encode_utf16());
                    self.at += 1;
                    let unit = match self.peek() {
                        Some(b'"') => u16::from(b'"'),
                        Some(b'\\') => u16::from(b'\\'),
                        Some(b'/') => u16::from(b'/'),
                        Some(b'b') => 0x08,
                        Some(b'f') => 0x0c,
                        Some(b'n') => u16::from(b'\n'),
                        Some(b'r') => u16::from(b'\r'),
                        Some(b't') => u16::from(b'\t'),
                        Some(b'u') => {
                            let hex = self
                                .bytes
                                .get(self.at + 1..self.at + 5)
                                .and_then(|h| std::str::from_utf8(h).ok())
                                .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
                                .and_then(|h| u16::from_str_radix(h, 16).ok())
                                .ok_or_else(|| self.error("bad \\u escape"))?;
                            self.at += 4;
                            hex
                        }
                        _ => return Err(self.error("bad escape")),
                    };
                    // A \u escape may name half of a surrogate pair, or a lone surrogate:
                    // JavaScript keeps either as a code unit, and so do we.
                    units.push(unit);
                    self.at += 1;
                    run_start = self.at;
                }
                Some(0x00..=0x1f) => return Err(self.error("control character in string")),
                Some(_) => self.at += 1,
            }
        }
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.error("bad number")),
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("bad number"));
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("bad number"));
            }
            self.digits();
        }
        // Rust's parser rounds correctly, as JavaScript's does, and gives infinity for a
        // magnitude beyond the double range, as JSON.parse does.
        self.text[start..self.at]
            .parse::<f64>()
            .map(Value::Number)
            .map_err(|_| ParseError {
                offset: start,
                what: "bad number",
            })
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
    }
}

/// Writes `value` as `JSON.stringify(value)` does: compact, JavaScript key order, JavaScript
/// numbers, lone surrogates escaped.
pub fn stringify(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        // JSON has no NaN or Infinity; JSON.stringify writes null for them.
        Value::Number(n) if !n.is_finite() => out.push_str("null"),
        Value::Number(n) => out.push_str(&number_to_string(*n)),
        Value::String(units) => write_string(out, units),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(object) => {
            out.push('{');
            for (i, (key, item)) in object.ordered().into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// Writes a string as JSON.stringify's QuoteJSONString does (ES2019 and later).
pub fn write_string(out: &mut String, units: &[u16]) {
    out.push('"');
    let mut i = 0;
    while i < units.len() {
        let unit = units[i];
        match unit {
            0x22 => out.push_str("\\\""),
            0x5c => out.push_str("\\\\"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            0x0a => out.push_str("\\n"),
            0x0d => out.push_str("\\r"),
            0x09 => out.push_str("\\t"),
            0x00..=0x1f => {
                let _ = write!(out, "\\u{unit:04x}");
            }
            0xd800..=0xdbff => match units.get(i + 1) {
                Some(&low @ 0xdc00..=0xdfff) => {
                    let code =
                        0x10000 + ((u32::from(unit) - 0xd800) << 10) + (u32::from(low) - 0xdc00);
                    out.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
                    i += 1;
                }
                _ => {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            },
            0xdc00..=0xdfff => {
                let _ = write!(out, "\\u{unit:04x}");
            }
            _ => out.push(char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER)),
        }
        i += 1;
    }
    out.push('"');
}

/// Formats a number as JavaScript's `Number.prototype.toString()` (radix 10) does.
///
/// Both JavaScript and Rust pick the shortest digit string that reads back as the same double
/// (and the closest one among equals); only the layout differs, so the digits are taken from
/// Rust's exponent form and laid out by the ECMAScript Number::toString rules.
pub fn number_to_string(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_string();
    }
    if x == 0.0 {
        // Both zeros are written "0".
        return "0".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    if x < 0.0 {
        return format!("-{}", number_to_string(-x));
    }
    let exp_form = format!("{x:e}");
    let (mantissa, exponent) = exp_form.split_once('e').unwrap_or((exp_form.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i64 = exponent.parse().unwrap_or(0);
    // In the spec's terms: the value is 0.d1d2…dk × 10^n.
    let k = i64::try_from(digits.len()).unwrap_or(i64::MAX);
    let n = exponent + 1;
    let mut out = String::new();
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n(
            '0',
            usize::try_from(n - k).unwrap_or(0),
        ));
    } else if 0 < n && n <= 21 {
        let split = usize::try_from(n).unwrap_or(0);
        out.push_str(&digits[..split]);
        out.push('.');
        out.push_str(&digits[split..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', usize::try_from(-n).unwrap_or(0)));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = n - 1;
        let _ = write!(out, "e{}{}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    out
}

/// Formats a non-negative integer in base 36 with lowercase digits, as `n.toString(36)` does.
pub fn base36(mut n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".to_string();
    }
    let mut out = Vec::new();
    while n > 0 {
        // n % 36 < 36, so the index is always in range.
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Decodes code units to Rust text, replacing lone surrogates (for display only).
pub fn lossy(units: &[u16]) -> String {
    String::from_utf16_lossy(units)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(text: &str) -> String {
        stringify(&parse(text).expect("valid JSON"))
    }

    #[test]
    fn numbers_are_written_as_javascript_writes_them() {
        // Expected values are what node prints for String(x).
        let cases: &[(f64, &str)] = &[
            (1.0, "1"),
            (-1.0, "-1"),
            (0.0, "0"),
            (-0.0, "0"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (0.1 + 0.2, "0.30000000000000004"),
            (100.0, "100"),
            (123_456_789_012.0, "123456789012"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e21, "1.5e+21"),
            (1e-6, "0.000001"),
            (1.5e-6, "0.0000015"),
            (1e-7, "1e-7"),
            (1.25e-7, "1.25e-7"),
            (123e-20, "1.23e-18"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (9_007_199_254_740_993.0, "9007199254740992"),
            (12_345_678_901_234_567_890.0, "12345678901234567000"),
            (1_700_000_000_000.0, "1700000000000"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (x, expected) in cases {
            assert_eq!(number_to_string(*x), *expected, "{x:e}");
        }
    }

    #[test]
    fn numbers_in_json_are_normalized() {
        assert_eq!(
            roundtrip("[1.0,1e2,1E+2,-0,0.5e1,1e400,-1e400]"),
            "[1,100,100,0,5,null,null]"
        );
        assert_eq!(
            roundtrip("[12345678901234567890]"),
            "[12345678901234567000]"
        );
        assert_eq!(roundtrip("[9007199254740993]"), "[9007199254740992]");
        assert_eq!(roundtrip("[0.000001, 0.0000001]"), "[0.000001,1e-7]");
    }

    #[test]
    fn strings_are_escaped_as_javascript_escapes_them() {
        assert_eq!(roundtrip(r#""a\"b\\c\/d""#), r#""a\"b\\c/d""#);
        assert_eq!(
            roundtrip(r#""\b\f\n\r\t\u0001\u001f""#),
            r#""\b\f\n\r\t\u0001\u001f""#
        );
        // DEL, U+2028 and non-ASCII are written as themselves.
        assert_eq!(
            roundtrip("\"\u{7f}\u{2028}é日本\""),
            "\"\u{7f}\u{2028}é日本\""
        );
        // An escaped pair becomes the character; lone halves stay escaped, in lowercase hex.
        assert_eq!(roundtrip(r#""\uD83D\uDE00""#), "\"😀\"");
        assert_eq!(roundtrip(r#""\uD800x\uDFFF""#), r#""\ud800x\udfff""#);
        assert_eq!(roundtrip(r#""\uDE00\uD83D""#), r#""\ude00\ud83d""#);
        assert_eq!(roundtrip(r#""\u00e9\u00E9""#), "\"éé\"");
    }

    #[test]
    fn object_keys_follow_javascript_order() {
        assert_eq!(
            roundtrip(
                r#"{"b":1,"a":2,"2":3,"10":4,"1":5,"01":6,"-1":7,"4294967294":8,"4294967295":9}"#
            ),
            r#"{"1":5,"2":3,"10":4,"4294967294":8,"b":1,"a":2,"01":6,"-1":7,"4294967295":9}"#
        );
        // A repeated key keeps its first position and its last value.
        assert_eq!(roundtrip(r#"{"a":1,"b":2,"a":3}"#), r#"{"a":3,"b":2}"#);
        assert_eq!(roundtrip(r#"{"__proto__":1}"#), r#"{"__proto__":1}"#);
    }

    #[test]
    fn whitespace_is_dropped() {
        assert_eq!(
            roundtrip(" { \"a\" : [ 1 , true , null , { } , [ ] ] } \n"),
            r#"{"a":[1,true,null,{},[]]}"#
        );
    }

    #[test]
    fn invalid_json_is_refused() {
        for text in [
            "",
            "{",
            "[1,]",
            "{\"a\":1,}",
            "01",
            "1.",
            ".5",
            "+1",
            "-",
            "1e",
            "tru",
            "nul",
            "\"abc",
            "\"\\x\"",
            "\"\\u12\"",
            "\"a\nb\"",
            "{} x",
            "NaN",
            "Infinity",
            "'a'",
            "{a:1}",
        ] {
            assert!(parse(text).is_err(), "{text:?} should not parse");
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_a_crash() {
        let deep = "[".repeat(100_000);
        assert!(parse(&deep).is_err());
        let ok = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn base36_matches_javascript() {
        assert_eq!(base36(0), "0");
        assert_eq!(base36(35), "z");
        assert_eq!(base36(36), "10");
        assert_eq!(base36(1_700_000_000_000), "loyw3v28");
        assert_eq!(base36(u64::from(u32::MAX)), "1z141z3");
    }
}
