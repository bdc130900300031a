//! Getting spans to the collector without ever holding a dispatch up for long, or failing one.
//!
//! In the foreground (`run`, `test`), the dispatch waits for the collector at most
//! [`Config::foreground_bound`]: an endpoint given as an address (or `localhost`) is posted to
//! directly, every socket operation timed out at the bound; one whose name must be resolved is
//! posted to from a thread of its own, which the dispatch stops waiting for at the bound (name
//! resolution has no timeout). A collector that is slower, or not there, costs that wait and
//! one warning, never the dispatch. In the
//! background (`serve`, after [`background`]), one thread posts the spans in order while the
//! server answers; what it could not send is one warning in the next answer. A full queue drops
//! the newest spans, with that warning too.

use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::telemetry::config::Config;
use crate::telemetry::{encode, http, SpanRecord};

/// Requests `serve` keeps waiting for its exporter before it drops new ones.
const QUEUE: usize = 256;

/// How long a `serve` that is exiting waits for spans still queued.
pub const EXIT_FLUSH: Duration = Duration::from_secs(2);

struct Background {
    queue: SyncSender<Job>,
    /// The first failure since it was last reported, and how many exports failed.
    failed: Arc<Mutex<Option<(String, usize)>>>,
    /// Jobs handed over and not yet finished.
    outstanding: Arc<(Mutex<usize>, std::sync::Condvar)>,
}

struct Job {
    config: &'static Config,
    body: Vec<u8>,
}

/// The endpoint's addresses, resolved by [`background`] on the server's one thread.
static ADDRS: OnceLock<Result<Vec<std::net::SocketAddr>, String>> = OnceLock::new();

static BACKGROUND: OnceLock<Background> = OnceLock::new();

/// From now on spans are exported in the background (`serve`).
pub fn background() {
    if !super::enabled() {
        return;
    }
    if let Ok(Some(config)) = super::settings() {
        ADDRS.get_or_init(|| {
            http::literal_addrs(&config.endpoint)
                .map_or_else(|| http::resolve(&config.endpoint), Ok)
        });
    }
    BACKGROUND.get_or_init(|| {
        let (queue, jobs) = mpsc::sync_channel::<Job>(QUEUE);
        let failed = Arc::new(Mutex::new(None));
        let outstanding = Arc::new((Mutex::new(0usize), std::sync::Condvar::new()));
        let worker = (Arc::clone(&failed), Arc::clone(&outstanding));
        let spawned = std::thread::Builder::new()
            .name("otlp-export".into())
            .spawn(move || work(&jobs, &worker.0, &worker.1));
        if spawned.is_err() {
            // Without the thread every job fails at once, loudly, in the answers.
            *failed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                Some(("cannot start the export thread".into(), 0));
        }
        Background {
            queue,
            failed,
            outstanding,
        }
    });
}

fn work(
    jobs: &Receiver<Job>,
    failed: &Mutex<Option<(String, usize)>>,
    outstanding: &(Mutex<usize>, std::sync::Condvar),
) {
    while let Ok(job) = jobs.recv() {
        let deadline = Instant::now() + job.config.timeout;
        let sent = match ADDRS.get() {
            Some(Ok(addrs)) => post(job.config, Some(addrs), &job.body, deadline),
            Some(Err(e)) => Err(e.clone()),
            None => Err("the collector's address is not known".into()),
        };
        if let Err(e) = sent {
            let mut failed = failed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match failed.as_mut() {
                Some((_, n)) => *n += 1,
                None => *failed = Some((e, 1)),
            }
        }
        let (count, done) = outstanding;
        let mut count = count
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *count = count.saturating_sub(1);
        done.notify_all();
    }
}

fn post(
    config: &Config,
    addrs: Option<&[std::net::SocketAddr]>,
    body: &[u8],
    deadline: Instant,
) -> Result<(), String> {
    http::post(
        &config.endpoint,
        addrs,
        &config.headers,
        config.protocol.content_type(),
        body,
        deadline,
    )
}

/// Exports `spans`; one warning in `warnings` when that fails, or failed earlier in the
/// background.
pub fn send(config: &'static Config, spans: &[SpanRecord], warnings: &mut Vec<String>) {
    let body = encode::body(config, spans);
    if let Some(background) = BACKGROUND.get() {
        let earlier = background
            .failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some((why, n)) = earlier {
            warnings.push(format!(
                "OpenTelemetry: {n} earlier export(s) to {} failed: {why}; the dispatches were not affected",
                config.endpoint.url
            ));
        }
        {
            let mut count = background
                .outstanding
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *count += 1;
        }
        if background.queue.try_send(Job { config, body }).is_err() {
            let mut count = background
                .outstanding
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *count = count.saturating_sub(1);
            warnings.push(format!(
                "OpenTelemetry: the export queue to {} is full ({QUEUE} requests waiting); this dispatch's spans were dropped",
                config.endpoint.url
            ));
        }
        return;
    }
    let bound = config.foreground_bound();
    let deadline = Instant::now() + bound;
    let result = match http::literal_addrs(&config.endpoint) {
        // No name to resolve: the socket's timeouts keep the post within the bound.
        Some(addrs) => post(config, Some(&addrs), &body, deadline).map_err(|e| {
            if e == "timed out" || e.starts_with("timed out") {
                format!("no answer within {} ms", bound.as_millis())
            } else {
                e
            }
        }),
        // Name resolution has no timeout of its own: it runs on a thread the dispatch stops
        // waiting for at the bound.
        None => {
            let (tx, rx) = mpsc::sync_channel(1);
            let spawned = std::thread::Builder::new()
                .name("otlp-export".into())
                .spawn(move || {
                    let _ = tx.send(post(config, None, &body, deadline));
                });
            match spawned {
                Err(e) => Err(format!("cannot start the export thread: {e}")),
                Ok(_) => match rx.recv_timeout(bound) {
                    Ok(result) => result,
                    Err(_) => Err(format!("no answer within {} ms", bound.as_millis())),
                },
            }
        }
    };
    if let Err(why) = result {
        warnings.push(format!(
            "OpenTelemetry: the spans of this dispatch were not exported to {}: {why}; the dispatch was not affected",
            config.endpoint.url
        ));
    }
}

/// Waits at most `limit` for the background's queued spans to be sent (`serve` exiting).
pub fn flush(limit: Duration) {
    let Some(background) = BACKGROUND.get() else {
        return;
    };
    let deadline = Instant::now() + limit;
    let (count, done) = &*background.outstanding;
    let mut count = count
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    while *count > 0 {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return;
        };
        count = done
            .wait_timeout(count, left)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0;
    }
}
