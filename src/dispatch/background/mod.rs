//! Background handlers (`"async": true`, contract §21): a handler the chain does not wait for.
//! The chain defers it where it stands ([`Deferred`]); once the synchronous handlers have
//! decided, and only when the dispatch does not block, [`start`] hands each to a supervisor
//! (`supervise`) and its entry says `started`; the dispatch answers at once. What it comes to is
//! recorded in the execution log and the export when it ends, and [`hand_on`] gives it to the
//! agent with the answer of the session's next dispatch (`session`), once: from the session's
//! spool in `run` (`spool`), from the server's memory and the spool in `serve` (`memory`; what
//! a server could not hand on before it ended waits in the spool). `test` waits for
//! it and hands it on in its own answer. `process` holds what other processes see of them.

#[cfg(target_os = "linux")]
mod handover;
mod memory;
pub mod process;
pub mod record;
mod session;
mod spool;
mod supervise;

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::dispatch::outcome::Outcome;
use crate::dispatch::output::{Report, Trace};
use crate::dispatch::payload::Payload;
use crate::runner::confine::Rules;
use crate::settings::events::EventKind;
use crate::settings::layers::LayerKind;
use crate::settings::Action;
use record::Ended;
use session::Session;
use spool::{Spool, MAX_RUNNING};
use supervise::{Delivery, Form, Spec};

pub use memory::keep as keep_in_memory;
pub use memory::spill;
pub use supervise::supervise;

/// `test` waits for each background handler and hands its result on in its own answer.
static WAITED: AtomicBool = AtomicBool::new(false);

/// From now on a background handler is waited for (`test`).
pub fn wait_in_place() {
    WAITED.store(true, Ordering::Relaxed);
}

/// Whether each handler started: its entry's place, and why not, with the outcome it gets.
type Started = Vec<(usize, Result<(), (Outcome, String)>)>;

/// A background handler's run that the chain reached: started once the chain has decided.
pub struct Deferred<'a> {
    /// Its entry's place in the report.
    pub entry: usize,
    pub action: &'a Action,
    pub timeout: Duration,
    /// Its stdin: the payload as its protocol gives it, with the input as rewritten so far.
    pub input: Vec<u8>,
    /// Its layer, for the variables it gets.
    pub layer: LayerKind,
    /// Its sandbox's rules (contract §20), which its supervisor prepares again.
    pub sandbox: Option<Rules>,
}

