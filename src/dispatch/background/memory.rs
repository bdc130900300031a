//! Background handlers in `serve` (contract §21): each has a supervisor, as in `run`, that
//! answers on its stdout, and a thread of the server that waits for it and keeps what it came
//! to in memory, for the next request of the same session on this server. Bounded as a spool
//! is: at most [`MAX_RUNNING`] running per session, at most [`MAX_RESULTS`] results of at most
//! [`MAX_BYTES`] waiting.
//!
//! The server acknowledges a result it keeps with a line on the supervisor's stdin. When it
//! ends ([`spill`]), what waits goes to each session's spool, and a result that comes later is
//! not acknowledged: its supervisor writes it to the spool itself. So a result the server never
//! handed on is there for the session's next dispatch, in `run` or in another server.
//!
//! A supervisor is a child of the server until its thread has taken its result: its pid is
//! removed from the session before the thread reaps it, so a `SessionEnd` that signals the
//! pids of its session never reaches another process.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::Child;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use super::process;
use super::record::{Ended, MAX_RECORD};
use super::spool::{MAX_BYTES, MAX_RESULTS, MAX_RUNNING};
use super::supervise::Spec;

/// A supervisor thread's stack: it reads one line and waits.
const STACK: usize = 64 << 10;

#[derive(Default)]
struct Store {
    sessions: Mutex<HashMap<String, Kept>>,
    next: AtomicU64,
    /// The server is ending ([`spill`]): a result that comes now is left to its supervisor,
    /// which gives it to its session's spool. Set and read with `sessions` locked.
    ending: AtomicBool,
}

/// One session's background handlers in this server.
#[derive(Default)]
struct Kept {
    /// Each running one's id and its supervisor's pid.
    running: Vec<(u64, u32)>,
    results: Vec<(Ended, usize)>,
    dropped: usize,
}

static STORE: OnceLock<Store> = OnceLock::new();

/// From now on results are kept in this process's memory (`serve`).
pub fn keep() {
    STORE.get_or_init(Store::default);
}

/// Returns true if and only if results are kept in memory.
pub fn kept() -> bool {
    STORE.get().is_some()
}

fn sessions() -> std::sync::MutexGuard<'static, HashMap<String, Kept>> {
    STORE
        .get_or_init(Store::default)
        .sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// Why a handler was not started.
pub enum Refused {
    /// [`MAX_RUNNING`] of its session run already.
    Full,
    /// Its supervisor could not be started; the text says why.
    Spawn(String),
}

/// Starts the supervisor of `spec`, its result kept for `session` (`None`: the session has
/// ended, and its result is recorded only).
pub fn start(session: Option<&str>, spec: &Spec) -> Result<(), Refused> {
    let bytes = serde_json::to_vec(spec).map_err(|e| Refused::Spawn(e.to_string()))?;
    let id = STORE
        .get_or_init(Store::default)
        .next
        .fetch_add(1, Ordering::Relaxed);
    let mut child = {
        let mut sessions = sessions();
        if let Some(key) = session {
            if sessions
                .get(key)
                .is_some_and(|k| k.running.len() >= MAX_RUNNING)
            {
                return Err(Refused::Full);
            }
        }
        let child = process::spawn_supervisor(true)
            .map_err(|e| Refused::Spawn(format!("could not start its supervisor: {e}")))?;
        if let Some(key) = session {
            sessions
                .entry(key.to_string())
                .or_default()
                .running
                .push((id, child.id()));
        }
        child
    };
    let template = spec.handler.clone();
    let key = session.map(str::to_string);
    // The spec goes before the answer says `started`, so that a server that ends right after
    // (its client closed) leaves the handler with its supervisor all the same. It is one line;
    // the pipe stays open for the acknowledgement. A supervisor that is gone at once says so
    // by the result it does not give.
    let stdin = child.stdin.take().and_then(|mut stdin| {
        stdin
            .write_all(&bytes)
            .and_then(|()| stdin.write_all(b"\n"))
            .ok()?;
        Some(stdin)
    });
    let waited = key.clone();
    let spawned = std::thread::Builder::new()
        .name("background".into())
        .stack_size(STACK)
        .spawn(move || keep_result(child, stdin, id, waited, template));
    if spawned.is_err() {
        // Nothing will wait for it here: its supervisor, unacknowledged, gives its result to
        // the session's spool, where the session's next dispatch finds it.
        if let Some(key) = &key {
            if let Some(kept) = sessions().get_mut(key) {
                kept.running.retain(|(i, _)| *i != id);
            }
        }
    }
    Ok(())
}

