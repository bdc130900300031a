//! One request line: its `id`, its `options`, and the payload handlers receive, which is the line
//! without those two members and otherwise unchanged, byte for byte.

use std::borrow::Cow;
use std::ops::Range;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::dispatch::payload::{Fields, Payload};
use crate::dispatch::OutputMode;

/// A request line that can be dispatched.
#[derive(Debug)]
pub struct Request {
    /// The request's `id` as written (any JSON value, `null` included), echoed in the answer.
    pub id: Option<Box<RawValue>>,
    pub options: RequestOptions,
    /// The payload without `id` and `options`, validated as `run` validates stdin.
    pub payload: Payload,
}

/// A line that cannot be dispatched: the error it is answered with, and its `id` when the line
/// shows one.
#[derive(Debug)]
pub struct Rejection {
    pub message: String,
    pub id: Option<Box<RawValue>>,
}

/// A request's `options`: `run`'s flags for this request only.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestOptions {
    pub project_dir: Option<PathBuf>,
    pub settings: Option<Vec<PathBuf>>,
    pub no_project: Option<bool>,
    pub team: Option<String>,
    #[serde(default, deserialize_with = "output_mode")]
    pub output: Option<OutputMode>,
    /// The caller's W3C `traceparent` for this request's spans (contract §18).
    pub traceparent: Option<String>,
    /// Hooks used instead of every layer (contract §14).
    #[serde(default, deserialize_with = "inline_hooks")]
    pub hooks: Option<Value>,
    /// Add the files the answer depends on, with their stamps, as `watch` (docs/serve.md).
    pub watch: Option<bool>,
    /// Run nothing: answer as a subject no group applies to would be answered (docs/serve.md).
    pub probe: Option<bool>,
    /// The client records this call in the compliance log itself (docs/serve.md).
    pub caller_records_compliance: Option<bool>,
}

fn inline_hooks<'de, D: Deserializer<'de>>(de: D) -> Result<Option<Value>, D::Error> {
    match Option::<Value>::deserialize(de)? {
        None => Ok(None),
        Some(hooks @ Value::Object(_)) => Ok(Some(hooks)),
        Some(other) => Err(serde::de::Error::custom(format!(
            "hooks must be an object of events, like settings.json's \"hooks\", not {}",
            crate::settings::short_json(&other)
        ))),
    }
}

impl RequestOptions {
    /// The first option that cannot be used as the path it is, with what to do about it: a NUL
    /// byte fits in a JSON string (`"\u0000"`) but in no path.
    fn unusable(&self) -> Option<String> {
        let named = self
            .project_dir
            .iter()
            .map(|dir| ("options.project_dir".to_string(), dir))
            .chain(
                self.settings
                    .iter()
                    .flatten()
                    .enumerate()
                    .map(|(i, file)| (format!("options.settings[{i}]"), file)),
            );
        for (name, path) in named {
            if let Some(at) = path
                .as_os_str()
                .as_encoded_bytes()
                .iter()
                .position(|b| *b == 0)
            {
                return Some(format!(
                    "request: {name} contains a NUL byte (\\u0000) at byte {at}; it is a path, which cannot hold one; remove it"
                ));
            }
        }
        None
    }
}

fn output_mode<'de, D: Deserializer<'de>>(de: D) -> Result<Option<OutputMode>, D::Error> {
    match Option::<String>::deserialize(de)?.as_deref() {
        None => Ok(None),
        Some("full") => Ok(Some(OutputMode::Full)),
        Some("compact") => Ok(Some(OutputMode::Compact)),
        Some(other) => Err(serde::de::Error::custom(format!(
            "output {other:?} is neither \"full\" nor \"compact\""
        ))),
    }
}

/// The two members `serve` reads for itself; every other member is the payload's.
#[derive(Deserialize)]
struct Envelope {
    #[serde(default, deserialize_with = "present")]
    id: Option<Box<RawValue>>,
    #[serde(default, deserialize_with = "present")]
    options: Option<Value>,
}

/// Keeps an explicit `null` apart from a missing member.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(de: D) -> Result<Option<T>, D::Error> {
    T::deserialize(de).map(Some)
}

/// Reads one request line (without its newline).
pub fn parse(line: &[u8]) -> Result<Request, Rejection> {
    let line = line.trim_ascii();
    if line.is_empty() {
        return Err(Rejection {
            message:
                "request: empty line; send one JSON object per line, such as {\"event\":\"Stop\"}"
                    .into(),
            id: None,
        });
    }
    // The usual line, valid and without repeated members, is read in one pass; anything else the
    // way below, which says what is wrong with it.
    if line[0] == b'{' && std::str::from_utf8(line).is_ok() {
        if let Some(read) = Payload::read_request(line) {
            return from_fields(line, read);
        }
    }
    parse_slowly(line)
}

