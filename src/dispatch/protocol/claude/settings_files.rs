//! Claude Code's own settings files, which a person may have read as layers (contract §12).

use crate::dispatch::protocol::{OwnFile, OwnLayers};

/// Claude Code's settings files as layers, with `"claudeCodeHooks": true` (contract §12):
/// `~/.claude/settings.json` after the user and data layers, the project's shared and local
/// files after the project layer. A handler without a `timeout` gets the 60 seconds that
/// `import` gives it, so a file read as a layer and its import decide alike.
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
    default_timeout: 60.0,
};
