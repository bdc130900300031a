//! The stdin of a Claude Code handler (contract §12): Claude Code's envelope around our payload,
//! with the tool call as Claude Code names it.

use std::path::Path;

use serde_json::{Map, Value};

use super::tool_calls::tool_calls;
use super::SESSION_SOURCE;
use crate::dispatch::protocol::ToolCall;
use crate::settings::events::EventKind;

/// Members of our payload that the envelope of [`payload`] replaces.
const ENVELOPE: &[&str] = &[
    "event",
    "hook_event_name",
    "cwd",
    "session_id",
    "sessionId",
    "transcript_path",
    "permission_mode",
    "tool_name",
    "tool_input",
    "tool_use_id",
    "toolCallId",
    "tool_result",
    "tool_response",
    "source",
    "stop_hook_active",
];

/// The stdin of a Claude Code handler for our payload `fields` (already parsed): Claude Code's
/// envelope, then the tool call `call` (for tool events), then every other member of the payload
/// as it was.
pub fn payload(
    fields: &Map<String, Value>,
    event: &str,
    kind: EventKind,
    call: Option<&ToolCall>,
    tool: Option<&str>,
    root: &Path,
) -> Map<String, Value> {
    let text = |keys: &[&str], default: &str| {
        keys.iter()
            .find_map(|k| fields.get(*k).filter(|v| v.is_string()).cloned())
            .unwrap_or_else(|| Value::String(default.into()))
    };
    let mut out = Map::new();
    out.insert("session_id".into(), text(&["session_id", "sessionId"], ""));
    out.insert("transcript_path".into(), text(&["transcript_path"], ""));
    out.insert(
        "cwd".into(),
        Value::String(root.to_string_lossy().into_owned()),
    );
    out.insert(
        "permission_mode".into(),
        text(&["permission_mode"], "default"),
    );
    out.insert("hook_event_name".into(), Value::String(event.into()));
    if kind.is_tool_event() {
        let name = match call {
            Some(call) if !call.name.is_empty() => call.name.to_string(),
            _ => tool.unwrap_or("").to_string(),
        };
        out.insert("tool_name".into(), Value::String(name));
        let input = call
            .map(|c| c.input.clone())
            .or_else(|| fields.get("tool_input").cloned())
            .unwrap_or_else(|| Value::Object(Map::new()));
        out.insert("tool_input".into(), input);
        if let Some(id) = ["tool_use_id", "toolCallId"]
            .iter()
            .find_map(|k| fields.get(*k))
        {
            out.insert("tool_use_id".into(), id.clone());
        }
        if kind == EventKind::PostToolUse {
            let result = fields
                .get("tool_result")
                .or_else(|| fields.get("tool_response"));
            out.insert(
                "tool_response".into(),
                result.map_or(Value::Null, tool_response),
            );
        }
    }
    match kind {
        EventKind::SessionStart => {
            out.insert("source".into(), Value::String(SESSION_SOURCE.into()));
        }
        EventKind::Stop | EventKind::SubagentStop => {
            // The caller's own value, when it says a Stop hook already kept the agent going.
            let active = fields
                .get("stop_hook_active")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            out.insert("stop_hook_active".into(), Value::Bool(active));
        }
        EventKind::PreToolUse
        | EventKind::PostToolUse
        | EventKind::UserPromptSubmit
        | EventKind::SessionEnd
        | EventKind::PostToolUseFailure
        | EventKind::SubagentStart
        | EventKind::PreCompact
        | EventKind::Notification
        | EventKind::Unknown => {}
    }
    for (key, value) in fields {
        if !ENVELOPE.contains(&key.as_str()) && !out.contains_key(key) {
            out.insert(key.clone(), value.clone());
        }
    }
    out
}

/// Payloads of every run of a Claude Code handler: one, or for `read_files` one per path, each
/// with the call it is about.
pub fn payloads(
    fields: &Map<String, Value>,
    event: &str,
    kind: EventKind,
    tool: Option<&str>,
    input: Option<&Value>,
    root: &Path,
) -> Vec<(Option<ToolCall>, Map<String, Value>)> {
    match (kind.is_tool_event(), tool) {
        (true, Some(tool)) => {
            let empty = Value::Object(Map::new());
            tool_calls(tool, input.unwrap_or(&empty), root)
                .into_iter()
                .map(|call| {
                    let payload = payload(fields, event, kind, Some(&call), Some(tool), root);
                    (Some(call), payload)
                })
                .collect()
        }
        _ => vec![(None, payload(fields, event, kind, None, tool, root))],
    }
}

/// A tool result as Claude Code scripts read `tool_response`: a JSON string parsed, and
/// levelcode's list of output parts holding one `{"type":"json","value":…}` part unwrapped to
/// the part's value. A string that does not parse (levelcode cuts long results) stays a string.
pub fn tool_response(result: &Value) -> Value {
    let parsed = match result {
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(value) => value,
            Err(_) => return result.clone(),
        },
        other => other.clone(),
    };
    if let Value::Array(parts) = &parsed {
        if let [part] = parts.as_slice() {
            if part.get("type").and_then(Value::as_str) == Some("json") {
                if let Some(value) = part.get("value") {
                    return value.clone();
                }
            }
        }
    }
    parsed
}
