//! A session's spool, for `run` (contract §21): the folder under the data directory where its
//! background handlers are recorded while they run and their results wait for the session's
//! next dispatch. `<data dir>/background/<session key>/` holds `lock`, `running` (what became
//! of each handler started: its supervisor's and its own pid and start time, so that a later
//! dispatch can stop them, then its end) and `results` (each result, then whether some did not
//! fit), one JSON line each.
//!
//! The folder is the owner's alone (0700), its files 0600. Every change is made under the lock
//! and is one `write` of whole lines at the end of a file, or the file emptied once what it
//! holds is done with: no reader ever sees part of a record, and no file is made or removed on
//! a dispatch's way (on ext4, making and removing files was most of what a background start
//! cost). A line torn by a crash is not JSON, and is passed over. A spool is bounded: at most
//! [`MAX_RUNNING`] handlers run at once, and at most [`MAX_RESULTS`] results of at most
//! [`MAX_BYTES`] in all wait, each bounded itself ([`super::record`]); what does not fit is
//! counted, and the next dispatch says so. Results go once handed on, and the whole spool when
//! the session ends.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::process;
use super::record::{Ended, MAX_RECORD};
use super::session::Session;

/// Background handlers of one session running at once, at most (contract §21).
pub const MAX_RUNNING: usize = 16;
/// Results waiting in one spool, at most.
pub const MAX_RESULTS: usize = 64;
/// Bytes of results waiting in one spool, at most.
pub const MAX_BYTES: u64 = 1 << 20;

/// The `running` file is written afresh, with only what still runs, past this size.
const MAX_RUNNING_FILE: u64 = 64 << 10;

/// How long the lock is waited for: its holders keep it for a few file operations, so the
/// first pause is short (a dispatch often meets the supervisor of the one before it).
const LOCK_WAIT: Duration = Duration::from_secs(5);
const LOCK_PAUSE: Duration = Duration::from_micros(20);

/// The folder under the data directory that holds every session's spool.
const FOLDER: &str = "background";

/// How long a spool whose session never ended is kept once nothing in it has changed.
const ABANDONED: Duration = Duration::from_secs(7 * 24 * 3600);

/// A handler running in the background, as its record says.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Running {
    pub label: String,
    /// The supervisor that keeps it, and its start time (`process::start_time`).
    #[serde(default)]
    pub supervisor: Option<u32>,
    #[serde(default)]
    pub supervisor_start: Option<u64>,
    /// The handler itself, the leader of its process group, once it runs.
    #[serde(default)]
    pub handler: Option<u32>,
    #[serde(default)]
    pub handler_start: Option<u64>,
}

impl Running {
    /// The record of a handler whose supervisor was just started as `pid`.
    pub fn of(label: &str, pid: u32) -> Running {
        Running {
            label: label.to_string(),
            supervisor: Some(pid),
            supervisor_start: process::start_time(pid),
            handler: None,
            handler_start: None,
        }
    }

    /// Returns true if and only if the handler may still run: its supervisor is the process
    /// recorded.
    fn live(&self) -> bool {
        self.supervisor
            .is_some_and(|pid| process::same(pid, self.supervisor_start))
    }
}

/// One line of `running`: a handler started, its handler's pid noted, or its end.
#[derive(Serialize, Deserialize)]
struct Event {
    id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    started: Option<Running>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    handler: Option<(u32, Option<u64>)>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    ended: bool,
}

/// One line of `results`: a result, or one that did not fit.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    Dropped { dropped: usize },
    Result(Box<Ended>),
}

/// One session's spool.
pub struct Spool {
    dir: PathBuf,
}

/// A spool whose lock is held; dropping it lets the lock go.
pub struct Locked<'s> {
    spool: &'s Spool,
    _file: File,
}

/// The folder of every spool, `None` without a data directory.
fn root() -> Option<PathBuf> {
    crate::environment::data_dir().map(|dir| dir.join(FOLDER))
}

