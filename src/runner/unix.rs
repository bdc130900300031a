//! The Unix half of running a handler.
//!
//! The handler leads its own process group, so a timeout or an interruption reaches everything
//! it started: SIGTERM to the group, SIGKILL [`KILL_GRACE`] later if anything is left. One poll
//! loop writes the payload, reads stdout and stderr, notices the exit (through a pidfd on Linux)
//! and the dispatcher's own signals, so no pipe can deadlock and no deadline can pass unnoticed,
//! without starting a thread per handler.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::time::{Duration, Instant};

use super::{
    command, spawn_message, Ending, Finished, Invocation, Stop, KILL_GRACE, KILL_SETTLE,
    LEFTOVER_WAIT,
};
use crate::runner::capture::Capture;
use crate::signals;

/// How often to look again when nothing can wake the poll: no pidfd, or waiting for a process
/// group to empty.
const RECHECK: Duration = Duration::from_millis(5);

/// The most a write to a pipe with room for it is guaranteed to put in at once (POSIX).
const PIPE_BUF: usize = 4096;

/// The longest pause between two searches of `/proc` for a live member of a stopped handler's
/// group. The first comes [`RECHECK`] after the stop, each next one twice as late as the one
/// before, up to this: about 18 searches over the 1.5 s a stop may take, instead of one every
/// [`RECHECK`] (docs/RELIABILITY.md has the measured cost of one).
const MAX_SCAN_INTERVAL: Duration = Duration::from_millis(100);

/// The error a `pre_exec` gives when the child could not confine itself.
#[cfg(target_os = "linux")]
const CONFINE_FAILED: &str = "the sandbox could not be applied";

pub fn run(invocation: &Invocation<'_>) -> Finished {
    run_started_by(invocation, start_process)
}

/// [`run`] by std's way of starting a handler, for the tests that hold the two ways to one
/// another.
#[cfg(test)]
pub(super) fn run_by_std(invocation: &Invocation<'_>) -> Finished {
    run_started_by(invocation, start_with_std)
}

