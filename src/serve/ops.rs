//! Requests that are not events (contract §14): `{"op":"trust_status"}` and
//! `{"op":"trust","digest":"sha256:…"}`, so a client can show its person what a project's hooks
//! are, ask, and record the answer.
//!
//! A line is an op when it has a top-level string `op` and no `event` (or `hook_event_name`):
//! a payload that carries an `op` member of its own is still dispatched as an event.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::dispatch::output;
use crate::trust::{self, status as command, State};

use super::ServeArgs;

/// The members an op reads; any other member is ignored.
#[derive(Deserialize)]
struct OpLine {
    op: Option<Value>,
    #[serde(default)]
    id: Option<Box<RawValue>>,
    #[serde(default)]
    options: Option<Value>,
    #[serde(default)]
    digest: Option<Value>,
    #[serde(default)]
    cwd: Option<Value>,
    #[serde(default)]
    team: Option<Value>,
    #[serde(default)]
    event: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    hook_event_name: Option<serde::de::IgnoredAny>,
}

/// Returns false if `line` is certainly not an op (nothing in it reads `"op"`); true when it may
/// be, which [`answer`] decides.
pub fn may_be_op(line: &[u8]) -> bool {
    crate::bytes::contains(line, b"\"op\"")
}

/// [`answer`] for the ops that are answered on the reading thread, in the order their lines
/// come: `compliance`, so that a team's log holds the calls in the order the client recorded
/// them (an append takes microseconds, and runs no handler). `None` for every other line.
pub fn answer_in_order(line: &[u8], args: &ServeArgs) -> Option<(String, Option<Box<RawValue>>)> {
    crate::bytes::find(line, b"\"compliance\"")?;
    let parsed: OpLine = serde_json::from_slice(line).ok()?;
    if parsed.op.as_ref()?.as_str() != Some("compliance") {
        return None;
    }
    answer(line, args)
}

/// The answer to `line` (without its `id`) and the `id`, when the line is an op; `None` for an
/// event, which is dispatched as usual.
pub fn answer(line: &[u8], args: &ServeArgs) -> Option<(String, Option<Box<RawValue>>)> {
    if !may_be_op(line) {
        return None;
    }
    let parsed: OpLine = serde_json::from_slice(line).ok()?;
    if parsed.event.is_some() || parsed.hook_event_name.is_some() {
        return None;
    }
    let op = parsed.op.clone()?;
    let id = parsed.id.clone();
    let answer = match op.as_str() {
        Some(name @ ("trust_status" | "trust")) => match run(name, &parsed, args) {
            Ok(value) => value.to_string(),
            Err(message) => output::error_json(&message),
        },
        Some("compliance") => match compliance(&parsed, line) {
            Ok(value) => value.to_string(),
            Err(message) => output::error_json(&message),
        },
        Some(other) => output::error_json(&format!(
            "request: unknown op {other:?}; the ops are \"trust_status\", \"trust\" and \"compliance\", and an event needs \"event\""
        )),
        None => output::error_json("request: op must be a string such as \"trust_status\""),
    };
    Some((answer, id))
}

/// `{"op":"compliance","team":…,"trace_id":…,"agent_id":…,"tool":…,"args":…,"result":…}`: one
/// signed line in the team's compliance log for a tool call the client describes (contract §9).
fn compliance(line: &OpLine, bytes: &[u8]) -> Result<Value, String> {
    let team = match &line.team {
        Some(Value::String(team)) => team,
        _ => return Err("request: compliance needs \"team\", the team's name (a string)".into()),
    };
    let text =
        std::str::from_utf8(bytes).map_err(|_| "request: the line is not UTF-8".to_string())?;
    let Some(data_dir) = crate::settings::layers::data_dir() else {
        return Err("no data directory (neither LEVELCODE_DIR nor HOME is set); nothing written to the compliance log".into());
    };
    crate::compliance::append_call(&data_dir, team, text)?;
    let log = data_dir
        .join("swarm")
        .join(team)
        .join("compliance")
        .join("events.jsonl");
    Ok(json!({ "compliance": { "log": log.to_string_lossy() } }))
}

