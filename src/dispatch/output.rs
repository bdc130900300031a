//! What the dispatcher prints (contract §7): exactly one JSON object on stdout on every path, the
//! block reason on stderr, and the readable trace of `-v`.

use std::fmt;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::dispatch::exit::Status;
use crate::dispatch::outcome::Outcome;
use crate::dispatch::OutputMode;
use crate::settings::protocol::Protocol;
use crate::settings::Group;
use crate::signals;
use crate::style::{self, Painter, Style};

/// The aggregated result of one dispatch.
#[derive(Debug)]
pub struct Report {
    pub event: Option<String>,
    pub tool_name: Option<String>,
    /// The reason of a block (a `block`, or a `stop` on `PreToolUse`).
    pub reason: Option<String>,
    pub additional_context: Vec<String>,
    /// The reasons of the handlers that asked for approval (contract §11).
    pub asks: Vec<String>,
    /// The tool input after the last rewrite, when a handler rewrote it.
    pub updated_input: Option<serde_json::Value>,
    /// The reason a handler asked the agent to stop, when one did.
    pub stop: Option<String>,
    pub system_messages: Vec<String>,
    /// What Claude Code `SessionStart` handlers wrote to `CLAUDE_ENV_FILE`.
    pub session_env: Option<String>,
    pub handlers: Vec<HandlerReport>,
    pub warnings: Vec<String>,
    pub started: Instant,
    /// The signal that stopped the dispatch, if one did.
    pub interrupted: Option<i32>,
    /// Why the project layer was held back, when it was (contract §13).
    pub project_trust: Option<crate::trust::ProjectTrust>,
    /// An `"if"` kept a handler from running that another input of the same tool could have
    /// run: the answer holds for this tool input only, never for the tool (contract §16).
    pub depends_on_input: bool,
    /// Background handlers of the session that ended since its last dispatch, handed on with
    /// this answer (contract §21).
    pub background: Vec<crate::dispatch::background::record::Ended>,
    /// The session's background results were taken for this answer already, as its own
    /// background handlers were started: none is taken twice, nor one of those.
    pub handed_on: bool,
    /// In `serve`: the session still has background handlers running or results waiting in
    /// this server after this answer (`background::hand_on`).
    pub background_pending: bool,
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
    /// An http handler's status (contract §19), in place of a process's `exit_code`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    pub duration_ms: f64,
    pub stdout: String,
    pub stderr: String,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub message: Option<String>,
    /// The handler rewrote the tool input (contract §11).
    pub rewrote_input: bool,
    /// The reason its block, ask or stop gave, as the decision uses it: for the trace, which
    /// must not work it out again by rules of its own.
    #[serde(skip)]
    pub reason: Option<String>,
    /// Left out for levelcode's own protocol.
    #[serde(skip_serializing_if = "is_levelcode")]
    pub protocol: Protocol,
}

