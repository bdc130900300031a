//! The settings `serve` keeps between requests, and what keeps them from ever being stale.
//!
//! Before each dispatch every layer path is looked at again: its device, inode, type and mode,
//! size, and modification and change times to the nanosecond, or the fact that it is absent. Any
//! difference and the layers are read again. One case is left that no such check can see: a file
//! rewritten with the same size within one tick of the file system's clock, right after it was
//! read. So while a layer's times are recent (within [`RECENT`] of the check), its contents are
//! also compared with what was read; once they are older, any later write must move them.
//!
//! A layer's stamp is taken of the open file that was read (not of the path looked at again), so
//! a path that a writer flips between two files cannot have one file read and the other one
//! stamped: the next look at the path differs from what was read.
//!
//! Whether the project layer is trusted (contract §13) is kept with the groups, and depends on
//! more files than the layers: the trust store and every path the project's handlers name, and
//! the canonical project root (a root symlink moved to another checkout, whose settings file may
//! even be a symlink to the trusted one's, is another project). Those are stamped the same way,
//! so the scripts are hashed again only when one of them changed; while any of them is recent,
//! every request checks afresh.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::dispatch;
use crate::dispatch::output::Trace;
use crate::settings::layers::{self, LayerPath, Loaded};
use crate::settings::{Events, Group};
use crate::trust::{Assessment, Gate};

/// Timestamps closer than this to the check are not trusted alone. Coarse file-system clocks tick
/// every few milliseconds (every second or two on some file systems); this is well past both.
const RECENT: Duration = Duration::from_secs(2);

/// Entries kept: one per event and set of layer paths (that is, per project).
const CAPACITY: usize = 64;

/// Groups read for one event from one set of layers, with what they were read from.
struct Entry {
    event: String,
    paths: Vec<LayerPath>,
    /// Each layer's stamp; `None` for an agent's layer that was not read because no user or
    /// data layer turned it on (whose stamps decide whether it is read, and are compared).
    stamps: Vec<Option<Stamp>>,
    /// While some stamps are recent: what reading each of those layers gave, to compare with.
    /// Dropped once they are not, as it is never needed again.
    recent: Option<Vec<Option<Seen>>>,
    groups: Arc<[Group]>,
    /// The warnings reading gave, repeated in every answer that uses these groups.
    warnings: Vec<String>,
    /// The trust of each layer inside the project that had hooks.
    assessments: Vec<Assessment>,
    /// The other files the trust depends on, stamped after it was assessed.
    watched: Vec<(std::path::PathBuf, Stamp)>,
    /// Whether a watched file was changing while the trust was assessed: check again next time.
    watched_recent: bool,
    /// The canonical project root the trust was assessed at, when there was trust to assess.
    root: Option<std::path::PathBuf>,
}

/// The cache; the most recently used entry first.
#[derive(Default)]
pub struct Cache {
    entries: Vec<Entry>,
}

impl Cache {
    /// The groups of `event` in the layers at `paths`, read again if anything changed, and their
    /// warnings appended to `warnings`, exactly as reading them afresh would give.
    pub fn groups(
        &mut self,
        paths: &[LayerPath],
        event: &str,
        warnings: &mut Vec<String>,
        trace: &Trace,
        gate: &mut Gate,
        watch: Option<&mut Vec<(std::path::PathBuf, String)>>,
    ) -> Arc<[Group]> {
        let groups = self.groups_of(paths, event, warnings, trace, gate);
        if let (Some(out), Some(entry)) = (watch, self.entries.first()) {
            out.extend(
                entry
                    .paths
                    .iter()
                    .zip(&entry.stamps)
                    .filter_map(|(layer, stamp)| {
                        Some((layer.path.clone(), stamp.as_ref()?.text()))
                    }),
            );
            out.extend(
                entry
                    .watched
                    .iter()
                    .map(|(path, stamp)| (path.clone(), stamp.text())),
            );
        }
        groups
    }

