//! Files as the dispatcher touches them, in one place: opening without ever blocking, replacing a
//! file atomically, creating a private folder, and the clock records are stamped with.
//!
//! Settings files, the trust store, the compliance log and the execution log are all named by
//! the person or found under their home; any of them may turn out to be a FIFO or a device. An
//! open here never waits for a writer to appear, and [`open_regular`] refuses what is not a
//! regular file, so a wrong file costs a warning, never a hung tool call.

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

/// Opens `path` with `options`, never blocking: on Unix with `O_NONBLOCK`, so a FIFO with no
/// writer opens at once instead of waiting for one.
pub(crate) fn open_nonblocking(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    open_with_flags(path, options, 0)
}

/// Opens `path` for reading like [`open_nonblocking`], refusing a symbolic link as its last
/// component (`O_NOFOLLOW` on Unix).
pub(crate) fn open_nonblocking_no_symlink(path: &Path) -> io::Result<File> {
    #[cfg(unix)]
    let extra = libc::O_NOFOLLOW;
    #[cfg(not(unix))]
    let extra = 0;
    open_with_flags(path, OpenOptions::new().read(true), extra)
}

/// Opens `path` like [`open_nonblocking`], then refuses anything but a regular file (a folder, a
/// FIFO, a device) with the error "not a regular file".
pub(crate) fn open_regular(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let file = open_nonblocking(path, options)?;
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(io::Error::other("not a regular file"))
    }
}

/// Reads the whole regular file at `path` as text (see [`open_regular`]).
pub(crate) fn read_regular(path: &Path) -> io::Result<String> {
    let mut text = String::new();
    io::Read::read_to_string(
        &mut open_regular(path, OpenOptions::new().read(true))?,
        &mut text,
    )?;
    Ok(text)
}

/// The rest of `file`, whose metadata gave its length as `expected`, up to `limit` bytes (one
/// more, to tell a file that grew past it). A small file's first read asks for one byte more
/// than expected: when it gives exactly the expected bytes, the end is reached and no second
/// read is made to hear it; a file that grew or a read that stopped short goes on to the end.
/// A larger file is read into memory that is not zeroed first, which costs more than that
/// second read saves.
pub(crate) fn read_expected(file: &mut File, expected: u64, limit: u64) -> io::Result<Vec<u8>> {
    use io::Read as _;
    const SMALL: u64 = 16 << 10;
    let first = usize::try_from(expected.min(limit)).unwrap_or(0) + 1;
    if expected > SMALL {
        let mut bytes = Vec::with_capacity(first);
        file.take(limit + 1).read_to_end(&mut bytes)?;
        return Ok(bytes);
    }
    let mut bytes = vec![0; first];
    let n = loop {
        match file.read(&mut bytes) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            read => break read?,
        }
    };
    bytes.truncate(n);
    if n + 1 != first {
        let rest = (limit + 1).saturating_sub(n as u64);
        file.take(rest).read_to_end(&mut bytes)?;
    }
    Ok(bytes)
}

/// `path` made absolute with every symbolic link resolved, as [`Path::canonicalize`] makes it;
/// with one system call instead of one per component when it names the current directory.
/// The kernel gives the current directory's path with nothing left to resolve, so a path that
/// equals it (component by component) is its own canonical form.
pub(crate) fn canonical(path: &Path) -> io::Result<PathBuf> {
    if path.is_absolute() {
        if let Ok(cwd) = std::env::current_dir() {
            if cwd == path {
                return Ok(cwd);
            }
        }
    }
    path.canonicalize()
}

/// Sets the permissions a file created through `options` gets (Unix; the umask still applies).
/// Elsewhere it does nothing.
pub(crate) fn with_mode(options: &mut OpenOptions, mode: u32) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    options
}

fn open_with_flags(path: &Path, options: &mut OpenOptions, extra: i32) -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NONBLOCK | extra);
    }
    #[cfg(not(unix))]
    let _ = extra;
    options.open(path)
}

