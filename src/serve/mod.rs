//! `levelcode-hooks serve`: one dispatcher for many events. Each line on stdin is one request (a
//! payload, plus an optional `id` and `options`); each gets exactly one line on stdout, as soon
//! as it is answered: what `run` prints for that payload, with the request's `id`.
//!
//! A request goes through the same dispatch as `run`; only the settings differ in where they come
//! from: [`cache`] keeps them between requests and reads them again whenever a layer changed.
//! [`lines`] cuts stdin into requests without ever keeping more than the payload limit of one,
//! [`request`] separates a line's `id` and `options` from the payload handlers receive, and
//! [`workers`] answers requests side by side, each on a thread of its own (contract §14), so
//! that a slow handler holds up only its own request.

mod cache;
mod lines;
mod ops;
mod request;
mod workers;

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use serde_json::value::RawValue;

use crate::dispatch::exit::Status;
use crate::dispatch::output::{self, Trace};
use crate::dispatch::payload::{Payload, MAX_BYTES};
use crate::dispatch::{self, Options, OutputMode};
use crate::environment;
use crate::settings::Group;
use crate::signals;
use crate::trust::{Assessment, Gate};

use cache::Cache;
use lines::{Lines, Next};
use request::{Rejection, Request};
use workers::{Job, Workers};

/// Options of `serve`: the defaults of every request, which a request's `options` override.
#[derive(Debug, Clone, Default, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub dispatch: crate::dispatch::DispatchArgs,
}

/// What every request's thread shares.
struct Shared<'a> {
    args: &'a ServeArgs,
    cache: Mutex<Cache>,
    answers: Answers,
}

/// A request read, on its way to its answer.
struct Pending {
    /// Its position in the input, from 1, for the trace.
    number: u64,
    /// When its line was read: `duration_ms` counts from there.
    read_at: Instant,
    /// Its trace, written in one piece once it is answered.
    trace: Trace,
    work: Work,
}

/// What is left to do for a request handed to a thread of its own.
enum Work {
    /// Everything: an op (`trust_status`, `trust`), which may hash scripts.
    Line(Vec<u8>),
    /// Its handlers and what follows them.
    Ready(Box<Ready>),
}

/// A request parsed and its settings found: what remains is the chain of handlers, the logs
/// and the answer.
struct Ready {
    id: Option<Box<RawValue>>,
    output: OutputMode,
    payload: Payload,
    options: Options,
    groups: Arc<[Group]>,
    /// The settings' warnings, which the answer repeats.
    warnings: Vec<String>,
    assessments: Vec<Assessment>,
    /// The files the answer depends on, with their stamps, when the request asked for them
    /// (`options.watch`).
    watch: Option<Vec<(std::path::PathBuf, String)>>,
    /// The subjects a group may apply to, when they can be told and `watch` was asked: the
    /// answer's `no_match_except` when no handler ran.
    except: Option<Vec<String>>,
    /// `options.probe`: `Some` with why the probe cannot be answered without running something,
    /// else `Some("")`.
    probe: Option<&'static str>,
    /// The project root, the managed layer and the layers' paths, found once for the request.
    ground: dispatch::Ground,
}