fn run(op: &str, line: &OpLine, args: &ServeArgs) -> Result<Value, String> {
    let root = project_root(line, args)?;
    let personal = command::personal();
    let mut warnings = personal.warnings.clone();
    let layers = command::assess_all(&root, &personal, &mut warnings);
    if op == "trust_status" {
        return Ok(json!({ "project_trust": command::status_json(&root, &layers, &warnings) }));
    }
    if let Some(var) = trust::started_by_agent() {
        return Err(trust::agent_refusal(var, &root));
    }
    let wanted = match &line.digest {
        Some(Value::String(d)) if trust::digest::is_digest(d) => d.clone(),
        Some(other) => {
            return Err(format!(
                "request: digest must be \"sha256:\" and 64 hex digits, not {}",
                crate::settings::short_json(other)
            ))
        }
        None => return Err(
            "request: trust needs the \"digest\" that trust_status gave and the person approved"
                .into(),
        ),
    };
    let with_hooks: Vec<&command::Layer> = layers
        .iter()
        .filter(|l| l.assessment.state != State::NoHooks)
        .collect();
    let Some(first) = with_hooks.first() else {
        return Err(format!(
            "{}: no hooks to run, so nothing to trust",
            trust::settings_file(&root).display()
        ));
    };
    // The digest names the layer to trust: each layer inside the project has its own.
    let current = |l: &command::Layer| l.assessment.digest.as_ref().map(|d| d.digest.clone());
    let Some(layer) = with_hooks
        .iter()
        .find(|l| current(l).as_deref() == Some(wanted.as_str()))
    else {
        let now: Vec<String> = with_hooks
            .iter()
            .map(|l| {
                format!(
                    "{} is {}",
                    l.assessment.path.display(),
                    current(l).unwrap_or_else(|| "not computed".into())
                )
            })
            .collect();
        return Err(format!(
            "{}: no hooks of this project have the digest {wanted} now ({}): they changed since \
             the person reviewed them; ask trust_status again",
            first.assessment.path.display(),
            now.join("; ")
        ));
    };
    if let Some(reason) = &layer.assessment.untrustable {
        return Err(format!("{}: {reason}", layer.assessment.path.display()));
    }
    let Some(store_path) = trust::store::path() else {
        return Err(
            "no data directory (neither LEVELCODE_DIR nor HOME is set): nowhere to record trust"
                .into(),
        );
    };
    let updated = command::record(&store_path, layer, &mut warnings)?;
    if let Some(aside) = updated.set_aside {
        warnings.push(format!(
            "{} could not be read; it was moved to {} and a new store started",
            store_path.display(),
            aside.display()
        ));
    }
    let after = command::assess_all(&root, &personal, &mut Vec::new());
    Ok(json!({ "project_trust": command::status_json(&root, &after, &warnings) }))
}

/// `options.project_dir`, else the server's `--project-dir`, else the line's `cwd`, else the
/// server's current directory; relative paths against the server's current directory.
fn project_root(line: &OpLine, args: &ServeArgs) -> Result<PathBuf, String> {
    let from_options = match line.options.as_ref().and_then(|o| o.get("project_dir")) {
        None | Some(Value::Null) => None,
        Some(Value::String(dir)) => Some(PathBuf::from(dir)),
        Some(other) => {
            return Err(format!(
                "request: options: project_dir must be a string, not {}",
                crate::settings::short_json(other)
            ))
        }
    };
    let from_cwd = match &line.cwd {
        Some(Value::String(dir)) => Some(PathBuf::from(dir)),
        _ => None,
    };
    let start = crate::environment::start_dir();
    Ok(
        match from_options
            .or_else(|| args.dispatch.project_dir.clone())
            .or(from_cwd)
        {
            Some(dir) if dir.is_absolute() => dir,
            Some(dir) => start.join(dir),
            None => start,
        },
    )
}
