//! One background handler from its start to its record (contract §21): what a dispatch hands
//! the process that keeps it (a [`Spec`]), the run by the same runner as any handler (its
//! timeout, its own process group), what it came to ([`Ended`]), and where that goes: the
//! execution log, the OpenTelemetry export, and the session's next dispatch.
//!
//! In `run` a supervisor, this executable started again as its hidden `background` command,
//! reads the spec on stdin in a session of its own and outlives its dispatcher; in `serve` it
//! answers the server on its stdout instead of the spool; `test` runs the spec in its own
//! process and waits for it.

use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::process;
use super::record::Ended;
use super::spool::{Holder, Slot, Spool};
use crate::dispatch::action::{self, Answer, Done, Ending, Stop};
use crate::dispatch::confine::Confine;
use crate::dispatch::exec_log;
use crate::dispatch::outcome::{self, Judgement, Outcome};
use crate::dispatch::output::{HandlerReport, Report};
use crate::dispatch::protocol::Context;
use crate::runner::confine::{self, Rules};
use crate::runner::Program;
use crate::settings::events::EventKind;
use crate::settings::protocol::Protocol;
use crate::settings::Action;
use crate::signals;

/// The most a spec may be: the largest payload, and room for the rest.
const MAX_SPEC: u64 = crate::dispatch::payload::MAX_BYTES as u64 + (1 << 20);

/// Everything a background handler's run needs, as its dispatch hands it over.
#[derive(Debug, Serialize, Deserialize)]
pub struct Spec {
    pub program: Form,
    pub dir: PathBuf,
    /// Its variables beyond those it inherits, and those it must not inherit.
    pub env: Vec<(String, String)>,
    pub unset: Vec<String>,
    pub timeout_ms: u64,
    /// What it reads on stdin: the payload, as its protocol gives it (always JSON, so text).
    pub input: String,
    pub protocol: String,
    /// Its entry as its dispatch reported it (label, layer, source, event, tool, matcher); the
    /// rest is filled in when it ends.
    pub handler: Ended,
    /// Its span, when the dispatch is exported (contract §18).
    pub span: Option<crate::telemetry::Detached>,
    /// Its sandbox's rules (contract §20), prepared again here and applied to the handler alone.
    pub sandbox: Option<Rules>,
    pub delivery: Delivery,
}

/// Where a background handler's result waits for the session's next dispatch.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// The session's spool (`run`): its folder, the handler's place there
    /// (`spool::Spool::reserve`), and, for a supervisor started by `exec`, the descriptor
    /// that holds that place.
    Spool {
        dir: PathBuf,
        place: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fd: Option<i32>,
    },
    /// One JSON line on the supervisor's stdout, which the server reads (`serve`) and
    /// acknowledges with a line on the supervisor's stdin once it keeps it; without that (the
    /// server ended first), the result goes to the session's spool in `spool`, for whichever
    /// dispatch of the session comes next.
    Answer {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spool: Option<PathBuf>,
    },
    /// Nowhere: the session has ended (`SessionEnd`), or `test` hands it on itself.
    Nowhere,
}

/// A [`Program`] as a spec writes it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "form", rename_all = "snake_case")]
pub enum Form {
    Shell { command: String },
    PowerShell { command: String },
    Argv { argv: Vec<String> },
    Exec { program: String, args: Vec<String> },
}

impl From<&Program> for Form {
    fn from(program: &Program) -> Form {
        match program.clone() {
            Program::Shell(command) => Form::Shell { command },
            Program::PowerShell(command) => Form::PowerShell { command },
            Program::Argv(argv) => Form::Argv { argv },
            Program::Exec { program, args } => Form::Exec { program, args },
        }
    }
}

impl From<Form> for Program {
    fn from(form: Form) -> Program {
        match form {
            Form::Shell { command } => Program::Shell(command),
            Form::PowerShell { command } => Program::PowerShell(command),
            Form::Argv { argv } => Program::Argv(argv),
            Form::Exec { program, args } => Program::Exec { program, args },
        }
    }
}

