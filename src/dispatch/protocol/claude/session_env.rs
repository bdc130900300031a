//! `CLAUDE_ENV_FILE` (contract §12): on `SessionStart`, a Claude Code handler may write
//! `export` lines into a fresh file; what it wrote is returned as the output's `session_env`, for
//! the agent to apply to the commands it runs, and the file is removed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// The variable that names the file.
pub const VARIABLE: &str = "CLAUDE_ENV_FILE";

/// How many files [`create`] has made in this process, so that each name is new.
static COUNT: AtomicU32 = AtomicU32::new(0);

/// Returns true if and only if this process has given a handler a `CLAUDE_ENV_FILE`; a value
/// the dispatcher itself inherited is then no longer passed on (`Rules::given_before`).
pub fn given_before() -> bool {
    COUNT.load(Ordering::Relaxed) > 0
}

/// A fresh, empty file for one handler (mode 0600), or `None` with a warning when none can be
/// made.
pub fn create(warnings: &mut Vec<String>) -> Option<PathBuf> {
    let dir = std::env::temp_dir();
    let mut last_error = None;
    for _ in 0..8 {
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = dir.join(format!(
            "levelcode-hooks-env-{}-{n}-{nanos:x}.sh",
            std::process::id()
        ));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        match options.open(&path) {
            Ok(_) => return Some(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                last_error = Some(e);
                break;
            }
        }
    }
    warnings.push(format!(
        "cannot create a file for CLAUDE_ENV_FILE in {}{}; Claude Code handlers run without it",
        dir.display(),
        last_error.map(|e| format!(": {e}")).unwrap_or_default()
    ));
    None
}

/// What the handler wrote to `file`, for the output's `session_env`, or the warning when it
/// cannot be read; the file is removed.
pub fn collect(file: &Path) -> Result<Option<String>, String> {
    let written = match std::fs::read(file) {
        Ok(bytes) if !bytes.is_empty() => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Ok(_) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => Err(format!(
            "CLAUDE_ENV_FILE {}: cannot read what the handler wrote: {e}",
            file.display()
        )),
    };
    let _ = std::fs::remove_file(file);
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::output::Report;

    fn collect_into(file: &Path, report: &mut Report) {
        match collect(file) {
            Ok(Some(text)) => report.add_session_env(&text),
            Ok(None) => {}
            Err(warning) => report.warnings.push(warning),
        }
    }

    #[test]
    fn each_file_is_fresh_and_collected_once() {
        let mut warnings = Vec::new();
        let a = create(&mut warnings).expect("a file in the temporary directory");
        let b = create(&mut warnings).expect("another");
        assert_ne!(a, b);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(std::fs::read(&a).unwrap(), b"");
        std::fs::write(&a, "export A=1").unwrap();
        std::fs::write(&b, "export B=2\n").unwrap();
        let mut report = Report::new(Some("SessionStart".into()), None, std::time::Instant::now());
        collect_into(&a, &mut report);
        collect_into(&b, &mut report);
        assert_eq!(
            report.session_env.as_deref(),
            Some("export A=1\nexport B=2\n")
        );
        assert!(!a.exists() && !b.exists(), "the files are removed");
        // A handler that removed its file itself leaves nothing to say.
        collect_into(&a, &mut report);
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    }
}
