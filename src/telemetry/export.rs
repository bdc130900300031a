//! Getting spans to the collector without ever holding a dispatch up for long, or failing one.
//!
//! In the foreground (`run`, `test`), the request is begun once the first handler is under way
//! ([`open`], from [`super::handler_spawned`]): the connection, and a head that announces the
//! body and asks for `100 Continue`, so that the collector accepts the connection and reads the
//! head while the handlers run, and the handler's start does not wait for either. A collector
//! on a loopback address is connected to right there, which takes microseconds; any other, or a
//! name to resolve (which has no timeout of its own), on a thread. When the
//! dispatch ends ([`send`]), the body follows, and the dispatch waits at most
//! [`Config::foreground_bound`] in all, less what beginning took: for the collector's
//! `100 Continue` (`run`), or for its verdict on the spans (`test`). A collector that refuses
//! the head, is slower than the bound, or is not there costs one warning, never the dispatch. In
//! the background (`serve`, after [`background`]), one thread posts the spans in order, each with
//! its length, while the server answers; what it could not send is one warning in the next
//! answer. A full queue drops the newest spans, with that warning too.

use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::telemetry::config::Config;
use crate::telemetry::{connect, encode, handoff, http, SpanRecord};

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

/// Returns true if and only if spans are exported in the background (`serve`).
pub fn in_background() -> bool {
    BACKGROUND.get().is_some()
}

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
            Some(Ok(addrs)) => plain(job.config, addrs, &job.body, deadline, false),
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

/// A request to the collector, begun once the first handler of a foreground dispatch (`run`,
/// `test`) is under way: the connection and the request's head, so that the collector accepts the
/// connection and reads the head while the handlers run, instead of after them.
pub struct Opening {
    begun: Begun,
    /// What beginning it held the dispatch up: taken off the bound of the wait at its end.
    spent: Duration,
}

enum Begun {
    /// A collector on this machine, on Linux: the connection set going as the handler
    /// starts, which takes microseconds, and as much of the head written as it took at once
    /// (`sent` bytes; all of it when it was up); `others` are the addresses to try should it fail.
    Started {
        started: connect::Started,
        head: Vec<u8>,
        sent: usize,
        others: Vec<SocketAddr>,
    },
    /// A collector on this machine elsewhere: connected to, and the head written, as the
    /// handler starts.
    Here(Result<(TcpStream, SocketAddr), String>),
    /// Anywhere else, or a name to resolve (which has no timeout of its own): on a thread,
    /// while the handlers run.
    Thread(Receiver<Result<(TcpStream, SocketAddr), String>>),
}

/// The thread's stack: name resolution and a connect need little.
const OPENING_STACK: usize = 256 << 10;

/// Begins the request of a dispatch exported in the foreground; `None` in `serve`, whose
/// exports have a thread of their own, or when no thread can be started.
pub fn open(config: &'static Config) -> Option<Opening> {
    if BACKGROUND.get().is_some() {
        return None;
    }
    let started = Instant::now();
    let mut head = Vec::with_capacity(256);
    http::head(
        &mut head,
        &config.endpoint,
        &config.headers,
        config.protocol.content_type(),
        http::Framing::Announced,
    );
    let begun = match http::literal_addrs(&config.endpoint) {
        Some(addrs) if addrs.iter().all(|a| a.ip().is_loopback()) => {
            match connect::start(addrs[0]) {
                Ok(mut started) => {
                    let sent = started.write_now(&head);
                    Begun::Started {
                        started,
                        head,
                        sent,
                        others: addrs[1..].to_vec(),
                    }
                }
                Err(_) => {
                    let deadline = started + config.foreground_bound();
                    Begun::Here(begin(config, Some(&addrs), &head, deadline))
                }
            }
        }
        _ => {
            let (tx, begun) = mpsc::sync_channel(1);
            std::thread::Builder::new()
                .name("otlp-export".into())
                .stack_size(OPENING_STACK)
                .spawn(move || {
                    // Abandoned, with the process, once the dispatch stops waiting for it.
                    let deadline = Instant::now() + config.timeout;
                    let _ = tx.send(begin(config, None, &head, deadline));
                })
                .ok()?;
            Begun::Thread(begun)
        }
    };
    Some(Opening {
        begun,
        spent: started.elapsed(),
    })
}

