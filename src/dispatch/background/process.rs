//! The processes of background handlers as other processes see them (contract §21): the
//! supervisor a dispatch starts (this executable again, its hidden `background` command), set
//! apart from its dispatcher (a session of its own, none of the caller's descriptors), the
//! start time that tells a process from a later one given the same pid, and signals sent only
//! to the process a record names.

use std::io;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The hidden command a supervisor runs as.
pub const COMMAND: &str = "background";

/// The niceness a supervisor and its handler run at, at least (`lower_priority`).
pub const NICE: i32 = 10;

/// Starts a supervisor by std's `Command`, its spec to be written to its stdin. `answers`: its
/// stdout is a pipe for its result (`serve`, where it stays in the server's session, which
/// keeps it); otherwise it writes nothing where anyone waits, so a caller that reads the
/// dispatcher's output to its end is not held by it.
pub fn spawn_supervisor(answers: bool) -> io::Result<Child> {
    // The very executable running, even if the file was replaced by an upgrade since.
    let exe = if cfg!(target_os = "linux") {
        PathBuf::from("/proc/self/exe")
    } else {
        std::env::current_exe()?
    };
    Command::new(exe)
        .arg(COMMAND)
        .stdin(Stdio::piped())
        .stdout(if answers {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::null())
        .spawn()
}

/// Starts a supervisor apart from this process (`run`) by `exec`: in a session of its own,
/// stdin a pipe whose other end is returned for its spec, stdout and stderr `/dev/null`, and
/// `slot` (the descriptor that holds its place, `Spool::reserve`) as its descriptor 3. This
/// process does not wait for it to start the executable (a `vfork` would, and on a loaded
/// machine that is a wait for the scheduler): `fork`, and the child does nothing but `setsid`,
/// its descriptors and `execv`. Returns the supervisor's pid and the pipe for its spec.
#[cfg(target_os = "linux")]
pub fn spawn_detached(slot: Option<i32>) -> io::Result<(u32, std::fs::File)> {
    use std::ffi::CString;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    let exe = PathBuf::from("/proc/self/exe");
    // Everything the child needs, made before the fork: it may not allocate.
    let path = CString::new(exe.as_os_str().as_bytes())?;
    let name = CString::new("levelcode-hooks")?;
    let command = CString::new(COMMAND)?;
    let argv = [name.as_ptr(), command.as_ptr(), std::ptr::null()];
    let null = CString::new("/dev/null")?;
    let mut fds = [-1; 2];
    // SAFETY: pipe2 writes two descriptors into the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nothing else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    use std::os::fd::AsRawFd;
    let spec = read.as_raw_fd();
    // SAFETY: the child calls only async-signal-safe functions (setsid, open, dup2, fcntl,
    // execv, _exit) on what was made above, so a lock another thread held at the fork cannot
    // hang it; the parent goes on as before.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: see above. A copy made by dup2 is not closed on exec; one that was already
        // in place (a caller that closed 0 to 2, a slot that is 3 already) is made so by fcntl.
        unsafe {
            libc::setsid();
            lower_priority();
            let devnull = libc::open(null.as_ptr(), libc::O_RDWR);
            if devnull < 0 {
                libc::_exit(127);
            }
            let moves = [
                (spec, 0),
                (devnull, 1),
                (devnull, 2),
                (slot.unwrap_or(-1), 3),
            ];
            for (from, to) in moves.into_iter().filter(|(from, _)| *from >= 0) {
                if libc::dup2(from, to) < 0 || libc::fcntl(to, libc::F_SETFD, 0) < 0 {
                    libc::_exit(127);
                }
            }
            libc::execv(path.as_ptr(), argv.as_ptr());
            libc::_exit(127);
        }
    }
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    drop(read);
    Ok((u32::try_from(pid).unwrap_or(0), std::fs::File::from(write)))
}

