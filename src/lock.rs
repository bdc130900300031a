//! Waiting for an exclusive lock on a file that other dispatchers may hold for a moment: the
//! compliance log's append lock and the trust store's lock share it.

use std::fs::{File, TryLockError};
use std::path::Path;
use std::time::{Duration, Instant};

/// Takes `file`'s exclusive lock, retrying with growing pauses (1 ms, doubling up to 8 ms) for
/// at most `wait`; the error names `path` and what to do.
pub(crate) fn exclusive(file: &File, path: &Path, wait: Duration) -> Result<(), String> {
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(8));
            }
            Err(TryLockError::WouldBlock) => {
                return Err(format!(
                    "{} stayed locked by another process for {} s; if no levelcode-hooks process \
                     is still running, find the process holding it",
                    path.display(),
                    wait.as_secs()
                ));
            }
            Err(TryLockError::Error(e)) => {
                return Err(format!("cannot lock {}: {e}", path.display()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_is_waited_for_then_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let holder = File::create(&path).unwrap();
        holder.lock().unwrap();
        let other = File::open(&path).unwrap();
        let started = Instant::now();
        let err = exclusive(&other, &path, Duration::from_millis(50)).unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert!(err.contains("stayed locked"), "{err}");
        holder.unlock().unwrap();
        exclusive(&other, &path, Duration::from_millis(50)).unwrap();
    }
}