/// Answers requests until stdin ends (exit 0) or a signal arrives (exit 128+N). Either way, every
/// request read is answered first: at the end of stdin each runs to its end (its handlers'
/// timeouts bound that); after a signal, the handlers running are stopped and their requests
/// answered with `"interrupted":true`.
///
/// The thread that reads the requests parses each and finds its settings; a request that runs
/// no handler (most of them) it also answers, in a few microseconds; one that runs handlers
/// goes on on a thread of its own ([`workers`]), so the next line is read at once.
pub fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    signals::install();
    // Read once, before any request.
    crate::trust::started_by_agent();
    // Spans go out on a thread of their own (contract §18).
    crate::telemetry::export::background();
    // Background handlers' results wait in memory for the session's next request (§21).
    crate::dispatch::background::keep_in_memory();
    let shared = Shared {
        args,
        cache: Mutex::new(Cache::default()),
        answers: Answers::default(),
    };
    let workers = Workers::new();
    let answer_pending = |pending: Pending| {
        let Pending {
            number,
            read_at,
            trace,
            work,
        } = pending;
        let answer = match work {
            Work::Line(line) => guarded(
                number,
                || request::readable_id(&line),
                || answer_line(&line, read_at, &shared, &trace),
                |error| error,
            ),
            Work::Ready(ready) => {
                let id = ready.id.clone();
                guarded(
                    number,
                    || id,
                    || finish(ready, read_at, &trace),
                    |error| error,
                )
            }
        };
        trace.release();
        shared.answers.write(&answer);
    };
    let ended = std::thread::scope(|scope| {
        let ended = read_requests(
            &shared,
            |job| workers.submit(scope, job, &answer_pending),
            || workers.wait_for_room(),
        );
        workers.finish();
        ended
    });
    // What background handlers left for a later request of their session, and what those
    // still running come to, goes to the session's spool: a later dispatch hands it on (§21).
    // So too when stdin failed.
    crate::dispatch::background::spill();
    let ended = ended?;
    // A signal during the last answers ends the server as one while reading would.
    Ok(match ended.or_else(signals::received) {
        Some(sig) => Status::Signal(sig).into(),
        None => {
            // What the last requests exported, within a bound (docs/organisations.md).
            crate::telemetry::export::flush(crate::telemetry::export::EXIT_FLUSH);
            Status::Proceed.into()
        }
    })
}

/// Reads request lines, answers those that run no handler, and hands the others to `submit`,
/// waiting with `room` before each read while the bound of requests in flight is reached.
/// Returns at the end of stdin, or with the signal that stopped the reading.
fn read_requests(
    shared: &Shared<'_>,
    mut submit: impl FnMut(Job<Pending>),
    room: impl Fn() -> Option<i32>,
) -> anyhow::Result<Option<i32>> {
    let verbose = shared.args.dispatch.verbose;
    let mut lines = Lines::new(std::io::stdin().lock(), Some(0));
    let mut count = 0u64;
    loop {
        if let Some(sig) = room() {
            return Ok(Some(sig));
        }
        match lines.next().context("cannot read requests from stdin")? {
            Next::Line(line) => {
                count += 1;
                let read_at = Instant::now();
                let trace = Trace::held(verbose);
                trace.line(format_args!("request {count}"));
                let answered = guarded(
                    count,
                    || request::readable_id(line),
                    || {
                        if ops::may_be_op(line) {
                            if let Some((answer, id)) = ops::answer_in_order(line, shared.args) {
                                return Ok(with_id(answer, id));
                            }
                            return Err(Work::Line(line.to_vec()));
                        }
                        let mut ready = match prepare(line, shared, &trace) {
                            Err(answer) => return Ok(answer),
                            Ok(ready) => ready,
                        };
                        match chain(&ready, &trace) {
                            Chain::Runs => return Err(Work::Ready(Box::new(ready))),
                            Chain::Says => {}
                            // Nothing for the chain to look at again.
                            Chain::Nothing => ready.groups = Arc::new([]),
                        }
                        Ok(finish(Box::new(ready), read_at, &trace))
                    },
                    Ok,
                );
                match answered {
                    Ok(answer) => {
                        trace.release();
                        shared.answers.write(&answer);
                    }
                    Err(work) => submit(Job {
                        bytes: line.len(),
                        work: Pending {
                            number: count,
                            read_at,
                            trace,
                            work,
                        },
                    }),
                }
            }
            Next::TooLong(start) => {
                count += 1;
                Trace::new(verbose).line(format_args!("request {count}: over the size limit"));
                let message = format!(
                    "request: longer than the limit of {} MiB; the line was skipped",
                    MAX_BYTES >> 20
                );
                let answer = with_id(output::error_json(&message), request::readable_id(start));
                shared.answers.write(&answer);
            }
            Next::End => return Ok(None),
            Next::Interrupted(sig) => return Ok(Some(sig)),
        }
    }
}