/// Ends this process with exit status `code`, as its caller sees it, and goes on in a new
/// process apart from the caller (`super::handover`): in a session of its own, `/dev/null` as its
/// stdin, stdout and stderr, none of the descriptors the caller let it inherit, signals of its
/// own, at a lower priority. Returns in the new process only; an error when it could not be
/// made (this process runs more than one thread, or the system refused), and this process goes
/// on as it was.
#[cfg(target_os = "linux")]
pub fn continue_apart(code: u8) -> io::Result<()> {
    if !single_threaded() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the dispatcher runs more than one thread",
        ));
    }
    // Every signal blocked until the new process has its own: a handler run in between would
    // use the stack the two share (`handover`), or record for the new process a signal sent
    // to the caller's group, which `set_apart` then forgets.
    let old = block_all();
    let made = super::handover::split(code);
    if made.is_ok() {
        set_apart();
    }
    restore(&old);
    made
}

/// A copy of this process set apart from its caller, as [`continue_apart`] sets it, to keep a
/// background handler without starting an executable again: the child gets `Ok(None)`, this
/// process the child's pid. Only for a process with one thread: the child runs on, and a lock
/// another thread held at the fork would stay held in it for ever.
#[cfg(target_os = "linux")]
pub fn fork_apart() -> io::Result<Option<u32>> {
    if !single_threaded() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the dispatcher runs more than one thread",
        ));
    }
    let old = block_all();
    // SAFETY: this process has one thread (checked above), so the child is a whole copy of it,
    // every lock as it was, and may go on to run anything this process could.
    let forked = match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            set_apart();
            Ok(None)
        }
        pid => Ok(Some(u32::try_from(pid).unwrap_or(0))),
    };
    restore(&old);
    forked
}

/// Blocks every signal this thread can block; returns the mask it had.
#[cfg(target_os = "linux")]
fn block_all() -> libc::sigset_t {
    // SAFETY: sigfillset and pthread_sigmask write into sets we own.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
        old
    }
}

/// Puts back the mask [`block_all`] returned.
#[cfg(target_os = "linux")]
fn restore(old: &libc::sigset_t) {
    // SAFETY: pthread_sigmask reads the set we own.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut());
    }
}

/// What sets a new process apart from the dispatcher's caller; see [`continue_apart`]. The
/// caller's descriptors go first, its priority last: at a lower priority on a busy machine the
/// caller would wait longer for the end of its pipes.
#[cfg(target_os = "linux")]
fn set_apart() {
    // SAFETY: plain system calls on descriptors 0 to 2; should /dev/null not open, they stay
    // what they were, which the caller may wait on, but nothing is lost.
    unsafe {
        libc::setsid();
        let devnull = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if devnull >= 0 {
            for to in 0..3 {
                libc::dup2(devnull, to);
            }
            libc::close(devnull);
        }
    }
    close_inherited_only();
    crate::signals::renew();
    lower_priority();
}

/// In a copy of the dispatcher set apart ([`set_apart`]): closes every descriptor above stderr
/// that would not be closed on `exec`, which are those the dispatcher's caller let it inherit
/// (a pipe it waits on, say), since every descriptor this program opens is opened to be
/// closed on `exec`. Those stay: the objects of this memory own them, and a descriptor closed
/// under its owner could be given to another file and then written or closed by mistake.
#[cfg(target_os = "linux")]
fn close_inherited_only() {
    let open: Vec<std::os::fd::RawFd> = std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2)
        .collect();
    for fd in open {
        // SAFETY: fcntl(F_GETFD) and close(2) take a descriptor number; the directory's own
        // descriptor, closed by now, gives EBADF and is left alone.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                libc::close(fd);
            }
        }
    }
}

/// Returns true if and only if this process runs one thread: `/proc/self/task` has a link for
/// each thread beside its own two.
#[cfg(target_os = "linux")]
pub fn single_threaded() -> bool {
    use std::os::unix::fs::MetadataExt;
    // The tests' way to the path of a process with more threads (debug builds only).
    if crate::environment::test_more_threads() {
        return false;
    }
    std::fs::metadata("/proc/self/task").is_ok_and(|m| m.nlink() == 3)
}