    fn groups_of(
        &mut self,
        paths: &[LayerPath],
        event: &str,
        warnings: &mut Vec<String>,
        trace: &Trace,
        gate: &mut Gate,
    ) -> Arc<[Group]> {
        let checked_at = SystemTime::now();
        // An agent's layer is looked at only where it was read before: whether it is read at
        // all is decided by the user and data layers, which are always looked at.
        let looked: Vec<Option<Stamp>> = paths
            .iter()
            .map(|layer| {
                layer
                    .kind
                    .switch()
                    .is_none()
                    .then(|| Stamp::of(&layer.path))
            })
            .collect();
        let found = self
            .entries
            .iter()
            .position(|e| e.event == event && same_paths(&e.paths, paths));
        if let Some(i) = found {
            let mut entry = self.entries.remove(i);
            if entry.stamps_unchanged(&looked)
                && entry.root_unchanged(gate)
                && entry.watched_unchanged()
                && entry.still_current(checked_at)
            {
                trace.line(format_args!(
                    "settings unchanged since they were read: {} group(s) for {event}",
                    entry.groups.len()
                ));
                warnings.extend(entry.warnings.iter().cloned());
                gate.assessments.clone_from(&entry.assessments);
                let groups = Arc::clone(&entry.groups);
                self.entries.insert(0, entry);
                return groups;
            }
            trace.line(format_args!("settings changed: reading them again"));
        }

        let recent = looked.iter().flatten().any(|s| s.is_recent(checked_at));
        let mut reader = layers::Reader::default();
        let mut seen: Vec<Option<Seen>> = paths.iter().map(|_| None).collect();
        let mut read_warnings = Vec::new();
        // What was read, where a file was; a later look at the path must find the same. A
        // layer not read at all keeps `None`.
        let mut stamps: Vec<Option<Stamp>> = paths.iter().map(|_| None).collect();
        let mut looked = looked;
        let groups = dispatch::load_groups_from(
            paths,
            Events::Only(event),
            &mut read_warnings,
            trace,
            gate,
            |layer| {
                let i = paths
                    .iter()
                    .position(|p| std::ptr::eq(p, layer))
                    .unwrap_or_default();
                let loaded = reader.read(&layer.path);
                let stamp = match &loaded {
                    Loaded::Contents(_, meta) => Stamp::Present(Meta::of(meta)),
                    _ => looked[i].take().unwrap_or_else(|| Stamp::of(&layer.path)),
                };
                if recent || stamp.is_recent(checked_at) {
                    seen[i] = Some(Seen::of(&loaded));
                }
                stamps[i] = Some(stamp);
                loaded
            },
        );
        warnings.extend(read_warnings.iter().cloned());
        let root = (!gate.assessments.is_empty())
            .then(|| crate::fs::canonical(gate.root()).ok())
            .flatten();
        let groups: Arc<[Group]> = groups.into();
        let watched: Vec<_> = gate
            .assessments
            .iter()
            .flat_map(|a| a.watched.iter())
            .map(|path| (path.clone(), Stamp::of(path)))
            .collect();
        let watched_recent = watched.iter().any(|(_, s)| s.is_recent(checked_at));
        self.entries.insert(
            0,
            Entry {
                event: event.to_string(),
                paths: paths.to_vec(),
                stamps,
                recent: seen.iter().any(Option::is_some).then_some(seen),
                groups: Arc::clone(&groups),
                warnings: read_warnings,
                assessments: gate.assessments.clone(),
                watched,
                watched_recent,
                root,
            },
        );
        self.entries.truncate(CAPACITY);
        groups
    }
}

impl Entry {
    /// Returns true if and only if every layer that was read (or looked for) is as it was:
    /// `looked` holds the stamps already taken, the others are taken here.
    fn stamps_unchanged(&self, looked: &[Option<Stamp>]) -> bool {
        self.paths
            .iter()
            .zip(&self.stamps)
            .zip(looked)
            .all(|((layer, stamp), looked)| match (stamp, looked) {
                (None, _) => true,
                (Some(stamp), Some(looked)) => stamp == looked,
                (Some(stamp), None) => Stamp::of(&layer.path) == *stamp,
            })
    }

    /// Returns true if and only if the project root still resolves to the root the trust was
    /// assessed at (always, when there was no trust to assess).
    fn root_unchanged(&self, gate: &Gate) -> bool {
        self.root
            .as_ref()
            .is_none_or(|root| crate::fs::canonical(gate.root()).is_ok_and(|now| now == *root))
    }

