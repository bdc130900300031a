//! Getting spans to the collector without ever holding a dispatch up for long, or failing one,
//! through the dispatcher's one HTTP client (`crate::http`).
//!
//! In the foreground (`run`, `test`), a dispatch's spans are posted once it ends and its answer
//! waits for the collector's at most [`Config::foreground_bound`]: a collector that refuses
//! them, is slower than the bound, or is not there costs one warning, never the dispatch.
//!
//! In the background (`serve`, after [`background`]), the spans go to a bounded queue that one
//! thread empties in batches, as the OpenTelemetry SDKs' batch span processor does: it posts
//! once [`BATCH`] spans are waiting, or [`DELAY`] after the first of them was queued, each post
//! with the export's own timeout. A full queue drops a dispatch's spans and counts them; what
//! was dropped or could not be sent is one warning in the next answer. When the server's input
//! ends, [`flush`] sends what is queued, waiting at most [`EXIT_FLUSH`].

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::http::{self, Failure, Post};
use crate::telemetry::config::Config;
use crate::telemetry::{encode, SpanRecord};

/// Spans `serve` keeps waiting for its exporter before it drops new ones (the SDKs' default
/// `maxQueueSize`).
pub const QUEUE: usize = 2048;

/// Spans posted in one request at most (the SDKs' default `maxExportBatchSize`).
pub const BATCH: usize = 512;

/// How long a span waits for others to join its batch (the SDKs wait 5 s; a server of tool calls
/// is quieter, and its spans are read by people watching it).
pub const DELAY: Duration = Duration::from_secs(1);

/// How long a `serve` whose input has ended waits for the spans still queued.
pub const EXIT_FLUSH: Duration = Duration::from_secs(2);

/// How much of a collector's answer is read: a status and a short message.
const ANSWER_LIMIT: usize = 4096;

struct Background {
    state: Mutex<State>,
    /// The exporter waits on it for spans, or for the flush.
    wake: Condvar,
    /// [`flush`] waits on it for the queue to empty.
    idle: Condvar,
}

#[derive(Default)]
struct State {
    config: Option<&'static Config>,
    queue: VecDeque<SpanRecord>,
    /// When the oldest span of the queue was queued.
    since: Option<Instant>,
    /// Spans taken off the queue and not yet posted.
    sending: usize,
    /// Spans dropped since it was last said.
    dropped: usize,
    /// The first failure since it was last said, and how many posts failed.
    failed: Option<(String, usize)>,
    /// Set by [`flush`]: post what is queued now.
    flushing: bool,
    /// The exporter thread could not be started.
    no_thread: bool,
}

static BACKGROUND: OnceLock<Background> = OnceLock::new();

fn lock(background: &Background) -> MutexGuard<'_, State> {
    background
        .state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Returns true if and only if spans are exported in the background (`serve`).
pub fn in_background() -> bool {
    BACKGROUND.get().is_some()
}

/// From now on spans are exported in the background (`serve`).
pub fn background() {
    if !super::enabled() {
        return;
    }
    let mut started = false;
    let background = BACKGROUND.get_or_init(|| {
        started = true;
        Background {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            idle: Condvar::new(),
        }
    });
    if started {
        let spawned = std::thread::Builder::new()
            .name("otlp-export".into())
            .spawn(move || work(background));
        if spawned.is_err() {
            lock(background).no_thread = true;
        }
    }
}

/// The exporter: waits for a batch, posts it, and again, for as long as the process lives.
fn work(background: &'static Background) {
    let mut state = lock(background);
    loop {
        let due = state.since.map(|since| since + DELAY);
        let ready = state.queue.len() >= BATCH
            || (!state.queue.is_empty()
                && (state.flushing || due.is_some_and(|d| d <= Instant::now())));
        if !ready {
            state = match due {
                Some(due) => {
                    let left = due.saturating_duration_since(Instant::now());
                    background
                        .wake
                        .wait_timeout(state, left)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0
                }
                None => background
                    .wake
                    .wait(state)
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            };
            continue;
        }
        let take = state.queue.len().min(BATCH);
        let batch: Vec<SpanRecord> = state.queue.drain(..take).collect();
        state.since = (!state.queue.is_empty()).then(Instant::now);
        state.sending = batch.len();
        let Some(config) = state.config else {
            state.sending = 0;
            continue;
        };
        drop(state);
        let sent = post(config, batch, config.timeout);
        state = lock(background);
        state.sending = 0;
        if let Err(why) = sent {
            match state.failed.as_mut() {
                Some((_, n)) => *n += 1,
                None => state.failed = Some((why, 1)),
            }
        }
        background.idle.notify_all();
    }
}