fn run_started_by(
    invocation: &Invocation<'_>,
    start_by: fn(&Invocation<'_>) -> Result<Process, Ending>,
) -> Finished {
    let start = Instant::now();
    let process = match start_by(invocation) {
        Ok(process) => process,
        Err(ending) => {
            (invocation.spawned)(None);
            return Finished::not_started(ending, start.elapsed());
        }
    };
    let mut session = Session::new(process, invocation.input);
    session.drive(start + invocation.timeout, invocation.spawned);
    session.finish(start)
}

/// A started handler, however it was started.
struct Process {
    pid: libc::pid_t,
    pidfd: Option<OwnedFd>,
    stdin: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
}

/// Starts the handler leading its own process group, confined as the invocation says, or says
/// why it could not be (an [`Ending`] of a handler that never ran).
fn start_process(invocation: &Invocation<'_>) -> Result<Process, Ending> {
    #[cfg(target_os = "linux")]
    {
        use super::spawn::{spawn, Failure};
        let line = super::command_line(invocation);
        let confine = steps(invocation);
        match spawn(
            &line,
            invocation.dir,
            invocation.env,
            invocation.unset,
            confine,
        ) {
            Ok(s) => {
                return Ok(Process {
                    pid: s.pid,
                    pidfd: s.pidfd,
                    stdin: s.stdin,
                    stdout: s.stdout,
                    stderr: s.stderr,
                })
            }
            Err(Failure::Program(err)) => {
                return Err(Ending::SpawnFailed(spawn_message(invocation.program, &err)))
            }
            Err(Failure::Dir(err)) => {
                return Err(Ending::SpawnFailed(format!(
                    "could not start the handler in {}: {err}; does the directory still exist?",
                    invocation.dir.display()
                )))
            }
            Err(Failure::Confine(err)) => return Err(not_confined(&err)),
            // Fall back on std's way, below.
            Err(Failure::Unavailable) => {}
        }
    }
    start_with_std(invocation)
}

/// The steps the child confines itself with: none, or those of the invocation's confinement.
#[cfg(target_os = "linux")]
fn steps(invocation: &Invocation<'_>) -> super::confine::Steps {
    invocation
        .confine
        .map_or(super::confine::Steps::NONE, super::confine::Prepared::steps)
}

/// A confinement the child could not apply, as the ending of a handler that was not run.
#[cfg(target_os = "linux")]
fn not_confined(err: &io::Error) -> Ending {
    Ending::NotConfined(format!(
        "its sandbox could not be applied ({err}), so it was not run"
    ))
}

/// std's way of starting the handler: other Unixes, or a Linux that refuses the clone (a
/// sandbox, say). A confinement is applied by a `pre_exec` of the same steps.
fn start_with_std(invocation: &Invocation<'_>) -> Result<Process, Ending> {
    let mut command = command(invocation);
    command.process_group(0);
    #[cfg(target_os = "linux")]
    if invocation.confine.is_some() {
        let steps = steps(invocation);
        // SAFETY: the closure runs in the forked child just before exec, where `apply` belongs:
        // it makes three system calls and allocates nothing. Its steps point into the
        // confinement the invocation borrows, alive until `spawn` returns, so alive in the
        // child's copy of the parent's memory.
        unsafe {
            command.pre_exec(move || {
                if super::confine::apply(steps) {
                    Ok(())
                } else {
                    Err(io::Error::other(CONFINE_FAILED))
                }
            });
        }
    }
    let mut child = command.spawn().map_err(|err| {
        #[cfg(target_os = "linux")]
        if err
            .get_ref()
            .is_some_and(|e| e.to_string() == CONFINE_FAILED)
        {
            return not_confined(&err);
        }
        Ending::SpawnFailed(spawn_message(invocation.program, &err))
    })?;
    let pid = libc::pid_t::try_from(child.id()).unwrap_or(libc::pid_t::MAX);
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        unreachable!("all three streams are piped");
    };
    // The child is reaped by pid from here on; dropping std's handle neither waits nor kills.
    Ok(Process {
        pid,
        pidfd: pidfd_open(pid),
        stdin: stdin.into(),
        stdout: stdout.into(),
        stderr: stderr.into(),
    })
}

/// The state of one running handler.
struct Session<'a> {
    pid: libc::pid_t,
    pidfd: Option<OwnedFd>,
    stdin: Option<OwnedFd>,
    input: &'a [u8],
    written: usize,
    stdout: Option<OwnedFd>,
    stderr: Option<OwnedFd>,
    out: Capture,
    err: Capture,
    ending: Option<Ending>,
    exited_at: Option<Instant>,
    stopped: Option<Stop>,
    term_sent_at: Option<Instant>,
    killed: bool,
    leftover_output: bool,
    /// When `/proc` may next be searched for the group, and the pause after that search.
    next_scan: Option<Instant>,
    scan_interval: Duration,
    /// How many times `/proc` was searched.
    scans: u32,
}