/// Starts the background handlers the chain deferred, unless the dispatch blocked or was
/// interrupted; each entry says what became of it.
pub fn start(
    deferred: Vec<Deferred<'_>>,
    payload: &Payload,
    root: &Path,
    dir: &Path,
    report: &mut Report,
    trace: &Trace,
) {
    if deferred.is_empty() {
        return;
    }
    let held = if report.blocked() {
        Some("not started: the dispatch blocked".to_string())
    } else {
        report.interrupted.map(|sig| {
            format!(
                "not started: the dispatcher received {}",
                crate::signals::name(sig)
            )
        })
    };
    // A session that ends keeps nothing for a next dispatch: what its handlers come to is
    // recorded only.
    let session = match payload.kind {
        EventKind::SessionEnd => Ok(None),
        _ => Session::of(payload.session_id.as_deref(), root).map(Some),
    };
    let held = held.or_else(|| session.as_ref().err().cloned());
    if let Err(warning) = &session {
        report.warnings.push(warning.clone());
    }
    let session = match (held, session) {
        (Some(why), _) | (None, Err(why)) => {
            for d in &deferred {
                set(report, d.entry, Outcome::Skipped, why.clone());
            }
            return;
        }
        (None, Ok(session)) => session,
    };
    let waited = WAITED.load(Ordering::Relaxed);
    // In `run`, the session's spool, locked while its handlers are counted and recorded.
    let spool = match (&session, waited || memory::kept()) {
        (Some(session), false) => match Spool::of(session) {
            Some(spool) => Some(spool),
            None => {
                let why = "not started: with neither LEVELCODE_DIR nor HOME set there is no data directory for its result";
                for d in &deferred {
                    set(report, d.entry, Outcome::Skipped, why.into());
                }
                report.warnings.push(format!("background handlers {why}"));
                return;
            }
        },
        _ => None,
    };
    let locked = match spool.as_ref().map(|s| s.lock(true)) {
        Some(Err(warning)) => {
            for d in &deferred {
                set(
                    report,
                    d.entry,
                    Outcome::Skipped,
                    format!("not started: {warning}"),
                );
            }
            report.warnings.push(warning);
            return;
        }
        Some(Ok(locked)) => locked,
        None => None,
    };
    // What waits for the session goes with this answer, taken before its own handlers start,
    // so that none of theirs is handed on with the answer that started it.
    if !waited {
        let taken = match (&locked, &session) {
            (Some(locked), _) => Some(locked.take()),
            (None, Some(session)) if memory::kept() => {
                let spool =
                    Spool::of(session).filter(|spool| spool::any() && spool.holds_results());
                let (taken, dropped, _) = kept_take(session, false, spool.as_ref(), report);
                Some((taken, dropped))
            }
            _ => None,
        };
        if let Some((taken, dropped)) = taken {
            give(report, taken, dropped, 0);
            report.handed_on = true;
        }
    }
    let event = payload.event.clone();
    let mut specs = Vec::new();
    for d in deferred {
        let Action::Process(program) = d.action else {
            // Only a command runs in the background (`settings` reads `async` on no other).
            set(
                report,
                d.entry,
                Outcome::Error,
                "not started: only a command handler runs in the background".into(),
            );
            continue;
        };
        let (env, unset) = super::handler_env(payload, root, None, d.layer);
        let unset: Vec<String> = unset.into_iter().map(str::to_string).collect();
        let entry = &report.handlers[d.entry];
        let template = Ended {
            label: entry.label.clone(),
            layer: entry.layer.to_string(),
            source: entry.source.clone(),
            event: event.clone(),
            tool_name: payload.tool_name.clone(),
            matcher: entry.matcher.clone(),
            outcome: Outcome::Started.name().into(),
            ..Ended::default()
        };
        let protocol = entry.protocol.name().to_string();
        let mut env: Vec<(String, String)> =
            env.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let span = crate::telemetry::handler_started(d.entry).and_then(|(name, value)| {
            env.push((name.to_string(), value));
            crate::telemetry::detached(d.entry)
        });
        let spec = Spec {
            program: Form::from(program),
            dir: dir.to_path_buf(),
            env,
            unset,
            timeout_ms: u64::try_from(d.timeout.as_millis()).unwrap_or(u64::MAX),
            input: String::from_utf8_lossy(&d.input).into_owned(),
            protocol,
            handler: template,
            span,
            sandbox: d.sandbox,
            delivery: Delivery::Nowhere,
        };
        if waited {
            wait(spec, d.entry, report, trace);
        } else {
            specs.push((d.entry, spec));
        }
    }
    let full = format!(
        "not started: {MAX_RUNNING} background handlers of this session are running, the most there may be at once"
    );
    let started: Started = if memory::kept() {
        let key = session.as_ref().map(|s| s.key.as_str());
        specs
            .into_iter()
            .map(|(entry, mut spec)| {
                if let Some(session) = &session {
                    spec.delivery = Delivery::Answer {
                        spool: Spool::of(session).map(|spool| spool.dir().to_path_buf()),
                    };
                }
                let started = match memory::start(key, &spec) {
                    Ok(()) => Ok(()),
                    Err(memory::Refused::Full) => Err((Outcome::Skipped, full.clone())),
                    Err(memory::Refused::Spawn(why)) => Err((Outcome::SpawnError, why)),
                };
                (entry, started)
            })
            .collect()
    } else {
        detach_all(specs, spool.as_ref(), locked, &full)
    };
    for (entry, started) in started {
        match started {
            Ok(()) => {
                let note = if session.is_some() {
                    "started in the background (\"async\"): its result is handed on with the next answer of this session"
                } else {
                    "started in the background (\"async\"): the session has ended, so its result goes to the execution log and the export only"
                };
                set(report, entry, Outcome::Started, note.into());
            }
            Err((outcome, why)) => {
                let label = &report.handlers[entry].label;
                report
                    .warnings
                    .push(format!("background {event} hook {label}: {why}"));
                set(report, entry, outcome, why);
            }
        }
        // The trace's summary shows those skipped.
        if report.handlers[entry].outcome != Outcome::Skipped {
            trace.handler(&report.handlers[entry]);
        }
    }
}

