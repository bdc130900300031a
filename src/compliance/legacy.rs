//! levelcode's legacy `signature` of a `ComplianceEvent`.
//!
//! levelcode (`common/src/utils/compliance-logging.ts`, `signEvent`) signs an event with a keyless
//! 32-bit string hash, the classic `hash = ((hash << 5) - hash) + s.charCodeAt(i); hash |= 0`,
//! over the text `${traceId}:${timestamp}:${eventType}:${JSON.stringify(payload)}`, and writes
//! the result with `hash.toString(36)` (a leading `-` for negative values). Its report,
//! `verifyEventIntegrity`, recomputes the hash from the parsed line and marks the line
//! "TAMPERED" when it differs. We keep writing this field so that report still accepts our lines;
//! it proves nothing (anyone can recompute it), which is why every line is also signed with
//! Ed25519 (see the `log` module).
//!
//! `charCodeAt` reads UTF-16 code units, so the hash runs over code units, not bytes or chars:
//! an `é` counts once, an emoji twice (its two surrogates).

use super::js_json::{self, Value};

/// The legacy hash of a sequence of UTF-16 code units.
///
/// `(hash << 5) - hash` is `31 * hash` modulo 2^32 and `|= 0` wraps to a signed 32-bit integer,
/// so wrapping `i32` arithmetic gives exactly JavaScript's result.
pub fn hash(units: impl IntoIterator<Item = u16>) -> i32 {
    units.into_iter().fold(0i32, |hash, unit| {
        hash.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// `hash.toString(36)` for a signed 32-bit integer.
pub fn to_base36(hash: i32) -> String {
    let digits = js_json::base36(u64::from(hash.unsigned_abs()));
    if hash < 0 {
        format!("-{digits}")
    } else {
        digits
    }
}

/// The legacy signature of an event with these fields, as levelcode computes it.
pub fn signature(trace_id: &[u16], timestamp: f64, event_type: &[u16], payload: &Value) -> String {
    let timestamp = js_json::number_to_string(timestamp);
    let payload = js_json::stringify(payload);
    let colon = u16::from(b':');
    let units = trace_id
        .iter()
        .copied()
        .chain(std::iter::once(colon))
        .chain(timestamp.encode_utf16())
        .chain(std::iter::once(colon))
        .chain(event_type.iter().copied())
        .chain(std::iter::once(colon))
        .chain(payload.encode_utf16());
    to_base36(hash(units))
}

/// What levelcode's `verifyEventIntegrity` would say about a parsed line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The stored signature equals the recomputed one.
    Matches,
    /// It differs: levelcode's report marks the line "TAMPERED".
    Differs,
    /// The line lacks a field the hash needs, or holds one of an unexpected type.
    NotCheckable,
}

/// Recomputes the legacy signature of a parsed line and compares it with the stored one.
pub fn check(line: &js_json::Object) -> Check {
    let fields = (
        line.get("traceId").and_then(Value::as_js_string),
        line.get("timestamp").and_then(Value::as_f64),
        line.get("eventType").and_then(Value::as_js_string),
        line.get("payload"),
        line.get("signature").and_then(Value::as_js_string),
    );
    let (Some(trace_id), Some(timestamp), Some(event_type), Some(payload), Some(stored)) = fields
    else {
        return Check::NotCheckable;
    };
    let computed = signature(trace_id, timestamp, event_type, payload);
    if computed.encode_utf16().eq(stored.iter().copied()) {
        Check::Matches
    } else {
        Check::Differs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn js(text: &str) -> Vec<u16> {
        text.encode_utf16().collect()
    }

    fn sign(trace_id: &str, timestamp: f64, payload_json: &str) -> String {
        let payload = js_json::parse(payload_json).expect("valid payload");
        signature(&js(trace_id), timestamp, &js("tool-call"), &payload)
    }

    // Golden values: each was computed by running levelcode's `signEvent` (the TypeScript
    // function quoted in the module docs) under node on the same event.

    #[test]
    fn golden_ascii() {
        assert_eq!(hash(js("")), 0);
        assert_eq!(to_base36(hash(js("hello"))), "1n1e4y");
        assert_eq!(
            sign(
                "toolu_01",
                1_700_000_000_000.0,
                r#"{"tool":"write_file","args":{"path":"src/a.ts","content":"x"},"result":"success"}"#
            ),
            "-16626"
        );
    }

    #[test]
    fn golden_non_ascii() {
        assert_eq!(
            sign(
                "trace-lq2x1c-abc123",
                1_712_345_678_901.0,
                r#"{"tool":"str_replace","args":{"path":"café/naïve.md","old":"日本語","new":"Ünïcödé"},"result":"success"}"#
            ),
            "-ras0o6"
        );
    }

    #[test]
    fn golden_emoji() {
        assert_eq!(
            sign(
                "call-😀",
                1_712_345_678_902.0,
                r#"{"tool":"write_file","args":{"content":"🎉 done 👍🏽"},"result":"failure"}"#
            ),
            "-tgdc5"
        );
    }

    #[test]
    fn golden_nested() {
        assert_eq!(
            sign(
                "toolu_nested",
                1_712_345_678_903.0,
                r#"{"tool":"spawn_agents","args":{"agents":[{"agent_type":"file-picker","params":{"depth":2,"ratio":0.5,"big":1e21,"tiny":1e-7,"list":[1,2.0,null,true,{"z":1,"2":2,"1":1}]}}]},"result":"success"}"#
            ),
            "-p1upyy"
        );
    }

    #[test]
    fn check_reads_a_parsed_line() {
        let line = js_json::parse(
            r#"{"traceId":"toolu_01","timestamp":1700000000000,"eventType":"tool-call","payload":{"tool":"write_file","args":{"path":"src/a.ts","content":"x"},"result":"success"},"signature":"-16626"}"#,
        )
        .expect("valid line");
        let line = line.as_object().expect("an object");
        assert_eq!(check(line), Check::Matches);

        let mut edited = line.clone();
        edited.set("timestamp", Value::Number(1_700_000_000_001.0));
        assert_eq!(check(&edited), Check::Differs);

        let mut partial = js_json::Object::new();
        partial.set("traceId", Value::string("x"));
        assert_eq!(check(&partial), Check::NotCheckable);
    }
}
