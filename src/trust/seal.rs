//! The seal of a trusted project: the identity of its settings file and of every path its
//! handlers name, taken when the person trusted it. While every identity is unchanged the files
//! are the ones that were hashed, so a dispatch admits the project without parsing every event
//! of the layer and hashing every script again; any difference, and the digest is computed as
//! before. `serve` relies on the same identities (docs/serve.md).
//!
//! An identity is the file's type, size, device, inode, and modification and change times to
//! the nanosecond (or that nothing is there). Content cannot change without moving the change
//! time, which no unprivileged process can set back, except within one tick of the file
//! system's clock: a seal is therefore taken only when no file changed in the last
//! [`SETTLED`], and taken twice, around the digest it vouches for, so that a write in between
//! leaves the project unsealed.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How long ago every sealed file must have last changed.
pub const SETTLED: Duration = Duration::from_secs(2);

/// What a seal records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seal {
    /// The handlers the trusted layer holds.
    pub handlers: usize,
    /// Each path with its identity, the settings file first.
    pub files: Vec<(String, String)>,
}

impl Seal {
    /// The seal of `settings` and `named` as they are now, unless a file changed within
    /// [`SETTLED`] or a path is not UTF-8.
    pub fn take(settings: &Path, named: &[PathBuf], handlers: usize) -> Option<Seal> {
        let now = SystemTime::now();
        let mut files: Vec<(String, String)> = Vec::with_capacity(named.len() + 1);
        for path in std::iter::once(settings).chain(named.iter().map(PathBuf::as_path)) {
            // A path with nothing there is sealed by its nearest folder that exists: nothing
            // can appear below it without changing that folder's entries, and so its times.
            // Many named paths in one missing folder then cost one `stat`.
            let mut at = path;
            let (mut identity, mut changed) = identity(at);
            while changed.is_none() {
                let Some(parent) = at.parent() else { break };
                at = parent;
                (identity, changed) = self::identity(at);
            }
            if changed.is_some_and(|t| now.duration_since(t).map_or(true, |age| age < SETTLED)) {
                return None;
            }
            let at = at.to_str()?;
            if !files.iter().any(|(sealed, _)| sealed == at) {
                files.push((at.to_string(), identity));
            }
        }
        Some(Seal { handlers, files })
    }

    /// Returns true if and only if every sealed path has the identity it had, and `settings`
    /// (the file a dispatch read, by whatever path it reached it) is the sealed settings file.
    pub fn holds(&self, settings: &Path) -> bool {
        let Some((_, sealed_settings)) = self.files.first() else {
            return false;
        };
        identity(settings).0 == *sealed_settings
            && self
                .files
                .iter()
                .all(|(path, sealed)| identity(Path::new(path)).0 == *sealed)
    }

    /// The sealed paths.
    pub fn paths(&self) -> impl Iterator<Item = PathBuf> + '_ {
        self.files.iter().map(|(path, _)| PathBuf::from(path))
    }
}

/// A path's identity, and when it last changed (none when nothing is there).
fn identity(path: &Path) -> (String, Option<SystemTime>) {
    let Ok(meta) = std::fs::metadata(path) else {
        return ("absent".to_string(), None);
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let changed = SystemTime::UNIX_EPOCH
            + Duration::new(
                u64::try_from(meta.ctime()).unwrap_or(0),
                u32::try_from(meta.ctime_nsec()).unwrap_or(0),
            );
        (
            format!(
                "{:o}:{}:{}:{}:{}.{}:{}.{}",
                meta.mode(),
                meta.size(),
                meta.dev(),
                meta.ino(),
                meta.mtime(),
                meta.mtime_nsec(),
                meta.ctime(),
                meta.ctime_nsec()
            ),
            Some(changed),
        )
    }
    #[cfg(not(unix))]
    {
        let modified = meta.modified().ok();
        let nanos = modified
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        (format!("{}:{nanos}", meta.len()), modified)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file's change time cannot be set back, so a test waits until its files are settled.
    fn settle() {
        std::thread::sleep(SETTLED + Duration::from_millis(100));
    }

    #[test]
    fn a_seal_holds_until_a_sealed_path_changes() {
        let dir = tempfile::tempdir().unwrap();
        let settings = dir.path().join("settings.json");
        let script = dir.path().join("guard.sh");
        let missing = dir.path().join("later.sh");
        std::fs::write(&settings, "{}").unwrap();
        std::fs::write(&script, "exit 0").unwrap();
        assert_eq!(
            Seal::take(&settings, std::slice::from_ref(&script), 1),
            None,
            "fresh files are not sealed"
        );
        settle();
        let seal = Seal::take(&settings, &[script.clone(), missing.clone()], 1).expect("settled");
        // The missing file is sealed by its folder.
        let folder = dir.path().to_str().unwrap();
        assert_eq!(seal.files.len(), 3, "{:?}", seal.files);
        assert_eq!(seal.files[2].0, folder);
        assert!(seal.holds(&settings));
        assert!(
            !seal.holds(&script),
            "another file is not the sealed settings file"
        );

        // The same size and content, written again: the change time moves.
        std::fs::write(&script, "exit 0").unwrap();
        assert!(!seal.holds(&settings), "a rewrite breaks the seal");
        settle();
        let seal = Seal::take(&settings, &[script.clone(), missing.clone()], 1).unwrap();
        assert!(seal.holds(&settings));
        std::fs::write(&missing, "new").unwrap();
        assert!(
            !seal.holds(&settings),
            "a file appearing at a named path breaks the seal"
        );
    }
}
