//! `levelcode-hooks log` and `stats`: the execution log (`LEVELCODE_HOOKS_LOG`) read back, its
//! recent entries shown (where each ran and on what input) and its figures summarised per
//! handler and project.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use crate::dispatch::exec_log::{log_path, Entry, LOG_VAR};
use crate::dispatch::output::write_stdout;
use crate::style::{Painter, Style};

#[derive(Debug, Clone, Args)]
pub struct LogArgs {
    /// How many of the most recent dispatches to show.
    #[arg(short = 'n', long = "lines", value_name = "N", default_value_t = 20)]
    pub count: usize,

    /// Only dispatches of this event.
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,

    /// Print the log's own JSON lines instead of text.
    #[arg(long)]
    pub json: bool,

    /// The log file [default: $LEVELCODE_HOOKS_LOG].
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct StatsArgs {
    /// Only dispatches of this event.
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,

    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,

    /// The log file [default: $LEVELCODE_HOOKS_LOG].
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// What `log` and `stats` read: the file, its entries oldest first with the raw line of each, and
/// how many lines were not entries.
type ReadLog = (PathBuf, Vec<(String, Entry)>, usize);

/// Reads the log; lines that are not entries are counted, not fatal.
fn read_log(flag: Option<&Path>) -> anyhow::Result<ReadLog> {
    let Some(path) = log_path(flag) else {
        anyhow::bail!(
            "no execution log: logging is off until {LOG_VAR} names a file; to keep it on, add `export {LOG_VAR}=\"$HOME/.levelcode/hooks.log\"` to your shell profile (~/.bashrc, ~/.zshrc, ~/.profile) or to the environment levelcode starts in, then restart levelcode; or read a log with --file FILE"
        );
    };
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((path, Vec::new(), 0));
        }
        Err(e) => anyhow::bail!("{}: cannot open: {e}", path.display()),
    };
    let mut entries = Vec::new();
    let mut unreadable = 0;
    for line in BufReader::new(file).split(b'\n') {
        let line = line.map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", path.display()))?;
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Entry>(&text) {
            Ok(entry) => entries.push((text.into_owned(), entry)),
            Err(_) => unreadable += 1,
        }
    }
    Ok((path, entries, unreadable))
}

fn note_unreadable(path: &Path, unreadable: usize) {
    if unreadable > 0 {
        eprintln!(
            "levelcode-hooks: {}: {unreadable} line(s) are not log entries and were skipped",
            path.display()
        );
    }
}

pub fn run_log(args: &LogArgs) -> anyhow::Result<ExitCode> {
    let (path, mut entries, unreadable) = read_log(args.file.as_deref())?;
    note_unreadable(&path, unreadable);
    if crate::environment::exec_log().is_none() {
        eprintln!(
            "levelcode-hooks: logging is off in this environment ({LOG_VAR} is not set): dispatches from here are not recorded; export it in your shell profile to keep it on"
        );
    }
    if let Some(event) = &args.event {
        entries.retain(|(_, e)| e.event.as_deref() == Some(event.as_str()));
    }
    let skip = entries.len().saturating_sub(args.count);
    let recent = &entries[skip..];
    let mut out = String::new();
    if args.json {
        for (line, _) in recent {
            out.push_str(line);
            out.push('\n');
        }
    } else if recent.is_empty() {
        out.push_str(&format!("{}: no dispatch recorded yet\n", path.display()));
    } else {
        let painter = Painter::stdout();
        for (_, entry) in recent {
            render_entry(&mut out, entry, painter);
        }
    }
    write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

fn outcome_style(outcome: &str) -> Style {
    match outcome {
        "proceed" => Style::Good,
        "block" | "stop" => Style::Bad,
        "ask" => Style::Warn,
        "error" | "timeout" | "spawn_error" | "interrupted" => Style::Warn,
        _ => Style::Dim,
    }
}

fn render_entry(out: &mut String, entry: &Entry, painter: Painter) {
    use std::fmt::Write as _;
    // A background handler's line, written when it ended, decides nothing (contract §21).
    let decision = if entry.background {
        painter
            .paint(Style::Dim, "background run ended")
            .to_string()
    } else {
        painter
            .paint(
                match entry.decision.as_str() {
                    "block" => Style::Bad,
                    "ask" => Style::Warn,
                    _ => Style::Good,
                },
                &entry.decision,
            )
            .to_string()
    };
    let _ = writeln!(
        out,
        "{}  {}{}  {decision}  {:.1} ms{}{}",
        painter.paint(Style::Dim, &entry.time),
        entry.event.as_deref().unwrap_or("?"),
        entry
            .tool
            .as_deref()
            .map(|t| format!(" {t}"))
            .unwrap_or_default(),
        entry.duration_ms,
        entry
            .project
            .as_deref()
            .map(|p| format!("  in {}", short_project(p)))
            .unwrap_or_default(),
        if entry.interrupted {
            "  (interrupted)"
        } else {
            ""
        }
    );
    if let Some(input) = &entry.input {
        let more = if entry.input_truncated { "…" } else { "" };
        let _ = writeln!(
            out,
            "    {}",
            painter.paint(
                Style::Dim,
                format!("input: {}{more}", crate::commands::visible::escape(input))
            )
        );
    }
    if let Some(reason) = &entry.reason {
        let _ = writeln!(out, "    reason: {}", first_line(reason));
    }
    for h in &entry.handlers {
        let code = match (h.exit_code, h.signal) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(s)) => format!("signal {s}"),
            _ => String::new(),
        };
        let time = if matches!(h.outcome.as_str(), "duplicate" | "skipped") {
            String::new()
        } else {
            format!("{:.1} ms", h.duration_ms)
        };
        let _ = writeln!(
            out,
            "    {:<11} {:>9}  {:>10}  {}{}",
            painter.paint(outcome_style(&h.outcome), &h.outcome),
            code,
            time,
            h.label,
            if h.rewrote_input {
                "  (rewrote the input)"
            } else {
                ""
            }
        );
        if matches!(h.outcome.as_str(), "error" | "timeout" | "spawn_error")
            && !h.stderr.trim().is_empty()
        {
            let _ = writeln!(
                out,
                "    {}",
                painter.paint(Style::Dim, format!("stderr: {}", first_line(&h.stderr)))
            );
        }
    }
    for warning in &entry.warnings {
        let _ = writeln!(
            out,
            "    {}",
            painter.paint(Style::Warn, format!("warning: {warning}"))
        );
    }
}