/// Posts `spans` to the collector within `timeout`; `Ok` when it took them (2xx).
fn post(config: &Config, spans: Vec<SpanRecord>, timeout: Duration) -> Result<(), String> {
    let mut body = encode::body(config, spans);
    if config.gzip {
        body = gzip(&body);
    }
    let answer = http::post(&Post {
        url: &config.endpoint,
        headers: &config.headers,
        content_type: config.protocol.content_type(),
        encoding: config.gzip.then_some("gzip"),
        body: &body,
        timeout,
        limit: ANSWER_LIMIT,
        roots: &config.roots,
    });
    match answer {
        Ok(answer) if (200..300).contains(&answer.status) => Ok(()),
        Ok(answer) => Err(format!(
            "the collector at {} answered {}",
            config.endpoint, answer.status
        )),
        Err(Failure::Timeout) => Err(format!("no answer within {} ms", timeout.as_millis())),
        Err(Failure::Other(why)) => Err(why),
    }
}

/// `body` gzipped (`OTEL_EXPORTER_OTLP_COMPRESSION=gzip`), at the fast end of the levels: spans
/// are small and repetitive.
fn gzip(body: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4 + 64),
        flate2::Compression::fast(),
    );
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(body);
    encoder.finish().unwrap_or_default()
}

/// Exports `spans`: in the foreground posted now, waiting at most the bound; in the background
/// queued. One warning in `warnings` when that fails, or when earlier exports of the background
/// failed or were dropped.
pub fn send(config: &'static Config, spans: Vec<SpanRecord>, warnings: &mut Vec<String>) {
    if let Some(background) = BACKGROUND.get() {
        queue(background, config, spans, warnings);
        return;
    }
    if let Err(why) = post(config, spans, config.foreground_bound()) {
        warnings.push(format!(
            "OpenTelemetry: the spans of this dispatch were not exported to {}: {why}; the dispatch was not affected",
            config.endpoint
        ));
    }
}

fn queue(
    background: &Background,
    config: &'static Config,
    spans: Vec<SpanRecord>,
    warnings: &mut Vec<String>,
) {
    let mut state = lock(background);
    if state.no_thread {
        warnings.push(format!(
            "OpenTelemetry: cannot start the export thread; the spans of this dispatch were not exported to {}",
            config.endpoint
        ));
        return;
    }
    if let Some((why, n)) = state.failed.take() {
        warnings.push(format!(
            "OpenTelemetry: {n} earlier export(s) to {} failed: {why}; the dispatches were not affected",
            config.endpoint
        ));
    }
    let dropped = std::mem::take(&mut state.dropped);
    if dropped > 0 {
        warnings.push(format!(
            "OpenTelemetry: the export queue to {} was full ({QUEUE} spans waiting): {dropped} span(s) of earlier dispatches were dropped",
            config.endpoint
        ));
    }
    if state.queue.len() + spans.len() > QUEUE {
        state.dropped += spans.len();
        return;
    }
    state.config = Some(config);
    let first = state.queue.is_empty();
    if first {
        state.since = Some(Instant::now());
    }
    state.queue.extend(spans);
    // The exporter waits without a deadline while the queue is empty: the first spans set it.
    if first || state.queue.len() >= BATCH {
        background.wake.notify_one();
    }
}

/// Waits at most `limit` for the background's queued spans to be sent (`serve` exiting).
pub fn flush(limit: Duration) {
    let Some(background) = BACKGROUND.get() else {
        return;
    };
    let deadline = Instant::now() + limit;
    let mut state = lock(background);
    state.flushing = true;
    background.wake.notify_one();
    while !state.queue.is_empty() || state.sending > 0 {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return;
        };
        state = background
            .idle
            .wait_timeout(state, left)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0;
    }
}

/// What the background holds now, for the tests: spans queued, sending and dropped.
#[cfg(test)]
fn counts() -> (usize, usize, usize) {
    BACKGROUND.get().map_or((0, 0, 0), |b| {
        let state = lock(b);
        (state.queue.len(), state.sending, state.dropped)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_a_gzip_stream_of_the_body() {
        use std::io::Read as _;
        let body = b"spans spans spans spans".repeat(100);
        let packed = gzip(&body);
        assert!(packed.len() < body.len() / 4);
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&packed[..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, body);
        assert_eq!(counts(), (0, 0, 0));
    }
}