/// The start time of process `pid`, in clock ticks since boot (field 22 of `/proc/<pid>/stat`);
/// `None` when it is gone, a zombie, or this system has no `/proc`.
pub fn start_time(pid: u32) -> Option<u64> {
    use std::io::Read as _;
    // One read: the line is a few hundred bytes, and this is on a dispatch's way.
    let mut buf = [0u8; 1024];
    let read = std::fs::File::open(format!("/proc/{pid}/stat"))
        .ok()?
        .read(&mut buf)
        .ok()?;
    let stat = std::str::from_utf8(&buf[..read]).ok()?;
    // The name is in parentheses and may hold anything; the fields follow the last `)`.
    let mut fields = stat[stat.rfind(')')? + 1..].split_ascii_whitespace();
    if matches!(fields.next()?, "Z" | "X") {
        return None;
    }
    // State is field 3; the start time is field 22.
    fields.nth(18)?.parse().ok()
}

/// Returns true if and only if process `pid` is still the one that started at `start`: a pid
/// given to another process since is not.
pub fn same(pid: u32, start: Option<u64>) -> bool {
    match (start, start_time(pid)) {
        (Some(recorded), Some(now)) => recorded == now,
        // No `/proc` to tell by: the process is there, as far as anyone can know.
        (None, None) if !std::path::Path::new("/proc/self/stat").exists() => exists(pid),
        _ => false,
    }
}

#[cfg(unix)]
mod os {
    use std::os::fd::RawFd;

    pub const TERM: i32 = libc::SIGTERM;
    pub const KILL: i32 = libc::SIGKILL;

    /// Takes a POSIX record lock on all of `file` (open for writing) without waiting: whether
    /// it was taken. Such a lock belongs to this process, not to the descriptor, so a child
    /// started while it is held does not hold it too (a `flock` would stay held by the child
    /// until it replaced itself); it goes when this process closes the file, or exits.
    pub fn lock_now(file: &std::fs::File) -> std::io::Result<bool> {
        use std::os::fd::AsRawFd as _;
        // SAFETY: an all-zero flock is a valid value; the fields set are plain integers.
        let mut lock: libc::flock = unsafe { std::mem::zeroed() };
        lock.l_type = libc::F_WRLCK as libc::c_short;
        lock.l_whence = libc::SEEK_SET as libc::c_short;
        // SAFETY: fcntl reads the flock we own; the descriptor is open.
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &lock) } == 0 {
            return Ok(true);
        }
        match std::io::Error::last_os_error() {
            e if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES)) => Ok(false),
            e => Err(e),
        }
    }

    fn pid_t(pid: u32) -> Option<libc::pid_t> {
        libc::pid_t::try_from(pid).ok().filter(|p| *p > 1)
    }

    pub fn exists(pid: u32) -> bool {
        // SAFETY: kill(2) with signal 0 only asks whether the process exists.
        pid_t(pid).is_some_and(|pid| unsafe { libc::kill(pid, 0) } == 0)
    }

    /// Sends `sig` to process `pid` once it is known to be the one that started at `start`.
    pub fn signal_same(pid: u32, start: Option<u64>, sig: i32) -> bool {
        let Some(target) = pid_t(pid) else {
            return false;
        };
        #[cfg(target_os = "linux")]
        {
            // A pidfd names the process that has the pid now; checked after it is open, the
            // start time tells that it is the recorded one, and the signal goes to it alone.
            // SAFETY: pidfd_open takes plain integers and returns a new descriptor or -1.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, target, 0) };
            if let Ok(fd) = RawFd::try_from(fd) {
                if fd >= 0 {
                    let sent = super::same(pid, start)
                        // SAFETY: the descriptor is ours and open; no siginfo is passed.
                        && unsafe {
                            libc::syscall(
                                libc::SYS_pidfd_send_signal,
                                fd,
                                sig,
                                std::ptr::null::<libc::siginfo_t>(),
                                0,
                            )
                        } == 0;
                    // SAFETY: closing the descriptor opened above, once.
                    unsafe { libc::close(fd) };
                    return sent;
                }
            }
        }
        // SAFETY: kill(2) takes plain integers.
        super::same(pid, start) && unsafe { libc::kill(target, sig) } == 0
    }

    /// Sends `sig` to the process group `pgid` once its leader is known to be the process that
    /// started at `start`.
    pub fn signal_group_same(pgid: u32, start: Option<u64>, sig: i32) -> bool {
        let Some(group) = pid_t(pgid) else {
            return false;
        };
        // SAFETY: kill(2) takes plain integers; a negative pid names the group.
        super::same(pgid, start) && unsafe { libc::kill(-group, sig) } == 0
    }

    /// Runs this process, and what it starts, at [`NICE`] at least: background work must not
    /// take the CPU from the agent's own dispatches. Only system calls, so a child between
    /// `fork` and `exec` may call it.
    pub fn lower_priority() {
        // SAFETY: getpriority and setpriority take plain integers; errno is left as it is, since
        // a priority of -1 is a valid answer and a refusal changes nothing that matters here.
        unsafe {
            let now = libc::getpriority(libc::PRIO_PROCESS, 0);
            if now < super::NICE {
                libc::setpriority(libc::PRIO_PROCESS, 0, super::NICE);
            }
        }
    }

    /// Closes every descriptor above stderr but `keep`: what the dispatcher's caller let it
    /// inherit (a pipe it waits on, say) must not be held open for the length of a background
    /// handler.
    pub fn close_inherited(keep: Option<RawFd>) {
        let keep = keep.filter(|fd| *fd > 2);
        #[cfg(target_os = "linux")]
        {
            let ranges = match keep.and_then(|fd| u32::try_from(fd).ok()) {
                Some(fd) => [(3, fd - 1), (fd + 1, u32::MAX)],
                None => [(3, u32::MAX), (1, 0)],
            };
            // SAFETY: close_range(2) takes plain integers and closes only descriptors; an empty
            // range (first above last) is refused with EINVAL and closes nothing.
            let closed = ranges.iter().all(|&(first, last)| {
                first > last
                    || unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) } == 0
            });
            if closed {
                return;
            }
        }
        let open: Vec<RawFd> = std::fs::read_dir("/proc/self/fd")
            .or_else(|_| std::fs::read_dir("/dev/fd"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
            .filter(|fd| *fd > 2 && Some(*fd) != keep)
            .collect();
        for fd in open {
            // SAFETY: closing a descriptor number; the directory's own is closed by now, and
            // one already closed gives EBADF, nothing else.
            unsafe { libc::close(fd) };
        }
    }
}