/// A connection to the collector (at `addrs`, or its endpoint's), with `head` written on it.
fn begin(
    config: &Config,
    addrs: Option<&[SocketAddr]>,
    head: &[u8],
    deadline: Instant,
) -> Result<(TcpStream, SocketAddr), String> {
    let (mut stream, addr) = http::connect(&config.endpoint, addrs, deadline)?;
    http::send(&mut stream, &config.endpoint, head, deadline)?;
    Ok((stream, addr))
}

/// The connection `begun`, up and with the request's head written, by `deadline`, in
/// non-blocking mode.
fn begun(
    config: &Config,
    begun: Begun,
    deadline: Instant,
) -> Result<(TcpStream, SocketAddr), String> {
    match begun {
        Begun::Started {
            started,
            head,
            sent,
            others,
        } => {
            let addr = started.addr;
            match started.finish(&head[sent..], deadline) {
                Ok(stream) => Ok((stream, addr)),
                // Refused, say, before any of the head went: the next address, as `connect`
                // would have tried.
                Err(_) if sent == 0 && !others.is_empty() => {
                    nonblocking(begin(config, Some(&others), &head, deadline))
                }
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => Err("timed out".into()),
                Err(e) => Err(format!("cannot connect to {addr}: {e}")),
            }
        }
        Begun::Here(begun) => nonblocking(begun),
        Begun::Thread(begun) => {
            let left = deadline.saturating_duration_since(Instant::now());
            nonblocking(
                begun
                    .recv_timeout(left)
                    .unwrap_or_else(|_| Err("timed out".into())),
            )
        }
    }
}

fn nonblocking(
    begun: Result<(TcpStream, SocketAddr), String>,
) -> Result<(TcpStream, SocketAddr), String> {
    let (stream, addr) = begun?;
    stream.set_nonblocking(true).map_err(|e| e.to_string())?;
    Ok((stream, addr))
}

