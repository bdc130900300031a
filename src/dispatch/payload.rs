//! The event payload read on stdin (contract §2): its limits, the fields the dispatcher needs, and
//! the exact bytes handlers receive.

use std::borrow::Cow;
use std::path::Path;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::settings::events::{self, EventKind, Subject};
use crate::settings::json::{self, Reader, Unsure};
use crate::settings::short_json;

/// Reading stops here; a larger payload is an error.
pub const MAX_BYTES: usize = 64 << 20;

/// One validated payload.
#[derive(Debug)]
pub struct Payload {
    pub event: String,
    pub kind: EventKind,
    pub tool_name: Option<String>,
    /// On an event whose matcher is tested against a payload member ([`Subject::Member`]),
    /// that member's value when it is a string.
    pub member: Option<String>,
    /// The payload's `cwd`, when it is a string.
    pub cwd: Option<String>,
    /// The payload's `team`, when present (validated by the compliance log).
    pub team: Option<Value>,
    /// The session the payload belongs to: its `session_id`, else its `sessionId`, when a
    /// string (contract §21: a background handler's result goes to the session's next dispatch).
    pub session_id: Option<String>,
    /// Problems that do not stop the dispatch (a `cwd` that is not a string, an unknown event).
    pub warnings: Vec<String>,
    /// The payload as read, without surrounding white space.
    raw: Vec<u8>,
    has_event: bool,
    has_cwd: bool,
}

/// The members the dispatcher reads from a payload, found in one pass; every other member is
/// skipped unparsed. A member present with `null` is `Some(Value::Null)`, apart from a missing
/// one. Read from a `serve` request line, also the request's own `id` and `options`, as written.
#[derive(Default)]
pub struct Fields {
    event: Option<Value>,
    hook_event_name: Option<Value>,
    cwd: Option<Value>,
    tool_name: Option<Value>,
    team: Option<Value>,
    session_id: Option<Value>,
    session_id_camel: Option<Value>,
    pub id: Option<Box<RawValue>>,
    pub options: Option<Box<RawValue>>,
}

impl Fields {
    /// Reads the object `json`; with `request`, `id` and `options` too (a payload's own members
    /// of those names are the payload's, skipped like any other). A member given twice is an
    /// error, as serde's derived readers make it.
    fn read(json: &[u8], request: bool) -> serde_json::Result<Fields> {
        Fields::read_plain(json, request).or_else(|Unsure| Fields::read_by_serde(json, request))
    }

    /// [`Fields::read`] by `serde_json` alone: what it says of any text is what a payload's
    /// error says.
    fn read_by_serde(json: &[u8], request: bool) -> serde_json::Result<Fields> {
        let mut de = serde_json::Deserializer::from_slice(json);
        let fields = de.deserialize_map(FieldsVisitor { request })?;
        de.end()?;
        Ok(fields)
    }

    /// [`Fields::read`] by the hand-written [`json`] reader, for the usual payload: an object
    /// whose keys have no escapes, each member it reads at most once and a string or `null`
    /// (`id` and `options` anything). Whatever else is [`Unsure`], for `serde_json` to read.
    fn read_plain(json: &[u8], request: bool) -> json::Read<Fields> {
        let text = std::str::from_utf8(json).map_err(|_| Unsure)?;
        let mut reader = Reader::new(text);
        let mut fields = Fields::default();
        reader.object(|reader, key| {
            let slot = match key.plain().ok_or(Unsure)? {
                "event" => &mut fields.event,
                "hook_event_name" => &mut fields.hook_event_name,
                "cwd" => &mut fields.cwd,
                "tool_name" => &mut fields.tool_name,
                "team" => &mut fields.team,
                "session_id" => &mut fields.session_id,
                "sessionId" => &mut fields.session_id_camel,
                name @ ("id" | "options") if request => {
                    let slot = if name == "id" {
                        &mut fields.id
                    } else {
                        &mut fields.options
                    };
                    if slot.is_some() {
                        return Err(Unsure);
                    }
                    let raw = reader.value()?.to_string();
                    *slot = Some(RawValue::from_string(raw).map_err(|_| Unsure)?);
                    return Ok(());
                }
                _ => return reader.skip(),
            };
            if slot.is_some() {
                // A member given twice: `serde_json` says so.
                return Err(Unsure);
            }
            *slot = Some(if reader.null()? {
                Value::Null
            } else {
                Value::String(reader.string()?.decoded()?.into_owned())
            });
            Ok(())
        })?;
        reader.end()?;
        Ok(fields)
    }
}