impl<'a> Session<'a> {
    fn new(process: Process, input: &'a [u8]) -> Session<'a> {
        let stdin = Some(process.stdin).filter(|_| !input.is_empty());
        if let Some(s) = &stdin {
            // A payload of at most PIPE_BUF bytes fits in an empty pipe, so `drive` writes it
            // at once with a plain blocking write; a larger one goes in as the pipe takes it.
            if input.len() > PIPE_BUF {
                set_nonblocking(s.as_raw_fd());
            }
            if input.len() > 64 * 1024 {
                grow_pipe(s.as_raw_fd());
            }
        }
        Session {
            pid: process.pid,
            pidfd: process.pidfd,
            stdin,
            input,
            written: 0,
            stdout: Some(process.stdout),
            stderr: Some(process.stderr),
            out: Capture::default(),
            err: Capture::default(),
            ending: None,
            exited_at: None,
            stopped: None,
            term_sent_at: None,
            killed: false,
            leftover_output: false,
            next_scan: None,
            scan_interval: RECHECK,
            scans: 0,
        }
    }

    /// Runs the handler to its end; `spawned` is called once its payload is in the pipe (all
    /// of it, when the pipe takes it at once), before the first wait.
    fn drive(&mut self, deadline: Instant, spawned: &dyn Fn(Option<u32>)) {
        // A payload that fits in the pipe goes in at once, without a poll to ask first.
        self.feed();
        spawned(u32::try_from(self.pid).ok());
        if self.pidfd.is_none() {
            self.reap();
        }
        loop {
            let now = Instant::now();
            if self.stopped.is_none() {
                if let Some(sig) = signals::received() {
                    self.terminate(Stop::Interrupted(sig), now);
                } else if now >= deadline {
                    self.terminate(Stop::Timeout, now);
                }
            }
            if let Some(term) = self.term_sent_at {
                if !self.killed && now >= term + KILL_GRACE {
                    signal_group(self.pid, libc::SIGKILL);
                    self.killed = true;
                }
            }
            if self.ending.is_some() && self.done(now) {
                return;
            }
            if self.ending.is_none() && self.past_kill_settle(now) {
                // Not gone after SIGKILL and a grace: it cannot be killed. Move on without it;
                // nothing may hang (contract §8).
                return;
            }
            let wait = self.poll_timeout(now, deadline);
            self.poll_once(wait);
        }
    }

    /// Returns true when nothing more is worth waiting for: output read to its end (or the
    /// leftover wait over) and, after a stop, the group empty or killed.
    fn done(&mut self, now: Instant) -> bool {
        // After a stop, wait for the group to be gone; after SIGKILL that takes the kernel a
        // moment, bounded in case something sits in uninterruptible sleep.
        let group_settled = match self.stopped {
            Some(_) => self.past_kill_settle(now) || self.group_gone(now),
            None => true,
        };
        if !group_settled {
            return false;
        }
        if self.stdout.is_none() && self.stderr.is_none() {
            return true;
        }
        let exited_at = self.exited_at.unwrap_or(now);
        if now >= exited_at + LEFTOVER_WAIT {
            self.leftover_output = true;
            return true;
        }
        false
    }

    /// Returns true once SIGKILL went out and [`KILL_SETTLE`] has passed since.
    fn past_kill_settle(&self, now: Instant) -> bool {
        self.killed
            && self
                .term_sent_at
                .is_some_and(|term| now >= term + KILL_GRACE + KILL_SETTLE)
    }

    /// Returns true if and only if no process of the stopped handler's group is left, zombies
    /// aside. `kill(-pgid, 0)` answers at once and is asked every time; only while it says
    /// something is there (which a zombie no one reaps also makes it say) is `/proc` searched,
    /// at growing intervals ([`MAX_SCAN_INTERVAL`]).
    fn group_gone(&mut self, now: Instant) -> bool {
        if !group_exists(self.pid) {
            return true;
        }
        if self.next_scan.is_some_and(|next| now < next) {
            return false;
        }
        self.next_scan = Some(now + self.scan_interval);
        self.scan_interval = (self.scan_interval * 2).min(MAX_SCAN_INTERVAL);
        self.scans += 1;
        !live_member_in_proc(self.pid).unwrap_or(true)
    }

    fn poll_timeout(&self, now: Instant, deadline: Instant) -> Option<Duration> {
        let mut until: Option<Instant> = None;
        let mut earliest = |t: Instant| until = Some(until.map_or(t, |u| u.min(t)));
        if self.stopped.is_none() {
            earliest(deadline);
        }
        if let Some(term) = self.term_sent_at {
            let settle = term + KILL_GRACE + KILL_SETTLE;
            if !self.killed {
                earliest(term + KILL_GRACE);
            } else if settle > now {
                // Past it, `drive` returns or only the leftover wait is left: never a 0 ms poll.
                earliest(settle);
            }
            if self.ending.is_some() {
                // Waiting for the rest of the group to go: nothing wakes us when it does.
                earliest(now + RECHECK);
            }
        }
        if let Some(exited) = self.exited_at {
            if self.stdout.is_some() || self.stderr.is_some() {
                earliest(exited + LEFTOVER_WAIT);
            }
        }
        if self.pidfd.is_none() && self.ending.is_none() {
            earliest(now + RECHECK);
        }
        until.map(|u| u.saturating_duration_since(now))
    }

    fn terminate(&mut self, why: Stop, now: Instant) {
        self.stopped = Some(why);
        self.term_sent_at = Some(now);
        signal_group(self.pid, libc::SIGTERM);
        // A stopped handler can read no more of its payload.
        self.stdin = None;
    }

    fn poll_once(&mut self, wait: Option<Duration>) {
        const STDIN: usize = 0;
        const STDOUT: usize = 1;
        const STDERR: usize = 2;
        const EXIT: usize = 3;
        const WAKE: usize = 4;
        let fd_of = |present: bool, fd: RawFd| if present { fd } else { -1 };
        let mut fds = [
            pollfd(
                self.stdin.as_ref().map_or(-1, AsRawFd::as_raw_fd),
                libc::POLLOUT,
            ),
            pollfd(
                self.stdout.as_ref().map_or(-1, AsRawFd::as_raw_fd),
                libc::POLLIN,
            ),
            pollfd(
                self.stderr.as_ref().map_or(-1, AsRawFd::as_raw_fd),
                libc::POLLIN,
            ),
            pollfd(
                fd_of(
                    self.ending.is_none(),
                    self.pidfd.as_ref().map_or(-1, AsRawFd::as_raw_fd),
                ),
                libc::POLLIN,
            ),
            pollfd(
                fd_of(self.stopped.is_none(), signals::wake_fd()),
                libc::POLLIN,
            ),
        ];
        let timeout_ms = match wait {
            None => -1,
            // Round up, so a deadline is never polled for 0 ms in a busy loop.
            Some(d) => i32::try_from(d.as_micros().div_ceil(1000)).unwrap_or(i32::MAX),
        };
        // SAFETY: `fds` is a live array of pollfd of the length passed; a negative fd is ignored.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if ready < 0 {
            return; // EINTR: the loop looks at signals and deadlines again
        }
        let fired = |i: usize| fds[i].fd >= 0 && fds[i].revents != 0;
        if fired(STDIN) {
            self.feed();
        }
        if fired(STDOUT) && drain(&self.stdout, &mut self.out) {
            self.stdout = None;
        }
        if fired(STDERR) && drain(&self.stderr, &mut self.err) {
            self.stderr = None;
        }
        // Both streams at their end usually means the handler is exiting: look before polling
        // again for its exit.
        let streams_ended = self.stdout.is_none() && self.stderr.is_none();
        if fired(EXIT) || self.pidfd.is_none() || streams_ended {
            self.reap();
            if fired(EXIT) && self.ending.is_none() {
                // The pidfd says it exited, yet there is no status to collect (a tracer holds
                // it, say): polling the pidfd again would return at once, for ever. Look every
                // RECHECK instead, as without a pidfd.
                self.pidfd = None;
            }
        }
        let _ = WAKE; // readable only after a signal, which the loop reads from `signals`
    }