/// [`parse`] for any line that is not empty: the envelope first, then the payload.
fn parse_slowly(line: &[u8]) -> Result<Request, Rejection> {
    // An array would deserialize into the struct too; only an object is a request.
    let envelope = match line[0] {
        b'{' => serde_json::from_slice::<Envelope>(line).map_err(Some),
        _ => Err(None),
    };
    let envelope = match envelope {
        Ok(envelope) => envelope,
        Err(problem) => {
            // Not a JSON object: the message `run` gives for the same bytes.
            let message = match (Payload::parse(line.to_vec(), None), problem) {
                (Err(message), _) => message,
                (Ok(_), Some(e)) => format!("request: {e}"),
                (Ok(_), None) => "request: not a JSON object".into(),
            };
            return Err(Rejection {
                message,
                id: readable_id(line),
            });
        }
    };
    assemble(line, envelope.id, envelope.options, |bytes| {
        Payload::parse(bytes, None)
    })
}

/// A request from what [`Payload::read_request`] read of `line`.
fn from_fields(line: &[u8], mut fields: Fields) -> Result<Request, Rejection> {
    let id = fields.id.take();
    // Read as JSON already, so this cannot fail; if it did, it would be the options' fault.
    let options = match fields
        .options
        .take()
        .map(|raw| serde_json::from_str(raw.get()))
    {
        None => None,
        Some(Ok(value)) => Some(value),
        Some(Err(e)) => {
            return Err(Rejection {
                message: format!("request: options: {e}"),
                id,
            })
        }
    };
    assemble(line, id, options, |bytes| {
        Payload::from_request(bytes, fields)
    })
}

/// The request of a line whose `id` and `options` are read, checked in this order: the options,
/// then the payload, which `payload` reads from the line without the request's own members.
fn assemble(
    line: &[u8],
    id: Option<Box<RawValue>>,
    options: Option<Value>,
    payload: impl FnOnce(Vec<u8>) -> Result<Payload, String>,
) -> Result<Request, Rejection> {
    let has_own_members = id.is_some() || options.is_some();
    let options = match options {
        None | Some(Value::Null) => RequestOptions::default(),
        Some(value) => match RequestOptions::deserialize(value) {
            Ok(options) => options,
            Err(e) => {
                return Err(Rejection {
                    message: format!("request: options: {e}"),
                    id,
                })
            }
        },
    };
    if let Some(message) = options.unusable() {
        return Err(Rejection { message, id });
    }
    let bytes = if has_own_members {
        without_own_members(line).into_owned()
    } else {
        line.to_vec()
    };
    match payload(bytes) {
        Ok(payload) => Ok(Request {
            id,
            options,
            payload,
        }),
        Err(message) => Err(Rejection { message, id }),
    }
}

/// The `id` of a line that is not a valid request, when the members before the first problem
/// include one whose value is valid JSON.
pub fn readable_id(line: &[u8]) -> Option<Box<RawValue>> {
    members(line)
        .into_iter()
        .find(|m| m.key == "id")
        .and_then(|m| serde_json::from_slice(&line[m.value]).ok())
}

/// A valid JSON object without its `id` and `options` members; the rest keeps its bytes and
/// the white space around it.
fn without_own_members(object: &[u8]) -> Cow<'_, [u8]> {
    let all = members(object);
    if !all.iter().any(Member::is_own) {
        return Cow::Borrowed(object);
    }
    let (Some(first), Some(last)) = (all.first(), all.last()) else {
        return Cow::Borrowed(object);
    };
    let mut out = Vec::with_capacity(object.len());
    out.extend_from_slice(&object[..first.span.start]);
    let mut kept_any = false;
    for (i, member) in all.iter().enumerate() {
        if member.is_own() {
            continue;
        }
        if i > 0 {
            // The separator that preceded this member in the line; before the first member kept,
            // only the white space after its comma, so that `{"id":1, "a":2}` gives `{ "a":2}`,
            // the object the request was made from.
            let separator = &object[all[i - 1].span.end..member.span.start];
            let separator = match (kept_any, separator.iter().position(|&b| b == b',')) {
                (false, Some(comma)) => &separator[comma + 1..],
                _ => separator,
            };
            out.extend_from_slice(separator);
        }
        out.extend_from_slice(&object[member.span.clone()]);
        kept_any = true;
    }
    out.extend_from_slice(&object[last.span.end..]);
    Cow::Owned(out)
}

