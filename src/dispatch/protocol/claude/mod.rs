//! Claude Code's hook protocol (contract §12), as a pair of pure functions: [`payloads`] gives
//! the stdin a Claude Code hook script expects for one of our payloads, [`judge`] reads its reply
//! (exit code, stdout, stderr) as one of our outcomes. [`input_from_claude`] carries an
//! `updatedInput` back to the levelcode tool's own input.
//!
//! Tool names and inputs follow the table of §12: `write_file` is `Write`, `str_replace` is
//! `Edit` (one replacement) or `MultiEdit`, `run_terminal_command` is `Bash`, `read_files` is one
//! `Read` per path, `code_search` is `Grep`, `glob` is `Glob`; any other tool keeps its name and
//! input. Paths are joined to the project root and normalized lexically, as Claude Code gives
//! them.

use std::path::Path;

use serde_json::{Map, Value};

use crate::dispatch::events::{self, EventKind};
use crate::dispatch::handler_input::Inputs;
use crate::dispatch::outcome::{self, Judgement, Outcome, Reply};
use crate::dispatch::protocol::{Context, OwnLayers, Rewrite, Rules, Run, RunFile, ToolCall};

mod by_event;
mod session_env;
mod settings_files;

use by_event::{cannot_keep_going, keeps_going, stdout_is_context};
pub use settings_files::default_timeout;

/// The value of `"protocol"` that names it.
pub const NAME: &str = "claude";

/// Claude Code's protocol in the table of protocols.
pub struct Claude;

impl Rules for Claude {
    fn name(&self) -> &'static str {
        NAME
    }

    fn summary(&self) -> &'static str {
        "Claude Code's payload (hook_event_name, tool_input.file_path, ...) and replies (exit 2, hookSpecificOutput.permissionDecision, updatedInput, ...), translated both ways."
    }

    fn agent(&self) -> &'static str {
        "Claude Code"
    }

    fn agent_tools(&self) -> &'static [(&'static str, Option<&'static str>)] {
        AGENT_TOOLS
    }

    fn own_layers(&self) -> Option<&'static OwnLayers> {
        Some(&settings_files::OWN_LAYERS)
    }

    fn matcher_note(&self) -> Option<&'static str> {
        Some("Claude Code hook scripts run unmodified; the matcher is also tested against Claude Code's tool names (Write, Edit, MultiEdit, Bash, Read, Grep, Glob) and, on SessionStart, against \"startup\".")
    }

    fn tool_names(&self, tool: &str) -> &'static [&'static str] {
        tool_names(tool)
    }

    fn named_tools(&self) -> &'static [(&'static str, &'static [&'static str])] {
        TOOL_NAMES
    }

    fn event_subject(&self, kind: EventKind) -> Option<&'static str> {
        (kind == EventKind::SessionStart).then_some(SESSION_SOURCE)
    }

    /// One run, or for `read_files` one per path, each reading Claude Code's payload for the
    /// input as it stands.
    fn runs(&self, inputs: &mut Inputs<'_>) -> Vec<Run> {
        let input = inputs.tool_input();
        let input = (!input.is_null()).then_some(input);
        let (payload, root) = (inputs.payload(), inputs.root());
        let runs = payloads(
            inputs.fields(),
            &payload.event,
            payload.kind,
            payload.tool_name.as_deref(),
            input.as_ref(),
            root,
        );
        let parts = runs.len();
        runs.into_iter()
            .enumerate()
            .map(|(i, (call, object))| {
                let note = match call.as_ref().and_then(|c| c.input.get("file_path")) {
                    Some(path) if parts > 1 => Some(format!(
                        "run for {} ({} of {parts} paths of read_files)",
                        path.as_str().unwrap_or_default(),
                        i + 1
                    )),
                    _ => None,
                };
                Run {
                    input: Some(serde_json::to_vec(&object).unwrap_or_default()),
                    call,
                    note,
                }
            })
            .collect()
    }

    /// `CLAUDE_ENV_FILE`, on `SessionStart`.
    fn run_file(&self, kind: EventKind, warnings: &mut Vec<String>) -> Option<RunFile> {
        if kind != EventKind::SessionStart {
            return None;
        }
        Some(RunFile {
            variable: session_env::VARIABLE,
            path: session_env::create(warnings)?,
            collect: session_env::collect,
        })
    }

    fn given_before(&self) -> &'static [&'static str] {
        if session_env::given_before() {
            &[session_env::VARIABLE]
        } else {
            &[]
        }
    }

    /// Claude Code's name for the project root (contract §12), given to every handler since it
    /// names the same directory.
    fn root_variable(&self) -> Option<&'static str> {
        Some("CLAUDE_PROJECT_DIR")
    }

    fn judge(&self, reply: Reply<'_>, context: &Context<'_>) -> Judgement {
        judge(
            context.kind,
            context.event,
            context.label,
            reply.code,
            reply.stdout,
            reply.stderr,
            context.rewrite,
        )
    }
}

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