    /// Writes as much of the payload as the pipe takes; closes stdin when all is written or the
    /// handler stopped reading.
    fn feed(&mut self) {
        let Some(stdin) = self.stdin.as_ref() else {
            return;
        };
        let fd = stdin.as_raw_fd();
        while self.written < self.input.len() {
            let rest = &self.input[self.written..];
            // SAFETY: write(2) reads at most `rest.len()` bytes from a slice we hold.
            let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
            if n >= 0 {
                self.written += n.unsigned_abs();
                continue;
            }
            match io::Error::last_os_error().kind() {
                io::ErrorKind::Interrupted => {}
                io::ErrorKind::WouldBlock => return,
                // EPIPE: the handler closed its stdin or exited; it did not want the rest.
                _ => break,
            }
        }
        self.stdin = None;
    }

    fn reap(&mut self) {
        if self.ending.is_some() {
            return;
        }
        let mut status: libc::c_int = 0;
        // SAFETY: waits, without blocking, for our own child; the status goes into a local.
        let reaped = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
        let ending = match reaped {
            0 => return,
            r if r > 0 => {
                let status = std::process::ExitStatus::from_raw(status);
                match (status.code(), status.signal()) {
                    (Some(code), _) => Ending::Exited(code),
                    (None, Some(sig)) => Ending::Signaled(sig),
                    (None, None) => Ending::Exited(-1),
                }
            }
            _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => return,
            // ECHILD: something else reaped it (SIGCHLD ignored, say); its status is lost, and
            // must not read as any exit code.
            _ => Ending::Lost,
        };
        self.ending = Some(ending);
        self.exited_at = Some(Instant::now());
        self.stdin = None;
    }