/// `run`: each spec given its place among its session's handlers, where there is one, and kept
/// to be started once the answer is out ([`launch`]): the dispatch's caller waits for none of
/// it. Counting and taking a place happen here, under the spool's lock (`locked`), so that
/// the bound holds however many dispatches of the session run at once.
fn detach_all(
    specs: Vec<(usize, Spec)>,
    spool: Option<&Spool>,
    locked: Option<spool::Locked<'_>>,
    full: &str,
) -> Started {
    let mut started = Vec::new();
    let mut pending = Vec::new();
    for (entry, mut spec) in specs {
        let mut slot = None;
        if let Some(spool) = spool.filter(|_| locked.is_some()) {
            let held = match spool.reserve() {
                Ok(Some(held)) => held,
                Ok(None) => {
                    started.push((entry, Err((Outcome::Skipped, full.to_string()))));
                    continue;
                }
                Err(e) => {
                    let why = format!(
                        "not started: cannot take its place in {}: {e}",
                        spool.dir().display()
                    );
                    started.push((entry, Err((Outcome::SpawnError, why))));
                    continue;
                }
            };
            spec.delivery = Delivery::Spool {
                dir: spool.dir().to_path_buf(),
                place: held.place(),
                fd: None,
            };
            slot = Some(held);
        }
        pending.push(Pending { spec, slot });
        started.push((entry, Ok(())));
    }
    PENDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .append(&mut pending);
    started
}

/// A background handler the dispatch said it started, whose supervisor [`launch`] starts.
struct Pending {
    spec: Spec,
    /// Its place among its session's handlers, which its supervisor holds for its life.
    slot: Option<spool::Slot>,
}

/// What [`launch`] has to start.
static PENDING: std::sync::Mutex<Vec<Pending>> = std::sync::Mutex::new(Vec::new());