#[cfg(not(unix))]
mod os {
    pub const TERM: i32 = 15;
    pub const KILL: i32 = 9;

    pub fn lock_now(file: &std::fs::File) -> std::io::Result<bool> {
        match file.try_lock() {
            Ok(()) => Ok(true),
            Err(std::fs::TryLockError::WouldBlock) => Ok(false),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }
    pub fn exists(_pid: u32) -> bool {
        false
    }
    pub fn signal_same(_pid: u32, _start: Option<u64>, _sig: i32) -> bool {
        false
    }
    pub fn signal_group_same(_pgid: u32, _start: Option<u64>, _sig: i32) -> bool {
        false
    }
    pub fn close_inherited(_keep: Option<i32>) {}
    pub fn lower_priority() {}
}

pub use os::{
    close_inherited, exists, lock_now, lower_priority, signal_group_same, signal_same, KILL, TERM,
};

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_told_from_a_later_one_by_its_start_time() {
        let me = std::process::id();
        let start = start_time(me);
        assert!(start.is_some());
        assert!(same(me, start));
        assert!(!same(me, start.map(|s| s + 1)));
        assert!(!same(me, None));
        // A pid no process has.
        assert_eq!(start_time(u32::MAX - 1), None);
    }

    #[test]
    fn a_signal_goes_only_to_the_process_recorded() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        let start = start_time(pid);
        assert!(!signal_same(pid, start.map(|s| s + 1), libc::SIGTERM));
        assert!(exists(pid));
        assert!(signal_same(pid, start, libc::SIGTERM));
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGTERM));
    }
}