    fn finish(mut self, start: Instant) -> Finished {
        let duration = start.elapsed();
        Finished {
            // `drive` returns without an ending only when it gave up on an unkillable handler.
            ending: self.ending.take().unwrap_or(Ending::Unkillable),
            stopped: self.stopped,
            killed: self.killed,
            stdout: std::mem::take(&mut self.out),
            stderr: std::mem::take(&mut self.err),
            duration,
            leftover_output: self.leftover_output,
        }
    }
}

/// Reads what is there, once: the pipes are blocking, and poll said a read will not wait.
/// Returns true at end of file (or on an error, which ends the stream too).
fn drain(stream: &Option<OwnedFd>, capture: &mut Capture) -> bool {
    let Some(reader) = stream.as_ref() else {
        return true;
    };
    let fd = reader.as_raw_fd();
    thread_local! {
        // One buffer for every read of every handler, never zeroed: clearing 64 KiB showed up in
        // profiles of dispatches whose handlers print a line or nothing.
        static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(Vec::with_capacity(64 * 1024));
    }
    BUF.with(|buf| {
        let mut buf = buf.borrow_mut();
        buf.clear();
        let spare = buf.spare_capacity_mut();
        // SAFETY: read(2) writes at most `spare.len()` bytes into the buffer's spare capacity,
        // which we own; only the bytes it reports are then looked at.
        let n = unsafe { libc::read(fd, spare.as_mut_ptr().cast(), spare.len()) };
        match n {
            0 => true,
            n if n > 0 => {
                // SAFETY: the first `n` bytes were just written by read(2).
                unsafe { buf.set_len(n.unsigned_abs()) };
                capture.push(&buf);
                false
            }
            _ => !matches!(
                io::Error::last_os_error().kind(),
                io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
            ),
        }
    })
}

fn pollfd(fd: RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

fn set_nonblocking(fd: RawFd) {
    // SAFETY: fcntl on a descriptor we own. A fresh pipe end has no other status flag worth
    // keeping (close-on-exec is a descriptor flag, untouched), so no F_GETFL first.
    unsafe {
        libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK);
    }
}

