//! A session's spool, for `run` (contract §21): the folder under the data directory where its
//! background handlers hold their places while they run and their results wait for the
//! session's next dispatch. `<data dir>/background/<session key>/` holds `lock`, `slot.0` to
//! `slot.15` (a handler's place, [`Slot`]: held by its supervisor's lock for as long as it
//! runs, and naming its supervisor's and its handler's pid and start time, so that a later
//! dispatch can stop them), `results` (each result, then whether some did not fit, one JSON
//! line each) and, once a server ended with handlers of the session still running, `left`
//! (their supervisors, by pid and start time, for `SessionEnd` to stop).
//!
//! The folder is the owner's alone (0700), its files 0600. A result is added under the lock in
//! one `write` of a whole line at the end of `results`, which is emptied once what it holds is
//! handed on: no reader ever sees part of a result, and no file is made or removed on a
//! dispatch's way (on ext4, making and removing files was most of what a background start
//! cost). A line torn by a crash is not JSON, and is passed over. A place is written only by
//! its holder, and needs no lock. A spool is bounded: at most [`MAX_RUNNING`] handlers run at
//! once, and at most [`MAX_RESULTS`] results of at most [`MAX_BYTES`] in all wait, each bounded
//! itself ([`super::record`]); what does not fit is counted, and the next dispatch says so.
//! Results go once handed on, and the whole spool when the session ends.

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

/// How long the lock is waited for: its holders keep it for a few file operations, so the
/// first pause is short (a dispatch often meets the supervisor of the one before it).
const LOCK_WAIT: Duration = Duration::from_secs(5);
const LOCK_PAUSE: Duration = Duration::from_micros(20);

/// The folder under the data directory that holds every session's spool.
const FOLDER: &str = "background";

/// How long a spool whose session never ended is kept once nothing in it has changed.
const ABANDONED: Duration = Duration::from_secs(7 * 24 * 3600);

/// What a place says of the handler that holds it, or held it last: its supervisor's and its
/// own pid, each with its start time (`process::start_time`), the handler once it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Holder {
    #[serde(default)]
    pub supervisor: Option<(u32, Option<u64>)>,
    #[serde(default)]
    pub handler: Option<(u32, Option<u64>)>,
}

/// The file naming the supervisors a server left running as it ended, one [`Holder`] a line.
const LEFT: &str = "left";

/// The bytes a place's record takes, written over whole each time: a record is shorter.
const HOLDER_BYTES: usize = 128;

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

/// A place among a session's [`MAX_RUNNING`] ([`Spool::reserve`]): a file of the spool whose
/// lock (`flock`, of the open file description, so shared by a `fork` and let go only when
/// the last copy of the descriptor is closed, however its process ends) says that a supervisor
/// still runs, and whose text names it and its handler ([`Holder`]).
pub struct Slot {
    file: File,
    place: usize,
}

impl Slot {
    /// The place's number, `0..MAX_RUNNING`.
    pub fn place(&self) -> usize {
        self.place
    }

    /// The descriptor that holds it, for a supervisor started by `exec` to keep open.
    #[cfg(unix)]
    pub fn fd(&self) -> i32 {
        use std::os::fd::AsRawFd as _;
        self.file.as_raw_fd()
    }

    /// The place held by descriptor `fd` (a supervisor started by `exec`: its descriptor 3).
    #[cfg(unix)]
    pub fn inherited(fd: i32, place: usize) -> Option<Slot> {
        use std::os::fd::FromRawFd as _;
        // fcntl says whether the descriptor is open; owning it, the slot closes it once.
        // Closed on exec from now on: the handler must not hold the place after its supervisor.
        // SAFETY: F_SETFD sets a flag of a descriptor number; an unopened one gives EBADF.
        if fd < 3 || unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } < 0 {
            return None;
        }
        // SAFETY: an open descriptor handed to this process for this use, owned by nothing else.
        let file = unsafe { File::from_raw_fd(fd) };
        Some(Slot { file, place })
    }

    /// Says who holds the place now. Returns false when the session has ended meanwhile
    /// (`SessionEnd` removed the spool, this file with it): then nothing more may start, and
    /// what did must stop, since the dispatch that ended the session may have read the place
    /// before this was written.
    pub fn note(&self, holder: &Holder) -> bool {
        use std::io::Seek as _;
        let mut text = serde_json::to_vec(holder).unwrap_or_default();
        text.resize(HOLDER_BYTES, b' ');
        let mut file = &self.file;
        let _ = file.rewind().and_then(|()| file.write_all(&text));
        !self.ended()
    }

    /// Returns true if and only if the session ended: the place's file is no longer there.
    pub fn ended(&self) -> bool {
        !still_there(&self.file)
    }
}

