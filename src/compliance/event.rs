//! From a `PostToolUse` hook payload to levelcode's `ComplianceEvent` fields.
//!
//! The fields and their order are levelcode's (`traceId`, `timestamp`, `eventType`, `agentId`,
//! `payload`, `signature`), so levelcode's own reader takes our lines for its own.

use std::time::{SystemTime, UNIX_EPOCH};

use super::js_json::{self, JsString, Object, Value};
use super::legacy;

/// The only event type the dispatcher records: one executed tool call.
pub const EVENT_TYPE: &str = "tool-call";

/// One tool call, before the chain fields are added.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallEvent {
    pub trace_id: JsString,
    /// Milliseconds since the Unix epoch, as `Date.now()` gives them.
    pub timestamp: f64,
    pub agent_id: Option<JsString>,
    /// `{"tool","args","result"}`.
    pub payload: Value,
}

impl ToolCallEvent {
    /// Builds the event for a hook payload (a JSON object) at time `now_ms`.
    ///
    /// `traceId` is the payload's `tool_call_id`/`toolCallId` when it is a non-empty string, else
    /// a fresh id in levelcode's `startTrace` form; `agentId` is `agent_id`/`agentId` when it is
    /// a string; `args` is `tool_input` (`null` when the payload has none).
    pub fn from_hook_payload(hook: &Object, now_ms: u64) -> ToolCallEvent {
        let string_field = |names: &[&str]| {
            names
                .iter()
                .find_map(|name| hook.get(name).and_then(Value::as_js_string))
                .map(<[u16]>::to_vec)
        };
        let trace_id = string_field(&["tool_call_id", "toolCallId"])
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| fresh_trace_id(now_ms).encode_utf16().collect());
        let agent_id = string_field(&["agent_id", "agentId"]);

        let tool = hook.get("tool_name").cloned().unwrap_or(Value::Null);
        let args = hook.get("tool_input").cloned().unwrap_or(Value::Null);
        let result = hook
            .get("tool_result")
            .or_else(|| hook.get("tool_response"));
        let outcome = if result.is_some_and(carries_error) {
            "failure"
        } else {
            "success"
        };
        let mut payload = Object::new();
        payload.set("tool", tool);
        payload.set("args", args);
        payload.set("result", Value::string(outcome));

        ToolCallEvent {
            trace_id,
            // Milliseconds since 1970 stay far below 2^53, so the conversion is exact.
            timestamp: now_ms as f64,
            agent_id,
            payload: Value::Object(payload),
        }
    }

    /// levelcode's legacy `signature` of this event.
    pub fn legacy_signature(&self) -> String {
        let event_type: JsString = EVENT_TYPE.encode_utf16().collect();
        legacy::signature(&self.trace_id, self.timestamp, &event_type, &self.payload)
    }

    /// The event as a line object in levelcode's field order, ready for the chain fields.
    pub fn to_object(&self) -> Object {
        let mut line = Object::new();
        line.set("traceId", Value::String(self.trace_id.clone()));
        line.set("timestamp", Value::Number(self.timestamp));
        line.set("eventType", Value::string(EVENT_TYPE));
        if let Some(agent_id) = &self.agent_id {
            line.set("agentId", Value::String(agent_id.clone()));
        }
        line.set("payload", self.payload.clone());
        line.set("signature", Value::string(&self.legacy_signature()));
        line
    }
}

/// `trace-<base36 ms>-<6 random base36 digits>`, the form of levelcode's `startTrace`.
fn fresh_trace_id(now_ms: u64) -> String {
    const SIX_DIGITS: u64 = 36u64.pow(6);
    let mut bytes = [0u8; 8];
    let random = match getrandom::fill(&mut bytes) {
        Ok(()) => u64::from_le_bytes(bytes),
        // Without the OS generator, the clock's nanoseconds and the process id still make
        // concurrent dispatchers unlikely to collide; the id is a label, not a secret.
        Err(_) => {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::from(d.subsec_nanos()));
            nanos ^ (u64::from(std::process::id()) << 32)
        }
    };
    format!(
        "trace-{}-{:0>6}",
        js_json::base36(now_ms),
        js_json::base36(random % SIX_DIGITS)
    )
}

/// Returns true if and only if a tool result carries an error (contract §9): an `error` or
/// `errorMessage` key at the top level of an object, or in the `value` of an output part
/// (`[{"type":"json","value":{…}}]`), or, for a string, the same in the JSON it holds; a string
/// that does not parse (cut short, say) carries an error when `"error":` or `"errorMessage":`
/// appears in it.
pub fn carries_error(result: &Value) -> bool {
    match result {
        Value::String(units) => {
            let text = js_json::lossy(units);
            match js_json::parse(&text) {
                Ok(Value::String(_)) | Err(_) => mentions_error_key(&text),
                Ok(parsed) => structure_carries_error(&parsed),
            }
        }
        other => structure_carries_error(other),
    }
}