/// Returns true if and only if some spool may hold something: one look at the folder of
/// spools, which a data directory where no background handler ever ran does not have.
pub fn any() -> bool {
    root().is_some_and(|root| std::fs::symlink_metadata(root).is_ok())
}

impl Spool {
    /// The spool of `session`; `None` without a data directory.
    pub fn of(session: &Session) -> Option<Spool> {
        root().map(|root| Spool {
            dir: root.join(&session.key),
        })
    }

    /// The spool in `dir`, as a supervisor's spec names it.
    pub fn at(dir: PathBuf) -> Spool {
        Spool { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn running(&self) -> PathBuf {
        self.dir.join("running")
    }

    fn results(&self) -> PathBuf {
        self.dir.join("results")
    }

    /// Takes the spool's lock, creating the spool first when `create`; `Ok(None)` when it does
    /// not exist (or no longer does: its session ended while the lock was waited for).
    pub fn lock(&self, create: bool) -> Result<Option<Locked<'_>>, String> {
        let path = self.dir.join("lock");
        let failed = |e: std::io::Error| {
            format!(
                "{}: cannot use the spool of background results: {e}",
                self.dir.display()
            )
        };
        let open = |create: bool| {
            let mut options = OpenOptions::new();
            options.read(true).write(true).create(create);
            crate::fs::open_regular(&path, crate::fs::with_mode(&mut options, 0o600))
        };
        loop {
            let file = match open(false) {
                Ok(file) => file,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !create => return Ok(None),
                // A session's first spool is also when those of sessions long gone are
                // cleared away.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let new = !self.dir.exists();
                    crate::fs::create_private_dir(&self.dir).map_err(failed)?;
                    if new {
                        sweep(&self.dir);
                    }
                    open(true).map_err(failed)?
                }
                Err(e) => return Err(failed(e)),
            };
            wait_for_lock(&file, &path)?;
            // A spool removed while its lock was waited for guards nothing: the lock must be
            // the file that is there now (no file of a spool is ever replaced, only removed
            // with it).
            if still_there(&file) {
                return Ok(Some(Locked {
                    spool: self,
                    _file: file,
                }));
            }
            if !create {
                return Ok(None);
            }
        }
    }

    /// Returns true if and only if something may be waiting: `results` is not empty.
    pub fn holds_results(&self) -> bool {
        std::fs::metadata(self.results()).is_ok_and(|m| m.len() > 0)
    }

    /// Notes that the handler of the record `id` runs as `pid`, if the record is still there.
    pub fn note_handler(&self, id: &str, pid: u32) {
        let Ok(Some(locked)) = self.lock(false) else {
            return;
        };
        if locked.records().contains_key(id) {
            let _ = locked.append_event(&Event {
                id: id.to_string(),
                started: None,
                handler: Some((pid, process::start_time(pid))),
                ended: false,
            });
        }
    }

    /// What a supervisor does once its handler has ended: its record goes, and its result
    /// waits for the session's next dispatch, if the session has not ended meanwhile (then
    /// `ended` says so, for the log).
    pub fn finish(&self, id: &str, ended: &mut Ended) {
        let locked = match self.lock(false) {
            Ok(Some(locked)) if locked.remove_running(id) => locked,
            _ => {
                let note =
                    "its session ended (SessionEnd) before it did, so its result is not handed on";
                ended.message = Some(match ended.message.take() {
                    Some(m) => format!("{m}; {note}"),
                    None => note.to_string(),
                });
                return;
            }
        };
        locked.add_result(ended);
    }
}