/// The answers' way out: one whole line at a time, whichever thread writes it.
#[derive(Default)]
struct Answers {
    /// Set once a write failed (the reader closed stdout): later answers are dropped, and the
    /// requests are still served to their end, since their handlers' work may matter more than
    /// their answers (a `Stop` sent just before the client exits).
    gone: AtomicBool,
}

impl Answers {
    fn write(&self, line: &str) {
        if self.gone.load(Ordering::Relaxed) {
            return;
        }
        let mut stdout = std::io::stdout().lock();
        if stdout
            .write_all(line.as_bytes())
            .and_then(|()| stdout.flush())
            .is_err()
        {
            self.gone.store(true, Ordering::Relaxed);
        }
    }
}

/// `step`, and should it panic (it must not), `answered` with an error answer instead of a lost
/// one, with the request's `id` as `id` gives it.
fn guarded<T>(
    number: u64,
    id: impl FnOnce() -> Option<Box<RawValue>>,
    step: impl FnOnce() -> T,
    answered: impl FnOnce(String) -> T,
) -> T {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(step)).unwrap_or_else(|_| {
        answered(with_id(
            output::error_json(&format!(
                "internal error while answering request {number}; see stderr"
            )),
            id(),
        ))
    })
}

/// The whole answer to a line, on the thread given the request: an op, or an event whose line
/// mentions `"op"` ([`ops::may_be_op`]).
fn answer_line(line: &[u8], started: Instant, shared: &Shared<'_>, trace: &Trace) -> String {
    if let Some((answer, id)) = ops::answer(line, shared.args) {
        return with_id(answer, id);
    }
    match prepare(line, shared, trace) {
        Err(answer) => answer,
        Ok(ready) => finish(Box::new(ready), started, trace),
    }
}

/// A request's first steps: its line parsed, its options applied, and its settings found (from
/// the cache, read again when a layer changed), or the error it is answered with.
fn prepare(line: &[u8], shared: &Shared<'_>, trace: &Trace) -> Result<Ready, String> {
    let args = shared.args;
    let request = match request::parse(line) {
        Ok(request) => request,
        Err(Rejection { message, id }) => return Err(with_id(output::error_json(&message), id)),
    };
    let Request {
        id,
        options: asked,
        payload,
    } = request;
    let mut watch = Vec::new();
    let options = Options {
        project_dir: asked
            .project_dir
            .or_else(|| args.dispatch.project_dir.clone()),
        settings: asked
            .settings
            .unwrap_or_else(|| args.dispatch.settings.clone()),
        no_project: args.dispatch.no_project || asked.no_project.unwrap_or(false),
        team: asked.team.or_else(|| args.dispatch.team.clone()),
        traceparent: asked.traceparent,
        // A probe's answer is read by the client alone, and shown to no one.
        hold_background: asked.probe.unwrap_or(false),
        caller_records_compliance: args.dispatch.caller_records_compliance
            || asked.caller_records_compliance.unwrap_or(false),
    };
    let mut warnings = Vec::new();
    let mut assessments = Vec::new();
    let ground = dispatch::Ground::find(&payload, &options);
    let groups: Arc<[Group]> =
        if environment::hooks_disabled() || environment::depth() >= environment::MAX_DEPTH {
            // The dispatch says why no handler runs, and reads no settings.
            Arc::new([])
        } else if let Some(hooks) = &asked.hooks {
            let groups = inline_groups(hooks, &payload.event, &mut warnings);
            trace.line(format_args!(
                "inline layer: options.hooks, instead of every layer ({} group(s) for {})",
                groups.len(),
                payload.event
            ));
            groups.into()
        } else {
            let mut gate = Gate::new(&ground.root);
            // Held while the layers are checked (and read, when they changed), never while
            // handlers run: requests for the same settings then read them once.
            let out = asked.watch.unwrap_or(false).then_some(&mut watch);
            let groups = shared
                .cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .groups(
                    ground.paths(),
                    &payload.event,
                    &mut warnings,
                    trace,
                    &mut gate,
                    out,
                );
            assessments = gate.assessments;
            groups
        };
    let mut watch = (asked.watch.unwrap_or(false) && asked.hooks.is_none()).then_some(watch);
    if let Some(watch) = &mut watch {
        // The managed layer is read by each dispatch itself; its appearance changes every answer.
        for path in crate::settings::managed::candidates() {
            let stamp = cache::stamp_text(&path);
            watch.push((path, stamp));
        }
    }
    // Every layer that may run, the managed layer first (contract §17): a subject the list
    // leaves out must be one no group of any of them applies to.
    let except = watch.as_ref().and_then(|_| {
        crate::settings::subjects_that_may_match(
            ground.managed.groups.iter().chain(groups.iter()),
            payload.kind,
        )
    });
    let probe = asked
        .probe
        .unwrap_or(false)
        .then(|| probe_declined(&payload, &options, &ground));
    let groups = match probe {
        // A probe's dispatch is that of a subject no group applies to.
        Some(_) => Arc::new([]),
        None => groups,
    };
    Ok(Ready {
        id,
        output: asked.output.unwrap_or(args.dispatch.output),
        payload,
        options,
        groups,
        warnings,
        assessments,
        watch,
        except,
        probe,
        ground,
    })
}

