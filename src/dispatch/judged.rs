//! What a handler's judgement does once it is made: its words for the event, a guard's failure
//! as a block under `"onFailure": "block"`, its entry filled in, and what it adds to the
//! dispatch (contract §6, §11, §16).

use super::action::Done;
use super::handler_input::Inputs;
use super::outcome::{Judgement, Outcome};
use super::output::{self, HandlerReport, Report};
use super::End;
use crate::settings::events::EventKind;

/// A judgement's message as it reads for the event: the rules of every handler say what a
/// failure means for a tool call, and the event's entry says what goes on instead
/// (`EventKind::goes_on`).
pub(super) fn worded_for(mut judgement: Judgement, kind: EventKind) -> Judgement {
    const TOOL_CALL: &str = "the tool call proceeds";
    let instead = kind.goes_on();
    if instead == TOOL_CALL {
        return judgement;
    }
    if let Some(message) = judgement.message.as_mut().filter(|m| m.contains(TOOL_CALL)) {
        *message = message.replace(TOOL_CALL, instead);
    }
    judgement
}

/// A guard's own failure as a block, for a handler with `"onFailure": "block"` on an event that
/// can block (contract §16): it could not start, timed out, or ended by an exit code other than
/// 0 and 2 or by a signal. Any other judgement, an empty successful reply included, stays.
pub(super) fn fail_closed(mut judgement: Judgement, label: &str, event: &str) -> Judgement {
    let how = match judgement.outcome {
        Outcome::SpawnError => "could not start",
        Outcome::Timeout => "timed out",
        Outcome::Error => "failed",
        Outcome::Proceed
        | Outcome::Block
        | Outcome::Duplicate
        | Outcome::Skipped
        | Outcome::Interrupted
        | Outcome::Ask
        | Outcome::Stop
        | Outcome::Started => return judgement,
    };
    let detail = judgement
        .message
        .as_deref()
        .map(|m| m.split("; the tool call proceeds").next().unwrap_or(m))
        .filter(|m| !m.is_empty())
        .map(|m| match m.strip_prefix(how) {
            Some(rest) => rest.to_string(),
            None => format!(" ({m})"),
        })
        .unwrap_or_default();
    judgement.outcome = Outcome::Block;
    judgement.reason = Some(format!(
        "the guard {label} {how}{detail}, and it blocks {event} when it fails (\"onFailure\": \"block\")"
    ));
    judgement.message = Some(format!(
        "{how}{detail}; blocked, as \"onFailure\": \"block\" asks"
    ));
    judgement
}

/// A handler's report from how its run ended and what that means.
pub(super) fn fill_entry(entry: &mut HandlerReport, done: Done, judgement: &Judgement) {
    entry.outcome = judgement.outcome;
    entry.duration_ms = output::millis(done.duration);
    let codes = done.codes();
    entry.exit_code = codes.exit_code;
    entry.signal = codes.signal;
    entry.http_status = codes.http_status;
    entry.stderr_truncated = done.stderr_truncated;
    entry.stderr = done.stderr;
    if !judgement.suppress_output {
        entry.stdout_truncated = done.stdout_truncated;
        entry.stdout = done.stdout;
    }
    entry.message = match (entry.message.take(), judgement.message.clone()) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    };
    // The reason the decision uses, for the trace.
    entry.reason = match judgement.outcome {
        Outcome::Block | Outcome::Ask => judgement.reason.clone(),
        Outcome::Stop => judgement.stop.clone(),
        _ => None,
    };
}

/// What one handler's judgement adds to the dispatch (contract §6, §11): its warning, context,
/// message for the person, rewrite of the tool input, and its block, ask or stop. Returns how
/// the chain ends, when it does.
pub(super) fn apply(
    judgement: Judgement,
    entry: &mut HandlerReport,
    report: &mut Report,
    inputs: &mut Inputs<'_>,
) -> Option<End> {
    report.warnings.extend(judgement.warning);
    report.additional_context.extend(judgement.context);
    report.system_messages.extend(judgement.system_message);
    if let Some(updated) = judgement.updated_input {
        if inputs.differs(&updated) {
            entry.rewrote_input = true;
            report.updated_input = Some(updated.clone());
            inputs.rewrite(updated);
        }
    }
    match judgement.outcome {
        Outcome::Block => {
            if report.reason.is_none() {
                report.reason = judgement.reason;
            }
            Some(End::Blocked)
        }
        Outcome::Ask => {
            report.asks.extend(judgement.reason);
            None
        }
        Outcome::Stop => {
            if report.reason.is_none() {
                report.reason = judgement.reason;
            }
            if report.stop.is_none() {
                report.stop = judgement.stop;
            }
            Some(End::Stopped)
        }
        Outcome::Proceed
        | Outcome::Error
        | Outcome::Timeout
        | Outcome::SpawnError
        | Outcome::Duplicate
        | Outcome::Skipped
        | Outcome::Interrupted
        | Outcome::Started => None,
    }
}