/// The tool calls a Claude Code handler runs for: one, except for `read_files`, which gives one
/// per path. `None` for a tool without a Claude Code name: it is passed on as it is.
pub fn tool_calls(tool: &str, input: &Value, root: &Path) -> Vec<ToolCall> {
    let call = |name: &'static str, input: Map<String, Value>| ToolCall {
        name,
        input: Value::Object(input),
        part: None,
    };
    let Some(fields) = input.as_object() else {
        return vec![ToolCall {
            name: tool_names(tool).first().copied().unwrap_or(""),
            input: input.clone(),
            part: None,
        }];
    };
    let path_of = |key: &str| fields.get(key).map(|v| absolute(root, v));
    match tool {
        "write_file" => {
            let mut out = Map::new();
            put(&mut out, "file_path", path_of("path"));
            put(&mut out, "content", fields.get("content").cloned());
            vec![call("Write", out)]
        }
        "str_replace" => {
            let mut out = Map::new();
            put(&mut out, "file_path", path_of("path"));
            match fields.get("replacements") {
                Some(Value::Array(list)) if list.len() != 1 => {
                    let edits = list.iter().map(|r| Value::Object(edit(r))).collect();
                    out.insert("edits".into(), Value::Array(edits));
                    vec![call("MultiEdit", out)]
                }
                Some(Value::Array(list)) => {
                    out.extend(edit(&list[0]));
                    vec![call("Edit", out)]
                }
                _ => vec![call("Edit", out)],
            }
        }
        "run_terminal_command" => {
            let mut out = Map::new();
            put(&mut out, "command", fields.get("command").cloned());
            out.insert("description".into(), Value::String(String::new()));
            put(
                &mut out,
                "timeout",
                fields.get("timeout_seconds").and_then(millis),
            );
            let background =
                fields.get("process_type").and_then(Value::as_str) == Some("BACKGROUND");
            out.insert("run_in_background".into(), Value::Bool(background));
            vec![call("Bash", out)]
        }
        "read_files" => match fields.get("paths") {
            Some(Value::Array(paths)) if !paths.is_empty() => paths
                .iter()
                .enumerate()
                .map(|(i, path)| {
                    let mut out = Map::new();
                    out.insert("file_path".into(), absolute(root, path));
                    ToolCall {
                        name: "Read",
                        input: Value::Object(out),
                        part: Some(i),
                    }
                })
                .collect(),
            _ => vec![call("Read", Map::new())],
        },
        "code_search" | "glob" => {
            let mut out = Map::new();
            put(&mut out, "pattern", fields.get("pattern").cloned());
            put(&mut out, "path", path_of("cwd"));
            vec![call(if tool == "glob" { "Glob" } else { "Grep" }, out)]
        }
        _ => vec![ToolCall {
            name: "",
            input: input.clone(),
            part: None,
        }],
    }
}

/// One replacement `{old, new, allowMultiple}` as Claude Code's `{old_string, new_string,
/// replace_all}`.
fn edit(replacement: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    put(&mut out, "old_string", replacement.get("old").cloned());
    put(&mut out, "new_string", replacement.get("new").cloned());
    out.insert(
        "replace_all".into(),
        replacement
            .get("allowMultiple")
            .cloned()
            .unwrap_or(Value::Bool(false)),
    );
    out
}

fn put(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        map.insert(key.into(), value);
    }
}

/// `timeout_seconds` as Claude Code's milliseconds; none for `-1` (no timeout) or anything that
/// is not a number of seconds.
fn millis(seconds: &Value) -> Option<Value> {
    if let Some(secs) = seconds.as_i64() {
        return (secs >= 0).then(|| Value::from(secs.saturating_mul(1000)));
    }
    let secs = seconds.as_f64().filter(|s| *s >= 0.0 && s.is_finite())?;
    Some(number(secs * 1000.0))
}

/// A number as an integer when it is one.
fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        #[allow(clippy::cast_possible_truncation)]
        return Value::from(value as i64);
    }
    Value::from(value)
}

/// A path value joined to the project root and normalized lexically; anything but a string is
/// left as it is.
fn absolute(root: &Path, path: &Value) -> Value {
    match path {
        Value::String(path) => Value::String(
            crate::fs::normalize(&root.join(path))
                .to_string_lossy()
                .into(),
        ),
        other => other.clone(),
    }
}