/// The member names [`Fields`] knows, told apart without allocating.
enum Key {
    Event,
    HookEventName,
    Cwd,
    ToolName,
    Team,
    SessionId,
    SessionIdCamel,
    Id,
    Options,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Key, E> {
                Ok(match key {
                    "event" => Key::Event,
                    "hook_event_name" => Key::HookEventName,
                    "cwd" => Key::Cwd,
                    "tool_name" => Key::ToolName,
                    "team" => Key::Team,
                    "session_id" => Key::SessionId,
                    "sessionId" => Key::SessionIdCamel,
                    "id" => Key::Id,
                    "options" => Key::Options,
                    _ => Key::Other,
                })
            }
        }
        de.deserialize_identifier(KeyVisitor)
    }
}

struct FieldsVisitor {
    request: bool,
}

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Fields;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
        fn fill<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
            map: &mut A,
            slot: &mut Option<T>,
            name: &'static str,
        ) -> Result<(), A::Error> {
            if slot.is_some() {
                return Err(serde::de::Error::duplicate_field(name));
            }
            *slot = Some(map.next_value()?);
            Ok(())
        }
        let mut fields = Fields::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Event => fill(&mut map, &mut fields.event, "event")?,
                Key::HookEventName => {
                    fill(&mut map, &mut fields.hook_event_name, "hook_event_name")?
                }
                Key::Cwd => fill(&mut map, &mut fields.cwd, "cwd")?,
                Key::ToolName => fill(&mut map, &mut fields.tool_name, "tool_name")?,
                Key::Team => fill(&mut map, &mut fields.team, "team")?,
                // Not a member the dispatch needs: given twice, the last one counts, as for
                // any member the dispatcher passes over.
                Key::SessionId => fields.session_id = Some(map.next_value()?),
                Key::SessionIdCamel => fields.session_id_camel = Some(map.next_value()?),
                Key::Id if self.request => fill(&mut map, &mut fields.id, "id")?,
                Key::Options if self.request => fill(&mut map, &mut fields.options, "options")?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(fields)
    }
}