impl Locked<'_> {
    /// The records of `running`, by id, in the order they started: each started and not ended.
    fn records(&self) -> BTreeMap<String, Running> {
        let mut records = BTreeMap::new();
        for event in lines::<Event>(&self.spool.running()) {
            match event {
                Event {
                    id,
                    started: Some(running),
                    ..
                } => {
                    records.insert(id, running);
                }
                Event {
                    id,
                    handler: Some((pid, start)),
                    ..
                } => {
                    if let Some(running) = records.get_mut(&id) {
                        running.handler = Some(pid);
                        running.handler_start = start;
                    }
                }
                Event {
                    id, ended: true, ..
                } => {
                    records.remove(&id);
                }
                Event { .. } => {}
            }
        }
        records
    }

    /// How many handlers may be running, for the bound: those recorded, when fewer than the
    /// bound (most are live, and a stale one costs nothing then), else the live ones.
    pub fn running_count(&self) -> usize {
        let records = self.records();
        if records.len() < MAX_RUNNING {
            return records.len();
        }
        self.live().len()
    }

    /// The live running records, by id; those of supervisors that are gone are dropped, and
    /// `running` written afresh with the rest.
    pub fn live(&self) -> Vec<(String, Running)> {
        let records = self.records();
        let all = records.len();
        let live: Vec<(String, Running)> = records.into_iter().filter(|(_, r)| r.live()).collect();
        if live.len() < all {
            self.rewrite_running(&live);
        }
        live
    }

    /// `running` with only `live` in it, replaced whole.
    fn rewrite_running(&self, live: &[(String, Running)]) {
        let mut text = Vec::new();
        for (id, running) in live {
            let event = Event {
                id: id.clone(),
                started: Some(running.clone()),
                handler: None,
                ended: false,
            };
            if serde_json::to_writer(&mut text, &event).is_ok() {
                text.push(b'\n');
            }
        }
        let _ = crate::fs::write_atomically(
            &self.spool.running(),
            &text,
            0o600,
            crate::fs::Writers::LockHeld,
        );
    }

    /// Records that the handler `id` was started, its supervisor recorded in `running`.
    pub fn add_running(&self, id: &str, running: &Running) -> std::io::Result<()> {
        self.append_event(&Event {
            id: id.to_string(),
            started: Some(running.clone()),
            handler: None,
            ended: false,
        })
    }

    fn append_event(&self, event: &Event) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(event).map_err(std::io::Error::other)?;
        line.push(b'\n');
        append(&self.spool.running(), &line)
    }

    /// Records that the handler `id` ended; returns whether it was recorded as running. When
    /// nothing runs any more, or `running` grew large, it is written afresh.
    pub fn remove_running(&self, id: &str) -> bool {
        let records = self.records();
        if !records.contains_key(id) {
            return false;
        }
        let size = std::fs::metadata(self.spool.running()).map_or(0, |m| m.len());
        if records.len() == 1 || size > MAX_RUNNING_FILE {
            let rest: Vec<(String, Running)> = records
                .into_iter()
                .filter(|(other, _)| other != id)
                .collect();
            if rest.is_empty() {
                let _ = empty(&self.spool.running());
            } else {
                self.rewrite_running(&rest);
            }
            return true;
        }
        let _ = self.append_event(&Event {
            id: id.to_string(),
            started: None,
            handler: None,
            ended: true,
        });
        true
    }

    /// Adds a result, or counts it as one that did not fit.
    fn add_result(&self, ended: &Ended) {
        let Ok(mut line) = serde_json::to_vec(ended) else {
            return;
        };
        line.push(b'\n');
        let path = self.spool.results();
        let held = std::fs::metadata(&path).map_or(0, |m| m.len());
        let count = if held == 0 {
            0
        } else {
            lines::<Line>(&path)
                .iter()
                .filter(|l| matches!(l, Line::Result(_)))
                .count()
        };
        let fits = count < MAX_RESULTS
            && line.len() <= MAX_RECORD
            && held + line.len() as u64 <= MAX_BYTES;
        // What did not fit is a short line, and none is added once even those overflow.
        if fits && append(&path, &line).is_ok() {
            return;
        }
        if held < MAX_BYTES + (64 << 10) {
            let _ = append(&path, b"{\"dropped\":1}\n");
        }
    }

    /// Takes every result waiting, oldest first, and how many did not fit.
    pub fn take(&self) -> (Vec<Ended>, usize) {
        let mut taken = Vec::new();
        let mut dropped = 0;
        let Ok(file) = crate::fs::open_regular(
            &self.spool.results(),
            OpenOptions::new().read(true).write(true),
        ) else {
            return (taken, dropped);
        };
        let read = read_lines::<Line>(&file);
        for line in read {
            match line {
                Line::Result(ended) => taken.push(*ended),
                Line::Dropped { dropped: n } => dropped += n,
            }
        }
        if !taken.is_empty() || dropped > 0 {
            let _ = file.set_len(0);
        }
        (taken, dropped)
    }

    /// The session has ended: its running handlers are stopped, its results taken, and its
    /// spool removed. Returns the results, how many did not fit, and how many were stopped.
    pub fn end(self) -> (Vec<Ended>, usize, usize) {
        let mut stopped = 0;
        // The spool goes below, before any supervisor has stopped its handler: one that ends
        // then finds no record, and hands nothing on.
        for (_, running) in self.records() {
            // Its supervisor stops the handler's group as a timeout would, and records it; a
            // handler whose supervisor is gone is killed here.
            let supervisor = running.supervisor.is_some_and(|pid| {
                process::signal_same(pid, running.supervisor_start, process::TERM)
            });
            if supervisor
                || running.handler.is_some_and(|pid| {
                    process::signal_group_same(pid, running.handler_start, process::KILL)
                })
            {
                stopped += 1;
            }
        }
        let (taken, dropped) = self.take();
        let _ = std::fs::remove_dir_all(&self.spool.dir);
        (taken, dropped, stopped)
    }
}