/// Whether a foreground export waits for the collector's verdict on the spans once it has
/// said `100 Continue` (`test`, where a person checks the setup), or not (`run`).
static VERDICT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From now on a foreground export waits for the collector's verdict (`test`).
pub fn wait_for_verdict() {
    VERDICT.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Exports `spans`; one warning in `warnings` when that fails, or failed earlier in the
/// background. `opening` is the request a foreground dispatch began while its handlers ran.
pub fn send(
    config: &'static Config,
    spans: Vec<SpanRecord>,
    opening: Option<Opening>,
    warnings: &mut Vec<String>,
) {
    let body = encode::body(config, spans);
    if let Some(background) = BACKGROUND.get() {
        queue(background, config, body, warnings);
        return;
    }
    let bound = config.foreground_bound();
    let spent = opening.as_ref().map_or(Duration::ZERO, |o| o.spent);
    let result = foreground(
        config,
        opening,
        &body,
        Instant::now() + bound.saturating_sub(spent),
    );
    if let Err(why) = result {
        let why = if why.starts_with("timed out") {
            format!("no answer within {} ms", bound.as_millis())
        } else {
            why
        };
        warnings.push(format!(
            "OpenTelemetry: the spans of this dispatch were not exported to {}: {why}; the dispatch was not affected",
            config.endpoint.url
        ));
    }
}

/// Finishes the request `opening` began with `body`, within `deadline`.
///
/// The collector's `100 Continue`, once the body is sent, is the sign that it is there, has
/// read the head and takes the spans: a foreground dispatch (`run`) goes on from there without
/// waiting for its verdict on them, which would hold every dispatch up by the collector's
/// decoding. What a collector decides before that (a wrong token, path or content type: 401,
/// 403, 404, 415) is read, and is a warning. One that never says `100 Continue` is waited for
/// until its final answer, as one that is not there at all is until the bound.
fn foreground(
    config: &Config,
    opening: Option<Opening>,
    body: &[u8],
    deadline: Instant,
) -> Result<(), String> {
    let endpoint = &config.endpoint;
    let opening = opening.ok_or("cannot start the export thread")?;
    let (mut stream, addr) = begun(config, opening.begun, deadline)?;
    let verdict = VERDICT.load(std::sync::atomic::Ordering::Relaxed);
    // What is left once the collector has shown it is there may be done after the answer.
    let handoff = !crate::environment::otel().is_some_and(|v| v.in_process);
    let later = handoff && !verdict;
    let mut answers = http::Answers::default();
    let mut continued = false;
    // What the collector said of the head while the handlers ran.
    answers.read_now(&mut stream);
    if let Some(code) = final_status(&mut answers, &mut continued) {
        return final_answer(config, addr, body, deadline, code, later);
    }
    if answers.closed {
        // The collector gave up on the idle connection while a long handler ran.
        return plain(config, &[addr], body, deadline, later);
    }
    let mut chunked = http::chunked(body);
    if continued && later {
        // The collector has taken the head: nothing it says now changes the answer, and the
        // body can follow it (`handoff`).
        match handoff::defer(stream, chunked, config.timeout) {
            Ok(()) => return Ok(()),
            Err((back, bytes)) => (stream, chunked) = (back, bytes),
        }
    }
    if let Err(e) = http::send_now(&mut stream, endpoint, &chunked, deadline) {
        // A collector that refused the head just now, and closed the connection.
        answers.read_now(&mut stream);
        return match final_status(&mut answers, &mut continued) {
            Some(code) => final_answer(config, addr, body, deadline, code, later),
            None => Err(e),
        };
    }
    if continued && !verdict {
        return Ok(());
    }
    stream.set_nonblocking(false).map_err(|e| e.to_string())?;
    loop {
        if !answers.wait(&mut stream, deadline)? {
            return Err(format!(
                "the collector at {} gave no HTTP answer",
                endpoint.url
            ));
        }
        if let Some(code) = final_status(&mut answers, &mut continued) {
            return final_answer(config, addr, body, deadline, code, later);
        }
        if continued && !verdict {
            // The collector's answer is waited for after the dispatch's (`handoff`): some
            // collectors drop a request whose connection ends before they have answered.
            if later {
                let _ = handoff::defer(stream, Vec::new(), config.timeout);
            }
            return Ok(());
        }
    }
}

/// Takes the complete answers off `answers`: the first final one's status, if one is there;
/// `continued` when one was `100 Continue`.
fn final_status(answers: &mut http::Answers, continued: &mut bool) -> Option<u16> {
    while let Some(code) = answers.next() {
        match code {
            100 => *continued = true,
            101..=199 => {}
            code => return Some(code),
        }
    }
    None
}

/// The export's end once the collector has given its final answer `code`.
fn final_answer(
    config: &Config,
    addr: SocketAddr,
    body: &[u8],
    deadline: Instant,
    code: u16,
    later: bool,
) -> Result<(), String> {
    match code {
        // A collector that does not take a body announced this way (411 Length Required,
        // 417 Expectation Failed, 501 Not Implemented): the plain request, once more.
        411 | 417 | 501 => plain(config, &[addr], body, deadline, later),
        code => http::verdict(&config.endpoint, code),
    }
}

/// `body` posted with its length given, on a connection of its own to `addrs`, waiting for
/// the collector's final answer; or, `later`, once connected, leaving the request and the wait
/// for after the dispatch's answer (`handoff`): the collector has answered on the first
/// connection already, so it is there.
fn plain(
    config: &Config,
    addrs: &[SocketAddr],
    body: &[u8],
    deadline: Instant,
    later: bool,
) -> Result<(), String> {
    let (mut stream, _) = http::connect(&config.endpoint, Some(addrs), deadline)?;
    let mut request = Vec::with_capacity(body.len() + 512);
    http::head(
        &mut request,
        &config.endpoint,
        &config.headers,
        config.protocol.content_type(),
        http::Framing::Length(body.len()),
    );
    request.extend_from_slice(body);
    if later {
        match handoff::defer(stream, request, config.timeout) {
            Ok(()) => return Ok(()),
            Err((back, bytes)) => (stream, request) = (back, bytes),
        }
    }
    http::exchange(&mut stream, &config.endpoint, &request, deadline)
}

fn queue(
    background: &Background,
    config: &'static Config,
    body: Vec<u8>,
    warnings: &mut Vec<String>,
) {
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
