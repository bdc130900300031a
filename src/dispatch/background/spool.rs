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

/// How long the lock is waited for: its holders keep it for a few file operations.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// The folder under the data directory that holds every session's spool.
const FOLDER: &str = "background";

/// A handler running in the background, as its record says.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Running {
    pub label: String,
    /// The supervisor that keeps it, and its start time (`process::start_time`).
    pub supervisor: u32,
    pub supervisor_start: Option<u64>,
    /// The handler itself, the leader of its process group, once it runs.
    #[serde(default)]
    pub handler: Option<u32>,
    #[serde(default)]
    pub handler_start: Option<u64>,
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
        loop {
            if create {
                for dir in [self.running(), self.results()] {
                    crate::fs::create_private_dir(&dir).map_err(failed)?;
                }
            }
            let mut options = OpenOptions::new();
            options.read(true).write(true).create(create);
            let file =
                match crate::fs::open_regular(&path, crate::fs::with_mode(&mut options, 0o600)) {
                    Ok(file) => file,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound && !create => {
                        return Ok(None)
                    }
                    Err(e) => return Err(failed(e)),
                };
            crate::lock::exclusive(&file, &path, LOCK_WAIT)?;
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
    /// The live running records, by id; the records of supervisors that are gone are removed.
    pub fn live(&self) -> Vec<(String, Running)> {
        let mut live = Vec::new();
        for id in names(&self.spool.running()) {
            match self.running_record(&id) {
                Some(running) if process::same(running.supervisor, running.supervisor_start) => {
                    live.push((id, running));
                }
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
        let names = names(&results);
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
            let _ = replace(
                &self.spool.dir.join("dropped"),
                dropped.to_string().as_bytes(),
            );
        }
    }

    fn dropped(&self) -> usize {
        crate::fs::read_regular(&self.spool.dir.join("dropped"))
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Takes every result waiting, oldest first, and how many did not fit.
    pub fn take(&self) -> (Vec<Ended>, usize) {
        let results = self.spool.results();
        let mut taken = Vec::new();
        for name in names(&results) {
            let path = results.join(&name);
            if let Ok(text) = crate::fs::read_regular(&path) {
                taken.extend(serde_json::from_str::<Ended>(&text).ok());
            }
            let _ = std::fs::remove_file(&path);
        }
        let dropped = self.dropped();
        if dropped > 0 {
            let _ = std::fs::remove_file(self.spool.dir.join("dropped"));
        }
        // A spool with nothing running and nothing waiting goes: one that comes back is made
        // afresh, and whoever waited for this one's lock sees it gone (`lock`).
        if names(&self.spool.running()).is_empty() && names(&results).is_empty() {
            let _ = std::fs::remove_dir_all(&self.spool.dir);
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
            if process::signal_same(running.supervisor, running.supervisor_start, process::TERM)
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
    let tmp = crate::fs::with_suffix(path, ".tmp");
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
                .write_running(
                    &format!("{n}"),
                    &Running {
                        label: "h".into(),
                        supervisor: std::process::id(),
                        supervisor_start: process::start_time(std::process::id()),
                        handler: None,
                        handler_start: None,
                    },
                )
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
    fn stale_records_are_pruned_and_an_ended_spool_is_gone() {
        let (_dir, spool) = spool();
        let locked = spool.lock(true).unwrap().unwrap();
        let me = std::process::id();
        locked
            .write_running(
                "live",
                &Running {
                    label: "h".into(),
                    supervisor: me,
                    supervisor_start: process::start_time(me),
                    handler: None,
                    handler_start: None,
                },
            )
            .unwrap();
        locked
            .write_running(
                "stale",
                &Running {
                    label: "h".into(),
                    supervisor: me,
                    supervisor_start: process::start_time(me).map(|s| s + 1),
                    handler: None,
                    handler_start: None,
                },
            )
            .unwrap();
        let live: Vec<String> = locked.live().into_iter().map(|(id, _)| id).collect();
        if cfg!(target_os = "linux") {
            assert_eq!(live, ["live"]);
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
