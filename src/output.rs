//! What the dispatcher prints (contract §7): exactly one JSON object on stdout on every path, the
//! block reason on stderr, and the readable trace of `-v`.

use std::fmt;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cli::OutputMode;
use crate::exit::Status;
use crate::outcome::Outcome;
use crate::settings::Group;

/// The aggregated result of one dispatch.
#[derive(Debug)]
pub struct Report {
    pub event: Option<String>,
    pub tool_name: Option<String>,
    pub reason: Option<String>,
    pub additional_context: Vec<String>,
    pub handlers: Vec<HandlerReport>,
    pub warnings: Vec<String>,
    pub started: Instant,
    /// The signal that stopped the dispatch, if one did.
    pub interrupted: Option<i32>,
}

/// One matched handler in the output.
#[derive(Debug, Serialize)]
pub struct HandlerReport {
    pub layer: &'static str,
    pub source: String,
    pub event: String,
    pub matcher: Option<String>,
    pub label: String,
    pub outcome: Outcome,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub duration_ms: f64,
    pub stdout: String,
    pub stderr: String,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub message: Option<String>,
}

impl HandlerReport {
    pub fn new(group: &Group, label: &str) -> HandlerReport {
        HandlerReport {
            layer: group.source.layer.name(),
            source: group.source.file.display().to_string(),
            event: group.event.clone(),
            matcher: group.matcher.clone(),
            label: label.to_string(),
            outcome: Outcome::Skipped,
            exit_code: None,
            signal: None,
            duration_ms: 0.0,
            stdout: String::new(),
            stderr: String::new(),
            stdout_truncated: false,
            stderr_truncated: false,
            message: None,
        }
    }
}

impl Report {
    pub fn new(event: Option<String>, tool_name: Option<String>, started: Instant) -> Report {
        Report {
            event,
            tool_name,
            reason: None,
            additional_context: Vec::new(),
            handlers: Vec::new(),
            warnings: Vec::new(),
            started,
            interrupted: None,
        }
    }

    pub fn blocked(&self) -> bool {
        self.reason.is_some()
    }

    /// The exit status for this result: a signal wins, then a block.
    pub fn status(&self) -> Status {
        match (self.interrupted, self.blocked()) {
            (Some(sig), _) => Status::Signal(sig),
            (None, true) => Status::Block,
            (None, false) => Status::Proceed,
        }
    }

    /// The JSON line for `mode`, without its newline.
    pub fn to_json(&self, mode: OutputMode) -> String {
        let context = self.additional_context.join("\n");
        let decision = if self.blocked() { "block" } else { "proceed" };
        let result = match mode {
            OutputMode::Full => serde_json::to_string(&Full {
                event: self.event.as_deref(),
                tool_name: self.tool_name.as_deref(),
                decision,
                reason: self.reason.as_deref(),
                additional_context: Some(context.as_str()).filter(|c| !c.is_empty()),
                handlers: &self.handlers,
                warnings: &self.warnings,
                duration_ms: millis(self.started.elapsed()),
                interrupted: self.interrupted.map(|_| true),
            }),
            OutputMode::Compact => serde_json::to_string(&Compact {
                decision,
                reason: self.reason.as_deref(),
                additional_context: Some(context.as_str()).filter(|c| !c.is_empty()),
                interrupted: self.interrupted.map(|_| true),
            }),
        };
        result.unwrap_or_else(|e| {
            error_json(&format!("internal error: cannot write the result: {e}"))
        })
    }
}

#[derive(Serialize)]
struct Full<'a> {
    event: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: Option<&'a str>,
    decision: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(rename = "additionalContext", skip_serializing_if = "Option::is_none")]
    additional_context: Option<&'a str>,
    handlers: &'a [HandlerReport],
    warnings: &'a [String],
    duration_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    interrupted: Option<bool>,
}

#[derive(Serialize)]
struct Compact<'a> {
    decision: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(rename = "additionalContext", skip_serializing_if = "Option::is_none")]
    additional_context: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    interrupted: Option<bool>,
}

/// Milliseconds with two decimals.
pub fn millis(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 100_000.0).round() / 100.0
}

