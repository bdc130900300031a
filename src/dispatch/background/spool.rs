//! A session's spool, for `run` (contract §21): the folder under the data directory where its
//! background handlers are recorded while they run and their results wait for the session's
//! next dispatch. `<data dir>/background/<session key>/` holds `lock`, `running/<id>` (the
//! supervisor's and the handler's pid and start time, so that a later dispatch can stop them)
//! and `results/<id>.json`.
//!
//! Folders are the owner's alone (0700), files 0600; every change is made under the lock, each
//! file written whole and renamed into place. A spool is bounded: at most [`MAX_RUNNING`]
//! handlers run at once, and at most [`MAX_RESULTS`] results of at most [`MAX_BYTES`] in all
//! wait, each bounded itself ([`super::record`]); what does not fit is counted, and the next
//! dispatch says so. A result is removed once handed on, and the whole spool when the session
//! ends.

use std::fs::{File, OpenOptions};
use std::io::Write;
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

/// The file in `results/` that counts the results that did not fit.
const DROPPED: &str = "dropped";

/// How long the lock is waited for: its holders keep it for a few file operations, so the
/// first pause is short (a dispatch often meets the supervisor of the one before it).
const LOCK_WAIT: Duration = Duration::from_secs(5);
const LOCK_PAUSE: Duration = Duration::from_micros(20);

/// The folder under the data directory that holds every session's spool.
const FOLDER: &str = "background";

/// A handler running in the background, as its record says.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Running {
    pub label: String,
    /// When it was counted, before its supervisor started (ms since the Unix epoch).
    #[serde(default)]
    pub reserved_ms: u64,
    /// The supervisor that keeps it, and its start time (`process::start_time`), once started.
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

/// How long a record counts without its supervisor's pid: the moment between its dispatch
/// counting it and starting the supervisor, generously.
const RESERVED_FOR: u64 = 10_000;

impl Running {
    /// The record of a handler counted and not yet started.
    pub fn reserved(label: &str) -> Running {
        Running {
            label: label.to_string(),
            reserved_ms: crate::fs::now_ms(),
            supervisor: None,
            supervisor_start: None,
            handler: None,
            handler_start: None,
        }
    }

