//! levelcode's own protocol (contract §2, §6, §11): handlers read the payload as the agent gave
//! it, and answer with exit 2 (on `PreToolUse`, a block with stderr as the reason) or a JSON
//! reply on stdout: `decision`, `reason`, `additionalContext`, `updatedInput`, `continue`,
//! `stopReason`, `systemMessage`.

use serde_json::Value;

use crate::dispatch::handler_input::Inputs;
use crate::dispatch::outcome::{self, Judgement, Outcome, Reply};
use crate::dispatch::protocol::{Context, Rules, Run};
use crate::settings::events::{self, EventKind};

/// The value of `"protocol"` that names it.
pub const NAME: &str = "levelcode";

pub struct Levelcode;

impl Rules for Levelcode {
    fn name(&self) -> &'static str {
        NAME
    }

    /// One run, reading the payload as it stands.
    fn runs(&self, _inputs: &mut Inputs<'_>) -> Vec<Run> {
        vec![Run {
            input: None,
            call: None,
            note: None,
        }]
    }

    fn judge(&self, reply: Reply<'_>, context: &Context<'_>) -> Judgement {
        let Context {
            kind, event, label, ..
        } = *context;
        match reply.code {
            2 if kind.can_block() => {
                let mut judgement = Judgement::new(Outcome::Block);
                let stderr = reply.stderr.trim();
                judgement.reason = Some(if !stderr.is_empty() {
                    stderr.to_string()
                } else {
                    stdout_object(reply.stdout)
                        .and_then(|o| outcome::string_field(&o, "reason"))
                        .unwrap_or_else(|| outcome::default_reason(event, label))
                });
                judgement
            }
            2 => outcome::failed_exit(
                2,
                &format!(
                    "; exit 2 blocks only on {}, not on {event}",
                    events::listed("and", |e| e.blocks.is_some())
                ),
            ),
            _ => judge_stdout(kind, event, label, reply.stdout),
        }
    }
}

/// Exit 0: stdout may hold a JSON decision and context.
fn judge_stdout(kind: EventKind, event: &str, label: &str, stdout: &str) -> Judgement {
    let mut judgement = Judgement::new(Outcome::Proceed);
    let object = match outcome::reply_object(stdout.trim(), label) {
        Ok(Some(object)) => object,
        Ok(None) => return judgement,
        Err(warning) => {
            judgement.warning = Some(warning);
            return judgement;
        }
    };
    judgement.context = outcome::string_field(&object, "additionalContext");
    judgement.system_message = outcome::string_field(&object, "systemMessage");
    if object.get("continue") == Some(&Value::Bool(false)) {
        let reason = outcome::string_field(&object, "stopReason")
            .unwrap_or_else(|| outcome::default_stop_reason(event, label));
        judgement.outcome = Outcome::Stop;
        if kind.can_block() {
            judgement.reason = Some(reason.clone());
        }
        judgement.stop = Some(reason);
        return judgement;
    }
    let mut warnings = Vec::new();
    match object.get("decision").and_then(Value::as_str) {
        Some("block") if kind.can_block() => {
            judgement.outcome = Outcome::Block;
            judgement.reason = Some(
                outcome::string_field(&object, "reason")
                    .unwrap_or_else(|| outcome::default_reason(event, label)),
            );
        }
        Some("ask") if kind.can_ask() => {
            judgement.outcome = Outcome::Ask;
            judgement.reason = Some(
                outcome::string_field(&object, "reason")
                    .unwrap_or_else(|| outcome::default_ask_reason(event, label)),
            );
        }
        Some(what @ ("block" | "ask")) => {
            let those = match what {
                "block" => events::listed("and", |e| e.blocks.is_some()),
                _ => events::listed("and", |e| e.asks),
            };
            warnings.push(format!(
                "{label}: asked to {what}, but {event} hooks cannot {what}; only {those} can"
            ));
        }
        _ => {}
    }
    match object.get("updatedInput") {
        None => {}
        Some(_) if judgement.outcome == Outcome::Block => {}
        Some(Value::Object(_)) if !kind.rewrites_input() => warnings.push(format!(
            "{label}: updatedInput applies to {} only, not {event}; ignored",
            events::listed("and", |e| e.rewrites_input)
        )),
        Some(updated @ Value::Object(_)) => judgement.updated_input = Some(updated.clone()),
        Some(other) => warnings.push(format!(
            "{label}: updatedInput must be an object, the tool's whole new input, not {}; ignored",
            crate::settings::short_json(other)
        )),
    }
    if !warnings.is_empty() {
        judgement.warning = Some(warnings.join("; "));
    }
    judgement
}

fn stdout_object(stdout: &str) -> Option<serde_json::Map<String, Value>> {
    outcome::reply_object(stdout.trim(), "").ok().flatten()
}
