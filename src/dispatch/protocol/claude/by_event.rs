//! What Claude Code does differently by event, each a `match` on every event (contract §12,
//! §15): whether plain stdout is context, and whether a block asks to keep the agent going.

use crate::settings::events::EventKind;

/// Returns true if and only if Claude Code adds a handler's stdout that is not JSON to the
/// model's context on this event.
pub(super) fn stdout_is_context(kind: EventKind) -> bool {
    match kind {
        EventKind::SessionStart | EventKind::UserPromptSubmit => true,
        EventKind::PreToolUse
        | EventKind::PostToolUse
        | EventKind::Stop
        | EventKind::SessionEnd
        | EventKind::PostToolUseFailure
        | EventKind::SubagentStart
        | EventKind::SubagentStop
        | EventKind::PreCompact
        | EventKind::Notification
        | EventKind::Unknown => false,
    }
}

/// Returns true if and only if a block on this event asks Claude Code to keep the agent going,
/// which levelcode, firing it without waiting, cannot do.
pub(super) fn keeps_going(kind: EventKind) -> bool {
    match kind {
        EventKind::Stop | EventKind::SubagentStop => true,
        EventKind::SessionStart
        | EventKind::PreToolUse
        | EventKind::PostToolUse
        | EventKind::UserPromptSubmit
        | EventKind::SessionEnd
        | EventKind::PostToolUseFailure
        | EventKind::SubagentStart
        | EventKind::PreCompact
        | EventKind::Notification
        | EventKind::Unknown => false,
    }
}

pub(super) fn cannot_keep_going(label: &str, event: &str, how: &str) -> String {
    format!(
        "{label}: {how} on {event} asks Claude Code to keep the agent going; levelcode fires {event} without waiting, so it cannot: the reason was added to additionalContext"
    )
}