fn first_line(text: &str) -> &str {
    text.trim().lines().next().unwrap_or("")
}

/// A project root as people read it: under the home directory, from `~`.
fn short_project(project: &str) -> String {
    let home = crate::environment::home().map(|h| h.display().to_string());
    match home.as_deref().and_then(|h| project.strip_prefix(h)) {
        Some("") => "~".into(),
        Some(rest) if rest.starts_with('/') => format!("~{rest}"),
        _ => project.to_string(),
    }
}

/// One handler's numbers over the log, in one project.
#[derive(Debug, Serialize)]
pub struct HandlerStats {
    pub label: String,
    pub event: String,
    /// The project root its dispatches ran for; `null` for lines written before the log kept it.
    pub project: Option<String>,
    pub layer: String,
    pub source: String,
    /// Times it ran (duplicates and skipped handlers did not run).
    pub runs: usize,
    pub blocks: usize,
    /// `ask` outcomes: approval asked of a person.
    pub asks: usize,
    /// Runs that rewrote the tool input.
    pub rewrites: usize,
    /// `error` and `spawn_error` outcomes.
    pub errors: usize,
    pub timeouts: usize,
    pub median_ms: f64,
    pub p95_ms: f64,
    pub max_ms: f64,
    #[serde(skip)]
    durations: Vec<f64>,
}

#[derive(Serialize)]
struct StatsJson<'a> {
    file: String,
    dispatches: usize,
    first: Option<&'a str>,
    last: Option<&'a str>,
    handlers: &'a [HandlerStats],
}