/// The JSON lines of the file at `path` that read as `T`; none when it cannot be read. A line
/// torn by a crash is passed over.
fn lines<T: serde::de::DeserializeOwned>(path: &Path) -> Vec<T> {
    match crate::fs::open_regular(path, OpenOptions::new().read(true)) {
        Ok(file) => read_lines(&file),
        Err(_) => Vec::new(),
    }
}

/// [`lines`] of an open file.
fn read_lines<T: serde::de::DeserializeOwned>(mut file: &File) -> Vec<T> {
    let mut text = Vec::new();
    // A spool's files are bounded; a larger one is no spool's.
    if (&mut file)
        .take(MAX_BYTES + (128 << 10))
        .read_to_end(&mut text)
        .is_err()
    {
        return Vec::new();
    }
    text.split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect()
}

/// Adds `bytes`, whole lines, at the end of the file at `path` in one write, the file made
/// (0600) when missing. They start on a line of their own, so that a line torn by a crash
/// before them costs nothing more.
fn append(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = OpenOptions::new();
    options.append(true).create(true);
    let mut file = crate::fs::open_regular(path, crate::fs::with_mode(&mut options, 0o600))?;
    let mut whole = Vec::with_capacity(bytes.len() + 1);
    whole.push(b'\n');
    whole.extend_from_slice(bytes);
    file.write_all(&whole)
}

/// Empties the file at `path`, which stays.
fn empty(path: &Path) -> std::io::Result<()> {
    crate::fs::open_regular(path, OpenOptions::new().write(true))?.set_len(0)
}

/// Removes the spools beside `kept` of sessions that never ended: nothing running in them, and
/// nothing changed for [`ABANDONED`]. Each is removed under its lock, taken without waiting.
fn sweep(kept: &Path) {
    let Some(root) = kept.parent() else {
        return;
    };
    for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let spool = Spool::at(entry.path());
        if spool.dir == kept {
            continue;
        }
        let changed = [spool.running(), spool.results(), spool.dir.join("lock")]
            .iter()
            .filter_map(|file| std::fs::metadata(file).and_then(|m| m.modified()).ok())
            .max();
        let old = changed.is_none_or(|at| at.elapsed().is_ok_and(|age| age > ABANDONED));
        if !old {
            continue;
        }
        let taken = OpenOptions::new()
            .read(true)
            .write(true)
            .open(spool.dir.join("lock"))
            .and_then(|lock| Ok((process::lock_now(&lock)?, lock)));
        let Ok((true, lock)) = taken else {
            continue;
        };
        if still_there(&lock) {
            let locked = Locked {
                spool: &spool,
                _file: lock,
            };
            if locked.live().is_empty() {
                let _ = std::fs::remove_dir_all(&spool.dir);
            }
        }
    }
}