/// One member of the top-level object.
#[derive(Debug)]
struct Member<'a> {
    key: Cow<'a, str>,
    /// From the key's opening quote to the end of the value.
    span: Range<usize>,
    value: Range<usize>,
}

impl Member<'_> {
    fn is_own(&self) -> bool {
        self.key == "id" || self.key == "options"
    }
}

/// The members of the object `text` is, in order, up to the first thing that is not JSON: all of
/// them when `text` is a valid object. A member counts once the `,` or `}` after it is seen, so a
/// value cut short is never taken for a whole one. Nested values are skipped, not checked.
fn members(text: &[u8]) -> Vec<Member<'_>> {
    let mut found = Vec::new();
    let mut at = Cursor { text, at: 0 };
    at.space();
    if !at.eat(b'{') {
        return found;
    }
    at.space();
    if at.eat(b'}') {
        return found;
    }
    loop {
        let start = at.at;
        if at.string().is_none() {
            return found;
        }
        let key_end = at.at;
        at.space();
        if !at.eat(b':') {
            return found;
        }
        at.space();
        let value_start = at.at;
        if at.value().is_none() {
            return found;
        }
        let end = at.at;
        at.space();
        let more = at.eat(b',');
        if !more && !at.eat(b'}') {
            return found;
        }
        let Some(key) = decode_key(&text[start..key_end]) else {
            return found;
        };
        found.push(Member {
            key,
            span: start..end,
            value: value_start..end,
        });
        if !more {
            return found;
        }
        at.space();
    }
}

/// A key as JSON text (with its quotes) decoded; escapes are rare, so usually borrowed.
fn decode_key(quoted: &[u8]) -> Option<Cow<'_, str>> {
    let inner = &quoted[1..quoted.len() - 1];
    if !inner.contains(&b'\\') {
        return std::str::from_utf8(inner).ok().map(Cow::Borrowed);
    }
    serde_json::from_slice::<String>(quoted)
        .ok()
        .map(Cow::Owned)
}