/// Who else may be replacing the same file at the same time, which decides the temporary file's
/// name in [`write_atomically`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Writers {
    /// Only the caller, which holds a lock: the temporary file is `<name>.tmp`, and one left
    /// behind by a writer that crashed is removed first.
    LockHeld,
    /// Anyone: the temporary file is `<name>.<pid>.tmp`, so two processes never write the same
    /// one.
    Unlocked,
}

/// Replaces `path` with `contents`: written to a temporary file beside it (created with `mode`
/// on Unix, so the file never exists with looser permissions), synced to disk, renamed over
/// `path`, and the folder synced so the rename survives a crash too. A crash leaves the old file
/// or the new one, never a part of either. The temporary file is removed when a step fails.
pub(crate) fn write_atomically(
    path: &Path,
    contents: &[u8],
    mode: u32,
    writers: Writers,
) -> io::Result<()> {
    let tmp = match writers {
        Writers::LockHeld => with_suffix(path, ".tmp"),
        Writers::Unlocked => with_suffix(path, &format!(".{}.tmp", std::process::id())),
    };
    // A crash of an earlier writer may have left one; only the lock holder writes it.
    let _ = std::fs::remove_file(&tmp);
    let written = (|| {
        let mut file =
            with_mode(OpenOptions::new().write(true).create_new(true), mode).open(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    sync_folder(path.parent().unwrap_or(Path::new(".")));
    Ok(())
}

/// Makes a rename in `dir` durable. Best effort: not every platform or file system can sync a
/// folder, and the data itself is already on disk.
pub(crate) fn sync_folder(dir: &Path) {
    #[cfg(unix)]
    if let Ok(folder) = File::open(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    }) {
        let _ = folder.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// Creates `dir` and its missing parents; those it creates are private to the owner (mode 0700
/// on Unix), for the folders that hold a signing key or the trust store.
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// `path` with `suffix` added to its file name: `store.json` and `.lock` make `store.json.lock`.
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// Milliseconds since the Unix epoch (0 if the clock is before it), for the records' times.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The proleptic Gregorian date of a day number counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`): the date of the execution log's and the compliance log's records.
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let month = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `path` without `.` and with each `..` taking away the component before it, as text: no
/// symbolic link is followed, so this is what the path says, not where it leads.
pub fn normalize(path: &std::path::Path) -> std::path::PathBuf {
    let mut out = std::path::PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if matches!(
                    out.components().next_back(),
                    Some(std::path::Component::Normal(_))
                ) {
                    out.pop();
                } else if !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn mode_of(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[cfg(unix)]
    fn mkfifo(path: &Path) {
        use std::os::unix::ffi::OsStrExt as _;
        let name = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: `name` is a valid NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn a_file_is_read_whole_whatever_its_metadata_said_up_to_one_byte_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        for len in [0usize, 1, 100, 16 << 10, (16 << 10) + 1, 100_000] {
            let contents: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            std::fs::write(&path, &contents).unwrap();
            // As stat said, as if it grew after stat, as if it shrank.
            for expected in [len, len.saturating_sub(7), len + 7, 0] {
                let mut file = File::open(&path).unwrap();
                let read = read_expected(&mut file, expected as u64, 1 << 20).unwrap();
                assert_eq!(read, contents, "{len} bytes, {expected} expected");
            }
            let mut file = File::open(&path).unwrap();
            let limited = read_expected(&mut file, len as u64, 50).unwrap();
            assert_eq!(limited, contents[..len.min(51)], "{len} bytes, limit 50");
        }
    }

    #[test]
    fn a_canonical_path_is_what_canonicalize_gives() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let cwd = std::env::current_dir().unwrap();
        let mut paths = vec![
            cwd.clone(),
            cwd.join("."),
            real.clone(),
            dir.path().join("missing"),
        ];
        #[cfg(unix)]
        {
            let link = dir.path().join("link");
            std::os::unix::fs::symlink(&real, &link).unwrap();
            paths.push(link.join("."));
            paths.push(link);
        }
        for path in paths {
            assert_eq!(
                canonical(&path).ok(),
                path.canonicalize().ok(),
                "{}",
                path.display()
            );
        }
    }

    #[test]
    fn an_atomic_write_replaces_the_file_with_the_mode_asked_for_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.json");
        std::fs::write(&path, "old").unwrap();
        for (mode, writers) in [(0o600, Writers::LockHeld), (0o400, Writers::Unlocked)] {
            write_atomically(&path, b"new", mode, writers).unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
            #[cfg(unix)]
            assert_eq!(mode_of(&path), mode, "{writers:?}");
            let names: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(names, ["store.json"], "{writers:?}");
        }
    }

    #[test]
    fn a_temporary_file_left_by_a_crashed_lock_holder_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("head");
        std::fs::write(with_suffix(&path, ".tmp"), "half a fi").unwrap();
        write_atomically(&path, b"whole", 0o644, Writers::LockHeld).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "whole");
        assert!(!with_suffix(&path, ".tmp").exists());
    }

    #[test]
    fn a_failed_atomic_write_keeps_the_old_file_and_removes_its_temporary() {
        let dir = tempfile::tempdir().unwrap();
        // The target is a non-empty folder: the rename fails after the temporary is written.
        let path = dir.path().join("target");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("inside"), "kept").unwrap();
        for writers in [Writers::LockHeld, Writers::Unlocked] {
            assert!(write_atomically(&path, b"new", 0o600, writers).is_err());
            assert_eq!(
                std::fs::read_to_string(path.join("inside")).unwrap(),
                "kept"
            );
            let names: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(names, ["target"], "{writers:?}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_opens_without_a_writer_and_is_refused_as_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        // A blocking open would wait here for a writer that never comes.
        let file = open_nonblocking(&fifo, OpenOptions::new().read(true)).unwrap();
        {
            use std::os::unix::fs::FileTypeExt as _;
            assert!(file.metadata().unwrap().file_type().is_fifo());
        }
        let err = open_regular(&fifo, OpenOptions::new().read(true)).unwrap_err();
        assert_eq!(err.to_string(), "not a regular file");
        assert!(read_regular(&fifo).is_err());
        let err = open_regular(dir.path(), OpenOptions::new().read(true)).unwrap_err();
        assert_eq!(err.to_string(), "not a regular file");
        std::fs::write(dir.path().join("file"), "text").unwrap();
        assert_eq!(read_regular(&dir.path().join("file")).unwrap(), "text");
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_is_refused_only_where_asked() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("script.sh");
        std::fs::write(&target, "echo hi").unwrap();
        let link = dir.path().join("link.sh");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(open_nonblocking_no_symlink(&target).is_ok());
        let err = open_nonblocking_no_symlink(&link).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ELOOP), "{err}");
        assert!(open_nonblocking(&link, OpenOptions::new().read(true)).is_ok());
        // A FIFO needs no writer through this open either.
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        assert!(open_nonblocking_no_symlink(&fifo).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn a_file_created_through_with_mode_has_that_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let file = open_regular(
            &path,
            with_mode(OpenOptions::new().append(true).create(true), 0o600),
        )
        .unwrap();
        drop(file);
        assert_eq!(mode_of(&path), 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn private_folders_are_created_with_their_parents_for_the_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c");
        create_private_dir(&deep).unwrap();
        for folder in ["a", "a/b", "a/b/c"] {
            assert_eq!(mode_of(&dir.path().join(folder)), 0o700, "{folder}");
        }
        // A folder that exists is left as it is.
        create_private_dir(&deep).unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert!(create_private_dir(&file).is_err());
    }

    #[test]
    fn the_clock_is_past_2020_and_does_not_go_back() {
        let first = now_ms();
        assert!(first > 1_577_836_800_000, "{first}");
        assert!(now_ms() >= first);
    }

    #[test]
    fn a_suffix_goes_on_the_file_name() {
        assert_eq!(
            with_suffix(Path::new("/d/store.json"), ".lock"),
            Path::new("/d/store.json.lock")
        );
    }
}