    /// Returns true if and only if the files the trust depends on are as they were, and were
    /// not changing when it was assessed.
    fn watched_unchanged(&self) -> bool {
        !self.watched_recent
            && self
                .watched
                .iter()
                .all(|(path, stamp)| Stamp::of(path) == *stamp)
    }

    /// Returns true if and only if the layers still read as they did; only compares contents
    /// while the stamps are recent, and stops once they no longer are.
    fn still_current(&mut self, checked_at: SystemTime) -> bool {
        let Some(seen) = &self.recent else {
            return true;
        };
        let mut reader = layers::Reader::default();
        // Every layer read goes through the reader, in order, so a file reached twice is
        // `Repeated` as it was; only those whose contents were kept are compared.
        let same = self
            .paths
            .iter()
            .zip(&self.stamps)
            .zip(seen)
            .filter(|((_, stamp), _)| stamp.is_some())
            .all(|((layer, _), seen)| {
                let now = reader.read(&layer.path);
                seen.as_ref().is_none_or(|seen| Seen::of(&now) == *seen)
            });
        if same
            && !self
                .stamps
                .iter()
                .flatten()
                .any(|s| s.is_recent(checked_at))
        {
            self.recent = None;
        }
        same
    }
}

fn same_paths(a: &[LayerPath], b: &[LayerPath]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(a, b)| a.kind == b.kind && a.path == b.path)
}

/// What reading one layer gave, to compare with a later reading.
#[derive(PartialEq, Eq)]
enum Seen {
    Missing,
    Repeated,
    Contents(Vec<u8>),
    Unusable(String),
}

impl Seen {
    fn of(loaded: &Loaded) -> Seen {
        match loaded {
            Loaded::Missing => Seen::Missing,
            Loaded::Repeated => Seen::Repeated,
            Loaded::Contents(bytes, _) => Seen::Contents(bytes.clone()),
            Loaded::Unusable(warning) => Seen::Unusable(warning.clone()),
        }
    }
}

/// What a layer path leads to, as far as one `stat` can tell.
#[derive(Debug, PartialEq, Eq)]
enum Stamp {
    Absent,
    /// `stat` failed for another reason; the error code.
    Unreachable(Option<i32>),
    Present(Meta),
}

