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
/// What a seal's paths and identities may add up to: a project whose seal would be larger is
/// trusted without one (each dispatch then computes the digest), so that one project cannot
/// fill the store.
pub const MAX_BYTES: usize = 1 << 20;

/// The format of the seals the store holds. A seal of an older format is no seal: the digests
/// it vouched for did not cover what the hooks folder's links lead to, so a dispatch computes
/// the digest once more, and seals it again when it is still the trusted one.
pub const FORMAT: u64 = 2;

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
    /// [`SETTLED`], a path is not UTF-8, or the seal would be over [`MAX_BYTES`].
    pub fn take(settings: &Path, named: &[PathBuf], handlers: usize) -> Option<Seal> {
        Seal::take_settled_by(settings, named, handlers, SystemTime::now())
    }

    /// [`Seal::take`], refusing files that changed later than [`SETTLED`] before `now`. Given the
    /// moment a digest started to be computed, it vouches for that digest with one look at the
    /// files: a write after that moment has a change time within [`SETTLED`] of it (a file
    /// system's clock lags by a tick at most), so it leaves the project unsealed.
    pub fn take_settled_by(
        settings: &Path,
        named: &[PathBuf],
        handlers: usize,
        now: SystemTime,
    ) -> Option<Seal> {
        let mut files: Vec<(String, String)> = Vec::with_capacity(named.len() + 1);
        let mut size = 0usize;
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
                // Each pair as the store writes it, quotes and escapes included, at most.
                size += 2 * (at.len() + identity.len()) + 8;
                if size > MAX_BYTES {
                    return None;
                }
                files.push((at.to_string(), identity));
            }
        }
        Some(Seal { handlers, files })
    }

    /// Returns true if and only if every sealed path has the identity it had, and `read` (the
    /// identity of the open file a dispatch read the settings from, taken once it was read, by
    /// whatever path it reached it) is the sealed settings file's: a settings path that a
    /// writer flips between two files cannot have one file read and the other one sealed.
    pub fn holds(&self, read: &std::fs::Metadata) -> bool {
        let Some((_, sealed_settings)) = self.files.first() else {
            return false;
        };
        is_identity(sealed_settings, read)
            && self
                .files
                .iter()
                .all(|(path, sealed)| match std::fs::metadata(path) {
                    Ok(meta) => is_identity(sealed, &meta),
                    Err(_) => sealed == "absent",
                })
    }

    /// The sealed paths.
    pub fn paths(&self) -> impl Iterator<Item = PathBuf> + '_ {
        self.files.iter().map(|(path, _)| PathBuf::from(path))
    }
}

/// Returns true if and only if `sealed` is the identity of a file whose metadata is `meta`:
/// the same as comparing with [`identity_of`], without formatting one (a dispatch compares
/// every sealed path, and reading numbers costs less than writing them).
#[cfg(unix)]
fn is_identity(sealed: &str, meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    // One pass over the bytes: `split` and `parse` cost several times more.
    let mut rest = sealed.as_bytes();
    let mut unsigned = |radix: u64, end: Option<u8>| next_number(&mut rest, radix, end);
    let (Some(mode), Some(size), Some(dev), Some(ino)) = (
        unsigned(8, Some(b':')),
        unsigned(10, Some(b':')),
        unsigned(10, Some(b':')),
        unsigned(10, Some(b':')),
    ) else {
        return false;
    };
    if mode != u64::from(meta.mode())
        || size != meta.size()
        || dev != meta.dev()
        || ino != meta.ino()
    {
        return false;
    }
    is_time(&mut rest, meta.mtime(), meta.mtime_nsec(), Some(b':'))
        && is_time(&mut rest, meta.ctime(), meta.ctime_nsec(), None)
}

/// Reads `<seconds>.<nanoseconds>` off `rest`, then `end` (or the end of the text), and returns
/// true if and only if it is this time.
#[cfg(unix)]
fn is_time(rest: &mut &[u8], secs: i64, nanos: i64, end: Option<u8>) -> bool {
    let negative = rest.first() == Some(&b'-');
    if negative {
        *rest = &rest[1..];
    }
    let Some(s) = next_number(rest, 10, Some(b'.')) else {
        return false;
    };
    let s = if negative {
        0i64.checked_sub_unsigned(s)
    } else {
        i64::try_from(s).ok()
    };
    s == Some(secs) && next_number(rest, 10, end).and_then(|n| i64::try_from(n).ok()) == Some(nanos)
}