    /// Returns true if and only if the handler may still run: its supervisor is the process
    /// recorded, or it was counted a moment ago and its supervisor is on its way.
    fn live(&self) -> bool {
        match self.supervisor {
            Some(pid) => process::same(pid, self.supervisor_start),
            None => crate::fs::now_ms().saturating_sub(self.reserved_ms) < RESERVED_FOR,
        }
    }
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
    crate::settings::layers::data_dir().map(|dir| dir.join(FOLDER))
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
                // A spool is made whole, its folders first; a session's first one is also when
                // the spools of sessions long gone are cleared away.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let new = !self.dir.exists();
                    for dir in [self.running(), self.results()] {
                        crate::fs::create_private_dir(&dir).map_err(failed)?;
                    }
                    if new {
                        sweep(&self.dir);
                    }
                    open(true).map_err(failed)?
                }
                Err(e) => return Err(failed(e)),
            };
            crate::lock::exclusive_from(&file, &path, LOCK_WAIT, LOCK_PAUSE)?;
            // A spool removed while its lock was waited for guards nothing: the lock must be
            // the file that is there now.
            if same_file(&file, &path) {
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

    /// Returns true if and only if a result may be waiting: the results' folder has an entry.
    pub fn holds_results(&self) -> bool {
        std::fs::read_dir(self.results()).is_ok_and(|mut entries| entries.next().is_some())
    }

    /// Notes in the record `id`, counted under the lock a moment ago, that its supervisor runs
    /// as `pid`, or, with `None`, that it could not be started (the record goes). Without the
    /// lock, which must not be held while a supervisor starts (see `background::detach_all`):
    /// the record is replaced whole, and until this is done its supervisor has not read its
    /// spec, so nothing else writes it; a spool that ended meanwhile is gone with its folder,
    /// and the write fails.
    pub fn note_supervisor(&self, id: &str, label: &str, pid: Option<u32>) {
        let path = self.running().join(id);
        let Some(pid) = pid else {
            let _ = std::fs::remove_file(path);
            return;
        };
        let running = Running {
            supervisor: Some(pid),
            supervisor_start: process::start_time(pid),
            ..Running::reserved(label)
        };
        if let Ok(bytes) = serde_json::to_vec(&running) {
            let _ = replace_as(&path, &bytes, &format!(".{}.tmp", std::process::id()));
        }
    }

    /// Notes in the record `id` that its handler runs as `pid`, if the record is still there.
    pub fn note_handler(&self, id: &str, pid: u32) {
        let Ok(Some(locked)) = self.lock(false) else {
            return;
        };
        if let Some(mut running) = locked.running_record(id) {
            running.handler = Some(pid);
            running.handler_start = process::start_time(pid);
            let _ = locked.write_running(id, &running);
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
        locked.add_result(id, ended);
    }
}

impl Locked<'_> {
    /// How many handlers may be running, for the bound: the records, when fewer than the
    /// bound (most are live, and a stale one costs nothing then), else the live ones.
    pub fn running_count(&self) -> usize {
        let count = names(&self.spool.running()).len();
        if count < MAX_RUNNING {
            return count;
        }
        self.live().len()
    }

    /// The live running records, by id; the records of supervisors that are gone are removed.
    pub fn live(&self) -> Vec<(String, Running)> {
        let mut live = Vec::new();
        for id in names(&self.spool.running()) {
            match self.running_record(&id) {
                Some(running) if running.live() => live.push((id, running)),
                _ => {
                    let _ = std::fs::remove_file(self.spool.running().join(&id));
                }
            }
        }
        live
    }

    fn running_record(&self, id: &str) -> Option<Running> {
        let text = crate::fs::read_regular(&self.spool.running().join(id)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Writes the record `id`.
    pub fn write_running(&self, id: &str, running: &Running) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(running).map_err(std::io::Error::other)?;
        replace(&self.spool.running().join(id), &bytes)
    }

    /// Removes the record `id`; returns whether it was there.
    pub fn remove_running(&self, id: &str) -> bool {
        std::fs::remove_file(self.spool.running().join(id)).is_ok()
    }

    /// Adds a result, or counts it as one that did not fit.
    fn add_result(&self, id: &str, ended: &Ended) {
        let Ok(bytes) = serde_json::to_vec(ended) else {
            return;
        };
        let results = self.spool.results();
        let names: Vec<String> = names(&results)
            .into_iter()
            .filter(|n| n != DROPPED)
            .collect();
        let held: u64 = names
            .iter()
            .filter_map(|name| std::fs::symlink_metadata(results.join(name)).ok())
            .map(|m| m.len())
            .sum();
        let fits = names.len() < MAX_RESULTS
            && bytes.len() <= MAX_RECORD
            && held + bytes.len() as u64 <= MAX_BYTES;
        if !fits || replace(&results.join(format!("{id}.json")), &bytes).is_err() {
            let dropped = self.dropped() + 1;
            let _ = replace(&results.join(DROPPED), dropped.to_string().as_bytes());
        }
    }

    fn dropped(&self) -> usize {
        crate::fs::read_regular(&self.spool.results().join(DROPPED))
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Takes every result waiting, oldest first, and how many did not fit.
    pub fn take(&self) -> (Vec<Ended>, usize) {
        let results = self.spool.results();
        let mut taken = Vec::new();
        let mut dropped = 0;
        for name in names(&results) {
            let path = results.join(&name);
            if name == DROPPED {
                dropped = self.dropped();
            } else if let Ok(text) = crate::fs::read_regular(&path) {
                taken.extend(serde_json::from_str::<Ended>(&text).ok());
            }
            let _ = std::fs::remove_file(&path);
        }
        (taken, dropped)
    }

    /// The session has ended: its running handlers are stopped, its results taken, and its
    /// spool removed. Returns the results, how many did not fit, and how many were stopped.
    pub fn end(self) -> (Vec<Ended>, usize, usize) {
        let mut stopped = 0;
        for id in names(&self.spool.running()) {
            let record = self.running_record(&id);
            // Gone first, so that its supervisor hands nothing on when it ends.
            self.remove_running(&id);
            let Some(running) = record else { continue };
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

/// How long a spool whose session never ended is kept once nothing in it has changed.
const ABANDONED: Duration = Duration::from_secs(7 * 24 * 3600);

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
        let changed = [spool.running(), spool.results()]
            .iter()
            .filter_map(|dir| std::fs::metadata(dir).and_then(|m| m.modified()).ok())
            .max();
        let old = changed.is_none_or(|at| at.elapsed().is_ok_and(|age| age > ABANDONED));
        if !old {
            continue;
        }
        let Ok(lock) = File::open(spool.dir.join("lock")) else {
            continue;
        };
        if lock.try_lock().is_ok() && same_file(&lock, &spool.dir.join("lock")) {
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

/// The names in `dir`, sorted (records are named so that they sort by time); none when it
/// cannot be read. Temporary files are left out.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| !name.ends_with(".tmp"))
        .collect();
    names.sort();
    names
}

/// Replaces `path` with `bytes`: a temporary file of mode 0600 renamed over it, so a reader sees
/// the old file or the new one. Not synced: a record is worth nothing after a crash, which ends
/// the processes it names.
fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace_as(path, bytes, ".tmp")
}

/// [`replace`] through the temporary file named with `suffix`.
fn replace_as(path: &Path, bytes: &[u8], suffix: &str) -> std::io::Result<()> {
    let tmp = crate::fs::with_suffix(path, suffix);
    let _ = std::fs::remove_file(&tmp);
    let written = (|| {
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        let mut file = crate::fs::with_mode(&mut options, 0o600).open(&tmp)?;
        file.write_all(bytes)?;
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Returns true if and only if `file` is the file at `path`.
fn same_file(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        path.exists()
    }
}

/// A new record's name: its time first, so that names sort as the handlers started.
pub fn new_id() -> String {
    let mut random = [0u8; 4];
    let _ = getrandom::fill(&mut random);
    format!(
        "{:013}-{:08x}",
        crate::fs::now_ms(),
        u32::from_be_bytes(random)
    )
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

    #[test]
    fn results_wait_in_order_and_go_once_taken() {
        let (_dir, spool) = spool();
        let locked = spool.lock(true).unwrap().unwrap();
        for n in 0..3 {
            locked
                .write_running(&format!("{n}"), &Running::reserved("h"))
                .unwrap();
        }
        drop(locked);
        for n in [2, 0, 1] {
            let mut ended = result(n);
            spool.finish(&n.to_string(), &mut ended);
        }
        let locked = spool.lock(false).unwrap().unwrap();
        assert!(locked.live().is_empty(), "each record went with its result");
        let (taken, dropped) = locked.take();
        let labels: Vec<&str> = taken.iter().map(|e| e.label.as_str()).collect();
        assert_eq!(labels, ["h0", "h1", "h2"]);
        assert_eq!(dropped, 0);
        assert!(locked.take().0.is_empty());
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
            locked.add_result(&format!("{n:04}"), &result(n));
        }
        let (taken, dropped) = locked.take();
        assert_eq!((taken.len(), dropped), (MAX_RESULTS, 5));
        assert_eq!(locked.take().1, 0, "the count goes with the results");
    }

    #[test]
    fn a_new_session_s_spool_clears_away_those_of_sessions_long_gone() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| Spool::at(dir.path().join(name));
        let age = |spool: &Spool, secs: u64| {
            for folder in [spool.running(), spool.results()] {
                let then = std::time::SystemTime::now() - Duration::from_secs(secs);
                File::open(folder).unwrap().set_modified(then).unwrap();
            }
        };
        let (gone, recent, busy) = (at("gone"), at("recent"), at("busy"));
        for spool in [&gone, &recent, &busy] {
            drop(spool.lock(true).unwrap());
        }
        let me = std::process::id();
        let running = Running {
            supervisor: Some(me),
            supervisor_start: process::start_time(me),
            ..Running::reserved("h")
        };
        busy.lock(false)
            .unwrap()
            .unwrap()
            .write_running("r", &running)
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
            supervisor: Some(me),
            supervisor_start: start,
            ..Running::reserved("h")
        };
        locked
            .write_running("live", &record(process::start_time(me)))
            .unwrap();
        locked
            .write_running("stale", &record(process::start_time(me).map(|s| s + 1)))
            .unwrap();
        let mut old = Running::reserved("h");
        old.reserved_ms -= RESERVED_FOR;
        locked.write_running("reserved-long-ago", &old).unwrap();
        locked
            .write_running("reserved", &Running::reserved("h"))
            .unwrap();
        let live: Vec<String> = locked.live().into_iter().map(|(id, _)| id).collect();
        if cfg!(target_os = "linux") {
            assert_eq!(live, ["live", "reserved"]);
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
