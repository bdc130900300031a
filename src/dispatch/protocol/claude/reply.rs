//! A Claude Code handler's reply (contract §12): its exit code 0 or 2, its stdout's JSON
//! (`decision`, `hookSpecificOutput`, `continue`, …) or plain text, read as our outcome.

use serde_json::{Map, Value};

use super::by_event::{cannot_keep_going, keeps_going, stdout_is_context};
use super::tool_calls::input_from_claude;
use crate::dispatch::outcome::{self, Judgement, Outcome};
use crate::dispatch::protocol::Rewrite;
use crate::settings::events::{self, EventKind};

/// A Claude Code handler's reply, exit code 0 or 2, as our outcome. Other exits are failures
/// whatever the protocol, judged by the caller.
pub fn judge(
    kind: EventKind,
    event: &str,
    label: &str,
    code: i32,
    stdout: &str,
    stderr: &str,
    rewrite: Option<Rewrite<'_>>,
) -> Judgement {
    let mut judgement = Judgement::new(Outcome::Proceed);
    if code == 2 {
        let stderr = stderr.trim();
        if kind.can_block() {
            judgement.outcome = Outcome::Block;
            judgement.reason = Some(if stderr.is_empty() {
                outcome::default_reason(event, label)
            } else {
                stderr.to_string()
            });
        } else {
            judgement.context = (!stderr.is_empty()).then(|| stderr.to_string());
            if keeps_going(kind) {
                judgement.warning = Some(cannot_keep_going(label, event, "exit 2"));
            }
        }
        return judgement;
    }
    let trimmed = stdout.trim();
    let object = match outcome::reply_object(trimmed, label) {
        Ok(object) => object,
        // Claude Code adds SessionStart and UserPromptSubmit stdout that is not JSON to the
        // context, `{` or not.
        Err(_) if stdout_is_context(kind) => None,
        Err(warning) => {
            judgement.warning = Some(warning);
            return judgement;
        }
    };
    let Some(object) = object else {
        if stdout_is_context(kind) && !trimmed.is_empty() {
            judgement.context = Some(trimmed.to_string());
        }
        return judgement;
    };
    let specific = object.get("hookSpecificOutput").and_then(Value::as_object);
    let field = |map: Option<&Map<String, Value>>, key: &str| {
        map.and_then(|m| outcome::string_field(m, key))
    };
    let contexts: Vec<String> = [
        field(specific, "additionalContext"),
        field(Some(&object), "additionalContext"),
        field(Some(&object), "additional_context"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut context = (!contexts.is_empty()).then(|| contexts.join("\n"));
    judgement.system_message = field(Some(&object), "systemMessage");
    judgement.suppress_output = object.get("suppressOutput") == Some(&Value::Bool(true));
    if object.get("continue") == Some(&Value::Bool(false)) {
        let reason = field(Some(&object), "stopReason")
            .unwrap_or_else(|| outcome::default_stop_reason(event, label));
        judgement.outcome = Outcome::Stop;
        judgement.stop = Some(reason.clone());
        if kind.can_block() {
            judgement.reason = Some(reason);
        }
        judgement.context = context;
        return judgement;
    }
    let permission = specific
        .and_then(|s| s.get("permissionDecision"))
        .and_then(Value::as_str);
    let decision = object.get("decision").and_then(Value::as_str);
    let reason =
        field(specific, "permissionDecisionReason").or_else(|| field(Some(&object), "reason"));
    match (permission, decision) {
        (Some("deny"), _) if kind.can_ask() => {
            judgement.outcome = Outcome::Block;
            judgement.reason =
                Some(reason.unwrap_or_else(|| outcome::default_reason(event, label)));
        }
        (None, Some("block")) if kind.can_block() => {
            judgement.outcome = Outcome::Block;
            judgement.reason =
                Some(reason.unwrap_or_else(|| outcome::default_reason(event, label)));
        }
        (Some("ask"), _) if kind.can_ask() => {
            judgement.outcome = Outcome::Ask;
            judgement.reason =
                Some(reason.unwrap_or_else(|| outcome::default_ask_reason(event, label)));
        }
        (None, Some("block")) => {
            // Feedback for the model on an event that cannot block.
            if let Some(reason) = reason {
                context = Some(match context {
                    Some(c) => format!("{c}\n{reason}"),
                    None => reason,
                });
            }
            if keeps_going(kind) {
                judgement.warning =
                    Some(cannot_keep_going(label, event, "\"decision\": \"block\""));
            }
        }
        (Some(other @ ("deny" | "ask")), _) => {
            judgement.warning = Some(format!(
                "{label}: permissionDecision {other:?} applies to {} only, not {event}; ignored",
                events::listed("and", |e| e.asks)
            ));
        }
        (Some("allow" | "defer") | None, _) => {}
        (Some(other), _) => {
            judgement.warning = Some(format!(
                "{label}: unknown permissionDecision {other:?} (Claude Code knows allow, deny, ask, defer); the tool call proceeds"
            ));
        }
    }
    judgement.context = context;
    if let Some(updated) = specific.and_then(|s| s.get("updatedInput")) {
        match (updated, rewrite) {
            (_, _) if judgement.outcome == Outcome::Block => {}
            (Value::Object(updated), Some(rewrite)) => {
                judgement.updated_input = Some(input_from_claude(
                    rewrite.tool,
                    rewrite.input,
                    rewrite.call,
                    updated,
                    rewrite.root,
                ));
            }
            (Value::Object(_), None) => {
                judgement.warning = Some(format!(
                    "{label}: updatedInput applies to {} only, not {event}; ignored",
                    events::listed("and", |e| e.rewrites_input)
                ));
            }
            (other, _) => {
                judgement.warning = Some(format!(
                    "{label}: updatedInput must be an object of the tool's input, not {}; ignored",
                    crate::settings::short_json(other)
                ));
            }
        }
    }
    judgement
}
