//! `levelcode-hooks test`: builds a payload from flags and dispatches it as `run` would
//! (contract §10), or with `--dry-run` only shows what would run.
//!
//! The payload goes through [`Payload::parse`] and [`dispatch::dispatch`] like one read from
//! stdin, so the result, the exit status, the execution log and the compliance record are those
//! of `run`.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::commands::inspect;
use crate::commands::list::{self, HandlerJson, Planned, Verdict};
use crate::dispatch::output::{self, Trace};
use crate::dispatch::payload::Payload;
use crate::dispatch::{self, Options};
use crate::settings::events::{self, EventKind, Field, Subject};
use crate::signals;
use crate::style::{Painter, Style};

#[derive(Debug, Clone, Args)]
pub struct TestArgs {
    /// The event: one of the table's (docs/hooks.md lists them).
    #[arg(long, value_name = "NAME", help = format!(
        "The event: {}",
        events::listed("or", |_| true)
    ))]
    pub event: String,

    /// The tool's name (required for tool events), e.g. write_file.
    #[arg(long, value_name = "NAME", help = format!(
        "The tool's name (required for {}), e.g. write_file",
        events::listed("and", |e| e.matcher == Subject::Tool)
    ))]
    pub tool: Option<String>,

    /// The tool's input, as JSON, e.g. '{"path":"src/a.ts","content":"..."}'.
    #[arg(long, value_name = "JSON", conflicts_with = "input_file")]
    pub input: Option<String>,

    /// Read the tool's input (JSON) from this file; `-` reads stdin.
    #[arg(long, value_name = "FILE")]
    pub input_file: Option<PathBuf>,

    /// The tool's result: JSON when it is a JSON object or array, else text.
    #[arg(long, value_name = "TEXT", help = format!(
        "The tool's result ({}): JSON when it is a JSON object or array, else text",
        events::listed("and", |e| e.fields.contains(&Field::ToolResult))
    ))]
    pub result: Option<String>,

    /// The payload's cwd [default: none, so the project root is used].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Another payload field, e.g. --field prompt='fix the build' (repeatable; the value is JSON
    /// when it parses as JSON, else text).
    #[arg(long = "field", value_name = "NAME=VALUE", help = format!(
        "Another field of the payload, repeatable, e.g. --field reason=clear: {}; the value is JSON when it parses as JSON, else text",
        field_list()
    ))]
    pub fields: Vec<String>,

    /// Show what would run, in order, without running anything.
    #[arg(long)]
    pub dry_run: bool,

    /// With --dry-run: print one JSON object instead of text.
    #[arg(long, requires = "dry_run")]
    pub json: bool,

    #[command(flatten)]
    pub dispatch: crate::dispatch::DispatchArgs,
}

pub fn run(args: &TestArgs) -> anyhow::Result<ExitCode> {
    signals::install();
    let started = Instant::now();
    let bytes = match build_payload(args) {
        Ok(bytes) => bytes,
        Err(message) => return output::print_error(&message),
    };
    let payload = match Payload::parse(bytes, None) {
        Ok(payload) => payload,
        Err(message) => return output::print_error(&message),
    };
    let options = args.dispatch.options();
    if args.dry_run {
        return dry_run(&payload, &options, args.json);
    }
    let trace = Trace::new(args.dispatch.verbose || std::io::stderr().is_terminal());
    // A person checking a setup sees what a background handler comes to (contract §21).
    dispatch::background::wait_in_place();
    let report = dispatch::dispatch(&payload, &options, &trace, started);
    let waited = report
        .handlers
        .iter()
        .filter(|h| h.outcome == dispatch::outcome::Outcome::Started)
        .count();
    if waited > 0 {
        eprintln!(
            "levelcode-hooks test: waited for {waited} background handler(s) (\"async\"); run and serve answer without waiting, and hand what each comes to on with the session's next answer"
        );
    }
    // The same JSON, with what a terminal would not show as itself written as escapes.
    output::print_report_shown(
        &report,
        args.dispatch.output,
        &trace,
        crate::commands::visible::json,
    )
}