/// The hidden `background` command: reads a spec on stdin, runs its handler, records the end.
/// Started by a dispatch, never by a person; its stdout and stderr go nowhere anyone waits.
pub fn supervise() -> anyhow::Result<ExitCode> {
    // The spec is one line; in `serve` the same pipe later brings the server's acknowledgement.
    let mut input = std::io::stdin().lock();
    let mut text = Vec::new();
    (&mut input).take(MAX_SPEC).read_until(b'\n', &mut text)?;
    let spec: Spec = serde_json::from_slice(&text)?;
    drop(text);
    // Started apart (`process::spawn_detached`, already at a lower priority) in `run`; in
    // `serve` it stays in the server's session, which keeps it.
    process::lower_priority();
    // The place it holds among the session's handlers (`Spool::reserve`) is its descriptor 3.
    let slot = match spec.delivery {
        #[cfg(unix)]
        Delivery::Spool {
            place,
            fd: Some(fd),
            ..
        } => Slot::inherited(fd, place),
        _ => None,
    };
    #[cfg(unix)]
    process::close_inherited(slot.as_ref().map(Slot::fd));
    #[cfg(not(unix))]
    process::close_inherited(None);
    signals::install();
    let ended = keep(&spec, slot.as_ref());
    if let Delivery::Answer { spool } = &spec.delivery {
        if !answered(&ended, &mut std::io::stdout().lock(), &mut input) {
            // The server ended, and made the session's spool for what it left (`memory::spill`):
            // the session's next dispatch, wherever it runs, hands it on. No spool: the session
            // ended meanwhile (`SessionEnd`), or the server was killed before it could say.
            if let Some(dir) = spool {
                Spool::at(dir.clone()).give(&ended);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Gives `ended` to the server on `output` (stdout); returns true if and only if the server
/// said on `input` that it keeps it.
fn answered(ended: &Ended, output: &mut impl Write, input: &mut impl Read) -> bool {
    let Ok(mut line) = serde_json::to_vec(ended) else {
        return false;
    };
    line.push(b'\n');
    if output
        .write_all(&line)
        .and_then(|()| output.flush())
        .is_err()
    {
        return false;
    }
    // A signal (SessionEnd's SIGTERM, a Ctrl-C) while it waits is no answer: the server may
    // still keep the result, and giving it to the spool as well would hand it on twice.
    let mut ack = [0u8; 1];
    loop {
        match input.read(&mut ack) {
            Ok(n) => return n == 1,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// What a supervisor does, whichever way it was started: says in its place (`slot`, in `run`)
/// that it keeps the handler, runs it, and records its end where it goes (the spool, the
/// execution log, the export). Returns the end.
pub fn keep(spec: &Spec, slot: Option<&Slot>) -> Ended {
    let spool = match (&spec.delivery, slot) {
        (Delivery::Spool { dir, .. }, Some(slot)) => Some((Spool::at(dir.clone()), slot)),
        _ => None,
    };
    let me = std::process::id();
    let supervisor = Some((me, process::start_time(me)));
    // Its place first, so that a dispatch that ends the session can stop it. A session that
    // ended by now (`SessionEnd`) before its handler could start: it does not.
    if let Some((_, slot)) = &spool {
        if !slot.note(&Holder {
            supervisor,
            handler: None,
        }) {
            let done = Done::not_started(
                "not run: its session ended (SessionEnd) before it could start".into(),
            );
            let (ended, entry) = conclude(spec, done, Duration::from_millis(spec.timeout_ms));
            record(spec, &ended, entry, &mut Vec::new());
            return ended;
        }
    }
    // The handler's pid goes into its place once it runs, so that a later dispatch can stop
    // it should this process be gone (`SessionEnd`). Should the session have ended before that
    // was written, this process stops it itself, as the dispatch that ended it would have.
    let started = |pid: Option<u32>| {
        if let (Some((_, slot)), Some(pid)) = (&spool, pid) {
            let handler = Some((pid, process::start_time(pid)));
            if !slot.note(&Holder {
                supervisor,
                handler,
            }) {
                process::signal_same(me, supervisor.and_then(|(_, start)| start), process::TERM);
            }
        }
    };
    let (mut ended, entry) = run(spec, &started);
    let mut warnings = Vec::new();
    if let Some((spool, slot)) = &spool {
        spool.finish(slot, &mut ended);
    }
    record(spec, &ended, entry, &mut warnings);
    ended
}

/// A handler whose supervisor could not be started, for `why`: its failure recorded where its
/// end would have been, so that the session's next dispatch says so.
pub fn not_started(spec: &Spec, why: String) {
    let (ended, entry) = conclude(
        spec,
        Done::not_started(why),
        Duration::from_millis(spec.timeout_ms),
    );
    if let Delivery::Spool { dir, .. } = &spec.delivery {
        Spool::at(dir.clone()).give(&ended);
    }
    record(spec, &ended, entry, &mut Vec::new());
}

/// Runs the spec's handler to its end: what it came to, and its entry as the execution log and
/// the spans show it. `started` is called once it is under way.
pub fn run(spec: &Spec, started: &dyn Fn(Option<u32>)) -> (Ended, HandlerReport) {
    let action = Action::Process(Program::from(spec.program.clone()));
    let env: Vec<(&str, String)> = spec
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    let unset: Vec<&str> = spec.unset.iter().map(String::as_str).collect();
    let timeout = Duration::from_millis(spec.timeout_ms);
    // The dispatch could prepare these rules; should this process not, the handler is refused,
    // never run with fewer restrictions.
    let prepared = spec.sandbox.as_ref().map(confine::prepare);
    let confined = match &prepared {
        None => Confine::None,
        Some(Ok(prepared)) => Confine::In(prepared),
        Some(Err(why)) => {
            Confine::Refused(format!("not run: its sandbox cannot be enforced: {why}"))
        }
    };
    let done = action::perform(
        &action,
        &spec.dir,
        spec.input.as_bytes(),
        timeout,
        action::Environment {
            set: &env,
            unset: &unset,
        },
        confined,
        started,
    );
    conclude(spec, done, timeout)
}

/// What a run that ended as `done` came to, and its entry.
fn conclude(spec: &Spec, done: Done, timeout: Duration) -> (Ended, HandlerReport) {
    let handler = &spec.handler;
    let protocol = Protocol::parse(&spec.protocol).unwrap_or(Protocol::LEVELCODE);
    let context = Context {
        kind: EventKind::of(&handler.event),
        event: &handler.event,
        label: &handler.label,
        rewrite: None,
    };
    let judgement = outcome::judge(&done, timeout, |reply| {
        protocol.rules().judge(reply, &context)
    });
    let ended = ended(handler.clone(), &done, judgement, timeout);
    let entry = entry(&ended, protocol, done);
    (ended, entry)
}

/// What a run came to, from how it ended and what that means.
fn ended(mut ended: Ended, done: &Done, judgement: Judgement, timeout: Duration) -> Ended {
    ended.outcome = judgement.outcome.name().to_string();
    ended.duration_ms = crate::dispatch::output::millis(done.duration);
    let codes = done.codes();
    ended.exit_code = codes.exit_code;
    ended.signal = codes.signal;
    ended.context = judgement.context;
    ended.system_message = judgement.system_message;
    let decided = match judgement.outcome {
        Outcome::Block | Outcome::Ask | Outcome::Stop => Some(judgement.outcome.name()),
        _ => None,
    };
    let failure = match judgement.outcome {
        Outcome::Error | Outcome::Timeout | Outcome::SpawnError | Outcome::Interrupted => {
            Some(failure(done, judgement.message.as_deref(), timeout))
        }
        // An exit 2 is a failure to anyone who reads its result later: nothing waited for it.
        Outcome::Block | Outcome::Ask | Outcome::Stop if ended.exit_code != Some(0) => {
            Some(format!(
                "exit {}: it would have blocked, but a background handler cannot",
                ended.exit_code.unwrap_or(2)
            ))
        }
        _ => None,
    };
    // A failure's own words: the judgement's speak of a tool call that waited for it.
    ended.message = match (&failure, decided) {
        (Some(what), _) => Some(what.clone()),
        (None, Some(decision)) => Some(format!(
            "{}it replied {decision}, which a background handler cannot do: its dispatch had answered",
            judgement.message.map(|m| format!("{m}; ")).unwrap_or_default()
        )),
        (None, None) => judgement.message,
    };
    let problem = failure
        .map(|what| format!("{what}{}", output_tail(done)))
        .or(judgement.warning);
    ended.warning = problem.map(|what| {
        format!(
            "background {} hook {} ({}): {what}",
            ended.event, ended.label, ended.source
        )
    });
    ended.bounded()
}

/// How a run failed, in a few words.
fn failure(done: &Done, message: Option<&str>, timeout: Duration) -> String {
    match (&done.stopped, &done.ending) {
        (Some(Stop::Timeout), _) => format!(
            "timed out after {} s; its process group was stopped",
            timeout.as_secs_f64()
        ),
        (Some(Stop::Interrupted(sig)), _) => format!(
            "stopped before it ended: its supervisor received {}",
            signals::name(*sig)
        ),
        (None, Ending::Answered(Answer::Exit(code))) => format!("failed: exit {code}"),
        (None, Ending::Signaled(sig)) => {
            format!("killed by signal {sig} ({})", signals::name(*sig))
        }
        (None, Ending::NotStarted(why)) => format!("could not start: {why}"),
        (None, Ending::Missing(why) | Ending::NotConfined(why) | Ending::Failed(why)) => {
            why.clone()
        }
        (
            None,
            Ending::Answered(Answer::Status(_))
            | Ending::NotRunnable(_)
            | Ending::Lost
            | Ending::Unkillable,
        ) => message.unwrap_or("failed").to_string(),
    }
}

/// The last lines a failed run printed, for its warning: stderr's, else stdout's (test runners
/// write their failures there).
fn output_tail(done: &Done) -> String {
    let (name, text) = if done.stderr.trim().is_empty() {
        ("output", done.stdout.as_str())
    } else {
        ("stderr", done.stderr.as_str())
    };
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    let mut tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    if tail.len() > 1024 {
        let mut start = tail.len() - 1024;
        while !tail.is_char_boundary(start) {
            start += 1;
        }
        tail = format!("…{}", &tail[start..]);
    }
    format!("; {name}: {tail}")
}

/// The run's entry as the execution log and the spans show it.
fn entry(ended: &Ended, protocol: Protocol, done: Done) -> HandlerReport {
    HandlerReport {
        // A layer's name is one of a few words; this process records one handler and ends.
        layer: Box::leak(ended.layer.clone().into_boxed_str()),
        source: ended.source.clone(),
        event: ended.event.clone(),
        matcher: ended.matcher.clone(),
        label: ended.label.clone(),
        outcome: outcome_named(&ended.outcome),
        exit_code: ended.exit_code,
        signal: ended.signal,
        http_status: None,
        duration_ms: ended.duration_ms,
        stdout: done.stdout,
        stderr: done.stderr,
        stdout_truncated: done.stdout_truncated,
        stderr_truncated: done.stderr_truncated,
        message: ended.message.clone(),
        rewrote_input: false,
        reason: None,
        protocol,
    }
}

/// The outcome a name stands for; an outcome of the record is always one of them.
fn outcome_named(name: &str) -> Outcome {
    [
        Outcome::Proceed,
        Outcome::Block,
        Outcome::Error,
        Outcome::Timeout,
        Outcome::SpawnError,
        Outcome::Interrupted,
        Outcome::Ask,
        Outcome::Stop,
    ]
    .into_iter()
    .find(|o| o.name() == name)
    .unwrap_or(Outcome::Error)
}

/// Records a run that ended where a person looks: the execution log's line and the span.
pub fn record(spec: &Spec, ended: &Ended, entry: HandlerReport, warnings: &mut Vec<String>) {
    if let Some(span) = &spec.span {
        crate::dispatch::spans::background(&entry, ended.tool_name.as_deref(), span, warnings);
    }
    let started = Instant::now()
        .checked_sub(Duration::from_secs_f64(entry.duration_ms.max(0.0) / 1000.0))
        .unwrap_or_else(Instant::now);
    let mut report = Report::new(Some(ended.event.clone()), ended.tool_name.clone(), started);
    report.handlers.push(entry);
    report.warnings.extend(ended.warning.iter().cloned());
    report.warnings.append(warnings);
    exec_log::append_background(&mut report, &spec.dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads as a pipe does whose reader is signalled while it waits: first `EINTR`, then what
    /// it holds.
    struct Interrupted<'a>(bool, &'a [u8]);

    impl Read for Interrupted<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if std::mem::replace(&mut self.0, false) {
                return Err(std::io::ErrorKind::Interrupted.into());
            }
            self.1.read(buf)
        }
    }

    #[test]
    fn a_signal_while_the_server_is_waited_for_is_no_answer() {
        let ended = Ended::default();
        let mut line = Vec::new();
        assert!(answered(&ended, &mut line, &mut Interrupted(true, b"\n")));
        assert_eq!(line.last(), Some(&b'\n'));
        assert!(serde_json::from_slice::<Ended>(&line).is_ok());
        // The server gone (end of its pipe): not kept, whether a signal came first or not.
        assert!(!answered(
            &ended,
            &mut Vec::new(),
            &mut Interrupted(true, b"")
        ));
        assert!(!answered(
            &ended,
            &mut Vec::new(),
            &mut Interrupted(false, b"")
        ));
    }
}
