//! `levelcode-hooks import claude [FILE]` (contract §12): the `hooks` of a Claude Code settings
//! file as levelcode settings whose groups say `"protocol": "claude"`, printed, or merged into
//! the project's `.levelcode/settings.json` (`--write`) or the person's own user or data layer
//! (`--user`, `--data`: their own `~/.claude/settings.json` needs no trust there). What levelcode
//! cannot run (events it does not know, handler types other than `command` and `http`) is named on stderr,
//! never dropped silently. `validate` suggests it for Claude Code hooks levelcode would not run.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use serde_json::{Map, Value};

use crate::commands::inspect::{Inspection, LayerState};
use crate::dispatch::output::write_stdout;
use crate::dispatch::protocol::claude;
use crate::settings::events::{self, EventKind};
use crate::settings::kind::Kind;
use crate::settings::layers::{self, LayerKind};
use crate::settings::protocol::Protocol;
use crate::settings::short_json;

/// The Claude Code settings files read when none is named, in this order, under the project root.
pub const DEFAULT_FILES: [&str; 2] = [".claude/settings.json", ".claude/settings.local.json"];

/// A handler's fields that levelcode reads as Claude Code does, copied as they are.
const KEPT: &[&str] = &["args", "shell", "onFailure", "if", "async"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Agent {
    /// Claude Code's settings.json.
    Claude,
}

#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// Whose settings to import.
    #[arg(value_enum)]
    pub agent: Agent,

    /// The settings file [default: .claude/settings.json, then .claude/settings.local.json;
    /// with --user or --data, ~/.claude/settings.json].
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,

    /// Merge the hooks into the project's .levelcode/settings.json instead of printing them
    /// (project hooks run once trusted).
    #[arg(long, conflicts_with_all = ["user", "data"])]
    pub write: bool,

    /// Merge the hooks into your user layer, ~/.config/levelcode/settings.json, which needs no
    /// trust: for your own ~/.claude/settings.json.
    #[arg(long, conflicts_with = "data")]
    pub user: bool,

    /// Merge the hooks into the data layer ($LEVELCODE_DIR/settings.json or
    /// ~/.levelcode/settings.json), which needs no trust.
    #[arg(long)]
    pub data: bool,

    /// The project root [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub project_dir: Option<PathBuf>,
}

/// Claude Code hooks as levelcode hooks, and what could not be carried over.
#[derive(Debug, Default, PartialEq)]
pub struct Conversion {
    /// The levelcode `hooks` object: event to groups.
    pub hooks: Map<String, Value>,
    /// One line per thing left out or changed, for stderr.
    pub notes: Vec<String>,
}

/// Converts the `hooks` of one Claude Code settings file (`file` names it in notes), adding to
/// `out`.
pub fn convert(file: &str, settings: &Value, out: &mut Conversion) {
    let Some(hooks) = settings.get("hooks") else {
        out.notes
            .push(format!("{file}: no \"hooks\"; nothing to import"));
        return;
    };
    let Some(hooks) = hooks.as_object() else {
        out.notes.push(format!(
            "{file}: \"hooks\" is not an object; nothing imported"
        ));
        return;
    };
    for (event, groups) in hooks {
        let Some(groups) = groups.as_array() else {
            out.notes.push(format!(
                "{file}: hooks.{event} is not an array of groups; left out"
            ));
            continue;
        };
        let kind = EventKind::of(event);
        if kind == EventKind::Unknown {
            out.notes.push(format!(
                "{file}: hooks.{event}: levelcode-hooks knows no event {event} (it knows {}); its {} group(s) were left out",
                events::names().join(", "),
                groups.len()
            ));
            continue;
        }
        for (i, group) in groups.iter().enumerate() {
            let at = format!("{file}: hooks.{event}[{i}]");
            if let Some(converted) = convert_group(&at, kind, group, &mut out.notes) {
                let list = out
                    .hooks
                    .entry(event.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(list) = list {
                    list.push(converted);
                }
            }
        }
    }
}

/// A number of seconds as JSON, written `600` rather than `600.0` when it is whole.
fn seconds(secs: f64) -> Value {
    if secs.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&secs) {
        Value::from(secs as u64)
    } else {
        Value::from(secs)
    }
}