/// Why a probe (`options.probe`) cannot be answered without doing something a subject outside
/// every matcher would do too: the managed layer's handlers, a compliance line, a line in the
/// execution log. `""` when it can.
fn probe_declined(payload: &Payload, options: &Options, ground: &dispatch::Ground) -> &'static str {
    if ground.managed_present() {
        "the managed layer is there, and its handlers would run"
    } else if payload.kind == crate::settings::events::EventKind::PostToolUse
        && !options.caller_records_compliance
        && (options.team.is_some() || payload.team.is_some() || environment::team().is_some())
    {
        "a team run's PostToolUse writes a compliance line"
    } else if environment::exec_log().is_some() {
        "LEVELCODE_HOOKS_LOG is set, and each dispatch writes a line there"
    } else {
        ""
    }
}

/// What the chain of handlers of a request will do, as its groups tell before it runs.
enum Chain {
    /// A group that is enabled and applies to the event has an enabled handler.
    Runs,
    /// No handler runs, but the chain has something to say: a matcher that is not a valid
    /// regular expression (a warning), or the `-v` trace of each group.
    Says,
    /// No handler runs and nothing is said: the chain may as well have no groups.
    Nothing,
}

fn chain(ready: &Ready, trace: &Trace) -> Chain {
    let kind = ready.payload.kind;
    let tool = ready.payload.subject();
    // The managed layer (contract §17) is read by the dispatch itself, whatever the request's
    // settings: a request goes to a thread of its own whenever that layer is there, so that its
    // handlers never hold up the reading of the next line. Absent, it costs one failed open,
    // made once for the request as it was prepared.
    if ready.ground.managed_present() {
        return Chain::Runs;
    }
    if ready.probe.is_some_and(|why| !why.is_empty()) {
        return Chain::Nothing;
    }
    let mut says = trace.enabled();
    // The tool input and the root, found only when an `"if"` of a group that applies is
    // tested against them.
    let mut call = None;
    for group in ready.groups.iter().filter(|g| g.enabled) {
        match group.applies(kind, tool) {
            Ok(true) => {
                for handler in group.handlers.iter().filter(|h| h.enabled) {
                    if group.filter.is_none() && handler.filter.is_none() {
                        return Chain::Runs;
                    }
                    let (input, root) = call.get_or_insert_with(|| {
                        let root = dispatch::project_root(&ready.payload, &ready.options);
                        (ready.payload.tool_input(), root)
                    });
                    if !dispatch::filtered_out(group, handler, &ready.payload, input, root) {
                        return Chain::Runs;
                    }
                    // The chain says why it runs nothing: an answer for this input only.
                    says = true;
                }
            }
            Ok(false) => {}
            Err(_) => says = true,
        }
    }
    if says {
        Chain::Says
    } else {
        Chain::Nothing
    }
}