/// A position in JSON text that moves over whole tokens and never reads past the end.
struct Cursor<'a> {
    text: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        let matched = self.peek() == Some(byte);
        if matched {
            self.at += 1;
        }
        matched
    }

    /// A string, from its opening quote to just past its closing one.
    fn string(&mut self) -> Option<()> {
        if !self.eat(b'"') {
            return None;
        }
        loop {
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
    }

    /// One value: a string, an object or array with whatever nests in it, or a bare word
    /// (number, `true`, `false`, `null`).
    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => self.string()?,
                        b'{' | b'[' => {
                            depth += 1;
                            self.at += 1;
                        }
                        b'}' | b']' => {
                            depth -= 1;
                            self.at += 1;
                            if depth == 0 {
                                return Some(());
                            }
                        }
                        _ => self.at += 1,
                    }
                }
            }
            _ => {
                let start = self.at;
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n')
                ) {
                    self.at += 1;
                }
                (self.at > start).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_one_pass_read_answers_as_the_slow_one() {
        let deep = format!(
            "{{\"event\":\"Stop\",\"x\":{}{}}}",
            "[".repeat(130),
            "]".repeat(130)
        );
        let deep_id = format!(
            "{{\"event\":\"Stop\",\"id\":{}{}}}",
            "[".repeat(130),
            "]".repeat(130)
        );
        let lines = [
            r#"{"event":"Stop"}"#,
            r#"{"event":"Stop","id":7}"#,
            r#"{"id":"a", "event":"Stop","options":{"output":"full"} ,"x":{"id":1}}"#,
            r#"{"id":null,"event":"PreToolUse","tool_name":"write_file","cwd":"/p"}"#,
            r#"{"event":"PreToolUse","id":[1,{"a":2}]}"#,
            r#"{"event":"Stop","options":null}"#,
            r#"{"event":"Stop","options":{"project_dir":"/x","no_project":true,"team":"t","settings":["/a"]}}"#,
            r#"{"event":"Stop","options":{"outptu":"full"},"id":3}"#,
            r#"{"event":"Stop","options":{"output":"loud"},"id":3}"#,
            r#"{"event":"Stop","options":[1]}"#,
            r#"{"event":1,"id":2}"#,
            r#"{"hook_event_name":"Stop","event":"PreToolUse","id":2}"#,
            r#"{"id":2}"#,
            r#"{"event":"Stop","id":1,"id":2}"#,
            r#"{"event":"Stop","event":"Stop","id":2}"#,
            r#"{"event":"Stop","cwd":5,"team":{"a":1}}"#,
            r#"{"event":"Stop","x":"\u00e9\ud800"}"#,
            r#"{"event":"\ud800","id":1}"#,
            &deep,
            &deep_id,
        ];
        for line in lines {
            let fast = format!("{:?}", parse(line.as_bytes()));
            let slow = format!("{:?}", parse_slowly(line.as_bytes()));
            assert_eq!(fast, slow, "{line}");
        }
        assert!(Payload::read_request(br#"{"event":"Stop","id":9}"#).is_some());
    }

    fn stripped(text: &str) -> String {
        String::from_utf8(without_own_members(text.as_bytes()).into_owned()).unwrap()
    }

    fn id_of(text: &str) -> Option<String> {
        readable_id(text.as_bytes()).map(|id| id.get().to_string())
    }

    #[test]
    fn own_members_are_cut_out_wherever_they_are() {
        assert_eq!(
            stripped(r#"{"id":1,"event":"Stop"}"#),
            r#"{"event":"Stop"}"#
        );
        assert_eq!(
            stripped(r#"{"event":"Stop", "id": 1}"#),
            r#"{"event":"Stop"}"#
        );
        assert_eq!(
            stripped(r#"{ "event" : "Stop" , "options":{"team":"a"}, "cwd":"/x" }"#),
            r#"{ "event" : "Stop", "cwd":"/x" }"#
        );
        assert_eq!(
            stripped(r#"{"id":1, "options":{}, "event":"Stop"}"#),
            r#"{ "event":"Stop"}"#
        );
        assert_eq!(
            stripped(r#"{"id":"a","options":null,"x":[1,{"id":2}],"y":"}"}"#),
            r#"{"x":[1,{"id":2}],"y":"}"}"#
        );
        assert_eq!(stripped(r#"{"id":1}"#), "{}");
        assert_eq!(stripped(r#"{"\u0069d":1,"a":2}"#), r#"{"a":2}"#);
    }

    #[test]
    fn a_line_without_own_members_is_left_alone() {
        let text = r#"{"event":"Stop","nested":{"id":1,"options":2}}"#;
        assert!(matches!(
            without_own_members(text.as_bytes()),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn id_is_read_up_to_the_first_problem() {
        assert_eq!(id_of(r#"{"id":7,"event":"Stop""#).as_deref(), Some("7"));
        assert_eq!(id_of(r#"{"event":"Stop","id":"x" "#), None);
        assert_eq!(id_of(r#"{"event":,"id":"x"}"#), None);
        assert_eq!(id_of(r#"{"id":[1,}"#), None);
        assert_eq!(id_of(r#"{"id":12"#), None);
        assert_eq!(id_of(r#"{"id":"a\"b","x":"#).as_deref(), Some(r#""a\"b""#));
        assert_eq!(id_of("\u{1}"), None);
        assert_eq!(id_of(r#"{"a":"\"#), None);
    }

    #[test]
    fn requests_keep_the_payload_and_read_their_options() {
        let request = parse(
            br#"{"id":"r1","event":"PreToolUse","tool_name":"x","options":{"team":"t","output":"compact"}}"#,
        )
        .unwrap();
        assert_eq!(request.id.unwrap().get(), r#""r1""#);
        assert_eq!(request.options.team.as_deref(), Some("t"));
        assert_eq!(request.options.output, Some(OutputMode::Compact));
        assert_eq!(
            request.payload.raw(),
            br#"{"event":"PreToolUse","tool_name":"x"}"#
        );
    }

    #[test]
    fn bad_lines_say_why_and_keep_their_id() {
        let rejection = parse(br#"{"id":3,"tool_name":"x"}"#).unwrap_err();
        assert!(
            rejection.message.contains("no event"),
            "{}",
            rejection.message
        );
        assert_eq!(rejection.id.unwrap().get(), "3");

        let rejection =
            parse(br#"{"id":null,"event":"Stop","options":{"outptu":"full"}}"#).unwrap_err();
        assert!(
            rejection.message.contains("unknown field"),
            "{}",
            rejection.message
        );
        assert_eq!(rejection.id.unwrap().get(), "null");

        let rejection =
            parse(br#"{"id":4,"event":"Stop","options":{"output":"short"}}"#).unwrap_err();
        assert!(
            rejection.message.contains("\"short\""),
            "{}",
            rejection.message
        );

        let rejection = parse(br#"[{"id":1}]"#).unwrap_err();
        assert!(rejection.message.contains("not a JSON object"));
        assert!(rejection.id.is_none());

        let rejection = parse(br#"{"id":1,"id":2,"event":"Stop"}"#).unwrap_err();
        assert!(
            rejection.message.contains("duplicate"),
            "{}",
            rejection.message
        );

        let rejection = parse(b"  \r").unwrap_err();
        assert!(rejection.message.contains("empty line"));
    }
}