/// The digits at the start of `rest` in `radix`, which must be followed by `end` (or the end of
/// the text, for `None`); `rest` is left after it.
#[cfg(unix)]
fn next_number(rest: &mut &[u8], radix: u64, end: Option<u8>) -> Option<u64> {
    let mut value = 0u64;
    let mut digits = 0;
    while let Some(&b) = rest.first() {
        let digit = u64::from(b.wrapping_sub(b'0'));
        if digit >= radix {
            break;
        }
        value = value.checked_mul(radix)?.checked_add(digit)?;
        digits += 1;
        *rest = &rest[1..];
    }
    if digits == 0 {
        return None;
    }
    match (end, rest.first()) {
        (None, None) => Some(value),
        (Some(end), Some(&b)) if b == end => {
            *rest = &rest[1..];
            Some(value)
        }
        _ => None,
    }
}

#[cfg(not(unix))]
fn is_identity(sealed: &str, meta: &std::fs::Metadata) -> bool {
    identity_of(meta).0 == sealed
}

/// A path's identity, and when it last changed (none when nothing is there).
fn identity(path: &Path) -> (String, Option<SystemTime>) {
    match std::fs::metadata(path) {
        Ok(meta) => identity_of(&meta),
        Err(_) => ("absent".to_string(), None),
    }
}

/// The identity of a file whose metadata is `meta`, and when it last changed.
fn identity_of(meta: &std::fs::Metadata) -> (String, Option<SystemTime>) {
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
        let meta = |path: &Path| std::fs::metadata(path).unwrap();
        assert!(seal.holds(&meta(&settings)));
        assert!(
            !seal.holds(&meta(&script)),
            "another file read is not the sealed settings file"
        );

        // The same size and content, written again: the change time moves.
        std::fs::write(&script, "exit 0").unwrap();
        assert!(!seal.holds(&meta(&settings)), "a rewrite breaks the seal");
        settle();
        let seal = Seal::take(&settings, &[script.clone(), missing.clone()], 1).unwrap();
        assert!(seal.holds(&meta(&settings)));
        std::fs::write(&missing, "new").unwrap();
        assert!(
            !seal.holds(&meta(&settings)),
            "a file appearing at a named path breaks the seal"
        );
    }

    #[test]
    fn an_identity_is_read_back_as_it_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let meta = std::fs::metadata(&file).unwrap();
        let (written, _) = identity_of(&meta);
        assert!(is_identity(&written, &meta), "{written}");
        assert!(!is_identity("absent", &meta));
        assert!(!is_identity(&format!("{written}:1"), &meta));
        assert!(!is_identity(&format!("{written}0"), &meta));
        assert!(!is_identity(&format!("+{written}"), &meta));
        for end in 0..written.len() {
            assert!(!is_identity(&written[..end], &meta), "{}", &written[..end]);
        }
        // A time before 1970 reads back too.
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(SystemTime::UNIX_EPOCH - Duration::new(5, 250))
            .unwrap();
        let meta = std::fs::metadata(&file).unwrap();
        let (written, _) = identity_of(&meta);
        assert!(written.contains(":-6.999999750:"), "{written}");
        assert!(is_identity(&written, &meta), "{written}");
        let dir_meta = std::fs::metadata(dir.path()).unwrap();
        assert!(!is_identity(&written, &dir_meta));
    }

    /// A same-size edit whose modification time is put back, as `cp -p` and `tar` do: only the
    /// change time shows it.
    #[test]
    fn an_edit_with_its_modification_time_put_back_breaks_the_seal() {
        let dir = tempfile::tempdir().unwrap();
        let settings = dir.path().join("settings.json");
        let script = dir.path().join("guard.sh");
        std::fs::write(&settings, "{}").unwrap();
        std::fs::write(&script, "exit 0").unwrap();
        settle();
        let seal = Seal::take(&settings, std::slice::from_ref(&script), 1).unwrap();
        let modified = std::fs::metadata(&script).unwrap().modified().unwrap();
        std::fs::write(&script, "exit 2").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&script)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        assert_eq!(
            std::fs::metadata(&script).unwrap().modified().unwrap(),
            modified
        );
        assert!(!seal.holds(&std::fs::metadata(&settings).unwrap()));
    }

    #[test]
    fn a_seal_too_large_for_the_store_is_not_taken() {
        let dir = tempfile::tempdir().unwrap();
        let settings = dir.path().join("settings.json");
        std::fs::write(&settings, "{}").unwrap();
        settle();
        let long = "x".repeat(200);
        let named: Vec<PathBuf> = (0..4000)
            .map(|i| {
                let file = dir.path().join(format!("{i}-{long}"));
                std::fs::write(&file, "").unwrap();
                file
            })
            .collect();
        settle();
        assert!(Seal::take(&settings, &named[..10], 1).is_some());
        assert_eq!(Seal::take(&settings, &named, 1), None);
    }
}