/// Reads stdin up to [`MAX_BYTES`], noticing signals while blocked.
///
/// `on_terminal` is called once, before waiting, when stdin is a terminal with nothing typed
/// yet: a person ran the dispatcher by hand. A caller's pipe with the payload in it (or closed)
/// costs no look at whether it is a terminal.
pub fn read_stdin(on_terminal: impl FnOnce()) -> Result<Vec<u8>, ReadError> {
    use std::io::IsTerminal;
    if !crate::signals::readable_now(0) && std::io::stdin().is_terminal() {
        on_terminal();
    }
    let mut stdin = std::io::stdin().lock();
    let mut buf = Vec::with_capacity(16 * 1024);
    loop {
        if let Some(sig) = crate::signals::received() {
            return Err(ReadError::Interrupted(sig));
        }
        crate::signals::wait_readable(0);
        if let Some(sig) = crate::signals::received() {
            return Err(ReadError::Interrupted(sig));
        }
        match read_more(&mut stdin, &mut buf) {
            Ok(0) => return Ok(buf),
            Ok(_) => {
                if buf.len() > MAX_BYTES {
                    return Err(ReadError::Invalid(format!(
                        "payload: larger than the limit of {} MiB; send less on stdin",
                        MAX_BYTES >> 20
                    )));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(ReadError::Invalid(format!(
                    "payload: cannot read stdin: {e}"
                )))
            }
        }
    }
}

/// Reads once, appending to `buf` without zeroing its spare room first (a payload is usually a
/// few KiB, sometimes many MiB: neither should pay for clearing buffers).
#[cfg(unix)]
fn read_more(_stdin: &mut std::io::StdinLock<'_>, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    // The first 16 KiB are read into the buffer as it was made, so that a payload of a few KiB
    // is heard to its end without being moved; past them it grows ahead of the reads.
    if buf.len() >= 16 * 1024 && buf.capacity() - buf.len() < 16 * 1024 {
        buf.reserve(buf.len().max(64 * 1024));
    }
    let spare = buf.spare_capacity_mut();
    // SAFETY: read(2) writes at most `spare.len()` bytes into memory we own, and `set_len` then
    // covers exactly the bytes it reported written.
    let n = unsafe { libc::read(0, spare.as_mut_ptr().cast(), spare.len()) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let n = n.unsigned_abs();
    // SAFETY: see above; `n` is at most the spare capacity.
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

#[cfg(not(unix))]
fn read_more(stdin: &mut std::io::StdinLock<'_>, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    use std::io::Read;
    let mut chunk = [0u8; 16 * 1024];
    let n = stdin.read(&mut chunk)?;
    buf.extend_from_slice(&chunk[..n]);
    Ok(n)
}

#[derive(Debug)]
pub enum ReadError {
    Invalid(String),
    Interrupted(i32),
}

impl Payload {
    /// What a group's matcher is tested against: the tool's name on a tool event, the member's
    /// value on an event whose matcher reads a member ([`Subject::Member`]), else nothing.
    pub fn subject(&self) -> Option<&str> {
        self.tool_name.as_deref().or(self.member.as_deref())
    }

    /// Validates a payload (contract §2 and §8). `event_flag` is `--event`.
    pub fn parse(bytes: Vec<u8>, event_flag: Option<&str>) -> Result<Payload, String> {
        let raw = checked(bytes)?;
        let fields = Fields::read(&raw, false).map_err(|e| json_error(&e))?;
        Payload::build(raw, fields, event_flag)
    }

    /// A `serve` request line in one pass: the payload's members and the request's own `id` and
    /// `options`. `None` when the line is not valid JSON with at most one of each member: the
    /// caller then reads it the slower way, which says what is wrong.
    pub fn read_request(line: &[u8]) -> Option<Fields> {
        Fields::read(line, true).ok()
    }

    /// The payload of a request read by [`Payload::read_request`]: `raw` is the line without
    /// the request's own members, from which `fields` were read.
    pub fn from_request(raw: Vec<u8>, fields: Fields) -> Result<Payload, String> {
        Payload::build(raw, fields, None)
    }

    /// Everything after the syntax: depth, event, tool name, cwd.
    fn build(raw: Vec<u8>, fields: Fields, event_flag: Option<&str>) -> Result<Payload, String> {
        // serde_json skips unknown fields without counting their depth: count it here.
        if let Some(offset) = too_deep(&raw, MAX_DEPTH) {
            return Err(format!(
                "payload: nested deeper than {MAX_DEPTH} levels (at byte {offset}); flatten the payload"
            ));
        }

        let event = resolve_event(&fields, event_flag)?;
        let kind = EventKind::of(&event);
        let mut warnings = Vec::new();
        if kind == EventKind::Unknown {
            warnings.push(format!(
                "payload: unknown event {event:?} ({}); hooks configured under it run, but none can block",
                events::fired_and_known()
            ));
        }
        let tool_name = match fields.tool_name {
            Some(Value::String(name)) => {
                if kind.is_tool_event() {
                    usable(
                        "tool_name",
                        &name,
                        "handlers receive it in the environment variable LEVELCODE_TOOL_NAME",
                    )?;
                }
                Some(name)
            }
            other if kind.is_tool_event() => {
                let what = if other.is_none() {
                    "missing"
                } else {
                    "not a string"
                };
                return Err(format!(
                    "payload: tool_name is {what}; a {event} payload needs the tool's name as a string, e.g. \"tool_name\":\"write_file\""
                ));
            }
            _ => None,
        };
        // Only the events whose matcher reads a member of their own pay for reading it.
        let member = match kind.subject() {
            Subject::Member(field) => {
                serde_json::from_slice::<serde_json::Map<String, Value>>(&raw)
                    .ok()
                    .and_then(|mut object| match object.remove(field.name()) {
                        Some(Value::String(text)) => Some(text),
                        _ => None,
                    })
            }
            Subject::Nothing | Subject::Tool => None,
        };
        let has_cwd = fields.cwd.is_some();
        let cwd = match fields.cwd {
            Some(Value::String(cwd)) if !cwd.is_empty() => {
                usable("cwd", &cwd, "it is the project directory, a path")?;
                Some(cwd)
            }
            Some(other) => {
                warnings.push(format!(
                    "payload: cwd should be the absolute project directory as a string, not {}; using the current directory",
                    short_json(&other)
                ));
                None
            }
            None => None,
        };
        Ok(Payload {
            event,
            kind,
            tool_name: if kind.is_tool_event() {
                tool_name
            } else {
                None
            },
            member,
            cwd,
            team: fields.team,
            session_id: [fields.session_id, fields.session_id_camel]
                .into_iter()
                .find_map(|id| match id {
                    Some(Value::String(id)) => Some(id),
                    _ => None,
                }),
            warnings,
            has_event: fields.event.is_some(),
            has_cwd,
            raw,
        })
    }

    /// The payload as read, without surrounding white space.
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// The payload's `tool_input`, `null` when it has none; only that member is built.
    pub fn tool_input(&self) -> Value {
        #[derive(Deserialize)]
        struct Only {
            #[serde(default)]
            tool_input: Value,
        }
        serde_json::from_slice::<Only>(&self.raw)
            .map(|only| only.tool_input)
            .unwrap_or(Value::Null)
    }

    /// The bytes handlers read on stdin: the payload unchanged, with `event` and `cwd` appended
    /// when it lacks them (`cwd` is the project root).
    pub fn handler_input(&self, project_root: &Path) -> Cow<'_, [u8]> {
        let mut extra = Vec::new();
        if !self.has_event {
            extra.push(("event", self.event.clone()));
        }
        if !self.has_cwd {
            extra.push(("cwd", project_root.to_string_lossy().into_owned()));
        }
        if extra.is_empty() {
            // Borrowed: a payload of many MiB is not copied.
            return Cow::Borrowed(&self.raw);
        }
        // The raw payload is a valid object, so it ends in `}`.
        let body = &self.raw[..self.raw.len() - 1];
        let empty = body[1..].iter().all(u8::is_ascii_whitespace);
        let mut out = Vec::with_capacity(self.raw.len() + 64);
        out.extend_from_slice(body);
        for (i, (key, value)) in extra.iter().enumerate() {
            if i > 0 || !empty {
                out.push(b',');
            }
            out.extend_from_slice(format!("\"{key}\":").as_bytes());
            out.extend_from_slice(
                serde_json::to_string(value)
                    .unwrap_or_else(|_| "\"\"".into())
                    .as_bytes(),
            );
        }
        out.push(b'}');
        Cow::Owned(out)
    }
}

/// The payload without surrounding white space, once it is known to be a UTF-8 JSON object (its
/// syntax inside is serde's to check).
fn checked(bytes: Vec<u8>) -> Result<Vec<u8>, String> {
    let raw = trim_ascii(bytes);
    if raw.is_empty() {
        return Err(
            "payload: stdin was empty; send one JSON object such as {\"event\":\"Stop\"}".into(),
        );
    }
    if let Err(e) = std::str::from_utf8(&raw) {
        return Err(format!(
            "payload: not UTF-8 (invalid byte at offset {}); send UTF-8 JSON",
            e.valid_up_to()
        ));
    }
    if raw[0] != b'{' {
        return Err(
            match serde_json::from_slice::<serde::de::IgnoredAny>(&raw) {
                Ok(_) => "payload: not a JSON object; send one object such as {\"event\":\"Stop\"}"
                    .into(),
                Err(e) => json_error(&e),
            },
        );
    }
    Ok(raw)
}

/// Checks that the string member `name` can become what the dispatcher makes of it (`becomes`
/// says what, as a clause): an environment variable, a path or an argument, none of which can hold a NUL byte.
/// Valid JSON can (`"\u0000"`), so such a payload is refused here, naming the member, before the
/// value is used anywhere.
pub fn usable(name: &str, value: &str, becomes: &str) -> Result<(), String> {
    match value.find('\0') {
        None => Ok(()),
        Some(at) => Err(format!(
            "payload: {name} contains a NUL byte (\\u0000) at byte {at}; {becomes}, which cannot hold one; remove it"
        )),
    }
}

fn resolve_event(fields: &Fields, flag: Option<&str>) -> Result<String, String> {
    let as_string = |name: &str, value: &Option<Value>| -> Result<Option<String>, String> {
        match value {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!(
                "payload: {name} is {}, not a string; use one of {}",
                short_json(other),
                events::names().join(", ")
            )),
        }
    };
    let event = as_string("event", &fields.event)?;
    let alias = as_string("hook_event_name", &fields.hook_event_name)?;
    for (name, value) in [("event", &event), ("hook_event_name", &alias)] {
        if let Some(value) = value {
            usable(
                name,
                value,
                "handlers receive it in the environment variable LEVELCODE_HOOK_EVENT",
            )?;
        }
    }
    let from_payload = match (event, alias) {
        (Some(e), Some(a)) if e != a => {
            return Err(format!(
                "payload: event {e:?} and hook_event_name {a:?} disagree; keep one of them"
            ))
        }
        (Some(e), _) => Some(e),
        (None, a) => a,
    };
    match (from_payload, flag) {
        (Some(p), Some(f)) if p != f => Err(format!(
            "payload: its event {p:?} disagrees with --event {f:?}; drop --event or fix the payload"
        )),
        (Some(p), _) => Ok(p),
        (None, Some(f)) => Ok(f.to_string()),
        (None, None) => Err(format!(
            "payload: no event; add \"event\" (one of {}) to the payload, or pass --event",
            events::names().join(", ")
        )),
    }
}

/// The deepest nesting of arrays and objects a payload may have, the top-level object included.
pub const MAX_DEPTH: usize = 128;

/// The offset where valid JSON `bytes` nests deeper than `limit`, if it does. Strings are skipped
/// a block of bytes at a time, so a payload of large strings costs little.
pub fn too_deep(bytes: &[u8], limit: usize) -> Option<usize> {
    // No more opening brackets than the limit, strings included, cannot nest past it: counting
    // them a block at a time settles most payloads at a fraction of the scan's cost.
    if crate::bytes::count_either_up_to(b'[', b'{', bytes, limit + 1) <= limit {
        return None;
    }
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // Find the closing quote, stepping over escapes.
                let mut j = i + 1;
                loop {
                    match crate::bytes::find_either(b'"', b'\\', bytes.get(j..)?) {
                        Some(k) if bytes[j + k] == b'\\' => j += k + 2,
                        Some(k) => {
                            j += k;
                            break;
                        }
                        None => return None,
                    }
                }
                i = j;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return Some(i);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

fn json_error(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    if msg.contains("recursion limit") {
        return format!(
            "payload: nested deeper than 128 levels (line {}, column {})",
            e.line(),
            e.column()
        );
    }
    format!("payload: invalid JSON: {msg}")
}

fn trim_ascii(mut bytes: Vec<u8>) -> Vec<u8> {
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    bytes.truncate(end);
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(0);
    if start > 0 {
        bytes.drain(..start);
    }
    bytes
}

#[cfg(test)]
#[path = "payload_tests.rs"]
mod tests;