pub fn run_stats(args: &StatsArgs) -> anyhow::Result<ExitCode> {
    let (path, mut entries, unreadable) = read_log(args.file.as_deref())?;
    note_unreadable(&path, unreadable);
    if let Some(event) = &args.event {
        entries.retain(|(_, e)| e.event.as_deref() == Some(event.as_str()));
    }
    let stats = summarise(entries.iter().map(|(_, e)| e));
    let first = entries.first().map(|(_, e)| e.time.as_str());
    let last = entries.last().map(|(_, e)| e.time.as_str());
    let out = if args.json {
        let mut line = serde_json::to_string(&StatsJson {
            file: path.display().to_string(),
            dispatches: entries.len(),
            first,
            last,
            handlers: &stats,
        })?;
        line.push('\n');
        line
    } else {
        stats_table(&path, entries.len(), first, last, &stats, Painter::stdout())
    };
    write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// Per handler (label, event and file) and project: runs, outcomes and times; slowest (by p95)
/// first. A user-layer handler that runs in two projects has a row for each.
pub fn summarise<'a>(entries: impl Iterator<Item = &'a Entry>) -> Vec<HandlerStats> {
    type Key = (String, String, String, Option<String>);
    let mut index: HashMap<Key, usize> = HashMap::new();
    let mut stats: Vec<HandlerStats> = Vec::new();
    for entry in entries {
        let event = entry.event.clone().unwrap_or_default();
        for h in &entry.handlers {
            // A background handler counts once, by the line of its end (`"background": true`).
            if matches!(h.outcome.as_str(), "duplicate" | "skipped" | "started") {
                continue;
            }
            let key = (
                h.label.clone(),
                event.clone(),
                h.source.clone(),
                entry.project.clone(),
            );
            let i = *index.entry(key).or_insert_with(|| {
                stats.push(HandlerStats {
                    label: h.label.clone(),
                    event: event.clone(),
                    project: entry.project.clone(),
                    layer: h.layer.clone(),
                    source: h.source.clone(),
                    runs: 0,
                    blocks: 0,
                    asks: 0,
                    rewrites: 0,
                    errors: 0,
                    timeouts: 0,
                    median_ms: 0.0,
                    p95_ms: 0.0,
                    max_ms: 0.0,
                    durations: Vec::new(),
                });
                stats.len() - 1
            });
            let s = &mut stats[i];
            s.runs += 1;
            s.rewrites += usize::from(h.rewrote_input);
            match h.outcome.as_str() {
                "block" => s.blocks += 1,
                "ask" => s.asks += 1,
                "error" | "spawn_error" => s.errors += 1,
                "timeout" => s.timeouts += 1,
                _ => {}
            }
            s.durations.push(h.duration_ms);
        }
    }
    for s in &mut stats {
        s.durations.sort_by(f64::total_cmp);
        s.median_ms = median(&s.durations);
        s.p95_ms = percentile(&s.durations, 95);
        s.max_ms = s.durations.last().copied().unwrap_or(0.0);
    }
    stats.sort_by(|a, b| b.p95_ms.total_cmp(&a.p95_ms));
    stats
}

/// The median of sorted values: the middle one, or the mean of the two middle ones.
fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => round2((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// The nearest-rank percentile of sorted values: the smallest value with at least `p` percent of
/// the values at or below it.
fn percentile(sorted: &[f64], p: usize) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn stats_table(
    path: &Path,
    dispatches: usize,
    first: Option<&str>,
    last: Option<&str>,
    stats: &[HandlerStats],
    painter: Painter,
) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let span = match (first, last) {
        (Some(f), Some(l)) => format!(", {f} to {l}"),
        _ => String::new(),
    };
    let _ = writeln!(out, "{}: {dispatches} dispatch(es){span}", path.display());
    if stats.is_empty() {
        out.push_str("no handler has run yet\n");
        return out;
    }
    let w_label = stats
        .iter()
        .map(|s| s.label.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(7, 60);
    let w_event = stats
        .iter()
        .map(|s| s.event.len())
        .max()
        .unwrap_or(0)
        .max(5);
    let project = |s: &HandlerStats| s.project.as_deref().map_or("-".into(), short_project);
    let w_project = stats
        .iter()
        .map(|s| project(s).chars().count())
        .max()
        .unwrap_or(0)
        .max(7);
    let _ = writeln!(
        out,
        "{}",
        painter.paint(
            Style::Bold,
            format!(
                "{:<w_label$}  {:<w_event$}  {:<w_project$}  {:>5}  {:>6}  {:>4}  {:>8}  {:>6}  {:>8}  {:>10}  {:>10}",
                "HANDLER", "EVENT", "PROJECT", "RUNS", "BLOCKS", "ASKS", "REWRITES", "ERRORS", "TIMEOUTS", "MEDIAN", "P95"
            )
        )
    );
    for s in stats {
        let label: String = if s.label.chars().count() > w_label {
            let mut short: String = s.label.chars().take(w_label - 3).collect();
            short.push_str("...");
            short
        } else {
            s.label.clone()
        };
        let bad = |n: usize, style: Style| painter.paint(if n > 0 { style } else { Style::Dim }, n);
        let _ = writeln!(
            out,
            "{label:<w_label$}  {:<w_event$}  {:<w_project$}  {:>5}  {:>6}  {:>4}  {:>8}  {:>6}  {:>8}  {:>10}  {:>10}",
            s.event,
            project(s),
            s.runs,
            bad(s.blocks, Style::Bad),
            bad(s.asks, Style::Warn),
            bad(s.rewrites, Style::Dim),
            bad(s.errors, Style::Warn),
            bad(s.timeouts, Style::Warn),
            format!("{:.1} ms", s.median_ms),
            format!("{:.1} ms", s.p95_ms),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let values: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(median(&values), 10.5);
        assert_eq!(percentile(&values, 95), 19.0);
        assert_eq!(percentile(&[5.0], 95), 5.0);
        assert_eq!(median(&[1.0, 2.0, 9.0]), 2.0);
    }
}
