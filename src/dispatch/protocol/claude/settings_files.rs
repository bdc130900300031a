//! Claude Code's own settings files, which a person may have read as layers (contract §12).

use crate::dispatch::events::EventKind;
use crate::dispatch::protocol::{OwnFile, OwnLayers};

/// Claude Code's settings files as layers, with `"claudeCodeHooks": true` (contract §12):
/// `~/.claude/settings.json` after the user and data layers, the project's shared and local
/// files after the project layer. A handler without a `timeout` gets [`default_timeout`] of its
/// event, as `import` gives it, so a file read as a layer and its import decide alike.
pub(super) static OWN_LAYERS: OwnLayers = OwnLayers {
    switch: "claudeCodeHooks",
    files: &[
        OwnFile {
            layer: "claude-user",
            in_home: true,
            path: ".claude/settings.json",
        },
        OwnFile {
            layer: "claude-project",
            in_home: false,
            path: ".claude/settings.json",
        },
        OwnFile {
            layer: "claude-local",
            in_home: false,
            path: ".claude/settings.local.json",
        },
    ],
    hooks_folder: ".claude/hooks",
    default_timeout,
};

/// Claude Code's timeout of a `command` handler that gives none, in seconds, by event, as its
/// hooks reference (<https://code.claude.com/docs/en/hooks>, "Common fields") gives it: 600,
/// lowered to 30 on `UserPromptSubmit`; `SessionEnd` hooks share a 1.5-second budget, which
/// levelcode, running them one after another, gives each of them. The one place both the
/// layers and `import` ask.
pub fn default_timeout(event: EventKind) -> f64 {
    match event {
        EventKind::UserPromptSubmit => 30.0,
        EventKind::SessionEnd => 1.5,
        EventKind::SessionStart
        | EventKind::PreToolUse
        | EventKind::PostToolUse
        | EventKind::Stop
        | EventKind::PostToolUseFailure
        | EventKind::SubagentStart
        | EventKind::SubagentStop
        | EventKind::PreCompact
        | EventKind::Notification
        | EventKind::Unknown => 600.0,
    }
}