/// Waits for `child`'s result and keeps it for `key`, unless its session ended meanwhile, and
/// tells the supervisor on `stdin` that it did. A result that comes as the server ends is not
/// acknowledged: the supervisor gives it to its session's spool instead.
fn keep_result(
    mut child: Child,
    stdin: Option<std::process::ChildStdin>,
    id: u64,
    key: Option<String>,
    template: Ended,
) {
    let mut line = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = BufReader::new(stdout.take(MAX_RECORD as u64 + 1)).read_until(b'\n', &mut line);
    }
    let given = !line.trim_ascii().is_empty();
    let ended = serde_json::from_slice::<Ended>(line.trim_ascii()).unwrap_or_else(|_| {
        let mut lost = template;
        lost.outcome = "error".into();
        let why = "its supervisor ended without a result (see levelcode-hooks log)";
        lost.message = Some(why.into());
        lost.warning = Some(format!(
            "background {} hook {} ({}): {why}",
            lost.event, lost.label, lost.source
        ));
        lost
    });
    let mut acknowledge = true;
    if let Some(key) = key {
        let mut sessions = sessions();
        let ending = STORE
            .get()
            .is_some_and(|store| store.ending.load(Ordering::Relaxed));
        if let Some(kept) = sessions.get_mut(&key) {
            let before = kept.running.len();
            kept.running.retain(|(i, _)| *i != id);
            if kept.running.len() < before && ending {
                // The server ends (`spill` made the spool): its supervisor, unacknowledged,
                // gives its result there itself; one that gave none is said to have been lost.
                acknowledge = false;
                if !given {
                    if let Some(spool) = super::spool::Spool::of_key(&key) {
                        spool.give(&ended);
                    }
                }
            } else if kept.running.len() < before {
                let size = serde_json::to_vec(&ended).map_or(MAX_RECORD, |b| b.len());
                let held: usize = kept.results.iter().map(|(_, n)| n).sum();
                if kept.results.len() < MAX_RESULTS && (held + size) as u64 <= MAX_BYTES {
                    kept.results.push((ended, size));
                } else {
                    kept.dropped += 1;
                }
            }
        }
        // Said with the lock held, so that what `spill` gives the spool was acknowledged and
        // no result is given twice.
        if let (Some(mut stdin), true) = (stdin, acknowledge) {
            let _ = stdin.write_all(b"\n");
        }
    }
    // Reaped only now that its pid is nowhere to be signalled.
    let _ = child.wait();
}

/// The server ends: what waits for each session goes to its spool, for the session's next
/// dispatch wherever it runs, and a result that comes from now on goes there by its supervisor.
pub fn spill() {
    let Some(store) = STORE.get() else {
        return;
    };
    let mut sessions = sessions();
    store.ending.store(true, Ordering::Relaxed);
    for (key, kept) in sessions.iter_mut() {
        if kept.results.is_empty() && kept.dropped == 0 && kept.running.is_empty() {
            continue;
        }
        let results: Vec<Ended> = std::mem::take(&mut kept.results)
            .into_iter()
            .map(|(e, _)| e)
            .collect();
        let left: Vec<(u32, Option<u64>)> = kept
            .running
            .iter()
            .map(|&(_, pid)| (pid, process::start_time(pid)))
            .collect();
        if let Some(spool) = super::spool::Spool::of_key(key) {
            spool.give_made(&results, std::mem::take(&mut kept.dropped), &left);
        }
    }
}

/// Returns true if and only if some session has handlers running or results waiting here.
pub fn any() -> bool {
    STORE.get().is_some() && !sessions().is_empty()
}

/// Returns true if and only if the session `key` has handlers running or results waiting.
pub fn pending(key: &str) -> bool {
    sessions()
        .get(key)
        .is_some_and(|k| !k.running.is_empty() || !k.results.is_empty() || k.dropped > 0)
}

/// Takes the results waiting for `key`, and how many did not fit.
pub fn take(key: &str) -> (Vec<Ended>, usize) {
    let mut sessions = sessions();
    let Some(kept) = sessions.get_mut(key) else {
        return (Vec::new(), 0);
    };
    let taken = std::mem::take(&mut kept.results)
        .into_iter()
        .map(|(e, _)| e)
        .collect();
    let dropped = std::mem::take(&mut kept.dropped);
    if kept.running.is_empty() {
        sessions.remove(key);
    }
    (taken, dropped)
}

/// The session `key` has ended: its supervisors are told to stop their handlers, and its
/// results are taken. Returns them, how many did not fit, and how many were stopped.
pub fn end(key: &str) -> (Vec<Ended>, usize, usize) {
    let Some(kept) = sessions().remove(key) else {
        return (Vec::new(), 0, 0);
    };
    let mut stopped = 0;
    for (_, pid) in &kept.running {
        // Not reaped yet (`keep_result`), so the pid is still this server's child.
        if process::exists(*pid) && signal(*pid) {
            stopped += 1;
        }
    }
    let taken = kept.results.into_iter().map(|(e, _)| e).collect();
    (taken, kept.dropped, stopped)
}

#[cfg(unix)]
fn signal(pid: u32) -> bool {
    // SAFETY: kill(2) takes plain integers; the pid is an unreaped child of this process.
    libc::pid_t::try_from(pid).is_ok_and(|pid| unsafe { libc::kill(pid, libc::SIGTERM) } == 0)
}

#[cfg(not(unix))]
fn signal(_pid: u32) -> bool {
    false
}
