//! The execution log: one JSON line per dispatch appended to the file `LEVELCODE_HOOKS_LOG`
//! names. The `log` and `stats` subcommands read it (`commands/log.rs`).
//!
//! Each line is written with a single `write` on a file opened for appending, under an exclusive
//! lock, so lines from dispatchers running at the same time never interleave. Handler output is
//! cut to [`KEPT_OUTPUT`] bytes per stream, and the tool's input to [`KEPT_INPUT`]: the log says
//! what happened, where and to what, not everything printed.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::dispatch::output::{millis, Report};
use crate::dispatch::payload::Payload;

/// The environment variable naming the log file.
pub const LOG_VAR: &str = crate::environment::EXEC_LOG;

/// Bytes of each handler's stdout and stderr kept in a log line.
pub const KEPT_OUTPUT: usize = 1024;

/// Bytes of the tool's input (as compact JSON) kept in a log line: enough to tell one call from
/// another (`{"command":"git push --force"}`), not a file's whole content.
pub const KEPT_INPUT: usize = 200;

/// Appends the dispatch of `payload` in the project `root` to the file named by
/// `LEVELCODE_HOOKS_LOG`, if any; a failure is a warning in the report.
pub fn append(report: &mut Report, payload: &Payload, root: &Path) {
    let input = if payload.kind.is_tool_event() {
        Some(payload.tool_input()).filter(|input| !input.is_null())
    } else {
        None
    };
    append_entry(report, root, input.map(|input| input.to_string()), false);
}

/// Appends the line of a background handler that has ended (contract §21), started by a
/// dispatch in the project `root`: its one handler with its outcome, marked `"background": true`.
pub fn append_background(report: &mut Report, root: &Path) {
    append_entry(report, root, None, true);
}

fn append_entry(report: &mut Report, root: &Path, input: Option<String>, background: bool) {
    let Some(path) = log_path(None) else {
        return;
    };
    let mut entry = Entry::of(report);
    entry.background = background;
    entry.project = Some(root.display().to_string());
    if let Some(input) = input {
        let (text, cut_short) = cut(&input, KEPT_INPUT);
        entry.input = Some(text);
        entry.input_truncated = cut_short;
    }
    let mut line = match serde_json::to_vec(&entry) {
        Ok(line) => line,
        Err(e) => {
            report.warnings.push(format!(
                "{LOG_VAR} {}: cannot write the entry: {e}",
                path.display()
            ));
            return;
        }
    };
    line.push(b'\n');
    if let Err(e) = append_line(&path, &line) {
        report.warnings.push(format!(
            "{LOG_VAR} {}: cannot append to the execution log: {e}; this dispatch is not recorded",
            path.display()
        ));
    }
}

/// The log file: `--file`, else `LEVELCODE_HOOKS_LOG` when set and non-empty.
pub fn log_path(flag: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = flag {
        return Some(path.to_path_buf());
    }
    crate::environment::exec_log().map(Path::to_path_buf)
}

/// One write under an exclusive lock; the file is created (mode 0600, folders included) when
/// missing.
fn append_line(path: &Path, line: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let mut options = OpenOptions::new();
    options.append(true).create(true);
    // Never block on a FIFO; hook output may be private, so only the owner reads it.
    let mut file = crate::fs::open_regular(path, crate::fs::with_mode(&mut options, 0o600))?;
    file.lock()?;
    let written = file.write(line)?;
    if written < line.len() {
        // Still under the lock: finish the line rather than leave half of it.
        file.write_all(&line[written..])?;
    }
    file.unlock()
}

/// One line of the log.
#[derive(Debug, Serialize, Deserialize)]
pub struct Entry {
    /// When the dispatch ended, UTC, RFC 3339 with milliseconds.
    pub time: String,
    pub event: Option<String>,
    #[serde(default)]
    pub tool: Option<String>,
    /// The project root the dispatch ran for (absent from lines older than it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// The tool's input as compact JSON, its first [`KEPT_INPUT`] bytes, on a tool event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// True when [`Entry::input`] was cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub input_truncated: bool,
    pub decision: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub duration_ms: f64,
    #[serde(default)]
    pub handlers: Vec<HandlerEntry>,
    #[serde(default)]
    pub warnings: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// The line of a background handler that ended after its dispatch (contract §21); its
    /// dispatch's line says it `started`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
}

/// One handler in a log line.
#[derive(Debug, Serialize, Deserialize)]
pub struct HandlerEntry {
    pub label: String,
    pub layer: String,
    pub source: String,
    pub outcome: String,
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub signal: Option<i32>,
    /// An http handler's status (contract §19).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    pub duration_ms: f64,
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
    /// True when stdout or stderr was cut, here or by the dispatcher.
    #[serde(default)]
    pub output_truncated: bool,
    /// The handler rewrote the tool input (contract §11).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rewrote_input: bool,
}

impl Entry {
    fn of(report: &Report) -> Entry {
        Entry {
            time: rfc3339(SystemTime::now()),
            event: report.event.clone(),
            tool: report.tool_name.clone(),
            project: None,
            input: None,
            input_truncated: false,
            decision: report.decision().into(),
            reason: report
                .decision_reason()
                .as_deref()
                .map(|r| cut(r, KEPT_OUTPUT).0),
            duration_ms: millis(report.started.elapsed()),
            handlers: report
                .handlers
                .iter()
                .map(|h| {
                    let (stdout, out_cut) = cut(&h.stdout, KEPT_OUTPUT);
                    let (stderr, err_cut) = cut(&h.stderr, KEPT_OUTPUT);
                    HandlerEntry {
                        label: h.label.clone(),
                        layer: h.layer.into(),
                        source: h.source.clone(),
                        outcome: h.outcome.name().into(),
                        exit_code: h.exit_code,
                        signal: h.signal,
                        http_status: h.http_status,
                        duration_ms: h.duration_ms,
                        stdout,
                        stderr,
                        output_truncated: out_cut
                            || err_cut
                            || h.stdout_truncated
                            || h.stderr_truncated,
                        rewrote_input: h.rewrote_input,
                    }
                })
                .collect(),
            warnings: report
                .warnings
                .iter()
                .take(20)
                .map(|w| cut(w, KEPT_OUTPUT).0)
                .collect(),
            interrupted: report.interrupted.is_some(),
            background: false,
        }
    }
}

/// The first `max` bytes of `text`, cut at a character boundary, and whether anything was cut.
fn cut(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_string(), false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_string(), true)
}

/// `2024-05-01T12:34:56.789Z`.
fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = crate::fs::civil_from_days(i64::try_from(days).unwrap_or(0));
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(crate::fs::civil_from_days(0), (1970, 1, 1));
        assert_eq!(crate::fs::civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(crate::fs::civil_from_days(19_723), (2024, 1, 1));
        let t = UNIX_EPOCH + std::time::Duration::from_millis(1_714_566_896_789);
        assert_eq!(rfc3339(t), "2024-05-01T12:34:56.789Z");
    }

    #[test]
    fn cut_keeps_whole_characters() {
        assert_eq!(cut("héllo", 2), ("h".to_string(), true));
        assert_eq!(cut("abc", 3), ("abc".to_string(), false));
    }
}