pub fn error_json(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

/// Prints a result and returns its exit status. On a block the reason also goes to stderr.
pub fn print_report(report: &Report, mode: OutputMode, trace: &Trace) -> anyhow::Result<ExitCode> {
    let status = report.status();
    trace.summary(report);
    if let (Status::Block, Some(reason)) = (status, &report.reason) {
        eprintln!("{reason}");
    }
    write_line(&report.to_json(mode))?;
    Ok(status.into())
}

/// Prints `{"error": ...}` and returns exit status 1.
pub fn print_error(message: &str) -> anyhow::Result<ExitCode> {
    write_line(&error_json(message))?;
    Ok(Status::Failure.into())
}

/// Writes one line to stdout; a reader that went away is not an error worth a message.
pub fn write_line(line: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    let result = stdout
        .write_all(line.as_bytes())
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// The readable trace of `-v` on stderr; colors only on a terminal and never with `NO_COLOR`.
pub struct Trace {
    enabled: bool,
    color: bool,
}

impl Trace {
    pub fn new(enabled: bool) -> Trace {
        let color = enabled
            && std::io::stderr().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        Trace { enabled, color }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn line(&self, args: fmt::Arguments<'_>) {
        if self.enabled {
            eprintln!("levelcode-hooks: {args}");
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// One line per handler: outcome, exit code, time, and the reason or message.
    pub fn handler(&self, entry: &HandlerReport) {
        if !self.enabled {
            return;
        }
        let (code, word) = match entry.outcome {
            Outcome::Proceed => ("32", "proceed"),
            Outcome::Block => ("31;1", "BLOCK"),
            Outcome::Error => ("33", "error"),
            Outcome::Timeout => ("33", "timeout"),
            Outcome::SpawnError => ("33", "spawn_error"),
            Outcome::Duplicate => ("2", "duplicate"),
            Outcome::Skipped => ("2", "skipped"),
            Outcome::Interrupted => ("33", "interrupted"),
        };
        let exit = match (entry.exit_code, entry.signal) {
            (Some(c), _) => format!(" exit {c}"),
            (None, Some(s)) => format!(" signal {s}"),
            _ => String::new(),
        };
        let mut line = format!(
            "  {} {}{exit} {:.1} ms  [{} {}]",
            self.paint(code, word),
            entry.label,
            entry.duration_ms,
            entry.layer,
            entry.source
        );
        if let Some(message) = &entry.message {
            line.push_str(&format!("\n      {message}"));
        }
        if entry.outcome == Outcome::Block && !entry.stderr.trim().is_empty() {
            line.push_str(&format!("\n      reason: {}", entry.stderr.trim()));
        }
        eprintln!("{line}");
    }

    fn summary(&self, report: &Report) {
        if !self.enabled {
            return;
        }
        for warning in &report.warnings {
            eprintln!(
                "levelcode-hooks: {} {warning}",
                self.paint("33", "warning:")
            );
        }
        let decision = match &report.reason {
            Some(reason) => format!("{} ({reason})", self.paint("31;1", "block")),
            None => self.paint("32", "proceed"),
        };
        eprintln!(
            "levelcode-hooks: {} handler(s) matched; decision {decision}; {:.1} ms",
            report.handlers.len(),
            millis(report.started.elapsed())
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_output_omits_what_the_contract_omits() {
        let report = Report::new(Some("Stop".into()), None, Instant::now());
        let json: serde_json::Value =
            serde_json::from_str(&report.to_json(OutputMode::Full)).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            ["event", "decision", "handlers", "warnings", "duration_ms"]
        );
    }

    #[test]
    fn compact_output_has_only_the_decision() {
        let mut report = Report::new(Some("PreToolUse".into()), Some("x".into()), Instant::now());
        report.reason = Some("no".into());
        report.additional_context = vec!["a".into(), "b".into()];
        assert_eq!(
            report.to_json(OutputMode::Compact),
            r#"{"decision":"block","reason":"no","additionalContext":"a\nb"}"#
        );
        assert_eq!(report.status(), Status::Block);
    }
}
