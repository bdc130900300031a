//! The signed compliance log of team runs (contract §9).
//!
//! Every `PostToolUse` dispatched in a team context becomes one line of
//! `<data dir>/swarm/<team>/compliance/events.jsonl`: levelcode's own `ComplianceEvent` fields
//! ([`event`]), including its legacy keyless `signature` ([`legacy`], which needs JavaScript's
//! exact JSON text: [`js_json`]), followed by a chain of `seq`, `prev`, `kid` and an Ed25519 `sig`
//! ([`chain`], [`keys`]). [`log`] appends under an exclusive lock; [`verify`] checks a log and
//! names the first line that was tampered with; [`show`] prints it for people.

mod chain;
mod event;
mod js_json;
mod keys;
mod legacy;
mod log;
mod show;
mod verify;

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context as _};

/// Returns true if and only if `name` matches `^[A-Za-z0-9_-]{1,50}$`.
pub fn is_valid_team(name: &str) -> bool {
    (1..=50).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The folder of a team's log, key pair and head file.
fn team_dir(data_dir: &Path, team: &str) -> PathBuf {
    data_dir.join("swarm").join(team).join("compliance")
}

/// Appends one signed line for a `PostToolUse` payload.
///
/// `data_dir` is `$LEVELCODE_DIR` or `$HOME/.levelcode`; `team` has passed [`is_valid_team`];
/// `payload` is the raw hook payload, a UTF-8 JSON object. Waiting for another writer is bounded
/// (about 2 s). `Err` is a warning for the dispatcher's output: it names the file and what to do,
/// and never stops the tool call.
pub fn append(data_dir: &Path, team: &str, payload: &[u8]) -> Result<(), String> {
    // Checked again here because a path is about to be built from it.
    if !is_valid_team(team) {
        return Err(format!(
            "team name {team:?} refused: a team name is 1 to 50 letters, digits, '_' or '-'; \
             this tool call is not in the compliance log"
        ));
    }
    let dir = team_dir(data_dir, team);
    let not_logged =
        |reason: String| format!("compliance log: {reason} (this tool call is not in the log)");
    let text = std::str::from_utf8(payload)
        .map_err(|_| not_logged("the payload is not UTF-8".to_string()))?;
    let hook = match js_json::parse(text) {
        Ok(js_json::Value::Object(hook)) => hook,
        Ok(_) => return Err(not_logged("the payload is not a JSON object".to_string())),
        Err(e) => return Err(not_logged(format!("the payload is not JSON: {e}"))),
    };
    let event = event::ToolCallEvent::from_hook_payload(&hook, crate::fs::now_ms());
    log::append(&dir, &event).map_err(not_logged)
}

/// Appends one signed line for a tool call a caller describes itself, as levelcode's own
/// `logToolCall(teamName, traceId, agentId, tool, args, result)` does: `call` is a JSON object
/// with `trace_id` (a non-empty string), `agent_id` (a string, optional), `tool` (a string),
/// `args` (any JSON, `null` when left out), `result` (`"success"` or `"failure"`) and
/// `timestamp` (milliseconds since 1970, optional: now). Read with JavaScript's number and string
/// semantics, so the line's legacy `signature` is what levelcode computes for the same call.
pub fn append_call(data_dir: &Path, team: &str, call: &str) -> Result<(), String> {
    if !is_valid_team(team) {
        return Err(format!(
            "team name {team:?} refused: a team name is 1 to 50 letters, digits, '_' or '-'; \
             this tool call is not in the compliance log"
        ));
    }
    let not_logged =
        |reason: String| format!("compliance log: {reason} (this tool call is not in the log)");
    let call = match js_json::parse(call) {
        Ok(js_json::Value::Object(call)) => call,
        _ => return Err(not_logged("the request is not a JSON object".to_string())),
    };
    let string = |name: &str| {
        call.get(name)
            .and_then(js_json::Value::as_js_string)
            .map(<[u16]>::to_vec)
    };
    let Some(trace_id) = string("trace_id").filter(|id| !id.is_empty()) else {
        return Err(not_logged(
            "trace_id must be a non-empty string (the tool call's id)".to_string(),
        ));
    };
    let agent_id = match call.get("agent_id") {
        None | Some(js_json::Value::Null) => None,
        Some(js_json::Value::String(id)) => Some(id.clone()),
        Some(_) => return Err(not_logged("agent_id must be a string".to_string())),
    };
    let Some(tool) = string("tool") else {
        return Err(not_logged(
            "tool must be a string (the tool's name)".to_string(),
        ));
    };
    let result = match string("result")
        .map(|r| String::from_utf16_lossy(&r))
        .as_deref()
    {
        Some(r @ ("success" | "failure")) => r.to_string(),
        _ => {
            return Err(not_logged(
                "result must be \"success\" or \"failure\"".to_string(),
            ))
        }
    };
    let timestamp = match call.get("timestamp") {
        None | Some(js_json::Value::Null) => crate::fs::now_ms() as f64,
        Some(js_json::Value::Number(ms)) if ms.is_finite() && *ms >= 0.0 && ms.fract() == 0.0 => {
            *ms
        }
        Some(_) => {
            return Err(not_logged(
                "timestamp must be whole milliseconds since 1970".to_string(),
            ))
        }
    };
    let mut payload = js_json::Object::new();
    payload.set("tool", js_json::Value::String(tool));
    payload.set(
        "args",
        call.get("args").cloned().unwrap_or(js_json::Value::Null),
    );
    payload.set("result", js_json::Value::string(&result));
    let event = event::ToolCallEvent {
        trace_id,
        timestamp,
        agent_id,
        payload: js_json::Value::Object(payload),
    };
    log::append(&team_dir(data_dir, team), &event).map_err(not_logged)
}

/// `levelcode-hooks compliance …`: check or print a team's log.
#[derive(Debug, clap::Subcommand)]
pub enum ComplianceCommand {
    /// Check every line: signatures, the chain, and the tail against the head file.
    ///
    /// Exits 1 naming the first line (1-based, and its seq) that was edited, removed, inserted,
    /// reordered, forged or cut off the end. Lines without sig, from another writer, are
    /// reported as unsigned and fail only with --strict.
    Verify(VerifyArgs),
    /// Print the log as a table, with each line's verification status.
    Show(ShowArgs),
}

/// Which log: a team's, or a file.
#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
pub struct LogArgs {
    /// The team whose log to read: <data dir>/swarm/NAME/compliance/events.jsonl.
    #[arg(long, value_name = "NAME")]
    pub team: Option<String>,

    /// A log file (its head file and public keys are read from beside it).
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub log: LogArgs,

    /// Fail on unsigned lines too.
    #[arg(long)]
    pub strict: bool,

    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,

    /// Check the tail against this head file (a copy kept elsewhere) instead of the one beside
    /// the log.
    #[arg(long, value_name = "FILE")]
    pub head: Option<PathBuf>,

    /// Trust only this public key file (repeatable) instead of the signing*.pub files beside
    /// the log.
    #[arg(long = "pub", value_name = "FILE")]
    pub public_keys: Vec<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub log: LogArgs,

    /// Print the lines as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs a `compliance` subcommand. `verify` exits 0 when the log passes, else 1; `show` exits 0.
pub fn run_command(cmd: &ComplianceCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ComplianceCommand::Verify(args) => {
            let log = log_path(&args.log)?;
            let sources = verify::Sources {
                head: args.head.clone().unwrap_or_else(|| chain::head_path(&log)),
                public_keys: args.public_keys.clone(),
                log,
            };
            let report = read_report(&sources)?;
            let mut out = io::stdout().lock();
            if args.json {
                serde_json::to_writer(&mut out, &verify::to_json(&report, args.strict))?;
                writeln!(out)?;
            } else {
                verify::write_text(&report, args.strict, &mut out)?;
            }
            out.flush()?;
            Ok(if report.passes(args.strict) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        ComplianceCommand::Show(args) => {
            let log = log_path(&args.log)?;
            let sources = verify::Sources {
                head: chain::head_path(&log),
                public_keys: Vec::new(),
                log,
            };
            let report = read_report(&sources)?;
            let mut out = io::stdout().lock();
            if args.json {
                show::write_json(&report, &mut out)?;
            } else {
                show::write_table(&report, &mut out)?;
            }
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn read_report(sources: &verify::Sources) -> anyhow::Result<verify::Report> {
    match verify::verify(sources) {
        Ok(report) => Ok(report),
        Err(e) if e.kind() == io::ErrorKind::NotFound => bail!(
            "no compliance log at {}: nothing has been recorded there yet",
            sources.log.display()
        ),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", sources.log.display())),
    }
}

/// The log file named by `--file`, or the log of `--team` in the data dir.
fn log_path(args: &LogArgs) -> anyhow::Result<PathBuf> {
    if let Some(file) = &args.file {
        return Ok(file.clone());
    }
    let Some(team) = &args.team else {
        bail!("give --team NAME or --file PATH");
    };
    if !is_valid_team(team) {
        bail!("invalid team name {team:?}: a team name is 1 to 50 letters, digits, '_' or '-'");
    }
    let data_dir = crate::environment::data_dir()
        .context("cannot find the data dir: set LEVELCODE_DIR or HOME")?;
    Ok(team_dir(data_dir, team).join(log::LOG_FILE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn team_names_are_checked() {
        for good in ["a", "team-1", "Team_2", &"x".repeat(50)] {
            assert!(is_valid_team(good), "{good}");
        }
        for bad in [
            "",
            "../x",
            "a/b",
            "a b",
            ".",
            "..",
            "é",
            "a\0",
            "a\n",
            &"x".repeat(51),
        ] {
            assert!(!is_valid_team(bad), "{bad:?}");
        }
    }

    #[test]
    fn append_writes_under_the_team_folder() {
        let data = tempfile::tempdir().expect("temp dir");
        append(
            data.path(),
            "t1",
            br#"{"event":"PostToolUse","tool_name":"read_files","tool_input":{"paths":["a"]}}"#,
        )
        .expect("appended");
        let dir = data.path().join("swarm/t1/compliance");
        for name in ["events.jsonl", "events.head", "signing.key", "signing.pub"] {
            assert!(dir.join(name).is_file(), "{name}");
        }
    }

    #[test]
    fn append_refuses_bad_teams_and_payloads_without_writing() {
        let data = tempfile::tempdir().expect("temp dir");
        assert!(append(data.path(), "../x", b"{}").is_err());
        assert!(append(data.path(), "t", b"[1]").is_err());
        assert!(append(data.path(), "t", b"{").is_err());
        assert!(append(data.path(), "t", b"\xff").is_err());
        assert_eq!(fs::read_dir(data.path()).expect("listing").count(), 0);
    }
}