fn is_levelcode(protocol: &Protocol) -> bool {
    protocol.is_levelcode()
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
            http_status: None,
            duration_ms: 0.0,
            stdout: String::new(),
            stderr: String::new(),
            stdout_truncated: false,
            stderr_truncated: false,
            message: None,
            rewrote_input: false,
            reason: None,
            protocol: Protocol::LEVELCODE,
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
            asks: Vec::new(),
            updated_input: None,
            stop: None,
            system_messages: Vec::new(),
            session_env: None,
            handlers: Vec::new(),
            warnings: Vec::new(),
            started,
            interrupted: None,
            project_trust: None,
            depends_on_input: false,
            background: Vec::new(),
            handed_on: false,
            background_pending: false,
        }
    }

    /// Adds what a handler wrote to its session environment file, on a line of its own.
    pub fn add_session_env(&mut self, text: &str) {
        let env = self.session_env.get_or_insert_with(String::new);
        if !env.is_empty() && !env.ends_with('\n') {
            env.push('\n');
        }
        env.push_str(text);
    }

    pub fn blocked(&self) -> bool {
        self.reason.is_some()
    }

    /// `block`, else `ask` when a handler asked for approval, else `proceed`.
    pub fn decision(&self) -> &'static str {
        if self.blocked() {
            "block"
        } else if !self.asks.is_empty() {
            "ask"
        } else {
            "proceed"
        }
    }

    /// The reason of the decision: the block's, or the asks' joined with `\n`.
    pub fn decision_reason(&self) -> Option<String> {
        match &self.reason {
            Some(reason) => Some(reason.clone()),
            None if !self.asks.is_empty() => Some(self.asks.join("\n")),
            None => None,
        }
    }

    /// The exit status for this result: a signal wins, then a block, then an ask, which exits
    /// 2 as a block does so that a caller knowing only block and proceed stays on the safe side.
    pub fn status(&self) -> Status {
        match (self.interrupted, self.decision()) {
            (Some(sig), _) => Status::Signal(sig),
            (None, "block") => Status::Block,
            (None, "ask") => Status::Ask,
            (None, _) => Status::Proceed,
        }
    }

    /// The JSON line for `mode`, without its newline.
    pub fn to_json(&self, mode: OutputMode) -> String {
        self.render(mode, self.interrupted)
    }

    /// The JSON line, saying `"interrupted":true` when `interrupted` holds a signal.
    fn render(&self, mode: OutputMode, interrupted: Option<i32>) -> String {
        let context = self.additional_context.join("\n");
        let decision = self.decision();
        let reason = self.decision_reason();
        // A block stands: the input it was about is not to be run, rewritten or not.
        let updated_input = self.updated_input.as_ref().filter(|_| !self.blocked());
        let stop = self.stop.as_deref().map(|reason| StopJson { reason });
        let system_message = self.system_messages.join("\n");
        let system_message = Some(system_message.as_str()).filter(|m| !m.is_empty());
        let result = match mode {
            OutputMode::Full => serde_json::to_string(&Full {
                event: self.event.as_deref(),
                tool_name: self.tool_name.as_deref(),
                decision,
                reason: reason.as_deref(),
                additional_context: Some(context.as_str()).filter(|c| !c.is_empty()),
                updated_input,
                stop,
                system_message,
                session_env: self.session_env.as_deref(),
                background: &self.background,
                handlers: &self.handlers,
                warnings: &self.warnings,
                duration_ms: millis(self.started.elapsed()),
                interrupted: interrupted.map(|_| true),
                project_trust: self.project_trust.as_ref(),
            }),
            OutputMode::Compact => serde_json::to_string(&Compact {
                decision,
                reason: reason.as_deref(),
                additional_context: Some(context.as_str()).filter(|c| !c.is_empty()),
                updated_input,
                stop,
                system_message,
                interrupted: interrupted.map(|_| true),
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
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_input: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop: Option<StopJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_env: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    background: &'a [crate::dispatch::background::record::Ended],
    handlers: &'a [HandlerReport],
    warnings: &'a [String],
    duration_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    interrupted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    project_trust: Option<&'a crate::trust::ProjectTrust>,
}

#[derive(Serialize)]
struct Compact<'a> {
    decision: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(rename = "additionalContext", skip_serializing_if = "Option::is_none")]
    additional_context: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_input: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop: Option<StopJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    interrupted: Option<bool>,
}

#[derive(Serialize)]
struct StopJson<'a> {
    reason: &'a str,
}

/// Milliseconds with two decimals.
pub fn millis(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 100_000.0).round() / 100.0
}