fn structure_carries_error(result: &Value) -> bool {
    match result {
        Value::Object(object) => has_error_key(object) || part_value_has_error(object),
        Value::Array(parts) => parts.iter().any(|part| {
            part.as_object()
                .is_some_and(|part| has_error_key(part) || part_value_has_error(part))
        }),
        _ => false,
    }
}

fn has_error_key(object: &Object) -> bool {
    object.contains_key("error") || object.contains_key("errorMessage")
}

fn part_value_has_error(part: &Object) -> bool {
    part.get("value")
        .and_then(Value::as_object)
        .is_some_and(has_error_key)
}

/// Looks for `"error"` or `"errorMessage"` followed by optional whitespace and a colon.
fn mentions_error_key(text: &str) -> bool {
    ["\"error\"", "\"errorMessage\""].iter().any(|key| {
        text.match_indices(key).any(|(at, _)| {
            text[at + key.len()..]
                .trim_start_matches([' ', '\t', '\n', '\r'])
                .starts_with(':')
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> Value {
        js_json::parse(text).expect("valid JSON")
    }

    fn event(hook_json: &str) -> ToolCallEvent {
        let hook = value(hook_json);
        ToolCallEvent::from_hook_payload(hook.as_object().expect("an object"), 1_700_000_000_000)
    }

    #[test]
    fn fields_come_from_the_hook_payload_in_levelcode_order() {
        let e = event(
            r#"{"event":"PostToolUse","tool_name":"write_file","tool_call_id":"toolu_01","agent_id":"a1",
                "tool_input":{"path":"src/a.ts","content":"x"},"tool_result":[{"type":"json","value":{"ok":true}}]}"#,
        );
        let line = js_json::stringify(&Value::Object(e.to_object()));
        assert_eq!(
            line,
            r#"{"traceId":"toolu_01","timestamp":1700000000000,"eventType":"tool-call","agentId":"a1","payload":{"tool":"write_file","args":{"path":"src/a.ts","content":"x"},"result":"success"},"signature":"-16626"}"#
        );
    }

    #[test]
    fn camel_case_aliases_are_read() {
        let e = event(r#"{"tool_name":"x","toolCallId":"c","agentId":"b"}"#);
        assert_eq!(e.trace_id, "c".encode_utf16().collect::<Vec<_>>());
        assert_eq!(e.agent_id, Some("b".encode_utf16().collect()));
    }

    #[test]
    fn a_missing_call_id_gets_a_fresh_trace_id() {
        let e = event(r#"{"tool_name":"x","tool_call_id":""}"#);
        let id = String::from_utf16(&e.trace_id).expect("ASCII");
        let rest = id
            .strip_prefix("trace-loyw3v28-")
            .expect("levelcode's form");
        assert_eq!(rest.len(), 6);
        assert!(rest
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()));
        assert_eq!(e.agent_id, None);
        let line = js_json::stringify(&Value::Object(e.to_object()));
        assert!(!line.contains("agentId"));
        assert!(line.contains(r#""payload":{"tool":"x","args":null,"result":"success"}"#));
    }

    #[test]
    fn errors_in_results_are_found() {
        let failing = [
            r#"{"error":"boom"}"#,
            r#"{"errorMessage":"boom"}"#,
            r#"{"type":"json","value":{"error":"x"}}"#,
            r#"[{"type":"json","value":{"errorMessage":"x"}}]"#,
            r#"[{"type":"text","text":"a"},{"type":"json","value":{"error":null}}]"#,
            r#""{\"error\":\"boom\"}""#,
            r#""[{\"type\":\"json\",\"value\":{\"error\":\"x\"}}]""#,
            // Cut short, so no longer JSON: the key decides.
            r#""{\"output\":\"abc\",\"error\": \"trunc""#,
            r#""[{\"type\":\"json\",\"value\":{\"errorMessage\":\"tr""#,
        ];
        for text in failing {
            assert!(carries_error(&value(text)), "{text} should carry an error");
        }
        let fine = [
            r#"{"ok":true}"#,
            r#"[{"type":"json","value":{"message":"no error here"}}]"#,
            r#"[{"type":"json","value":{"nested":{"error":"deep"}}}]"#,
            r#""plain text mentioning error""#,
            r#""{\"output\":\"the word \\\"error\\\" in text\"}""#,
            r#""{\"output\":\"cut sho""#,
            "null",
            "42",
        ];
        for text in fine {
            assert!(
                !carries_error(&value(text)),
                "{text} should not carry an error"
            );
        }
    }

    #[test]
    fn tool_response_is_an_alias_of_tool_result() {
        let e = event(r#"{"tool_name":"x","tool_response":{"error":"no"}}"#);
        let payload = e.payload.as_object().expect("an object");
        assert_eq!(payload.get("result"), Some(&Value::string("failure")));
    }
}