/// `run`, once its answer is written: starts the supervisor of each background handler the
/// dispatch said it started. `code` is the dispatch's exit status, when it may end here: then
/// on Linux the dispatcher's process ends with it at once and a new process goes on with the
/// handlers ([`process::continue_apart`]), keeping the last itself and forking a supervisor for
/// each other one, so that the caller waits for nothing, not even a copy of this process.
/// Otherwise each supervisor is a fork, or this executable started again when this process
/// runs more than one thread. A supervisor that cannot be started is a failure recorded where
/// its end would have been: the session's next answer says so.
pub fn launch(code: Option<u8>) {
    let pending = std::mem::take(
        &mut *PENDING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    if pending.is_empty() {
        return;
    }
    if let Some(sig) = crate::signals::received() {
        let why = format!(
            "not started: the dispatcher received {} before its supervisor could start",
            crate::signals::name(sig)
        );
        for Pending { spec, .. } in &pending {
            supervise::not_started(spec, why.clone());
        }
        return;
    }
    // No copy of this process shares a connection with another.
    crate::http::drop_connections();
    #[cfg(target_os = "linux")]
    if code.is_some_and(|code| process::continue_apart(code).is_ok()) {
        // The continuation: the dispatch has ended for its caller.
        start_each(pending, true);
        // SAFETY: _exit ends this process at once; the dispatcher's own work was done before
        // the hand-over, so nothing is left to flush or drop.
        unsafe { libc::_exit(0) }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = code;
    start_each(pending, false);
}

/// Starts a supervisor for each of `pending`, or, with `keep_last`, for each but the last,
/// which this process then keeps itself (it does not return). Each place goes with the process
/// that keeps its handler alone: a copy of a place's descriptor left in another supervisor
/// would hold it for that one's life.
fn start_each(mut pending: Vec<Pending>, keep_last: bool) {
    let count = pending.len();
    for at in 0..count {
        if keep_last && at + 1 == count {
            let Pending { spec, slot } = &pending[at];
            supervise::keep(spec, slot.as_ref());
            // SAFETY: as in `launch`: nothing is left to flush or drop.
            unsafe { libc::_exit(0) }
        }
        if let Err(e) = start_one(&mut pending, at) {
            supervise::not_started(
                &pending[at].spec,
                format!("could not start its supervisor: {e}"),
            );
        }
        // Its supervisor holds its place now, or it was not started.
        pending[at].slot = None;
    }
}

/// Starts the supervisor of `pending[at]`: a fork of this process when it runs one thread,
/// which keeps that handler's place and no other, else this executable started again by
/// `exec` and handed the spec.
#[cfg(target_os = "linux")]
fn start_one(pending: &mut [Pending], at: usize) -> std::io::Result<()> {
    match process::fork_apart() {
        Ok(None) => {
            for (other, p) in pending.iter_mut().enumerate() {
                if other != at {
                    p.slot = None;
                }
            }
            let Pending { spec, slot } = &pending[at];
            supervise::keep(spec, slot.as_ref());
            // SAFETY: _exit ends this process at once; nothing of the dispatcher's (its stdout
            // buffer, emptied before the fork) is flushed or dropped twice.
            unsafe { libc::_exit(0) }
        }
        Ok(Some(_)) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
            let Pending { spec, slot } = &mut pending[at];
            if let Delivery::Spool { fd, .. } = &mut spec.delivery {
                *fd = slot.as_ref().map(|_| 3);
            }
            let (_, stdin) = process::spawn_detached(slot.as_ref().map(spool::Slot::fd))?;
            write_spec(spec, stdin)
        }
        Err(e) => Err(e),
    }
}

/// Elsewhere std's `Command` starts it, in the dispatcher's session (docs/hooks.md).
#[cfg(not(target_os = "linux"))]
fn start_one(pending: &mut [Pending], at: usize) -> std::io::Result<()> {
    let mut child = process::spawn_supervisor(false)?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("no stdin"))?;
    write_spec(&pending[at].spec, stdin)
}

/// Writes `spec` to the pipe a supervisor reads it from, and closes it.
fn write_spec(spec: &Spec, mut stdin: impl Write) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(spec).map_err(std::io::Error::other)?;
    stdin.write_all(&bytes)
}

/// `test`: runs `spec` here and now, records it, and hands it on in this answer.
fn wait(spec: Spec, entry: usize, report: &mut Report, trace: &Trace) {
    let (ended, logged) = supervise::run(&spec, &|_| {});
    let mut warnings = Vec::new();
    supervise::record(&spec, &ended, logged, &mut warnings);
    report.warnings.append(&mut warnings);
    let note = format!(
        "ran in the background (\"async\"); levelcode-hooks test waited for it ({}): run and serve answer without waiting and hand its result on with the session's next answer",
        ended.outcome
    );
    set(report, entry, Outcome::Started, note);
    trace.handler(&report.handlers[entry]);
    hand(report, ended);
}

fn set(report: &mut Report, entry: usize, outcome: Outcome, message: String) {
    let entry = &mut report.handlers[entry];
    entry.outcome = outcome;
    entry.message = Some(match entry.message.take() {
        Some(m) => format!("{m}; {message}"),
        None => message,
    });
}

