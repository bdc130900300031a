//! OpenTelemetry export (contract §18): each dispatch that runs handlers becomes one span, with a
//! child span per handler, posted over OTLP/HTTP to the collector the standard variables name.
//!
//! This module knows nothing of settings or the pipeline: the chain tells it when a handler
//! starts ([`handler_started`], which gives the handler its `TRACEPARENT`), and the dispatch
//! hands it the finished spans' attributes ([`finish`]). With export off (no endpoint variable)
//! every entry point returns at once, and a dispatch that starts no handler creates no id, builds
//! no span and opens no connection.
//!
//! `run` waits for the collector at most [`config::FOREGROUND_BOUND`] before it answers;
//! `serve` hands the spans to a thread of its own ([`export`]) and answers at once.

pub mod config;
pub mod context;
pub mod encode;
pub mod export;
pub mod http;

use std::cell::RefCell;
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use config::Config;
use context::Parent;

/// An attribute's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    Str(String),
    Int(i64),
    Bool(bool),
    Double(f64),
}

/// One finished span, ready to encode.
#[derive(Clone, Debug)]
pub struct SpanRecord {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent: Option<[u8; 8]>,
    pub remote_parent: bool,
    pub name: String,
    /// Nanoseconds since the Unix epoch.
    pub start: u64,
    pub end: u64,
    pub attributes: Vec<(&'static str, Attr)>,
    /// The status message of a span that failed.
    pub error: Option<String>,
}

/// What the dispatch says of itself and of each handler that ran, once the chain is over.
pub struct Finished {
    pub name: String,
    pub attributes: Vec<(&'static str, Attr)>,
    pub error: Option<String>,
    /// The handlers, by their place in the dispatch's report: attributes, failure, duration.
    pub handlers: Vec<FinishedHandler>,
}

pub struct FinishedHandler {
    pub index: usize,
    pub name: String,
    pub attributes: Vec<(&'static str, Attr)>,
    pub error: Option<String>,
    pub duration: Duration,
}

/// The export's configuration, worked out once; `None` when export is off. The warning of a
/// configuration that cannot be used is given by every dispatch that would have exported.
pub(crate) fn settings() -> &'static Result<Option<Config>, String> {
    static SETTINGS: OnceLock<Result<Option<Config>, String>> = OnceLock::new();
    SETTINGS.get_or_init(|| match crate::environment::otel() {
        None => Ok(None),
        Some(vars) => config::from_vars(vars),
    })
}

/// Returns true if and only if an endpoint variable asks for export.
pub fn enabled() -> bool {
    crate::environment::otel().is_some()
}

/// The spans of the dispatch in progress on this thread.
struct Active {
    config: &'static Config,
    parent: Option<Parent>,
    /// The trace and the dispatch's own span, made when the first handler starts.
    ids: Option<([u8; 16], [u8; 8])>,
    start: u64,
    /// Each handler started: its place in the report, its span, when it started.
    handlers: Vec<(usize, [u8; 8], u64)>,
    /// The configuration cannot be used: said once this dispatch, if a handler runs.
    unusable: Option<&'static str>,
}

thread_local! {
    static ACTIVE: RefCell<Option<Active>> = const { RefCell::new(None) };
}

fn unix_nanos(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Starts the spans of a dispatch that began at `started`. `traceparent` is a `serve` request's
/// own; else the caller's `TRACEPARENT` counts. Problems with it go to `warnings`.
pub fn begin_dispatch(traceparent: Option<&str>, started: Instant, warnings: &mut Vec<String>) {
    if !enabled() {
        return;
    }
    let (config, unusable) = match settings() {
        Ok(None) => return,
        Ok(Some(config)) => (config, None),
        Err(warning) => {
            static NONE: OnceLock<Config> = OnceLock::new();
            // A placeholder never used to export: the warning is all such a dispatch gives.
            let placeholder = NONE.get_or_init(|| Config {
                endpoint: http::Endpoint {
                    host: String::new(),
                    port: 0,
                    path: String::new(),
                    url: String::new(),
                },
                protocol: config::Protocol::Protobuf,
                headers: Vec::new(),
                timeout: Duration::ZERO,
                resource: Vec::new(),
            });
            (placeholder, Some(warning.as_str()))
        }
    };
    let given = traceparent.or(crate::environment::otel().and_then(|v| v.traceparent.as_deref()));
    let parent = match given.map(context::parse) {
        None => None,
        Some(Ok(parent)) if !parent.sampled => return,
        Some(Ok(parent)) => Some(parent),
        Some(Err(warning)) => {
            warnings.push(warning);
            None
        }
    };
    let start =
        unix_nanos(SystemTime::now()) - u64::try_from(started.elapsed().as_nanos()).unwrap_or(0);
    ACTIVE.with(|active| {
        *active.borrow_mut() = Some(Active {
            config,
            parent,
            ids: None,
            start,
            handlers: Vec::new(),
            unusable,
        });
    });
}

/// A handler is about to start, at place `index` of the report: its `TRACEPARENT`, naming its
/// own span, when the dispatch is exported.
pub fn handler_started(index: usize) -> Option<(&'static str, String)> {
    ACTIVE.with(|active| {
        let mut active = active.borrow_mut();
        let active = active.as_mut()?;
        if active.unusable.is_some() {
            active.handlers.push((index, [0; 8], 0));
            return None;
        }
        let parent = active.parent;
        let (trace_id, _) = *active.ids.get_or_insert_with(|| {
            (
                parent.map_or_else(context::random::<16>, |p| p.trace_id),
                context::random::<8>(),
            )
        });
        let span_id = context::random::<8>();
        active
            .handlers
            .push((index, span_id, unix_nanos(SystemTime::now())));
        Some(("TRACEPARENT", context::format(&trace_id, &span_id)))
    })
}

/// Returns true if and only if the dispatch in progress has spans to export: export is on and
/// a handler ran. The dispatch builds its [`Finished`] only then.
pub fn pending() -> bool {
    ACTIVE.with(|active| {
        active
            .borrow()
            .as_ref()
            .is_some_and(|a| !a.handlers.is_empty())
    })
}

/// Whether payloads and output go into the spans (`LEVELCODE_HOOKS_OTEL_CONTENT`).
pub fn content() -> bool {
    crate::environment::otel().is_some_and(|v| v.content)
}

/// Ends the dispatch's spans and exports them: `run` waits at most the bound, `serve` not at
/// all. A failure is one warning in `warnings` (in `serve`, in the next answer).
pub fn finish(finished: Finished, warnings: &mut Vec<String>) {
    let Some(active) = ACTIVE.with(|active| active.borrow_mut().take()) else {
        return;
    };
    if let Some(warning) = active.unusable {
        warnings.push(warning.to_string());
        return;
    }
    let Some((trace_id, dispatch_id)) = active.ids else {
        return;
    };
    let end = unix_nanos(SystemTime::now());
    let mut spans = Vec::with_capacity(1 + finished.handlers.len());
    spans.push(SpanRecord {
        trace_id,
        span_id: dispatch_id,
        parent: active.parent.map(|p| p.span_id),
        remote_parent: active.parent.is_some(),
        name: finished.name,
        start: active.start,
        end,
        attributes: finished.attributes,
        error: finished.error,
    });
    for handler in finished.handlers {
        let Some((_, span_id, start)) =
            active.handlers.iter().find(|(i, _, _)| *i == handler.index)
        else {
            continue;
        };
        let nanos = u64::try_from(handler.duration.as_nanos()).unwrap_or(0);
        spans.push(SpanRecord {
            trace_id,
            span_id: *span_id,
            parent: Some(dispatch_id),
            remote_parent: false,
            name: handler.name,
            start: *start,
            end: start.saturating_add(nanos).min(end.max(*start)),
            attributes: handler.attributes,
            error: handler.error,
        });
    }
    export::send(active.config, &spans, warnings);
}