/// The rest of a request: the dispatch with the settings [`prepare`] found, and the answer,
/// newline included.
fn finish(ready: Box<Ready>, started: Instant, trace: &Trace) -> String {
    let Ready {
        id,
        output,
        payload,
        options,
        groups,
        warnings,
        assessments,
        watch,
        except,
        probe,
        ground,
    } = *ready;
    if let Some(why) = probe.filter(|why| !why.is_empty()) {
        let answer =
            serde_json::json!({ "event": payload.event, "probe": "declined", "reason": why });
        return with_id(answer.to_string(), id);
    }
    let report = dispatch::dispatch_with(
        &payload,
        &options,
        trace,
        started,
        ground,
        |_, found, gate| {
            found.extend(warnings);
            gate.assessments = assessments;
            groups
        },
    );
    trace.summary(&report);
    let mut json = report.to_json(output);
    // An answer that an `"if"` made for this tool input holds for no other: nothing to watch,
    // so a client keeps no answer for the tool (contract §16).
    // Nor does one that hands background results on: they are given once (contract §21). Nor
    // one of a session whose background results are still to come: the session's next answer
    // must come from here, with them.
    let keepable =
        !report.depends_on_input && report.background.is_empty() && !report.background_pending;
    if let Some(watch) = watch.as_ref().filter(|_| keepable) {
        add_watch(&mut json, watch);
        if let Some(except) = except.filter(|_| report.handlers.is_empty()) {
            add_member(&mut json, "no_match_except", &serde_json::json!(except));
        }
    }
    if report.background_pending {
        add_member(
            &mut json,
            "background_pending",
            &serde_json::Value::Bool(true),
        );
    }
    with_id(json, id)
}

/// Adds `"watch"`: each file the answer depends on, with its stamp as it was read (docs/serve.md).
fn add_watch(object: &mut String, watch: &[(std::path::PathBuf, String)]) {
    let entries: Vec<serde_json::Value> = watch
        .iter()
        .map(|(path, stamp)| serde_json::json!([path.to_string_lossy(), stamp]))
        .collect();
    add_member(object, "watch", &serde_json::Value::Array(entries));
}

/// Adds one member at the end of the answer object `object`.
fn add_member(object: &mut String, name: &str, value: &serde_json::Value) {
    debug_assert!(object.ends_with('}'));
    object.pop();
    if !object.ends_with('{') {
        object.push(',');
    }
    object.push('"');
    object.push_str(name);
    object.push_str("\":");
    object.push_str(&value.to_string());
    object.push('}');
}

/// The groups of a request's `options.hooks`, read as a settings file's `hooks` is, with the
/// layer name `inline`. The caller wrote them, so they need no trust.
fn inline_groups(
    hooks: &serde_json::Value,
    event: &str,
    warnings: &mut Vec<String>,
) -> Vec<crate::settings::Group> {
    let bytes = serde_json::to_vec(&serde_json::json!({ "hooks": hooks })).unwrap_or_default();
    let source = crate::settings::Source {
        layer: crate::settings::layers::LayerKind::Inline,
        file: std::path::Path::new("options.hooks").into(),
    };
    let mut groups = Vec::new();
    crate::settings::parse(
        source,
        &bytes,
        crate::settings::Events::Only(event),
        &mut groups,
        warnings,
    );
    groups
}

/// A JSON object's text with `"id"` added last when there is one, and a newline.
fn with_id(mut object: String, id: Option<Box<RawValue>>) -> String {
    if let Some(id) = id {
        debug_assert!(object.ends_with('}'));
        object.pop();
        if !object.ends_with('{') {
            object.push(',');
        }
        object.push_str("\"id\":");
        object.push_str(id.get());
        object.push('}');
    }
    object.push('\n');
    object
}
