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
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use serde_json::value::RawValue;

use crate::dispatch::exit::Status;
use crate::dispatch::output::{self, Trace};
use crate::dispatch::payload::MAX_BYTES;
use crate::dispatch::{self, Options};
use crate::signals;

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

/// Answers requests until stdin ends (exit 0) or a signal arrives (exit 128+N). Either way, every
/// request read is answered first: at the end of stdin each runs to its end (its handlers'
/// timeouts bound that); after a signal, the handlers running are stopped and their requests
/// answered with `"interrupted":true`.
pub fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    signals::install();
    let shared = Shared {
        args,
        cache: Mutex::new(Cache::default()),
        answers: Answers::default(),
    };
    let workers = Workers::new();
    let answer_job = |job: Job| {
        let line = answer_guarded(&job, &shared);
        shared.answers.write(&line);
    };
    let ended = std::thread::scope(|scope| {
        let ended = read_requests(
            &shared,
            |job| workers.submit(scope, job, &answer_job),
            || workers.wait_for_room(),
        );
        workers.finish();
        ended
    })?;
    // A signal during the last answers ends the server as one while reading would.
    Ok(match ended.or_else(signals::received) {
        Some(sig) => Status::Signal(sig).into(),
        None => Status::Proceed.into(),
    })
}

/// Reads request lines and hands each to `submit`, waiting with `room` before each read while
/// the bound of requests in flight is reached. Returns at the end of stdin, or with the signal
/// that stopped the reading.
fn read_requests(
    shared: &Shared<'_>,
    mut submit: impl FnMut(Job),
    room: impl Fn() -> Option<i32>,
) -> anyhow::Result<Option<i32>> {
    let trace = Trace::new(shared.args.dispatch.verbose);
    let mut lines = Lines::new(std::io::stdin().lock(), Some(0));
    let mut count = 0u64;
    loop {
        if let Some(sig) = room() {
            return Ok(Some(sig));
        }
        match lines.next().context("cannot read requests from stdin")? {
            Next::Line(line) => {
                count += 1;
                submit(Job {
                    line: line.to_vec(),
                    number: count,
                    read_at: Instant::now(),
                });
            }
            Next::TooLong(start) => {
                count += 1;
                trace.line(format_args!("request {count}: over the size limit"));
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

/// [`answer`], and should it panic (it must not), an error answer instead of a lost one.
fn answer_guarded(job: &Job, shared: &Shared<'_>) -> String {
    let trace = Trace::held(shared.args.dispatch.verbose);
    trace.line(format_args!("request {}", job.number));
    let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        answer(&job.line, job.read_at, shared, &trace)
    }));
    trace.release();
    answered.unwrap_or_else(|_| {
        with_id(
            output::error_json("internal error while answering this request; see stderr"),
            request::readable_id(&job.line),
        )
    })
}

/// The answer to one request line, newline included.
fn answer(line: &[u8], started: Instant, shared: &Shared<'_>, trace: &Trace) -> String {
    let args = shared.args;
    if let Some((answer, id)) = ops::answer(line, args) {
        return with_id(answer, id);
    }
    let request = match request::parse(line) {
        Ok(request) => request,
        Err(Rejection { message, id }) => return with_id(output::error_json(&message), id),
    };
    let Request {
        id,
        options: asked,
        payload,
    } = request;
    let options = Options {
        project_dir: asked
            .project_dir
            .or_else(|| args.dispatch.project_dir.clone()),
        settings: asked
            .settings
            .unwrap_or_else(|| args.dispatch.settings.clone()),
        no_project: args.dispatch.no_project || asked.no_project.unwrap_or(false),
        team: asked.team.or_else(|| args.dispatch.team.clone()),
    };
    let report = match &asked.hooks {
        Some(hooks) => {
            dispatch::dispatch_with(&payload, &options, trace, started, |_, warnings, _| {
                let groups = inline_groups(hooks, &payload.event, warnings);
                trace.line(format_args!(
                    "inline layer: options.hooks, instead of every layer ({} group(s) for {})",
                    groups.len(),
                    payload.event
                ));
                groups
            })
        }
        None => dispatch::dispatch_with(
            &payload,
            &options,
            trace,
            started,
            |paths, warnings, gate| {
                // Held while the layers are checked (and read, when they changed), not while
                // handlers run: requests for the same settings then read them once.
                let mut cache = shared.cache.lock().unwrap_or_else(PoisonError::into_inner);
                cache.groups(paths, &payload.event, warnings, trace, gate)
            },
        ),
    };
    trace.summary(&report);
    with_id(
        report.to_json(asked.output.unwrap_or(args.dispatch.output)),
        id,
    )
}

/// The groups of a request's `options.hooks`, read as a settings file's `hooks` is, with the
/// layer name `inline`. The caller wrote them, so they need no trust.
fn inline_groups(
    hooks: &serde_json::Value,
    event: &str,
    warnings: &mut Vec<String>,
) -> Vec<crate::dispatch::settings::Group> {
    let bytes = serde_json::to_vec(&serde_json::json!({ "hooks": hooks })).unwrap_or_default();
    let source = crate::dispatch::settings::Source {
        layer: crate::dispatch::layers::LayerKind::Inline,
        file: std::path::Path::new("options.hooks").into(),
    };
    let mut groups = Vec::new();
    crate::dispatch::settings::parse(
        source,
        &bytes,
        crate::dispatch::settings::Events::Only(event),
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