/// What place `file` says of its holder, and whether it is held now (taking its lock for a
/// moment when it is not).
fn holder_of(mut file: &File) -> (Holder, bool) {
    let mut text = Vec::new();
    let _ = (&mut file).take(HOLDER_BYTES as u64).read_to_end(&mut text);
    let holder = serde_json::from_slice(text.trim_ascii()).unwrap_or_default();
    let held = match file.try_lock() {
        Ok(()) => {
            let _ = file.unlock();
            false
        }
        Err(_) => true,
    };
    (holder, held)
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

    /// The spool of the session whose key is `key`; `None` without a data directory.
    pub fn of_key(key: &str) -> Option<Spool> {
        root().map(|root| Spool {
            dir: root.join(key),
        })
    }

    /// The spool in `dir`, as a supervisor's spec names it.
    pub fn at(dir: PathBuf) -> Spool {
        Spool { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn results(&self) -> PathBuf {
        self.dir.join("results")
    }

    fn slot(&self, place: usize) -> PathBuf {
        self.dir.join(format!("slot.{place}"))
    }

    /// Takes one of the session's [`MAX_RUNNING`] places for a handler about to start, for as
    /// long as the returned [`Slot`] (or a copy of its descriptor: the supervisor's) is open;
    /// `Ok(None)` when every place is held. Counting needs no record of what runs, no `/proc`,
    /// and cannot be fooled by a pid given to another process: a place is held exactly as long
    /// as some process keeps its descriptor.
    pub fn reserve(&self) -> std::io::Result<Option<Slot>> {
        for place in 0..MAX_RUNNING {
            let mut options = OpenOptions::new();
            options.read(true).write(true).create(true);
            let file = crate::fs::open_regular(
                &self.slot(place),
                crate::fs::with_mode(&mut options, 0o600),
            )?;
            match file.try_lock() {
                Ok(()) => return Ok(Some(Slot { file, place })),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(e)) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Each place's file, open, with what it says and whether it is held.
    fn places(&self) -> Vec<(File, Holder, bool)> {
        (0..MAX_RUNNING)
            .filter_map(|place| {
                let file =
                    crate::fs::open_regular(&self.slot(place), OpenOptions::new().read(true))
                        .ok()?;
                let (holder, held) = holder_of(&file);
                Some((file, holder, held))
            })
            .collect()
    }

    /// How many of the session's places are held: handlers whose supervisors still run.
    pub fn held(&self) -> usize {
        self.places().iter().filter(|(_, _, held)| *held).count()
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

    /// Returns true if and only if a supervisor that a server left running as it ended (`left`)
    /// still runs: its result is still to come, here.
    pub fn left_running(&self) -> bool {
        lines::<Holder>(&self.dir.join(LEFT))
            .iter()
            .filter_map(|holder| holder.supervisor)
            .any(|(pid, start)| start.is_some() && process::start_time(pid) == start)
    }

    /// Returns true if and only if something may be waiting: `results` is not empty.
    pub fn holds_results(&self) -> bool {
        std::fs::metadata(self.results()).is_ok_and(|m| m.len() > 0)
    }

    /// Adds `ended` to the results waiting, if the spool is still there.
    pub fn give(&self, ended: &Ended) {
        if let Ok(Some(locked)) = self.lock(false) {
            locked.add_result(ended);
        }
    }

    /// A server that ends (`memory::spill`): adds `results`, and `dropped` that did not fit, to
    /// what waits, and names the supervisors it leaves running (`supervisors`, each with its
    /// start time), making the spool when there is none. Those supervisors give their results
    /// to this spool ([`Spool::give`]) for as long as it is there, and a `SessionEnd` stops them
    /// as it stops those that hold a place.
    pub fn give_made(&self, results: &[Ended], dropped: usize, supervisors: &[(u32, Option<u64>)]) {
        if let Ok(Some(locked)) = self.lock(true) {
            for ended in results {
                locked.add_result(ended);
            }
            if dropped > 0 {
                let line = format!("{{\"dropped\":{dropped}}}\n");
                let _ = append(&self.results(), line.as_bytes());
            }
            let mut lines = Vec::new();
            for &supervisor in supervisors {
                let holder = Holder {
                    supervisor: Some(supervisor),
                    handler: None,
                };
                if let Ok(mut line) = serde_json::to_vec(&holder) {
                    line.push(b'\n');
                    lines.extend(line);
                }
            }
            if !lines.is_empty() {
                let _ = append(&self.dir.join(LEFT), &lines);
            }
        }
    }

    /// What a supervisor does once its handler has ended: its result waits for the session's
    /// next dispatch, unless the session ended meanwhile (then `ended` says so, for the log).
    pub fn finish(&self, slot: &Slot, ended: &mut Ended) {
        if !slot.ended() {
            if let Ok(Some(locked)) = self.lock(false) {
                locked.add_result(ended);
                return;
            }
        }
        let note = "its session ended (SessionEnd) before it did, so its result is not handed on";
        ended.message = Some(match ended.message.take() {
            Some(m) => format!("{m}; {note}"),
            None => note.to_string(),
        });
    }
}

impl Locked<'_> {
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
        // The places are opened, then the spool removed, then what they say read: a supervisor
        // that writes its place after that read finds its file gone (`Slot::note`) and stops.
        let places: Vec<File> = (0..MAX_RUNNING)
            .filter_map(|place| {
                crate::fs::open_regular(&self.spool.slot(place), OpenOptions::new().read(true)).ok()
            })
            .collect();
        let (taken, dropped) = self.take();
        let left: Vec<Holder> = lines(&self.spool.dir.join(LEFT));
        let _ = std::fs::remove_dir_all(&self.spool.dir);
        // Supervisors that a server left running as it ended: each still its process, told to
        // stop its handler; it finds the spool gone and gives nothing.
        let mut stopped = left
            .iter()
            .filter_map(|holder| holder.supervisor)
            .filter(|&(pid, start)| process::signal_same(pid, start, process::TERM))
            .count();
        for file in &places {
            let (holder, held) = holder_of(file);
            // Its supervisor stops the handler's group as a timeout would, and records it; a
            // handler whose supervisor is gone is killed here. Each only if it is the process
            // that started when the place says.
            let supervisor = held
                && holder
                    .supervisor
                    .is_some_and(|(pid, start)| process::signal_same(pid, start, process::TERM));
            if supervisor
                || holder.handler.is_some_and(|(pid, start)| {
                    process::signal_group_same(pid, start, process::KILL)
                })
            {
                stopped += 1;
            }
        }
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
        let changed = (0..MAX_RUNNING)
            .map(|place| spool.slot(place))
            .chain([spool.results(), spool.dir.join("lock")])
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
        if still_there(&lock) && spool.held() == 0 {
            let _ = std::fs::remove_dir_all(&spool.dir);
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
        drop(spool.lock(true).unwrap());
        let slots: Vec<Slot> = (0..3).map(|_| spool.reserve().unwrap().unwrap()).collect();
        for n in [2, 0, 1] {
            let mut ended = result(n);
            spool.finish(&slots[n], &mut ended);
            assert_eq!(ended.message, None);
        }
        let locked = spool.lock(false).unwrap().unwrap();
        let (taken, dropped) = locked.take();
        let labels: Vec<&str> = taken.iter().map(|e| e.label.as_str()).collect();
        assert_eq!(labels, ["h2", "h0", "h1"], "in the order they ended");
        assert_eq!(dropped, 0);
        assert!(locked.take().0.is_empty());
        assert!(!spool.holds_results());
    }

    #[test]
    fn a_result_whose_session_ended_is_not_kept() {
        let (_dir, spool) = spool();
        drop(spool.lock(true).unwrap());
        let slot = spool.reserve().unwrap().unwrap();
        let (_, _, stopped) = spool.lock(false).unwrap().unwrap().end();
        assert_eq!(stopped, 0, "its place names no process");
        assert!(slot.ended());
        assert!(!slot.note(&Holder::default()), "nothing may start now");
        let mut ended = result(0);
        spool.finish(&slot, &mut ended);
        assert!(ended.message.unwrap().contains("session ended"));
        assert!(spool.lock(false).unwrap().is_none());
    }

    #[test]
    fn a_place_is_held_while_a_copy_of_its_descriptor_is_open_and_no_longer() {
        let (_dir, spool) = spool();
        drop(spool.lock(true).unwrap());
        let slots: Vec<Slot> = (0..MAX_RUNNING)
            .map(|_| spool.reserve().unwrap().unwrap())
            .collect();
        assert!(spool.reserve().unwrap().is_none(), "all are held");
        assert_eq!(spool.held(), MAX_RUNNING);
        let places: Vec<usize> = slots.iter().map(Slot::place).collect();
        assert_eq!(places, (0..MAX_RUNNING).collect::<Vec<_>>());
        // A copy of the descriptor, as a fork or an exec'd supervisor has, keeps it held.
        let copy = slots[3].file.try_clone().unwrap();
        drop(slots);
        assert_eq!(spool.held(), 1);
        let again = spool.reserve().unwrap().unwrap();
        assert_eq!(again.place(), 0, "the first free place");
        drop(copy);
        assert_eq!(spool.held(), 1, "place 3 went with its last copy");
    }

    #[test]
    fn what_a_place_says_is_read_back_whole() {
        let (_dir, spool) = spool();
        drop(spool.lock(true).unwrap());
        let slot = spool.reserve().unwrap().unwrap();
        let long = Holder {
            supervisor: Some((u32::MAX, Some(u64::MAX))),
            handler: Some((u32::MAX, Some(u64::MAX))),
        };
        assert!(slot.note(&long));
        let short = Holder {
            supervisor: Some((7, None)),
            handler: None,
        };
        assert!(slot.note(&short));
        let places = spool.places();
        assert_eq!(places.len(), 1);
        assert_eq!(
            (places[0].1, places[0].2),
            (short, true),
            "a shorter record is not torn"
        );
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
    fn a_new_session_s_spool_clears_away_those_of_sessions_long_gone() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| Spool::at(dir.path().join(name));
        let age = |spool: &Spool, secs: u64| {
            let then = std::time::SystemTime::now() - Duration::from_secs(secs);
            for file in [spool.slot(0), spool.results(), spool.dir.join("lock")] {
                if let Ok(file) = OpenOptions::new().write(true).open(file) {
                    file.set_modified(then).unwrap();
                }
            }
        };
        let (gone, recent, busy) = (at("gone"), at("recent"), at("busy"));
        for spool in [&gone, &recent, &busy] {
            drop(spool.lock(true).unwrap());
        }
        let running = busy.reserve().unwrap().unwrap();
        age(&gone, ABANDONED.as_secs() + 60);
        age(&busy, ABANDONED.as_secs() + 60);
        age(&recent, 60);
        drop(at("new").lock(true).unwrap());
        assert!(!gone.dir().exists(), "abandoned, so cleared away");
        assert!(recent.dir().exists());
        assert!(busy.dir().exists(), "its handler still runs");
        assert!(at("new").dir().exists());
        drop(running);
    }

    #[test]
    fn ending_signals_only_the_processes_a_place_names_by_their_start() {
        let (_dir, spool) = spool();
        drop(spool.lock(true).unwrap());
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = sleeper.id();
        let start = process::start_time(pid);
        // A place that names the sleeper with another start time: a pid given to another
        // process since. It is not signalled.
        let forged = spool.reserve().unwrap().unwrap();
        assert!(forged.note(&Holder {
            supervisor: Some((pid, start.map(|s| s + 1))),
            handler: Some((pid, start.map(|s| s + 1))),
        }));
        let (_, _, stopped) = spool.lock(false).unwrap().unwrap().end();
        assert_eq!(stopped, 0);
        assert!(sleeper.try_wait().unwrap().is_none(), "left alone");
        assert!(!spool.dir().exists());
        // The same place naming it as it started: signalled (its supervisor, held).
        drop(spool.lock(true).unwrap());
        let real = spool.reserve().unwrap().unwrap();
        assert!(real.note(&Holder {
            supervisor: Some((pid, start)),
            handler: None,
        }));
        let (_, _, stopped) = spool.lock(false).unwrap().unwrap().end();
        assert_eq!(stopped, 1);
        use std::os::unix::process::ExitStatusExt as _;
        assert_eq!(sleeper.wait().unwrap().signal(), Some(libc::SIGTERM));
    }
}
