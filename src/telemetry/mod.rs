//! OpenTelemetry export (contract §18): each dispatch that runs handlers becomes one span, with a
//! child span per handler, posted over OTLP/HTTP to the collector the standard variables name.
//!
//! This module knows nothing of settings or the pipeline: the chain tells it when a handler is
//! about to start ([`handler_started`], which gives the handler its `TRACEPARENT`), and the
//! dispatch hands it the finished spans' attributes ([`finish`]). With export off (no endpoint
//! variable) every entry point returns at once, and a dispatch that starts no handler creates no
//! id, builds no span and opens no connection.
//!
//! `run` posts its spans once the dispatch ends and waits for the collector at most
//! [`config::FOREGROUND_BOUND`] before it answers; `serve` queues them for a thread of its own
//! that posts them in batches ([`export`]), and answers at once. The posts go through the
//! dispatcher's one HTTP client (`crate::http`), `https://` included.

pub mod config;
pub mod context;
pub mod encode;
pub mod export;

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
    crate::environment::otel_requested()
}

/// The spans of the dispatch in progress on this thread.
struct Active {
    started: Instant,
    /// A `serve` request's own `traceparent`.
    requested_parent: Option<String>,
    /// Worked out when the first handler is about to start: the trace, or why nothing is
    /// recorded.
    trace: Option<Trace>,
    /// Each handler started: its place in the report, its span, when it started.
    handlers: Vec<(usize, [u8; 8], u64)>,
    /// Warnings for the dispatch's report, given when it ends.
    warnings: Vec<String>,
}

enum Trace {
    Recorded {
        config: &'static Config,
        parent: Option<Parent>,
        trace_id: [u8; 16],
        span_id: [u8; 8],
    },
    /// The caller does not sample this trace: nothing recorded, handlers see its context.
    NotSampled,
    /// The configuration cannot be used: its warning is given once.
    Unusable,
}

thread_local! {
    static ACTIVE: RefCell<Option<Active>> = const { RefCell::new(None) };
}

fn unix_nanos(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Starts the spans of a dispatch that began at `started`. `traceparent` is a `serve` request's
/// own; else the caller's `TRACEPARENT` counts. Nothing is read, made or parsed until a handler
/// starts.
pub fn begin_dispatch(traceparent: Option<&str>, started: Instant) {
    if !enabled() {
        return;
    }
    ACTIVE.with(|active| {
        *active.borrow_mut() = Some(Active {
            started,
            requested_parent: traceparent.map(str::to_string),
            trace: None,
            handlers: Vec::new(),
            warnings: Vec::new(),
        });
    });
}

fn trace_of(active: &mut Active) -> Trace {
    let config = match settings() {
        Ok(Some(config)) => config,
        Ok(None) => return Trace::NotSampled,
        Err(warning) => {
            // Once per dispatch; in `serve`, whose configuration cannot change, once per server.
            static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
            if !export::in_background() || !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
                active.warnings.push(warning.clone());
            }
            return Trace::Unusable;
        }
    };
    let given = active
        .requested_parent
        .as_deref()
        .or(crate::environment::otel().and_then(|v| v.traceparent.as_deref()));
    let parent = match given.map(context::parse) {
        None => None,
        Some(Ok(parent)) if !parent.sampled => return Trace::NotSampled,
        Some(Ok(parent)) => Some(parent),
        Some(Err(warning)) => {
            active.warnings.push(warning);
            None
        }
    };
    Trace::Recorded {
        config,
        parent,
        trace_id: parent.map_or_else(context::random::<16>, |p| p.trace_id),
        span_id: context::random::<8>(),
    }
}

/// A handler is about to start, at place `index` of the report: its `TRACEPARENT`, naming its
/// own span, when the dispatch is exported.
pub fn handler_started(index: usize) -> Option<(&'static str, String)> {
    ACTIVE.with(|active| {
        let mut active = active.borrow_mut();
        let active = active.as_mut()?;
        if active.trace.is_none() {
            active.trace = Some(trace_of(active));
        }
        let Some(Trace::Recorded { trace_id, .. }) = &active.trace else {
            return None;
        };
        let trace_id = *trace_id;
        let span_id = context::random::<8>();
        active
            .handlers
            .push((index, span_id, unix_nanos(SystemTime::now())));
        Some(("TRACEPARENT", context::format(&trace_id, &span_id)))
    })
}

/// The span of a handler that goes on after its dispatch has answered (a background handler,
/// contract §21): its own span, which its `TRACEPARENT` names, its parent, the dispatch's span,
/// and when it started. Text, so that the process that reports it when it ends can be given it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Detached {
    pub traceparent: String,
    /// The dispatch's span, as a `traceparent`.
    pub parent: String,
    /// Nanoseconds since the Unix epoch.
    pub start: u64,
}

/// The span of the handler [`handler_started`] was told of at place `index`, for a handler
/// that goes on after the dispatch: [`export_detached`] reports it when the handler ends, and
/// the dispatch leaves it out of its own spans. `None` when the dispatch is not exported.
pub fn detached(index: usize) -> Option<Detached> {
    ACTIVE.with(|active| {
        let active = active.borrow();
        let active = active.as_ref()?;
        let Some(Trace::Recorded {
            trace_id, span_id, ..
        }) = &active.trace
        else {
            return None;
        };
        let (_, own, start) = active.handlers.iter().find(|(i, _, _)| *i == index)?;
        Some(Detached {
            traceparent: context::format(trace_id, own),
            parent: context::format(trace_id, span_id),
            start: *start,
        })
    })
}

/// Exports the span of a handler [`detached`] from its dispatch, now that it has ended, as a
/// child of the dispatch's span; a failure is one warning in `warnings`.
pub fn export_detached(
    detached: &Detached,
    name: String,
    attributes: Vec<(&'static str, Attr)>,
    error: Option<String>,
    warnings: &mut Vec<String>,
) {
    let Ok(Some(config)) = settings() else {
        return;
    };
    let (Ok(own), Ok(parent)) = (
        context::parse(&detached.traceparent),
        context::parse(&detached.parent),
    ) else {
        return;
    };
    let span = SpanRecord {
        trace_id: own.trace_id,
        span_id: own.span_id,
        parent: Some(parent.span_id),
        // The dispatch's span was recorded by another process, or before this one's answer.
        remote_parent: true,
        name,
        start: detached.start,
        end: unix_nanos(SystemTime::now()).max(detached.start),
        attributes,
        error,
    };
    export::send(config, vec![span], warnings);
}

/// Returns true if and only if the dispatch in progress has spans to export: export is on and
/// a handler ran. The dispatch builds its [`Finished`] only then.
pub fn pending() -> bool {
    ACTIVE.with(|active| {
        active.borrow().as_ref().is_some_and(|a| {
            matches!(a.trace, Some(Trace::Recorded { .. })) || !a.warnings.is_empty()
        })
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
    warnings.extend(active.warnings);
    let Some(Trace::Recorded {
        config,
        parent,
        trace_id,
        span_id: dispatch_id,
    }) = active.trace
    else {
        return;
    };
    let end = unix_nanos(SystemTime::now());
    let start = end.saturating_sub(u64::try_from(active.started.elapsed().as_nanos()).unwrap_or(0));
    let mut spans = Vec::with_capacity(1 + finished.handlers.len());
    spans.push(SpanRecord {
        trace_id,
        span_id: dispatch_id,
        parent: parent.map(|p| p.span_id),
        remote_parent: parent.is_some(),
        name: finished.name,
        start,
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
    export::send(config, spans, warnings);
}
