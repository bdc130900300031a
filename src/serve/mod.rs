//! `levelcode-hooks serve`: one dispatcher for many events. Each line on stdin is one request (a
//! payload, plus an optional `id` and `options`); each gets exactly one line on stdout, in order:
//! what `run` prints for that payload, with the request's `id`.
//!
//! A request goes through the same dispatch as `run`; only the settings differ in where they come
//! from: [`cache`] keeps them between requests and reads them again whenever a layer changed.
//! [`lines`] cuts stdin into requests without ever keeping more than the payload limit of one,
//! and [`request`] separates a line's `id` and `options` from the payload handlers receive.

mod cache;
mod lines;
mod ops;
mod request;

use std::io::Write;
use std::process::ExitCode;
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

/// Options of `serve`: the defaults of every request, which a request's `options` override.
#[derive(Debug, Clone, Default, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub dispatch: crate::dispatch::DispatchArgs,
}

/// Answers requests until stdin ends (exit 0) or a signal arrives (exit 128+N, after answering
/// the request in progress).
pub fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    signals::install();
    // Before the first dispatch exports the handlers' variables into this process.
    crate::trust::started_by_agent();
    crate::telemetry::export::background();
    let trace = Trace::new(args.dispatch.verbose);
    let mut cache = Cache::default();
    let mut lines = Lines::new(std::io::stdin().lock(), Some(0));
    let mut stdout = std::io::stdout().lock();
    let mut count = 0u64;
    loop {
        let answer = match lines.next().context("cannot read requests from stdin")? {
            Next::Line(line) => {
                count += 1;
                trace.line(format_args!("request {count}"));
                answer(line, args, &mut cache, &trace)
            }
            Next::TooLong(start) => {
                count += 1;
                trace.line(format_args!("request {count}: over the size limit"));
                let message = format!(
                    "request: longer than the limit of {} MiB; the line was skipped",
                    MAX_BYTES >> 20
                );
                with_id(output::error_json(&message), request::readable_id(start))
            }
            Next::End => {
                crate::telemetry::export::flush(crate::telemetry::export::EXIT_FLUSH);
                return Ok(Status::Proceed.into());
            }
            Next::Interrupted(sig) => return Ok(Status::Signal(sig).into()),
        };
        stdout
            .write_all(answer.as_bytes())
            .and_then(|()| stdout.flush())
            .context("cannot write to stdout")?;
        if let Some(sig) = signals::received() {
            return Ok(Status::Signal(sig).into());
        }
    }
}

/// The answer to one request line, newline included.
fn answer(line: &[u8], args: &ServeArgs, cache: &mut Cache, trace: &Trace) -> String {
    let started = Instant::now();
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
        traceparent: asked.traceparent,
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
            |paths, warnings, gate| cache.groups(paths, &payload.event, warnings, trace, gate),
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
