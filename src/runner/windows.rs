//! The Windows half of running a handler (not tested on Windows yet).
//!
//! The handler is assigned to a job object, which is how a timeout reaches the processes it
//! started. A thread writes the payload and one thread reads
//! each stream, so no pipe can deadlock; the main thread waits in slices for the exit.

use std::io::{Read, Write};
use std::os::windows::io::AsRawHandle;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;
use windows_sys::Win32::Foundation::{CloseHandle, HANDLE};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, TerminateJobObject,
};

use super::{command, spawn_message, Ending, Finished, Invocation, Stop, LEFTOVER_WAIT};
use crate::runner::capture::Capture;

const SLICE: Duration = Duration::from_millis(20);

pub fn run(invocation: &Invocation<'_>) -> Finished {
    let start = Instant::now();
    let spawn = command(invocation).spawn();
    (invocation.spawned)(None);
    let mut child = match spawn {
        Ok(child) => child,
        Err(err) => {
            return Finished::not_started(
                Ending::SpawnFailed(spawn_message(invocation.program, &err)),
                start.elapsed(),
            )
        }
    };
    let job = Job::new();
    if let Some(job) = &job {
        job.assign(child.as_raw_handle() as HANDLE);
    }
    if let Some(mut stdin) = child.stdin.take() {
        let input = invocation.input.to_vec();
        thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let (tx, rx) = mpsc::channel::<(bool, Capture)>();
    let mut readers = 0;
    if let Some(out) = child.stdout.take() {
        spawn_reader(out, true, tx.clone());
        readers += 1;
    }
    if let Some(err) = child.stderr.take() {
        spawn_reader(err, false, tx.clone());
        readers += 1;
    }
    drop(tx);

    let deadline = start + invocation.timeout;
    let mut stopped = None;
    let status = loop {
        match child.wait_timeout(SLICE) {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => break None,
        }
        if Instant::now() >= deadline {
            stopped = Some(Stop::Timeout);
            if let Some(job) = &job {
                job.terminate();
            }
            let _ = child.kill();
            break child.wait().ok();
        }
    };
    let exited_at = Instant::now();
    let mut stdout = Capture::default();
    let mut stderr = Capture::default();
    let mut leftover_output = false;
    for _ in 0..readers {
        let left = (exited_at + LEFTOVER_WAIT).saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((true, c)) => stdout = c,
            Ok((false, c)) => stderr = c,
            Err(_) => {
                leftover_output = true;
                break;
            }
        }
    }
    let ending = match status.and_then(|s| s.code()) {
        Some(code) => Ending::Exited(code),
        None => Ending::Exited(-1),
    };
    Finished {
        ending,
        stopped,
        killed: stopped.is_some(),
        stdout,
        stderr,
        duration: start.elapsed(),
        leftover_output,
    }
}

fn spawn_reader<R: Read + Send + 'static>(
    mut reader: R,
    is_stdout: bool,
    tx: mpsc::Sender<(bool, Capture)>,
) {
    thread::spawn(move || {
        let mut capture = Capture::default();
        let mut buf = [0u8; 64 * 1024];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            capture.push(&buf[..n]);
        }
        let _ = tx.send((is_stdout, capture));
    });
}

/// A job object holding the handler and what it starts; terminated on timeout only, so
/// background work a handler leaves on purpose survives a normal exit.
struct Job(HANDLE);

impl Job {
    fn new() -> Option<Job> {
        // SAFETY: creates an unnamed job object; a null handle means failure.
        let handle = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if handle.is_null() {
            return None;
        }
        Some(Job(handle))
    }

    fn assign(&self, process: HANDLE) {
        // SAFETY: both handles are live for the duration of the call.
        unsafe { AssignProcessToJobObject(self.0, process) };
    }

    fn terminate(&self) {
        // SAFETY: the job handle is live.
        unsafe { TerminateJobObject(self.0, 1) };
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // SAFETY: we own the handle.
        unsafe { CloseHandle(self.0) };
    }
}