fn convert_group(
    at: &str,
    event: EventKind,
    group: &Value,
    notes: &mut Vec<String>,
) -> Option<Value> {
    let Some(fields) = group.as_object() else {
        notes.push(format!("{at}: not an object; left out"));
        return None;
    };
    let handlers = fields
        .get("hooks")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut converted = Vec::new();
    for (j, handler) in handlers.iter().enumerate() {
        let at = format!("{at}.hooks[{j}]");
        let kind = match handler.get("type") {
            None | Some(Value::Null) => Some(Kind::DEFAULT),
            Some(Value::String(name)) => Kind::parse(name),
            Some(_) => None,
        };
        match kind {
            Some(Kind::Command) => {}
            Some(Kind::Http) => {
                if let Some(http) = convert_http(&at, event, handler, notes) {
                    converted.push(http);
                }
                continue;
            }
            Some(Kind::Prompt | Kind::Agent) | None => {
                notes.push(format!(
                    "{at}: a handler of type {}; levelcode runs only {} handlers, so it was left out",
                    handler.get("type").map(short_json).unwrap_or_default(),
                    Kind::choices()
                ));
                continue;
            }
        }
        let Some(command) = handler
            .get("command")
            .and_then(Value::as_str)
            .filter(|c| !c.trim().is_empty())
        else {
            notes.push(format!("{at}: no command; left out"));
            continue;
        };
        let mut out = Map::new();
        out.insert("command".into(), Value::String(command.into()));
        // Claude Code's fields that levelcode honours as they are (contract §16): the exec
        // form's arguments and the shell of a command, then what the guard's failure means.
        for key in ["args", "shell"] {
            if let Some(value) = handler.get(key) {
                out.insert(key.into(), value.clone());
            }
        }
        // Without one, Claude Code's own default for the event, as its file read as a layer
        // gets.
        let timeout = handler
            .get("timeout")
            .filter(|t| t.is_number())
            .cloned()
            .unwrap_or_else(|| seconds(claude::default_timeout(event)));
        out.insert("timeout".into(), timeout);
        if let Some(value) = handler.get("onFailure") {
            out.insert("onFailure".into(), value.clone());
        }
        if let Some(filter) = handler.get("if") {
            out.insert("if".into(), filter.clone());
        }
        if let Some(value) = handler.get("async") {
            out.insert("async".into(), value.clone());
        }
        // `asyncRewake` implies `async`, which keeps it in the background (contract §21); what
        // it adds, waking the agent, has its note below.
        if handler.get("asyncRewake") == Some(&Value::Bool(true)) {
            out.insert("async".into(), Value::Bool(true));
        }
        for key in handler.as_object().into_iter().flat_map(Map::keys) {
            if !matches!(key.as_str(), "type" | "command" | "timeout")
                && !KEPT.contains(&key.as_str())
            {
                notes.push(format!("{at}: {}", left_out(key)));
            }
        }
        converted.push(Value::Object(out));
    }
    if converted.is_empty() {
        notes.push(format!("{at}: no handler levelcode runs; group left out"));
        return None;
    }
    for key in fields.keys() {
        if !matches!(key.as_str(), "matcher" | "hooks") {
            notes.push(format!(
                "{at}: {key:?} on the group has no levelcode equivalent; left out (the group was imported without it)"
            ));
        }
    }
    let mut out = Map::new();
    if let Some(matcher) = fields.get("matcher").filter(|m| !m.is_null()) {
        out.insert("matcher".into(), matcher.clone());
    }
    out.insert("protocol".into(), Value::String(claude::NAME.into()));
    out.insert("hooks".into(), Value::Array(converted));
    Some(Value::Object(out))
}