/// The payload the flags describe: `event`, `tool_name`, `tool_input`, `tool_result`, each
/// `--field` and `cwd`, each only when given.
fn build_payload(args: &TestArgs) -> Result<Vec<u8>, String> {
    let mut object = Map::new();
    object.insert("event".into(), Value::String(args.event.clone()));
    if let Some(tool) = &args.tool {
        object.insert("tool_name".into(), Value::String(tool.clone()));
    } else if EventKind::of(&args.event).is_tool_event() {
        return Err(format!(
            "--tool is required for {}: the tool's name, e.g. --tool write_file",
            args.event
        ));
    }
    let input = match (&args.input, &args.input_file) {
        (Some(text), _) => Some(("--input", text.clone())),
        (None, Some(file)) => Some(("--input-file", read_input_file(file)?)),
        (None, None) => None,
    };
    if let Some((flag, text)) = input {
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{flag}: not valid JSON ({e}); the tool input is JSON, e.g. '{{\"path\":\"a.txt\"}}'"))?;
        object.insert("tool_input".into(), value);
    }
    if let Some(result) = &args.result {
        let trimmed = result.trim_start();
        let value = match serde_json::from_str::<Value>(result) {
            Ok(v @ (Value::Object(_) | Value::Array(_)))
                if trimmed.starts_with('{') || trimmed.starts_with('[') =>
            {
                v
            }
            _ => Value::String(result.clone()),
        };
        object.insert("tool_result".into(), value);
    }
    for field in &args.fields {
        let (name, value) = payload_field(&args.event, field)?;
        object.insert(name, value);
    }
    if let Some(cwd) = &args.cwd {
        let cwd = if cwd.is_absolute() {
            cwd.clone()
        } else {
            std::env::current_dir()
                .map_err(|e| format!("--cwd: cannot resolve {}: {e}", cwd.display()))?
                .join(cwd)
        };
        object.insert(
            "cwd".into(),
            Value::String(cwd.to_string_lossy().into_owned()),
        );
    }
    serde_json::to_vec(&Value::Object(object)).map_err(|e| format!("payload: {e}"))
}

/// The fields of the events' table that `--field` is for, as `--help` lists them.
fn field_list() -> String {
    let mut names: Vec<&str> = Vec::new();
    for event in events::EVENTS {
        for field in event.fields {
            let name = field.name();
            if own_flag(name).is_none() && !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names.join(", ")
}

/// The flag that sets a payload field, for the fields that have one.
fn own_flag(name: &str) -> Option<&'static str> {
    match name {
        "event" => Some("--event"),
        "tool_name" => Some("--tool"),
        "tool_input" => Some("--input"),
        "tool_result" => Some("--result"),
        "cwd" => Some("--cwd"),
        _ => None,
    }
}

/// One `--field NAME=VALUE`: the field's name and value, the value JSON when it parses as JSON
/// (`--field stop_hook_active=true`), else the text as given (`--field reason=clear`). A name
/// with a flag of its own, or one that is a slip for a field of the event, is refused with what
/// to write instead.
fn payload_field(event: &str, given: &str) -> Result<(String, Value), String> {
    let Some((name, text)) = given.split_once('=') else {
        return Err(format!(
            "--field {given}: expected NAME=VALUE, e.g. --field reason=clear"
        ));
    };
    let valid = name
        .bytes()
        .enumerate()
        .all(|(i, b)| b == b'_' || b.is_ascii_lowercase() || (i > 0 && b.is_ascii_digit()));
    if name.is_empty() || !valid {
        return Err(format!(
            "--field {given}: the name must be a payload field in lower case, letters, digits and _, e.g. --field reason=clear"
        ));
    }
    if let Some(flag) = own_flag(name) {
        return Err(format!("--field {name}: give it with {flag} instead"));
    }
    let known: Vec<&str> = EventKind::of(event)
        .event()
        .map(|e| e.fields.iter().map(|f| f.name()).collect())
        .unwrap_or_default();
    if !known.contains(&name) {
        if let Some(meant) = crate::commands::suggest::nearest(name, &known) {
            return Err(format!(
                "--field {name}: {event} has no field {name}; did you mean --field {meant}=...?"
            ));
        }
    }
    let value =
        serde_json::from_str::<Value>(text).unwrap_or_else(|_| Value::String(text.to_string()));
    Ok((name.to_string(), value))
}

fn read_input_file(file: &PathBuf) -> Result<String, String> {
    if file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("--input-file -: cannot read stdin: {e}"))?;
        return Ok(text);
    }
    std::fs::read_to_string(file)
        .map_err(|e| format!("--input-file {}: cannot read: {e}", file.display()))
}

#[derive(Serialize)]
struct DryRunJson<'a> {
    event: &'a str,
    tool_name: Option<&'a str>,
    project_root: String,
    /// The payload in levelcode's own form.
    payload: Value,
    would_run: Vec<WouldRun>,
    not_run: Vec<HandlerJson>,
    warnings: Vec<String>,
}

/// A handler that would run, with what it would read.
#[derive(Serialize)]
struct WouldRun {
    #[serde(flatten)]
    handler: HandlerJson,
    /// What it reads on stdin, in its own protocol, one for each run it becomes (Claude Code's
    /// `Read` runs once per path).
    payloads: Vec<Value>,
}

/// What `planned`, a handler that would run, reads on stdin: each run's payload in its protocol.
fn payloads_of(planned: &Planned<'_>, payload: &Payload, root: &std::path::Path) -> Vec<Vec<u8>> {
    planned
        .entry
        .handler
        .map(|h| h.protocol.stdins(payload, root))
        .unwrap_or_default()
}