#[cfg(unix)]
#[derive(Debug, PartialEq, Eq)]
struct Meta {
    dev: u64,
    ino: u64,
    mode: u32,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

#[cfg(not(unix))]
#[derive(Debug, PartialEq, Eq)]
struct Meta {
    is_file: bool,
    size: u64,
    modified: Option<SystemTime>,
    created: Option<SystemTime>,
}

/// A file's stamp as a client compares it with its own `stat` ([`Stamp::text`]).
pub fn stamp_text(path: &Path) -> String {
    Stamp::of(path).text()
}

impl Stamp {
    fn of(path: &Path) -> Stamp {
        match std::fs::metadata(path) {
            Ok(meta) => Stamp::Present(Meta::of(&meta)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Stamp::Absent,
            Err(e) => Stamp::Unreachable(e.raw_os_error()),
        }
    }

    /// The stamp as a client compares it with its own `stat` (docs/serve.md, `options.watch`):
    /// `dev:ino:mode:size:mtime_ns:ctime_ns`, `absent`, or `unreachable`.
    fn text(&self) -> String {
        match self {
            Stamp::Absent => "absent".into(),
            Stamp::Unreachable(_) => "unreachable".into(),
            Stamp::Present(meta) => meta.text(),
        }
    }

    /// Returns true if and only if the file's times are too close to `now` (or after it) for a
    /// write within the same clock tick to be ruled out.
    fn is_recent(&self, now: SystemTime) -> bool {
        match self {
            Stamp::Present(meta) => meta
                .times()
                .into_iter()
                .any(|t| now.duration_since(t).map_or(true, |age| age < RECENT)),
            Stamp::Absent | Stamp::Unreachable(_) => false,
        }
    }
}

#[cfg(unix)]
impl Meta {
    fn of(meta: &std::fs::Metadata) -> Meta {
        use std::os::unix::fs::MetadataExt;
        Meta {
            dev: meta.dev(),
            ino: meta.ino(),
            mode: meta.mode(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    fn text(&self) -> String {
        let ns = |(secs, nanos): (i64, i64)| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
        format!(
            "{}:{}:{}:{}:{}:{}",
            self.dev,
            self.ino,
            self.mode,
            self.size,
            ns(self.mtime),
            ns(self.ctime)
        )
    }

    fn times(&self) -> [SystemTime; 2] {
        [self.mtime, self.ctime].map(|(secs, nanos)| {
            let since = |s: i64| {
                Duration::from_secs(s.unsigned_abs()) + Duration::from_nanos(nanos.unsigned_abs())
            };
            if secs >= 0 {
                SystemTime::UNIX_EPOCH + since(secs)
            } else {
                SystemTime::UNIX_EPOCH - since(secs)
            }
        })
    }
}

#[cfg(not(unix))]
impl Meta {
    fn of(meta: &std::fs::Metadata) -> Meta {
        Meta {
            is_file: meta.is_file(),
            size: meta.len(),
            modified: meta.modified().ok(),
            created: meta.created().ok(),
        }
    }

    fn text(&self) -> String {
        format!(
            "{}:{}:{:?}:{:?}",
            self.is_file, self.size, self.modified, self.created
        )
    }

    fn times(&self) -> Vec<SystemTime> {
        self.modified.into_iter().chain(self.created).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::layers::LayerKind;

    fn layer(path: &Path) -> Vec<LayerPath> {
        vec![LayerPath {
            kind: LayerKind::Cli,
            path: path.to_path_buf(),
        }]
    }

    fn handlers(cache: &mut Cache, paths: &[LayerPath]) -> usize {
        let mut warnings = Vec::new();
        let groups = cache.groups_of(
            paths,
            "Stop",
            &mut warnings,
            &Trace::new(false),
            &mut Gate::new(Path::new("/")),
        );
        groups.iter().map(|g| g.handlers.len()).sum()
    }

    const ONE: &str = r#"{"hooks":{"Stop":[{"hooks":[{"command":"a"},{"command":"b"}]}]}}"#;
    const TWO: &str = r#"{"hooks":{"Stop":[{"hooks":[{"command":"x"},{"command":"y"}]}]}}"#;

    fn first_label(cache: &mut Cache, paths: &[LayerPath]) -> String {
        let mut warnings = Vec::new();
        let groups = cache.groups_of(
            paths,
            "Stop",
            &mut warnings,
            &Trace::new(false),
            &mut Gate::new(Path::new("/")),
        );
        groups[0].handlers[0].label()
    }

    #[test]
    fn a_rewrite_the_stamps_cannot_show_is_caught_while_they_are_recent() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(&file, ONE).unwrap();
        let paths = layer(&file);
        let mut cache = Cache::default();
        assert_eq!(first_label(&mut cache, &paths), "a");
        assert!(cache.entries[0].recent.is_some());
        // The same size within the same clock tick: the stamps are as they were.
        std::fs::write(&file, TWO).unwrap();
        cache.entries[0].stamps = vec![Some(Stamp::of(&file))];
        assert_eq!(first_label(&mut cache, &paths), "x");
    }

    #[test]
    fn contents_stop_being_compared_once_the_stamps_are_old() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(&file, ONE).unwrap();
        let paths = layer(&file);
        let mut cache = Cache::default();
        first_label(&mut cache, &paths);
        let entry = &mut cache.entries[0];
        assert!(entry.still_current(SystemTime::now()));
        assert!(entry.recent.is_some());
        assert!(entry.still_current(SystemTime::now() + RECENT * 2));
        assert!(entry.recent.is_none(), "what was read is let go");
    }

    #[test]
    fn times_after_the_check_count_as_recent() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        let stamp = Stamp::of(&file);
        let now = SystemTime::now();
        assert!(stamp.is_recent(now));
        assert!(stamp.is_recent(now - Duration::from_secs(60)));
        assert!(!stamp.is_recent(now + Duration::from_secs(60)));
        assert!(!Stamp::Absent.is_recent(now));
    }

    #[test]
    fn a_file_appearing_and_disappearing_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        let paths = layer(&file);
        let mut cache = Cache::default();
        assert_eq!(handlers(&mut cache, &paths), 0);
        std::fs::write(&file, ONE).unwrap();
        assert_eq!(handlers(&mut cache, &paths), 2);
        std::fs::remove_file(&file).unwrap();
        assert_eq!(handlers(&mut cache, &paths), 0);
    }
}
