//! The test harness: a temporary HOME and project per test, and a builder that runs the real
//! binary against them.

use std::path::{Path, PathBuf};

/// The binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_levelcode-hooks"))
}

/// Writes `contents` at `path`, creating its folders.
pub fn write(path: &Path, contents: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, contents).unwrap();
}