/// A path Claude Code gave back, in levelcode's form: relative to the project root when it is
/// inside it, else as given.
fn relative(root: &Path, path: &Value) -> Value {
    let Value::String(text) = path else {
        return path.clone();
    };
    let given = Path::new(text);
    if !given.is_absolute() {
        return path.clone();
    }
    match crate::fs::normalize(given).strip_prefix(crate::fs::normalize(root)) {
        Ok(rest) if rest.as_os_str().is_empty() => Value::String(".".into()),
        Ok(rest) => Value::String(rest.to_string_lossy().into()),
        Err(_) => path.clone(),
    }
}

/// The levelcode tool input after a Claude Code handler answered `updatedInput` for `call`
/// (made from `original` by [`tool_calls`]): each field that differs from what the handler was
/// given is carried back to the levelcode field it came from; every other field keeps its
/// levelcode value, so an `updatedInput` that changes nothing gives `original` back unchanged.
pub fn input_from_claude(
    tool: &str,
    original: &Value,
    call: &ToolCall,
    updated: &Map<String, Value>,
    root: &Path,
) -> Value {
    let given = call.input.as_object();
    let changed = |key: &str| {
        updated
            .get(key)
            .filter(|value| given.and_then(|g| g.get(key)) != Some(*value))
    };
    if updated.keys().all(|key| changed(key).is_none()) {
        return original.clone();
    }
    let mut out = original.as_object().cloned().unwrap_or_default();
    match tool {
        "write_file" => {
            if let Some(path) = changed("file_path") {
                out.insert("path".into(), relative(root, path));
            }
            if let Some(content) = changed("content") {
                out.insert("content".into(), content.clone());
            }
        }
        "str_replace" => {
            if let Some(path) = changed("file_path") {
                out.insert("path".into(), relative(root, path));
            }
            let before = match out.get("replacements") {
                Some(Value::Array(list)) => list.clone(),
                _ => Vec::new(),
            };
            let mut replacements = before.clone();
            if let Some(Value::Array(edits)) = changed("edits") {
                let given_edits = given.and_then(|g| g.get("edits")).and_then(Value::as_array);
                replacements = edits
                    .iter()
                    .enumerate()
                    .map(|(i, e)| {
                        let unchanged = given_edits.and_then(|g| g.get(i)) == Some(e);
                        match before.get(i) {
                            Some(r) if unchanged => r.clone(),
                            r => replacement(r, e),
                        }
                    })
                    .collect();
            }
            if ["old_string", "new_string", "replace_all"]
                .iter()
                .any(|k| changed(k).is_some())
            {
                let first = replacements.first().cloned();
                let mut fields = Map::new();
                for key in ["old_string", "new_string", "replace_all"] {
                    if let Some(value) = changed(key) {
                        fields.insert(key.into(), value.clone());
                    }
                }
                let merged = replacement(first.as_ref(), &Value::Object(fields));
                if replacements.is_empty() {
                    replacements.push(merged);
                } else {
                    replacements[0] = merged;
                }
            }
            if replacements != before {
                out.insert("replacements".into(), Value::Array(replacements));
            }
        }
        "run_terminal_command" => {
            if let Some(command) = changed("command") {
                out.insert("command".into(), command.clone());
            }
            if let Some(ms) = changed("timeout").and_then(Value::as_f64) {
                out.insert("timeout_seconds".into(), number(ms / 1000.0));
            }
            if let Some(background) = changed("run_in_background").and_then(Value::as_bool) {
                let kind = if background { "BACKGROUND" } else { "SYNC" };
                out.insert("process_type".into(), Value::String(kind.into()));
            }
        }
        "read_files" => {
            if let Some(path) = changed("file_path") {
                let path = relative(root, path);
                match (out.get_mut("paths"), call.part) {
                    (Some(Value::Array(paths)), Some(i)) if i < paths.len() => paths[i] = path,
                    _ => {
                        out.insert("paths".into(), Value::Array(vec![path]));
                    }
                }
            }
        }
        "code_search" | "glob" => {
            if let Some(pattern) = changed("pattern") {
                out.insert("pattern".into(), pattern.clone());
            }
            if let Some(path) = changed("path") {
                out.insert("cwd".into(), relative(root, path));
            }
        }
        _ => {
            for (key, value) in updated {
                if changed(key).is_some() {
                    out.insert(key.clone(), value.clone());
                }
            }
        }
    }
    Value::Object(out)
}

/// A levelcode replacement: `before` (if any) with the fields of Claude Code's `edit` written
/// over it.
fn replacement(before: Option<&Value>, edit: &Value) -> Value {
    let mut out = before
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (theirs, ours) in [
        ("old_string", "old"),
        ("new_string", "new"),
        ("replace_all", "allowMultiple"),
    ] {
        if let Some(value) = edit.get(theirs) {
            out.insert(ours.into(), value.clone());
        }
    }
    Value::Object(out)
}

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
                    crate::dispatch::payload::short_json(other)
                ));
            }
        }
    }
    judgement
}

#[cfg(test)]
mod tests;
