//! Claude Code's protocol as settings know it (contract §12): its tool names, and its own
//! settings files, which a person may have read as layers. What its handlers read and how their
//! replies are read is `dispatch::protocol::claude`.

use super::{Facts, OwnFile, OwnLayers};
use crate::settings::events::EventKind;

/// The value of `"protocol"` that names it.
pub const NAME: &str = "claude";

/// Claude Code's protocol in the table of protocols.
pub(super) static FACTS: Facts = Facts {
    name: NAME,
    summary: "Claude Code's payload (hook_event_name, tool_input.file_path, ...) and replies (exit 2, hookSpecificOutput.permissionDecision, updatedInput, ...), translated both ways.",
    agent: "Claude Code",
    agent_tools: AGENT_TOOLS,
    matcher_note: Some("Claude Code hook scripts run unmodified; the matcher is also tested against Claude Code's tool names (Write, Edit, MultiEdit, Bash, Read, Grep, Glob) and, on SessionStart, against \"startup\"."),
    named_tools: TOOL_NAMES,
    event_subject: |kind| (kind == EventKind::SessionStart).then_some(SESSION_SOURCE),
    own_layers: Some(&OWN_LAYERS),
};

/// The source a `SessionStart` payload names, and its matcher is tested against: levelcode
/// fires `SessionStart` when a session starts, never on resume, clear or compact.
pub const SESSION_SOURCE: &str = "startup";

/// Claude Code's tools, and levelcode's name for the same tool, if it has one.
const AGENT_TOOLS: &[(&str, Option<&str>)] = &[
    ("Write", Some("write_file")),
    ("Edit", Some("str_replace")),
    ("MultiEdit", Some("str_replace")),
    ("Bash", Some("run_terminal_command")),
    ("Read", Some("read_files")),
    ("Grep", Some("code_search")),
    ("Task", Some("spawn_agents")),
    ("Glob", Some("glob")),
    ("LS", None),
    ("WebFetch", None),
    ("WebSearch", None),
    ("NotebookEdit", None),
    ("TodoWrite", None),
];

/// levelcode's tools that Claude Code names otherwise, each with its Claude Code names.
/// `str_replace` has two, since Claude Code calls it `Edit` or `MultiEdit` by the number of
/// replacements, and a guard on either must see every edit.
const TOOL_NAMES: &[(&str, &[&str])] = &[
    ("write_file", &["Write"]),
    ("str_replace", &["Edit", "MultiEdit"]),
    ("run_terminal_command", &["Bash"]),
    ("read_files", &["Read"]),
    ("code_search", &["Grep"]),
    ("glob", &["Glob"]),
];

/// Claude Code's names for a levelcode tool: those a `claude` group's matcher is tested against
/// besides the levelcode name.
pub fn tool_names(tool: &str) -> &'static [&'static str] {
    TOOL_NAMES
        .iter()
        .find(|(ours, _)| *ours == tool)
        .map_or(&[], |(_, theirs)| theirs)
}

/// Claude Code's settings files as layers, with `"claudeCodeHooks": true` (contract §12):
/// `~/.claude/settings.json` after the user and data layers, the project's shared and local
/// files after the project layer. A handler without a `timeout` gets [`default_timeout`] of its
/// event, as `import` gives it, so a file read as a layer and its import decide alike.
static OWN_LAYERS: OwnLayers = OwnLayers {
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