/// Hands on to `report` what the session's background handlers came to since its last
/// dispatch; a `SessionEnd` also stops those still running and ends the session's spool.
/// `holds`: the dispatch's answer is shown to no one (a client's probe), so nothing is taken.
///
/// In `serve` the answer also says whether the session still has handlers running or results
/// waiting in this server, or in its spool (`background_pending`; a server that ended may have
/// left handlers running there), so that a client answers none of the session's calls from
/// memory meanwhile: each must reach a server, which hands the result on.
pub fn hand_on(payload: &Payload, root: &Path, holds: bool, report: &mut Report) {
    if WAITED.load(Ordering::Relaxed) {
        return;
    }
    let kept = memory::kept();
    // One look at the folder of spools, which a data directory where no background handler
    // ever ran does not have; in `serve`, one at the server's memory too.
    let spools = spool::any();
    if !(spools || kept && memory::any()) {
        return;
    }
    let Ok(session) = Session::of(payload.session_id.as_deref(), root) else {
        return;
    };
    let ends = payload.kind == EventKind::SessionEnd;
    let spool = Spool::of(&session).filter(|_| spools);
    // Most dispatches find nothing waiting: no lock is taken for that.
    let mut waits = spool.as_ref().is_some_and(Spool::holds_results);
    if !holds && !report.handed_on {
        let spool = spool.as_ref().filter(|_| waits || ends);
        let taken = if kept {
            Some(kept_take(&session, ends, spool, report))
        } else {
            spool.and_then(|spool| spool_take(spool, ends, report))
        };
        waits = false;
        if let Some((taken, dropped, stopped)) = taken {
            give(report, taken, dropped, stopped);
        }
    }
    if kept {
        report.background_pending = waits
            || memory::pending(&session.key)
            || spool.as_ref().is_some_and(Spool::left_running);
    }
}

/// In `serve`: what waits for `session` in this server's memory, and in its `spool` when there
/// is something to look at there (what a `run` of the session, a server that ended, or a
/// supervisor that outlived its server left). `ends`: the session ends (`SessionEnd`), so what
/// still runs of it is stopped, and its spool removed. Returns the results, how many did not
/// fit and how many were stopped; says on `report` why the spool could not be read.
fn kept_take(
    session: &Session,
    ends: bool,
    spool: Option<&Spool>,
    report: &mut Report,
) -> (Vec<Ended>, usize, usize) {
    let (mut taken, mut dropped, mut stopped) = if ends {
        memory::end(&session.key)
    } else {
        let (taken, dropped) = memory::take(&session.key);
        (taken, dropped, 0)
    };
    if let Some((more, more_dropped, more_stopped)) =
        spool.and_then(|spool| spool_take(spool, ends, report))
    {
        taken.extend(more);
        dropped += more_dropped;
        stopped += more_stopped;
    }
    (taken, dropped, stopped)
}

/// What waits in `spool`, and, when its session `ends`, how many of its handlers still running
/// were stopped; `None` when it is not there (any longer) or cannot be read.
fn spool_take(
    spool: &Spool,
    ends: bool,
    report: &mut Report,
) -> Option<(Vec<Ended>, usize, usize)> {
    match spool.lock(false) {
        Ok(Some(locked)) if ends => Some(locked.end()),
        Ok(Some(locked)) => {
            let (taken, dropped) = locked.take();
            Some((taken, dropped, 0))
        }
        Ok(None) => None,
        Err(warning) => {
            report.warnings.push(warning);
            None
        }
    }
}

/// What was taken for the session: each result, and what did not fit or was stopped, said.
fn give(report: &mut Report, taken: Vec<Ended>, dropped: usize, stopped: usize) {
    for ended in taken {
        hand(report, ended);
    }
    if dropped > 0 {
        report.warnings.push(format!(
            "{dropped} background handler result(s) of this session did not fit in what is kept for it (at most {} results, {} KiB) and were not handed on; the execution log has them when LEVELCODE_HOOKS_LOG is set",
            spool::MAX_RESULTS,
            spool::MAX_BYTES >> 10
        ));
    }
    if stopped > 0 {
        report.warnings.push(format!(
            "the session ended: {stopped} background handler(s) still running were stopped"
        ));
    }
}

/// What one ended background handler gives this answer: its context and message for the
/// person, labelled with the handler, its failure as a warning, and its record.
fn hand(report: &mut Report, ended: Ended) {
    if let Some(context) = &ended.context {
        report.additional_context.push(ended.labelled(context));
    }
    if let Some(message) = &ended.system_message {
        report.system_messages.push(ended.labelled(message));
    }
    if let Some(warning) = &ended.warning {
        report.warnings.push(warning.clone());
    }
    report.background.push(ended);
}
