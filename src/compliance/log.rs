//! Appending one signed line to a team's log, under an exclusive lock.
//!
//! Under the lock a writer reads where the chain stands (the last signed line of the log and the
//! head file), creates the key pair if there is none, writes its line with one `write`, syncs
//! it to disk, and replaces the head file. Concurrent dispatchers therefore never interleave
//! bytes or fork the chain. Waiting for the lock is bounded: a lock that never frees costs a
//! warning, never a hung tool call.

use std::fs::{File, OpenOptions};
use std::io::{self, Read as _, Seek as _, SeekFrom, Write as _};
use std::path::Path;
use std::time::Duration;

use super::chain::{self, Head};
use super::event::ToolCallEvent;
use super::js_json;
use super::keys;

/// The log's file name inside `<data dir>/swarm/<team>/compliance/`.
pub const LOG_FILE: &str = "events.jsonl";

/// How long a writer waits for another one to finish before giving up with a warning.
const LOCK_WAIT: Duration = Duration::from_secs(2);

/// Appends `event` as the next signed line of the log in `dir`.
pub fn append(dir: &Path, event: &ToolCallEvent) -> Result<(), String> {
    crate::fs::create_private_dir(dir).map_err(|e| {
        format!(
            "cannot create the folder {}: {e}; check that each part of that path is a writable folder",
            dir.display()
        )
    })?;
    let log_path = dir.join(LOG_FILE);
    let mut file = crate::fs::open_regular(
        &log_path,
        OpenOptions::new().read(true).append(true).create(true),
    )
    .map_err(|e| {
        format!(
            "cannot open {}: {e}; check that it is a writable file",
            log_path.display()
        )
    })?;
    crate::lock::exclusive(&file, &log_path, LOCK_WAIT)?;
    let result = append_locked(dir, &log_path, &mut file, event);
    // Closing the file releases the lock too; unlocking first only makes it prompt.
    let _ = file.unlock();
    result
}

fn append_locked(
    dir: &Path,
    log_path: &Path,
    file: &mut File,
    event: &ToolCallEvent,
) -> Result<(), String> {
    let key = keys::load_or_create(dir)?;
    let tail = read_tail(file).map_err(|e| format!("cannot read {}: {e}", log_path.display()))?;
    let head_path = chain::head_path(log_path);
    // An unreadable head is ignored: the log's own tail still says where the chain stands, and
    // refusing to write would lose every later tool call.
    let head = chain::read_head(&head_path)
        .ok()
        .flatten()
        .map(|record| record.head);
    let (seq, prev) = match next_link(tail.last, head) {
        Some(last) => (last.seq.saturating_add(1), last.hash),
        None => (0, chain::GENESIS.to_string()),
    };

    let line = chain::seal(event.to_object(), seq, &prev, &key);
    let mut bytes = Vec::with_capacity(line.len() + 2);
    // A line cut short by a crash or a full disk must not swallow ours.
    if !tail.ends_with_newline {
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    // One write per line: with O_APPEND and the lock held, it lands whole at the end.
    file.write_all(&bytes)
        .and_then(|()| file.sync_data())
        .map_err(|e| {
            format!(
                "cannot append to {}: {e}; check free space and permissions",
                log_path.display()
            )
        })?;

    let head = Head {
        seq,
        hash: chain::line_hash(line.as_bytes()),
    };
    head.write(&head_path, &key).map_err(|e| {
        format!(
            "the line was appended but {} could not be updated: {e}; `compliance verify` will \
             report the head as behind until the next successful append",
            head_path.display()
        )
    })?;
    Ok(())
}

/// Where to continue the chain: after the further of the log's last signed line and the head.
///
/// A log ahead of its head means a writer stopped between the two writes; a head ahead of the
/// log means lines were cut off the end, and continuing after the head keeps that gap visible
/// to `verify` instead of papering over it.
fn next_link(tail: Option<Head>, head: Option<Head>) -> Option<Head> {
    match (tail, head) {
        (Some(tail), Some(head)) => Some(if tail.seq > head.seq { tail } else { head }),
        (tail, head) => tail.or(head),
    }
}

/// What the end of the log says.
struct Tail {
    /// The last line that carries a signature and a `seq`.
    last: Option<Head>,
    ends_with_newline: bool,
}

/// Reads the log backwards from its end until the last signed line, so an append costs the size
/// of the last few lines, not of the whole log.
fn read_tail(file: &mut File) -> io::Result<Tail> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(Tail {
            last: None,
            ends_with_newline: true,
        });
    }
    let mut last_byte = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1))?;
    file.read_exact(&mut last_byte)?;
    let ends_with_newline = last_byte[0] == b'\n';
    let mut end = if ends_with_newline { len - 1 } else { len };
    loop {
        let start = line_start(file, end)?;
        let line = read_range(file, start, end)?;
        if let Some(link) = signed_link(&line) {
            return Ok(Tail {
                last: Some(link),
                ends_with_newline,
            });
        }
        if start == 0 {
            return Ok(Tail {
                last: None,
                ends_with_newline,
            });
        }
        end = start - 1;
    }
}

/// The offset where the line ending at `end` starts.
fn line_start(file: &mut File, end: u64) -> io::Result<u64> {
    const CHUNK: u64 = 64 * 1024;
    let mut buf = vec![0u8; 64 * 1024];
    let mut pos = end;
    while pos > 0 {
        let from = pos.saturating_sub(CHUNK);
        let chunk = &mut buf[..usize::try_from(pos - from).unwrap_or(0)];
        file.seek(SeekFrom::Start(from))?;
        file.read_exact(chunk)?;
        if let Some(at) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(from + at as u64 + 1);
        }
        pos = from;
    }
    Ok(0)
}