/// Prints what a dispatch of `payload` would run, in order; runs nothing.
fn dry_run(payload: &Payload, options: &Options, json: bool) -> anyhow::Result<ExitCode> {
    let root = dispatch::project_root(payload, options);
    let inspection = inspect::inspect(options, root);
    let tool = payload.tool_name.as_deref();
    let input = payload.tool_input();
    // What the matchers are tested against: the tool, or the event's member (`reason`, …).
    let planned = list::plan(
        &inspection,
        Some(&payload.event),
        payload.subject(),
        Some(&input),
    );
    let (runs, others): (Vec<&Planned<'_>>, Vec<&Planned<'_>>) = planned
        .iter()
        .partition(|p| matches!(p.verdict, Verdict::WouldRun(_)));
    let handler_input = payload.handler_input(&inspection.root);
    let mut warnings = payload.warnings.clone();
    warnings.extend(list::all_warnings(&inspection));
    if json {
        let value = DryRunJson {
            event: &payload.event,
            tool_name: tool,
            project_root: inspection.root.display().to_string(),
            payload: serde_json::from_slice(&handler_input).unwrap_or(Value::Null),
            would_run: runs
                .iter()
                .map(|p| WouldRun {
                    handler: HandlerJson::new(p),
                    payloads: payloads_of(p, payload, &inspection.root)
                        .iter()
                        .map(|bytes| serde_json::from_slice(bytes).unwrap_or(Value::Null))
                        .collect(),
                })
                .collect(),
            not_run: others
                .iter()
                .filter(|p| p.verdict != Verdict::OtherEvent)
                .map(|p| HandlerJson::new(p))
                .collect(),
            warnings,
        };
        let mut line = serde_json::to_string(&value)?;
        line.push('\n');
        output::write_stdout(&line)?;
        return Ok(ExitCode::SUCCESS);
    }
    let painter = Painter::stdout();
    let mut out = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(
        out,
        "{} {}{} in {} (dry run: nothing runs)",
        painter.paint(Style::Bold, "event"),
        payload.event,
        tool.map(|t| format!(" with tool {t}")).unwrap_or_default(),
        inspection.root.display()
    );
    let _ = writeln!(
        out,
        "{} {}",
        painter.paint(Style::Bold, "payload"),
        crate::commands::visible::escape(&String::from_utf8_lossy(&handler_input))
    );
    if runs.is_empty() {
        let _ = writeln!(out, "\nno handler would run");
    } else {
        let _ = writeln!(
            out,
            "\nwould run, in this order (the first block stops the chain):"
        );
    }
    for p in &runs {
        let Verdict::WouldRun(n) = p.verdict else {
            continue;
        };
        let handler = p.entry.handler.expect("a handler that runs is valid");
        let _ = writeln!(
            out,
            "  {}. {}  (timeout {})",
            n,
            painter.paint(Style::Good, &p.entry.label),
            inspect::seconds(handler.timeout.as_secs_f64())
        );
        let file = inspect::short_path(&p.entry.layer.path, &inspection.root);
        let _ = writeln!(
            out,
            "     {}",
            painter.paint(
                Style::Dim,
                format!("{} {file}: {}", p.entry.layer.kind.name(), p.entry.path)
            )
        );
        if handler.sandbox.policy.is_some() {
            let _ = writeln!(out, "     sandbox: {}", handler.sandbox.describe());
        }
        // Why it runs, when an `"if"` could have kept it from running.
        if let Some(why) = &p.why {
            let _ = writeln!(out, "     {}", painter.paint(Style::Dim, why));
        }
        // A handler of another protocol reads the payload in its own form, not the one above.
        if !handler.protocol.is_levelcode() {
            let payloads = payloads_of(p, payload, &inspection.root);
            for (i, bytes) in payloads.iter().enumerate() {
                let run = match payloads.len() {
                    1 => String::new(),
                    n => format!(", run {} of {n}", i + 1),
                };
                let _ = writeln!(
                    out,
                    "     {} {}",
                    painter.paint(
                        Style::Bold,
                        format!("reads ({}{run}):", handler.protocol.name())
                    ),
                    crate::commands::visible::escape(&String::from_utf8_lossy(bytes))
                );
            }
        }
    }
    let relevant: Vec<&&Planned<'_>> = others
        .iter()
        .filter(|p| p.verdict != Verdict::OtherEvent)
        .collect();
    if !relevant.is_empty() {
        let _ = writeln!(out, "\nnot run:");
        for p in relevant {
            let _ = writeln!(
                out,
                "  {:<9}  {}: {}",
                painter.paint(Style::Dim, p.verdict.name()),
                p.entry.label,
                p.why.as_deref().unwrap_or("")
            );
        }
    }
    if !warnings.is_empty() {
        let _ = writeln!(out, "\n{}", painter.paint(Style::Warn, "warnings:"));
        for warning in &warnings {
            let _ = writeln!(out, "  {warning}");
        }
    }
    output::write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}