/// An http handler as levelcode writes it (contract §19): its `url`, `headers` and
/// `allowedEnvVars` as they are, with the fields every handler keeps.
fn convert_http(
    at: &str,
    event: EventKind,
    handler: &Value,
    notes: &mut Vec<String>,
) -> Option<Value> {
    let Some(url) = handler
        .get("url")
        .and_then(Value::as_str)
        .filter(|u| !u.trim().is_empty())
    else {
        notes.push(format!("{at}: an http handler with no url; left out"));
        return None;
    };
    let mut out = Map::new();
    out.insert("type".into(), Value::String(Kind::Http.name().into()));
    out.insert("url".into(), Value::String(url.into()));
    for key in ["headers", "allowedEnvVars"] {
        if let Some(value) = handler.get(key).filter(|v| !v.is_null()) {
            out.insert(key.into(), value.clone());
        }
    }
    let timeout = handler
        .get("timeout")
        .filter(|t| t.is_number())
        .cloned()
        .unwrap_or_else(|| seconds(claude::default_timeout(event)));
    out.insert("timeout".into(), timeout);
    for key in ["onFailure", "if"] {
        if let Some(value) = handler.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    for key in handler.as_object().into_iter().flat_map(Map::keys) {
        if !matches!(
            key.as_str(),
            "type" | "url" | "headers" | "allowedEnvVars" | "timeout" | "onFailure" | "if"
        ) {
            notes.push(format!("{at}: {}", left_out(key)));
        }
    }
    Some(Value::Object(out))
}

/// The note on a handler field that levelcode does not honour.
fn left_out(key: &str) -> String {
    not_honoured(key).map_or_else(
        || format!("{key:?} has no levelcode equivalent; left out (the handler was imported without it)"),
        |why| format!("{why}; the handler was imported without it"),
    )
}

/// What a handler field of Claude Code's that levelcode knows and does not honour means for a
/// handler that has it (`validate` says the same of a handler written with it).
pub fn not_honoured(key: &str) -> Option<String> {
    let why = match key {
        "asyncRewake" => {
            "an exit 2 does not wake the agent at once: the handler runs in the background, as with \"async\", and its failure is handed on with the next answer of its session"
        }
        "once" => "it runs every time, not once per session",
        "statusMessage" => "levelcode shows no status line while a handler runs",
        _ => return None,
    };
    Some(format!(
        "{key:?} is one of Claude Code's fields that levelcode does not honour: {why}"
    ))
}

/// Merges `hooks` into a levelcode settings value, keeping what is there; a group already
/// present (the same JSON) is not added twice, so importing again changes nothing. Returns how
/// many groups were added.
pub fn merge(
    settings: &mut Map<String, Value>,
    hooks: &Map<String, Value>,
) -> anyhow::Result<usize> {
    let target = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(target) = target else {
        anyhow::bail!("its \"hooks\" is not an object; fix it before importing");
    };
    let mut added = 0;
    for (event, groups) in hooks {
        let list = target
            .entry(event.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(list) = list else {
            anyhow::bail!("its hooks.{event} is not an array; fix it before importing");
        };
        for group in groups.as_array().into_iter().flatten() {
            if !list.contains(group) {
                list.push(group.clone());
                added += 1;
            }
        }
    }
    Ok(added)
}

/// Where `import` writes: the project layer, or one of the person's own.
fn target(args: &ImportArgs, root: &Path) -> anyhow::Result<Option<(LayerKind, PathBuf)>> {
    let kind = match (args.write, args.user, args.data) {
        (false, false, false) => return Ok(None),
        (_, true, _) => LayerKind::User,
        (_, _, true) => LayerKind::Data,
        _ => LayerKind::Project,
    };
    let mut warnings = Vec::new();
    let path = layers::standard(root, true, &mut warnings)
        .into_iter()
        .find(|l| l.kind == kind)
        .map(|l| l.path);
    match path {
        Some(path) => Ok(Some((kind, path))),
        None => anyhow::bail!(
            "no {} layer to write into: {}",
            kind.name(),
            warnings.join("; ")
        ),
    }
}

/// Claude Code's own file under the home directory, `~/.claude/settings.json`.
fn home_file() -> Option<PathBuf> {
    let home = crate::environment::home()?;
    claude_files()
        .find(|(_, file)| file.in_home)
        .map(|(_, file)| layers::under(home, file.path))
}

/// Claude Code's own settings files, as its layers name them.
fn claude_files() -> impl Iterator<Item = (LayerKind, &'static crate::settings::protocol::OwnFile)>
{
    let claude = Protocol::parse(claude::NAME);
    layers::agent_layers().filter(move |(kind, _)| Some(kind.protocol()) == claude)
}

pub fn run(args: &ImportArgs) -> anyhow::Result<ExitCode> {
    let Agent::Claude = args.agent;
    let root = match &args.project_dir {
        Some(dir) => dir.clone(),
        None => crate::environment::start_dir(),
    };
    let target = target(args, &root)?;
    let personal = matches!(target, Some((LayerKind::User | LayerKind::Data, _)));
    let files: Vec<PathBuf> = match &args.file {
        Some(file) => vec![file.clone()],
        None if personal => home_file().filter(|f| f.is_file()).into_iter().collect(),
        None => DEFAULT_FILES
            .iter()
            .map(|f| root.join(f))
            .filter(|f| f.is_file())
            .collect(),
    };
    if files.is_empty() {
        if personal {
            anyhow::bail!(
                "no Claude Code settings at {}; name the file: levelcode-hooks import claude FILE --user",
                home_file().map_or_else(|| "~/.claude/settings.json".into(), |f| f.display().to_string())
            );
        }
        anyhow::bail!(
            "no Claude Code settings in {}: looked for {}; name the file (levelcode-hooks import claude FILE), or import your own ~/.claude/settings.json with levelcode-hooks import claude --user",
            root.display(),
            DEFAULT_FILES.join(" and ")
        );
    }
    let mut conversion = Conversion::default();
    for file in &files {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("{}: cannot read", file.display()))?;
        let value: Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not valid JSON", file.display()))?;
        convert(&file.display().to_string(), &value, &mut conversion);
    }
    for note in &conversion.notes {
        eprintln!("levelcode-hooks: {note}");
    }
    let Some((kind, target)) = target else {
        let text = serde_json::to_string_pretty(&serde_json::json!({ "hooks": conversion.hooks }))?;
        write_stdout(&format!("{text}\n"))?;
        return Ok(ExitCode::SUCCESS);
    };
    let mut settings = match std::fs::read_to_string(&target) {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(object)) => object,
            Ok(_) => anyhow::bail!(
                "{}: the top level is not a JSON object; fix it before importing",
                target.display()
            ),
            Err(e) => anyhow::bail!(
                "{}: {}; fix it before importing",
                target.display(),
                crate::settings::invalid_json(&text, &e)
            ),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Map::new(),
        Err(e) => anyhow::bail!("{}: cannot read: {e}", target.display()),
    };
    let added =
        merge(&mut settings, &conversion.hooks).with_context(|| target.display().to_string())?;
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create", dir.display()))?;
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(settings))?;
    text.push('\n');
    // Mode 0666 before the umask, as for any file the person creates; another import may run
    // at the same time, so the temporary file is this process's own.
    crate::fs::write_atomically(
        &target,
        text.as_bytes(),
        0o666,
        crate::fs::Writers::Unlocked,
    )
    .with_context(|| format!("{}: cannot write", target.display()))?;
    let how = if kind == LayerKind::Project {
        let own = home_file().filter(|home| files.iter().any(|f| same_file(f, home)));
        match own {
            Some(_) => "project hooks run once trusted (levelcode-hooks trust); your own Claude Code file belongs in your user layer, which needs no trust: levelcode-hooks import claude --user",
            None => "project hooks run once trusted: review and trust them with levelcode-hooks trust",
        }
    } else {
        "they run in every project, with no trust needed: the user and data layers are your own"
    };
    eprintln!(
        "levelcode-hooks: {}: {added} group(s) added to the {} layer; {how}",
        target.display(),
        kind.name()
    );
    Ok(ExitCode::SUCCESS)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// `validate`'s suggestions: one for each of Claude Code's own files (`~/.claude/settings.json`
/// and the project's) with hooks that levelcode would not run, being neither read as a layer
/// (`claudeCodeHooks`) nor imported (every group `import` makes of it already in a levelcode
/// layer).
pub fn suggestion(inspection: &Inspection) -> Vec<String> {
    let imported: Vec<Value> = inspection
        .layers
        .iter()
        .filter(|l| !matches!(l.kind, LayerKind::Agent(..)) && l.state == LayerState::Read)
        .filter_map(|l| serde_json::from_str::<Value>(l.text.as_deref()?).ok())
        .filter_map(|mut v| v.get_mut("hooks").map(Value::take))
        .collect();
    let is_imported = |event: &str, group: &Value| {
        imported.iter().any(|hooks| {
            hooks
                .get(event)
                .and_then(Value::as_array)
                .is_some_and(|groups| groups.contains(group))
        })
    };
    // Opened as layers are, never blocking on a FIFO, and each file once (the project may be
    // the home directory).
    let mut reader = layers::Reader::default();
    let mut out = Vec::new();
    for (kind, file) in claude_files() {
        let path = match file.in_home {
            true => match crate::environment::home() {
                Some(home) => layers::under(home, file.path),
                None => continue,
            },
            false => layers::under(&inspection.root, file.path),
        };
        if inspection.layers.iter().any(|l| l.kind == kind) {
            // Read as a layer: it runs where it is (or waits for trust, which says so).
            continue;
        }
        let layers::Loaded::Contents(bytes, _) = reader.read(&path) else {
            continue;
        };
        let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
            continue;
        };
        let mut conversion = Conversion::default();
        convert(&path.display().to_string(), &value, &mut conversion);
        let total: usize = conversion
            .hooks
            .values()
            .filter_map(Value::as_array)
            .map(Vec::len)
            .sum();
        let left: usize = conversion
            .hooks
            .iter()
            .map(|(event, groups)| {
                let groups = groups.as_array().map(Vec::as_slice).unwrap_or_default();
                groups.iter().filter(|g| !is_imported(event, g)).count()
            })
            .sum();
        if left == 0 {
            continue;
        }
        let import = match file.in_home {
            true => "levelcode-hooks import claude --user, into your user layer",
            false => "levelcode-hooks import claude --write, into the project layer",
        };
        out.push(format!(
            "{} has Claude Code hooks that levelcode does not run ({left} of {total} group(s) neither imported nor read); they run unmodified once imported ({import}), or read where they are with \"claudeCodeHooks\": true in ~/.config/levelcode/settings.json",
            path.display()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_settings_become_levelcode_groups() {
        let claude = json!({
            "permissions": {"allow": ["Bash(npm test)"]},
            "hooks": {
                "PreToolUse": [
                    {"matcher": "Bash", "hooks": [{"type": "command", "command": "python3 .claude/hooks/bash_guard.py", "timeout": 5, "onFailure": "block"}]},
                    {"matcher": "Write|Edit", "hooks": [
                        {"type": "command", "command": "$CLAUDE_PROJECT_DIR/.claude/hooks/guard.sh"},
                        {"type": "prompt", "prompt": "is this safe?"}
                    ]}
                ],
                "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "x"}]}],
                "PermissionRequest": [{"hooks": [{"type": "command", "command": "y"}]}],
                "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "cat notes.md", "async": true}]}]
            }
        });
        let mut out = Conversion::default();
        convert("s.json", &claude, &mut out);
        assert_eq!(
            Value::Object(out.hooks),
            json!({
                "PreToolUse": [
                    {"matcher": "Bash", "protocol": "claude", "hooks": [{"command": "python3 .claude/hooks/bash_guard.py", "timeout": 5, "onFailure": "block"}]},
                    {"matcher": "Write|Edit", "protocol": "claude", "hooks": [{"command": "$CLAUDE_PROJECT_DIR/.claude/hooks/guard.sh", "timeout": 600}]}
                ],
                "UserPromptSubmit": [{"protocol": "claude", "hooks": [{"command": "x", "timeout": 30}]}],
                "SessionStart": [{"matcher": "startup", "protocol": "claude", "hooks": [{"command": "cat notes.md", "timeout": 600, "async": true}]}]
            })
        );
        let notes = out.notes.join("\n");
        assert!(notes.contains("PermissionRequest"), "{notes}");
        assert!(!notes.contains("hooks.UserPromptSubmit"), "{notes}");
        assert!(notes.contains("type \"prompt\""), "{notes}");
        assert!(!notes.contains("\"async\""), "kept, so no note: {notes}");
    }

    #[test]
    fn async_rewake_is_kept_in_the_background_with_a_note() {
        let claude = json!({"hooks": {"PostToolUse": [{"hooks": [
            {"type": "command", "command": "npm test", "asyncRewake": true}
        ]}]}});
        let mut out = Conversion::default();
        convert("s.json", &claude, &mut out);
        assert_eq!(out.hooks["PostToolUse"][0]["hooks"][0]["async"], true);
        let notes = out.notes.join("\n");
        assert!(
            notes.contains("\"asyncRewake\"") && notes.contains("does not wake"),
            "{notes}"
        );
    }

    #[test]
    fn the_if_of_a_handler_is_kept_as_written() {
        let claude = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "./check-commit.sh", "if": "Bash(git commit *)"}
        ]}]}});
        let mut out = Conversion::default();
        convert("s.json", &claude, &mut out);
        assert_eq!(
            out.hooks["PreToolUse"][0]["hooks"][0]["if"],
            "Bash(git commit *)"
        );
        assert!(out.notes.is_empty(), "{:?}", out.notes);
    }

    #[test]
    fn merging_keeps_what_is_there_and_adds_once() {
        let mut settings = json!({"other": 1, "hooks": {"Stop": [{"hooks": [{"command": "a"}]}]}})
            .as_object()
            .unwrap()
            .clone();
        let hooks = json!({"Stop": [{"protocol": "claude", "hooks": [{"command": "b"}]}]})
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(merge(&mut settings, &hooks).unwrap(), 1);
        assert_eq!(merge(&mut settings, &hooks).unwrap(), 0);
        assert_eq!(settings["hooks"]["Stop"].as_array().unwrap().len(), 2);
        assert_eq!(settings["other"], 1);
        let mut broken = json!({"hooks": []}).as_object().unwrap().clone();
        assert!(merge(&mut broken, &hooks).is_err());
    }
}