fn read_range(file: &mut File, start: u64, end: u64) -> io::Result<Vec<u8>> {
    let len = usize::try_from(end - start).map_err(|_| io::Error::other("line too long"))?;
    let mut line = vec![0u8; len];
    file.seek(SeekFrom::Start(start))?;
    file.read_exact(&mut line)?;
    Ok(line)
}

/// The chain link a line provides, when it is one of ours.
fn signed_link(line: &[u8]) -> Option<Head> {
    chain::split_signed(line)?;
    let text = std::str::from_utf8(line).ok()?;
    let object = js_json::parse(text).ok()?;
    Some(Head {
        seq: chain::seq_field(object.as_object()?, "seq")?,
        hash: chain::line_hash(line),
    })
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::time::Instant;

    use super::*;
    use crate::compliance::js_json::Value;

    fn event(n: u32) -> ToolCallEvent {
        let hook = js_json::parse(&format!(
            r#"{{"tool_name":"write_file","tool_call_id":"call-{n}","tool_input":{{"n":{n}}}}}"#
        ))
        .expect("json");
        ToolCallEvent::from_hook_payload(hook.as_object().expect("object"), 1_700_000_000_000)
    }

    fn lines(dir: &Path) -> Vec<String> {
        fs::read_to_string(dir.join(LOG_FILE))
            .expect("log")
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn appended_lines_form_a_chain() {
        let dir = tempfile::tempdir().expect("temp dir");
        for n in 0..3 {
            append(dir.path(), &event(n)).expect("appended");
        }
        let lines = lines(dir.path());
        assert_eq!(lines.len(), 3);
        let mut prev = chain::GENESIS.to_string();
        for (seq, line) in lines.iter().enumerate() {
            let object = js_json::parse(line).expect("json");
            let object = object.as_object().expect("object");
            assert_eq!(chain::seq_field(object, "seq"), Some(seq as u64));
            assert_eq!(object.get("prev"), Some(&Value::string(&prev)));
            prev = chain::line_hash(line.as_bytes());
        }
        let head = chain::read_head(&dir.path().join("events.head"))
            .expect("readable")
            .expect("present");
        assert_eq!(head.head, Head { seq: 2, hash: prev });
    }

    #[test]
    fn unsigned_lines_and_a_torn_tail_do_not_break_the_chain() {
        let dir = tempfile::tempdir().expect("temp dir");
        append(dir.path(), &event(0)).expect("appended");
        let mut log = OpenOptions::new()
            .append(true)
            .open(dir.path().join(LOG_FILE))
            .expect("open");
        log.write_all(b"{\"traceId\":\"from-levelcode\"}\n{\"cut sh")
            .expect("write");
        append(dir.path(), &event(1)).expect("appended");
        let lines = lines(dir.path());
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[2], "{\"cut sh");
        let last = js_json::parse(&lines[3]).expect("json");
        let last = last.as_object().expect("object");
        assert_eq!(chain::seq_field(last, "seq"), Some(1));
        assert_eq!(
            last.get("prev"),
            Some(&Value::string(&chain::line_hash(lines[0].as_bytes())))
        );
    }

    #[test]
    fn the_chain_continues_after_the_head_when_the_tail_was_cut() {
        let dir = tempfile::tempdir().expect("temp dir");
        for n in 0..3 {
            append(dir.path(), &event(n)).expect("appended");
        }
        let kept = lines(dir.path())[..1].join("\n") + "\n";
        fs::write(dir.path().join(LOG_FILE), kept).expect("cut");
        append(dir.path(), &event(3)).expect("appended");
        let last = lines(dir.path()).pop().expect("a line");
        let last = js_json::parse(&last).expect("json");
        assert_eq!(
            chain::seq_field(last.as_object().expect("object"), "seq"),
            Some(3)
        );
    }

    #[test]
    fn a_file_where_the_folder_should_be_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let blocked = dir.path().join("compliance");
        fs::write(&blocked, "").expect("file");
        let err = append(&blocked, &event(0)).expect_err("refused");
        assert!(err.contains(&blocked.display().to_string()), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_in_place_of_a_file_is_refused_without_hanging() {
        for name in [LOG_FILE, keys::SECRET_FILE, "events.head"] {
            let dir = tempfile::tempdir().expect("temp dir");
            let made = std::process::Command::new("mkfifo")
                .arg(dir.path().join(name))
                .status()
                .is_ok_and(|status| status.success());
            if !made {
                continue;
            }
            let started = Instant::now();
            let result = append(dir.path(), &event(0));
            assert!(started.elapsed() < Duration::from_secs(5), "{name}");
            // An unreadable head is ignored and replaced; the log and the key are not.
            assert_eq!(result.is_ok(), name == "events.head", "{name}: {result:?}");
        }
    }

    #[test]
    fn a_held_lock_gives_up_in_bounded_time() {
        let dir = tempfile::tempdir().expect("temp dir");
        append(dir.path(), &event(0)).expect("appended");
        let holder = File::open(dir.path().join(LOG_FILE)).expect("open");
        holder.lock().expect("locked");
        let started = Instant::now();
        let err = append(dir.path(), &event(1)).expect_err("gave up");
        assert!(started.elapsed() < LOCK_WAIT + Duration::from_secs(1));
        assert!(err.contains("locked"), "{err}");
        assert_eq!(lines(dir.path()).len(), 1);
    }
}