/// Takes the lock of `file` (at `path`), retrying with short pauses, doubling up to a
/// millisecond, for at most [`LOCK_WAIT`]; the error names the file and what to do.
fn wait_for_lock(file: &File, path: &Path) -> Result<(), String> {
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    let mut pause = LOCK_PAUSE;
    loop {
        match process::lock_now(file) {
            Ok(true) => return Ok(()),
            Ok(false) if std::time::Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(1));
            }
            Ok(false) => {
                return Err(format!(
                    "{} stayed locked by another process for {} s; if no levelcode-hooks process is still running, find the process holding it",
                    path.display(),
                    LOCK_WAIT.as_secs()
                ))
            }
            Err(e) => return Err(format!("cannot lock {}: {e}", path.display())),
        }
    }
}

/// Returns true if and only if the open `file` has not been removed.
fn still_there(file: &File) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        file.metadata().is_ok_and(|m| m.nlink() > 0)
    }
    #[cfg(not(unix))]
    {
        file.metadata().is_ok()
    }
}

/// A new record's name: its time first, so that names sort as the handlers started.
pub fn new_id() -> String {
    // This process's pid and a count of its own: no two ids of one moment are the same.
    static COUNT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{:013}-{:x}-{n}", crate::fs::now_ms(), std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spool() -> (tempfile::TempDir, Spool) {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::at(dir.path().join("s"));
        (dir, spool)
    }

    fn result(n: usize) -> Ended {
        Ended {
            label: format!("h{n}"),
            outcome: "proceed".into(),
            context: Some("x".repeat(100)),
            ..Ended::default()
        }
    }

    fn mine() -> Running {
        Running::of("h", std::process::id())
    }

    #[test]
    fn results_wait_in_order_and_go_once_taken() {
        let (_dir, spool) = spool();
        let locked = spool.lock(true).unwrap().unwrap();
        for n in 0..3 {
            locked.add_running(&format!("{n}"), &mine()).unwrap();
        }
        drop(locked);
        for n in [2, 0, 1] {
            let mut ended = result(n);
            spool.finish(&n.to_string(), &mut ended);
        }
        let locked = spool.lock(false).unwrap().unwrap();
        assert!(locked.live().is_empty(), "each record went with its result");
        assert_eq!(
            std::fs::metadata(spool.running()).unwrap().len(),
            0,
            "emptied once nothing runs"
        );
        let (taken, dropped) = locked.take();
        let labels: Vec<&str> = taken.iter().map(|e| e.label.as_str()).collect();
        assert_eq!(labels, ["h2", "h0", "h1"], "in the order they ended");
        assert_eq!(dropped, 0);
        assert!(locked.take().0.is_empty());
        assert!(!spool.holds_results());
    }

    #[test]
    fn a_result_whose_record_is_gone_is_not_kept() {
        let (_dir, spool) = spool();
        drop(spool.lock(true).unwrap());
        let mut ended = result(0);
        spool.finish("gone", &mut ended);
        assert!(ended.message.unwrap().contains("session ended"));
        assert!(spool.lock(false).unwrap().unwrap().take().0.is_empty());
    }

    #[test]
    fn what_does_not_fit_is_counted_not_kept() {
        let (_dir, spool) = spool();
        let locked = spool.lock(true).unwrap().unwrap();
        for n in 0..MAX_RESULTS + 5 {
            locked.add_result(&result(n));
        }
        let (taken, dropped) = locked.take();
        assert_eq!((taken.len(), dropped), (MAX_RESULTS, 5));
        assert_eq!(locked.take().1, 0, "the count goes with the results");
    }

    #[test]
    fn a_torn_line_is_passed_over() {
        let (_dir, spool) = spool();
        let locked = spool.lock(true).unwrap().unwrap();
        locked.add_result(&result(0));
        // A crash in the middle of a write: part of a line, and no newline.
        OpenOptions::new()
            .append(true)
            .open(spool.results())
            .unwrap()
            .write_all(b"{\"label\":\"h1\",\"outc")
            .unwrap();
        locked.add_result(&result(2));
        let labels: Vec<String> = locked.take().0.into_iter().map(|e| e.label).collect();
        assert_eq!(labels, ["h0", "h2"]);
    }

    #[test]
    fn a_handler_s_pid_and_its_end_are_read_back() {
        let (_dir, spool) = spool();
        let locked = spool.lock(true).unwrap().unwrap();
        locked.add_running("a", &mine()).unwrap();
        locked.add_running("b", &mine()).unwrap();
        drop(locked);
        spool.note_handler("a", 4242);
        spool.note_handler("gone", 4243);
        let locked = spool.lock(false).unwrap().unwrap();
        let records = locked.records();
        assert_eq!(records["a"].handler, Some(4242));
        assert_eq!(records["b"].handler, None);
        assert!(!records.contains_key("gone"));
        assert!(locked.remove_running("a"));
        assert!(!locked.remove_running("a"), "once");
        assert_eq!(locked.running_count(), 1);
    }

    #[test]
    fn a_new_session_s_spool_clears_away_those_of_sessions_long_gone() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| Spool::at(dir.path().join(name));
        let age = |spool: &Spool, secs: u64| {
            let then = std::time::SystemTime::now() - Duration::from_secs(secs);
            for file in [spool.running(), spool.results(), spool.dir.join("lock")] {
                if let Ok(file) = OpenOptions::new().write(true).open(file) {
                    file.set_modified(then).unwrap();
                }
            }
        };
        let (gone, recent, busy) = (at("gone"), at("recent"), at("busy"));
        for spool in [&gone, &recent, &busy] {
            drop(spool.lock(true).unwrap());
        }
        busy.lock(false)
            .unwrap()
            .unwrap()
            .add_running("r", &mine())
            .unwrap();
        age(&gone, ABANDONED.as_secs() + 60);
        age(&busy, ABANDONED.as_secs() + 60);
        age(&recent, 60);
        drop(at("new").lock(true).unwrap());
        assert!(!gone.dir().exists(), "abandoned, so cleared away");
        assert!(recent.dir().exists());
        assert_eq!(
            busy.dir().exists(),
            cfg!(target_os = "linux"),
            "its handler still runs"
        );
        assert!(at("new").dir().exists());
    }

    #[test]
    fn stale_records_are_pruned_and_an_ended_spool_is_gone() {
        let (_dir, spool) = spool();
        let locked = spool.lock(true).unwrap().unwrap();
        let me = std::process::id();
        let record = |start: Option<u64>| Running {
            supervisor_start: start,
            ..Running::of("h", me)
        };
        locked
            .add_running("live", &record(process::start_time(me)))
            .unwrap();
        locked
            .add_running("stale", &record(process::start_time(me).map(|s| s + 1)))
            .unwrap();
        let unstarted = Running {
            supervisor: None,
            ..Running::of("h", me)
        };
        locked.add_running("unstarted", &unstarted).unwrap();
        let live: Vec<String> = locked.live().into_iter().map(|(id, _)| id).collect();
        if cfg!(target_os = "linux") {
            assert_eq!(live, ["live"]);
            assert_eq!(locked.records().len(), 1, "the others were dropped");
        }
        // Ending it removes the spool; this process's own record is not signalled, since the
        // test removed it first.
        locked.remove_running("live");
        let (_, _, stopped) = locked.end();
        assert_eq!(stopped, 0);
        assert!(!spool.dir().exists());
        assert!(spool.lock(false).unwrap().is_none());
    }
}