/// Asks for a 1 MiB pipe, so a large payload goes in fewer wake-ups. Best effort.
fn grow_pipe(fd: RawFd) {
    #[cfg(target_os = "linux")]
    // SAFETY: F_SETPIPE_SZ on a pipe we own; failure keeps the default size.
    unsafe {
        libc::fcntl(fd, libc::F_SETPIPE_SZ, 1 << 20);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = fd;
}

/// A descriptor that becomes readable when the process exits (Linux 5.3 and later).
pub(super) fn pidfd_open(pid: libc::pid_t) -> Option<OwnedFd> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        let fd = RawFd::try_from(fd).ok().filter(|fd| *fd >= 0)?;
        // SAFETY: the descriptor was just returned to us and nothing else owns it. pidfd_open
        // sets close-on-exec itself, so it never leaks into later handlers.
        Some(unsafe { OwnedFd::from_raw_fd(fd) })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

fn signal_group(pgid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill(2) with a negative pid signals the process group the handler leads.
    unsafe { libc::kill(-pgid, sig) };
}

/// Returns true if and only if the group has a member, zombies included: an orphan's zombie
/// waits for init to reap it, which may take a long time (an init that never reaps, in a
/// container), and holds nothing; [`live_member_in_proc`] tells those apart.
fn group_exists(pgid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks for existence.
    let rc = unsafe { libc::kill(-pgid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Looks through /proc for a member of the group that is not a zombie; `None` without /proc.
fn live_member_in_proc(pgid: libc::pid_t) -> Option<bool> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let entries = std::fs::read_dir("/proc").ok()?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{name}/stat")) else {
            continue;
        };
        // After the command name in parentheses: state, ppid, pgrp, ...
        let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        let mut fields = rest.split_ascii_whitespace();
        let state = fields.next();
        let group = fields.nth(1).and_then(|g| g.parse::<libc::pid_t>().ok());
        if group == Some(pgid) && !matches!(state, Some("Z" | "X")) {
            return Some(true);
        }
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::Program;

    /// Runs `script` from `start` (the way the handler is started) to its end.
    fn run_with(
        start: fn(&Invocation<'_>) -> Result<Process, Ending>,
        script: &str,
        input: &[u8],
    ) -> Finished {
        let program = Program::Shell(script.into());
        // Not the test's own directory, so that entering it shows.
        let dir = std::env::temp_dir().canonicalize().unwrap();
        let invocation = Invocation {
            program: &program,
            dir: &dir,
            input,
            timeout: Duration::from_secs(20),
            env: &[("LEVELCODE_HOOK_EVENT", "Stop".to_string())],
            unset: &["HOME"],
            confine: None,
            spawned: &|_| {},
        };
        let began = Instant::now();
        let process = start(&invocation).expect("the handler starts");
        let mut session = Session::new(process, input);
        session.drive(began + invocation.timeout, &|_| {});
        session.finish(began)
    }

    /// Runs `script` to its end with `timeout`; also returns how often `/proc` was searched.
    fn drive_with(script: &str, timeout: Duration) -> (Finished, u32) {
        let program = Program::Shell(script.into());
        let dir = std::env::current_dir().unwrap();
        let invocation = Invocation {
            program: &program,
            dir: &dir,
            input: b"",
            timeout,
            env: &[],
            unset: &[],
            confine: None,
            spawned: &|_| {},
        };
        let began = Instant::now();
        let process = start_process(&invocation).expect("the handler starts");
        let mut session = Session::new(process, b"");
        session.drive(began + timeout, &|_| {});
        let scans = session.scans;
        (session.finish(began), scans)
    }

    /// The caller hears once per run that the handler is under way: after its process exists
    /// (a child of this thread, as the kernel lists it), or when it could not be started.
    #[test]
    fn the_caller_hears_once_that_the_handler_is_started_or_could_not_be() {
        let dir = std::env::current_dir().unwrap();
        let heard = std::cell::RefCell::new(Vec::new());
        let spawned = |_: Option<u32>| {
            let children = std::fs::read_to_string("/proc/thread-self/children");
            heard.borrow_mut().push(children.ok());
        };
        let run_it = |program: &Program| {
            super::run(&Invocation {
                program,
                dir: &dir,
                input: b"the payload",
                timeout: Duration::from_secs(20),
                env: &[],
                unset: &[],
                confine: None,
                spawned: &spawned,
            })
        };

        let finished = run_it(&Program::Shell("echo $$".into()));
        assert!(matches!(finished.ending, Ending::Exited(0)));
        let pid = finished.stdout.text().trim().to_string();
        let heard_now = heard.take();
        assert_eq!(heard_now.len(), 1, "once per run");
        // Without the kernel's list of children (CONFIG_PROC_CHILDREN) only the count is seen.
        if let Some(children) = &heard_now[0] {
            assert!(
                children.split_whitespace().any(|child| child == pid),
                "the handler {pid} existed when the caller heard: {children:?}"
            );
        }

        let program = Program::Argv(vec!["/nonexistent/levelcode-hooks-handler".into()]);
        let finished = run_it(&program);
        assert!(matches!(finished.ending, Ending::SpawnFailed(_)));
        assert_eq!(heard.take().len(), 1, "once, though it could not start");
    }

    /// A handler whose exit status something else collected (a caller that ignores SIGCHLD has
    /// the kernel do it): the status is lost, and never read as an exit code.
    #[test]
    fn a_status_reaped_by_someone_else_is_lost_not_an_exit_code() {
        let program = Program::Shell("exit 2".into());
        let dir = std::env::current_dir().unwrap();
        let invocation = Invocation {
            program: &program,
            dir: &dir,
            input: b"",
            timeout: Duration::from_secs(20),
            env: &[],
            unset: &[],
            confine: None,
            spawned: &|_| {},
        };
        let began = Instant::now();
        let process = start_process(&invocation).expect("the handler starts");
        let mut status = 0;
        // SAFETY: waits for our own child, as the kernel would reap it under SIG_IGN.
        assert_eq!(
            unsafe { libc::waitpid(process.pid, &mut status, 0) },
            process.pid
        );
        let mut session = Session::new(process, b"");
        session.drive(began + invocation.timeout, &|_| {});
        let finished = session.finish(began);
        assert!(
            matches!(finished.ending, Ending::Lost),
            "{:?}",
            finished.ending
        );
    }

    /// After a stop, a group that takes a while to empty (a member ignores SIGTERM, so it goes
    /// only with SIGKILL a second later) is looked for in `/proc` at growing intervals: a
    /// handful of searches, not one every 5 ms (docs/RELIABILITY.md).
    #[test]
    fn a_stop_searches_proc_a_bounded_number_of_times() {
        let (finished, scans) = drive_with(
            "sh -c 'trap \"\" TERM; exec sleep 30' & exec sleep 30",
            Duration::from_millis(200),
        );
        assert_eq!(finished.stopped, Some(Stop::Timeout));
        assert!(finished.killed);
        assert!((1..=25).contains(&scans), "{scans} searches of /proc");
    }

    #[test]
    fn both_ways_of_starting_a_handler_give_the_same_result() {
        let big = vec![b'x'; 200 * 1024];
        for start in [start_process, start_with_std] {
            let small = run_with(start, "cat; echo err >&2; exit 3", b"payload");
            assert!(
                matches!(small.ending, Ending::Exited(3)),
                "{:?}",
                small.ending
            );
            assert_eq!(small.stdout.text(), "payload");
            assert_eq!(small.stderr.text(), "err\n");
            // Past the pipe's size: written as the handler reads, not at once.
            let large = run_with(start, "wc -c", &big);
            assert_eq!(large.stdout.text().trim(), "204800");
            // Its own directory and variables; the process's own are left as they were.
            let here = std::env::current_dir().unwrap();
            let placed = run_with(
                start,
                "pwd; echo \"$LEVELCODE_HOOK_EVENT ${HOME-none}\"",
                b"",
            );
            let dir = std::env::temp_dir().canonicalize().unwrap();
            assert_eq!(
                placed.stdout.text(),
                format!("{}\nStop none\n", dir.display())
            );
            assert_eq!(std::env::current_dir().unwrap(), here);
            assert!(std::env::var_os("LEVELCODE_HOOK_EVENT").is_none());
            let killed = run_with(start, "kill -TERM $$", b"");
            assert!(
                matches!(killed.ending, Ending::Signaled(15)),
                "{:?}",
                killed.ending
            );
        }
    }
}