pub fn error_json(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

/// Prints a result and returns its exit status. On a block the reason also goes to stderr.
///
/// A signal can land where nothing looks for one: while the settings load and no handler is
/// left to run, or after the last handler. The caller still asked the dispatcher to stop, so
/// such a signal counts as an interruption too (`"interrupted":true`, exit 128+N).
pub fn print_report(report: &Report, mode: OutputMode, trace: &Trace) -> anyhow::Result<ExitCode> {
    print_report_shown(report, mode, trace, |line| std::borrow::Cow::Borrowed(line))
}

/// [`print_report`] with the line passed through `shown` first: the same JSON written another
/// way, for a person's terminal (`levelcode-hooks test` escapes invisible characters).
pub fn print_report_shown(
    report: &Report,
    mode: OutputMode,
    trace: &Trace,
    shown: impl for<'a> Fn(&'a str) -> std::borrow::Cow<'a, str>,
) -> anyhow::Result<ExitCode> {
    let interrupted = report.interrupted.or_else(signals::received);
    let status = match interrupted {
        Some(sig) => Status::Signal(sig),
        None => report.status(),
    };
    trace.summary(report);
    if let (Status::Block | Status::Ask, Some(reason)) = (status, report.decision_reason()) {
        // The reason on stderr is for a program that reads it (the handler protocol); a person
        // at a terminal reading the trace has it there already, under the handler that gave it.
        if !(trace.enabled() && std::io::stderr().is_terminal()) {
            eprintln!("{reason}");
        }
    }
    write_line(&shown(&report.render(mode, interrupted)))?;
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

/// The readable trace of `-v` on stderr: what was loaded, one line per handler with its outcome,
/// exit code and time, the reason of a block, the warnings and the decision. Colors only when
/// stderr is a terminal, and never with `NO_COLOR` ([`crate::style`]).
pub struct Trace {
    enabled: bool,
    painter: Painter,
    /// For [`Trace::held`]: the text written so far, not yet on stderr.
    held: Option<std::cell::RefCell<String>>,
}

/// Lines of a block reason or of stderr shown under a handler.
const DETAIL_LINES: usize = 5;

impl Trace {
    pub fn new(enabled: bool) -> Trace {
        let color = enabled && style::colors_wanted(&std::io::stderr());
        Trace {
            enabled,
            painter: Painter::new(color),
            held: None,
        }
    }

    /// A trace that keeps its text until [`Trace::release`], so that the traces of requests
    /// dispatched at the same time (`serve`) reach stderr each in one piece.
    pub fn held(enabled: bool) -> Trace {
        Trace {
            held: enabled.then(Default::default),
            ..Trace::new(enabled)
        }
    }

    /// Writes what a [`Trace::held`] kept to stderr, at once.
    pub fn release(&self) {
        if let Some(held) = &self.held {
            let text = std::mem::take(&mut *held.borrow_mut());
            if !text.is_empty() {
                let _ = std::io::stderr().lock().write_all(text.as_bytes());
            }
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Writes `text` to stderr, or keeps it for later.
    fn emit(&self, text: fmt::Arguments<'_>) {
        match &self.held {
            Some(held) => {
                let _ = fmt::Write::write_fmt(&mut *held.borrow_mut(), text);
            }
            None => eprint!("{text}"),
        }
    }

    pub fn line(&self, args: fmt::Arguments<'_>) {
        if self.enabled {
            self.emit(format_args!("levelcode-hooks: {args}\n"));
        }
    }

    /// One line per handler: outcome, exit code, time, label and layer; below it the reason of
    /// a block, the message, and the first lines of stderr when the handler failed.
    pub fn handler(&self, entry: &HandlerReport) {
        if self.enabled {
            self.emit(format_args!("{}", self.handler_text(entry)));
        }
    }

    fn handler_text(&self, entry: &HandlerReport) -> String {
        use fmt::Write as _;
        let (style, word) = outcome_word(entry.outcome);
        let code = match (entry.exit_code, entry.signal, entry.http_status) {
            (Some(c), _, _) => format!("exit {c}"),
            (None, Some(s), _) => format!("signal {s}"),
            (None, None, Some(status)) => format!("http {status}"),
            _ => String::new(),
        };
        let time = match entry.outcome {
            Outcome::Duplicate | Outcome::Skipped => String::new(),
            _ => format!("{:.1} ms", entry.duration_ms),
        };
        let mut text = format!(
            "levelcode-hooks:   {:<11} {code:>8} {time:>10}  {}  {}\n",
            self.painter.paint(style, word),
            entry.label,
            self.painter.paint(
                Style::Dim,
                if entry.protocol.is_levelcode() {
                    format!("[{}]", entry.layer)
                } else {
                    format!("[{}, {}]", entry.layer, entry.protocol.name())
                }
            ),
        );
        let mut detail = |label: &str, body: &str, style: Style| {
            let mut lines = body.trim().lines();
            if let Some(first) = lines.next() {
                let _ = writeln!(
                    text,
                    "levelcode-hooks:       {} {first}",
                    self.painter.paint(style, label)
                );
            }
            let rest: Vec<&str> = lines.collect();
            for line in rest.iter().take(DETAIL_LINES - 1) {
                let _ = writeln!(text, "levelcode-hooks:         {line}");
            }
            if rest.len() >= DETAIL_LINES {
                let _ = writeln!(
                    text,
                    "levelcode-hooks:         ({} more line(s))",
                    rest.len() - (DETAIL_LINES - 1)
                );
            }
        };
        if let Some(reason) = &entry.reason {
            detail("reason:", reason, Style::Bad);
        }
        if let Some(message) = &entry.message {
            detail("note:", message, Style::Dim);
        }
        if matches!(
            entry.outcome,
            Outcome::Error | Outcome::Timeout | Outcome::SpawnError | Outcome::Interrupted
        ) && !entry.stderr.trim().is_empty()
        {
            detail("stderr:", &entry.stderr, Style::Warn);
        }
        if entry.stdout_truncated || entry.stderr_truncated {
            detail(
                "note:",
                "output over 64 KiB was cut (stdout_truncated / stderr_truncated)",
                Style::Dim,
            );
        }
        text
    }

    /// The handlers not traced as they ran (those skipped after a block), the warnings, and the
    /// decision.
    pub fn summary(&self, report: &Report) {
        if self.enabled {
            self.emit(format_args!("{}", self.summary_text(report)));
        }
    }

    fn summary_text(&self, report: &Report) -> String {
        use fmt::Write as _;
        let mut text = String::new();
        for entry in report
            .handlers
            .iter()
            .filter(|h| h.outcome == Outcome::Skipped)
        {
            text.push_str(&self.handler_text(entry));
        }
        for warning in &report.warnings {
            let _ = writeln!(
                text,
                "levelcode-hooks: {} {warning}",
                self.painter.paint(Style::Warn, "warning:")
            );
        }
        let context = report.additional_context.join("\n");
        if !context.is_empty() {
            let _ = writeln!(
                text,
                "levelcode-hooks: additionalContext: {}",
                context.lines().next().unwrap_or("")
            );
        }
        let ran = report
            .handlers
            .iter()
            .filter(|h| !matches!(h.outcome, Outcome::Duplicate | Outcome::Skipped))
            .count();
        // A reason every line of which a handler's trace already gave is not said again.
        let traced = |reason: &str| {
            reason.lines().all(|line| {
                report
                    .handlers
                    .iter()
                    .any(|h| h.reason.as_deref().is_some_and(|r| r.contains(line.trim())))
            })
        };
        let decision = match (report.decision(), report.decision_reason()) {
            (word, Some(reason)) if traced(&reason) => self
                .painter
                .paint(
                    if word == "ask" {
                        Style::Warn
                    } else {
                        Style::Bad
                    },
                    word,
                )
                .to_string(),
            (word, Some(reason)) => format!(
                "{} ({})",
                self.painter.paint(
                    if word == "ask" {
                        Style::Warn
                    } else {
                        Style::Bad
                    },
                    word
                ),
                reason.lines().next().unwrap_or("")
            ),
            (word, None) => self.painter.paint(Style::Good, word).to_string(),
        };
        if let Some(stop) = &report.stop {
            let _ = writeln!(
                text,
                "levelcode-hooks: {} {}",
                self.painter.paint(Style::Bad, "stop:"),
                stop.lines().next().unwrap_or("")
            );
        }
        if report.updated_input.is_some() && !report.blocked() {
            let _ = writeln!(
                text,
                "levelcode-hooks: the tool input was rewritten (updated_input)"
            );
        }
        let _ = writeln!(
            text,
            "levelcode-hooks: decision {decision}; {} handler(s) matched, {ran} ran; {:.1} ms{}",
            report.handlers.len(),
            millis(report.started.elapsed()),
            if report.interrupted.is_some() {
                "; interrupted"
            } else {
                ""
            }
        );
        text
    }
}

fn outcome_word(outcome: Outcome) -> (Style, &'static str) {
    match outcome {
        Outcome::Proceed => (Style::Good, "proceed"),
        Outcome::Block => (Style::Bad, "BLOCK"),
        Outcome::Error => (Style::Warn, "error"),
        Outcome::Timeout => (Style::Warn, "timeout"),
        Outcome::SpawnError => (Style::Warn, "spawn_error"),
        Outcome::Duplicate => (Style::Dim, "duplicate"),
        Outcome::Skipped => (Style::Dim, "skipped"),
        Outcome::Interrupted => (Style::Warn, "interrupted"),
        Outcome::Ask => (Style::Warn, "ask"),
        Outcome::Stop => (Style::Bad, "STOP"),
        Outcome::Started => (Style::Dim, "started"),
    }
}

/// Writes to stdout; a reader that went away is no error.
pub fn write_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_output_omits_what_the_contract_omits() {
        let report = Report::new(Some("Stop".into()), None, Instant::now());
        let text = report.to_json(OutputMode::Full);
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json.as_object().unwrap().len(), 5, "{text}");
        // The keys in the contract's order.
        let at = |key: &str| text.find(&format!("\"{key}\":")).unwrap();
        let order = ["event", "decision", "handlers", "warnings", "duration_ms"].map(at);
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
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

    fn entry(
        outcome: Outcome,
        exit_code: Option<i32>,
        stdout: &str,
        stderr: &str,
    ) -> HandlerReport {
        HandlerReport {
            layer: "project",
            source: "/p/.levelcode/settings.json".into(),
            event: "PreToolUse".into(),
            matcher: None,
            label: "guard".into(),
            outcome,
            exit_code,
            signal: None,
            http_status: None,
            duration_ms: 4.25,
            stdout: stdout.into(),
            stderr: stderr.into(),
            stdout_truncated: false,
            stderr_truncated: false,
            message: None,
            rewrote_input: false,
            reason: None,
            protocol: Protocol::LEVELCODE,
        }
    }

    /// The entry of a `PreToolUse` handler of `protocol` that replied `code`, `stdout` and
    /// `stderr`, judged by that protocol as the chain judges it.
    fn judged(protocol: &str, code: i32, stdout: &str, stderr: &str) -> HandlerReport {
        use crate::dispatch::outcome::Reply;
        use crate::dispatch::protocol::Context;
        let context = Context {
            kind: crate::settings::events::EventKind::PreToolUse,
            event: "PreToolUse",
            label: "guard",
            rewrite: None,
        };
        let protocol = Protocol::parse(protocol).unwrap();
        let judgement = protocol.rules().judge(
            Reply {
                code,
                stdout,
                stderr,
            },
            &context,
        );
        let mut entry = entry(judgement.outcome, Some(code), stdout, stderr);
        entry.protocol = protocol;
        entry.reason = judgement.reason.or(judgement.stop);
        entry
    }

    /// The reason the trace shows for `entry`.
    fn traced_reason(entry: &HandlerReport) -> String {
        let trace = Trace {
            enabled: true,
            painter: Painter::new(false),
            held: None,
        };
        let text = trace.handler_text(entry);
        let line = text
            .lines()
            .find(|l| l.contains("reason: "))
            .unwrap_or_else(|| panic!("no reason in {text}"));
        line.split_once("reason: ").unwrap().1.to_string()
    }

    #[test]
    fn trace_gives_the_reason_the_protocol_gives() {
        let exit2 = judged("levelcode", 2, r#"{"reason":"json"}"#, " from stderr \n");
        assert_eq!(traced_reason(&exit2), "from stderr");
        let exit2_quiet = judged("levelcode", 2, r#"{"reason":"json"}"#, "");
        assert_eq!(traced_reason(&exit2_quiet), "json");
        // A JSON decision on exit 0 gives its own reason, whatever stderr says.
        let json = judged(
            "levelcode",
            0,
            r#"{"decision":"block","reason":"json"}"#,
            "noise",
        );
        assert_eq!(traced_reason(&json), "json");
        let bare = judged("levelcode", 2, "", "");
        assert_eq!(traced_reason(&bare), "blocked by PreToolUse hook: guard");
        let claude = judged(
            "claude",
            0,
            r#"{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"no .env"}}"#,
            "",
        );
        assert_eq!(traced_reason(&claude), "no .env");
        let ask = judged("levelcode", 0, r#"{"decision":"ask"}"#, "");
        assert_eq!(
            traced_reason(&ask),
            "approval asked by PreToolUse hook: guard"
        );
    }

    #[test]
    fn trace_gives_the_reason_the_decision_used_not_one_of_its_own() {
        // Claude Code reads only stderr on exit 2: with none, the decision uses the default
        // reason, however stdout reads.
        let claude = judged("claude", 2, r#"{"reason":"from stdout"}"#, "");
        assert_eq!(claude.outcome, Outcome::Block);
        assert_eq!(traced_reason(&claude), "blocked by PreToolUse hook: guard");
        // A stop gives its stopReason, or the default one, not a `reason` beside it.
        let stop = judged("claude", 0, r#"{"continue":false,"reason":"other"}"#, "");
        assert_eq!(stop.outcome, Outcome::Stop);
        assert_eq!(traced_reason(&stop), "stopped by PreToolUse hook: guard");
    }

    #[test]
    fn trace_line_has_outcome_exit_time_and_details() {
        let trace = Trace {
            enabled: true,
            painter: Painter::new(false),
            held: None,
        };
        let text = trace.handler_text(&entry(Outcome::Error, Some(3), "", "boom\nsecond\n"));
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].contains("error") && lines[0].contains("exit 3"),
            "{text}"
        );
        assert!(
            lines[0].contains("4.2 ms") || lines[0].contains("4.3 ms"),
            "{text}"
        );
        assert!(lines[1].ends_with("stderr: boom"), "{text}");
        assert!(lines[2].ends_with("second"), "{text}");
        let colored = Trace {
            enabled: true,
            painter: Painter::new(true),
            held: None,
        };
        let text = colored.handler_text(&entry(Outcome::Block, Some(2), "", "no"));
        assert!(text.contains("\x1b[1m\x1b[31mBLOCK"), "{text}");
    }

    #[test]
    fn a_held_trace_keeps_its_text_until_released() {
        let trace = Trace::held(true);
        trace.line(format_args!("request {}", 3));
        trace.handler(&entry(Outcome::Proceed, Some(0), "", ""));
        let held = trace.held.as_ref().unwrap().borrow().clone();
        assert!(held.starts_with("levelcode-hooks: request 3\n"), "{held}");
        assert_eq!(held.lines().count(), 2, "{held}");
        trace.release();
        assert!(trace.held.as_ref().unwrap().borrow().is_empty());
        assert!(
            Trace::held(false).held.is_none(),
            "nothing is kept when tracing is off"
        );
    }
}
