//! Starting a handler on Linux: `clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD)` and a dozen system
//! calls in the child, instead of std's `posix_spawn`.
//!
//! Why: the child of a `CLONE_VM` spawn shares the dispatcher's memory until it executes, so it
//! must not run one of the dispatcher's signal handlers. glibc's `posix_spawn` makes sure by
//! reading and resetting all 64 signal dispositions in the child, two system calls each, and
//! checks the descriptor limit once per file action: about 140 system calls, ≈ 30 µs per handler
//! on the benchmark machine, 5 % of a `sh -c true` (docs/BENCHMARKS.md). Here the child resets
//! only the signals this process catches ([`RESET`], built from `signals::HANDLED`) and SIGPIPE, which the dispatcher ignores
//! and std gives its children back; joins its own process group; moves its pipes to 0, 1 and 2;
//! enters the project directory; confines itself when the handler is sandboxed (three system
//! calls, `confine::apply`, of what the parent prepared); unblocks signals; and executes. The kernel hands back a pidfd
//! from the same clone call.
//!
//! The child runs on a stack of its own while the parent thread waits (`CLONE_VFORK`), calls only
//! async-signal-safe functions, allocates nothing and cannot panic: everything it needs is
//! prepared by the parent. A failure is written into the plan they share, then the child exits.

use std::ffi::{c_char, c_int, c_void, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::confine::{apply, Steps};

/// A started handler: its pid, a descriptor that becomes readable when it exits, and the
/// dispatcher's ends of its three pipes.
pub struct Spawned {
    pub pid: libc::pid_t,
    pub pidfd: Option<OwnedFd>,
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// Why a handler could not be started.
#[derive(Debug)]
pub enum Failure {
    /// Its directory could not be entered.
    Dir(io::Error),
    /// The program could not be executed (or the spawn itself failed).
    Program(io::Error),
    /// Its confinement could not be applied: it was not run.
    Confine(io::Error),
    /// This way of spawning is not available here (clone refused, say): use std's.
    Unavailable,
}

/// What the child needs, prepared by the parent; the last two fields are the child's answer.
#[repr(C)]
struct Plan {
    /// Paths to try in turn, ending with a null pointer: one, or one per `PATH` entry.
    programs: *const *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    dir: *const c_char,
    /// Become stdin, stdout and stderr; all are 3 or above, so no move overwrites another.
    fds: [c_int; 3],
    reset: *const c_int,
    reset_len: usize,
    /// What the child confines itself with before executing ([`Steps::NONE`]: nothing).
    confine: Steps,
    failed_at: c_int,
    errno: c_int,
}

/// Set once `clone` was refused for a reason that will not go away (EPERM from a seccomp
/// filter, ENOSYS, EINVAL from a kernel without CLONE_PIDFD's neighbours…), for the life of the
/// process. EAGAIN and ENOMEM are passing shortages and are not remembered.
static CLONE_REFUSED: AtomicBool = AtomicBool::new(false);

const FAILED_SETUP: c_int = 1;
const FAILED_DIR: c_int = 2;
const FAILED_EXEC: c_int = 3;
const FAILED_CONFINE: c_int = 4;

/// The child's stack, in bytes: a buffer in the parent's own frame, which the parent cannot
/// touch while the child runs on it (CLONE_VFORK suspends it until the child executes or exits).
/// The child needs a few hundred bytes: its own frame, and those of the C library's `sigaction`,
/// `execve` and friends.
const CHILD_STACK: usize = 16 * 1024;

/// Starts `argv` (whose first element is the program: a path, or a name looked up in `PATH`)
/// in `dir`, leading a process group of its own, with three pipes as its standard streams, and
/// the dispatcher's environment with `env` added (replacing variables of the same names) and
/// `unset` left out, confined by `confine` (a [`Prepared`](super::confine::Prepared)'s steps,
/// which must stay alive until this returns). Nothing of the process's own state changes, so
/// threads may spawn at once.
///
/// A kernel or sandbox that refuses this kind of `clone` refuses it for good: the refusal is
/// remembered ([`CLONE_REFUSED`]), and every later call answers [`Failure::Unavailable`] at once,
/// so the caller's fallback is taken without a failed system call per handler.
pub fn spawn<S: AsRef<OsStr>>(
    argv: &[S],
    dir: &Path,
    env: &[(&str, String)],
    unset: &[&str],
    confine: Steps,
) -> Result<Spawned, Failure> {
    if CLONE_REFUSED.load(Ordering::Relaxed) {
        return Err(Failure::Unavailable);
    }
    let argv_c = argv
        .iter()
        .map(|arg| c_string(arg.as_ref().as_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Failure::Program)?;
    let Some(program) = argv_c.first() else {
        return Err(Failure::Program(io::ErrorKind::InvalidInput.into()));
    };
    let candidates = candidates(program).map_err(Failure::Program)?;
    let dir = c_string(dir.as_os_str().as_bytes()).map_err(Failure::Dir)?;
    let mut argv_ptrs: Vec<*const c_char> = argv_c.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let mut program_ptrs: Vec<*const c_char> = candidates.iter().map(|p| p.as_ptr()).collect();
    program_ptrs.push(std::ptr::null());
    let own_env = own_entries(env).map_err(Failure::Program)?;
    let envp = environment(env, unset, &own_env);

    // The child's ends first in each pair: stdin's read end, stdout's and stderr's write ends.
    let (stdin_child, stdin) = pipe().map_err(Failure::Program)?;
    let (stdout, stdout_child) = pipe().map_err(Failure::Program)?;
    let (stderr, stderr_child) = pipe().map_err(Failure::Program)?;

    let mut plan = Plan {
        programs: program_ptrs.as_ptr(),
        argv: argv_ptrs.as_ptr(),
        envp: envp.as_ptr(),
        dir: dir.as_ptr(),
        fds: [
            stdin_child.as_raw_fd(),
            stdout_child.as_raw_fd(),
            stderr_child.as_raw_fd(),
        ],
        reset: RESET.as_ptr(),
        reset_len: RESET.len(),
        confine,
        failed_at: 0,
        errno: 0,
    };

    // 16-byte units, so the top is aligned as the ABI wants a stack.
    let mut stack = std::mem::MaybeUninit::<[u128; CHILD_STACK / 16]>::uninit();
    let mut pidfd: c_int = -1;
    // SAFETY: sigfillset and pthread_sigmask write into sets we own.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
    }
    // SAFETY: `child` only reads the plan's pointers, all alive until clone returns (the parent
    // waits: CLONE_VFORK), and writes the plan's answer fields; it runs on `stack`, which nothing
    // else uses meanwhile. All signals are blocked across the clone, so no handler of ours can
    // run in the child before it resets them. CLONE_PIDFD writes the pidfd into `pidfd`.
    let pid = unsafe {
        libc::clone(
            child,
            stack
                .as_mut_ptr()
                .cast::<u128>()
                .add(CHILD_STACK / 16)
                .cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD,
            std::ptr::addr_of_mut!(plan).cast(),
            std::ptr::addr_of_mut!(pidfd),
        )
    };
    let clone_error = io::Error::last_os_error();
    // SAFETY: restores the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    drop((stdin_child, stdout_child, stderr_child));
    if pid < 0 {
        return Err(clone_failed(clone_error));
    }
    // Kernels before 5.2 ignore CLONE_PIDFD and leave -1.
    let pidfd = if pidfd >= 0 {
        // SAFETY: the kernel just created this descriptor for us, close-on-exec.
        Some(unsafe { OwnedFd::from_raw_fd(pidfd) })
    } else {
        super::os::pidfd_open(pid)
    };

    // SAFETY: the child has executed or exited, so it no longer writes the plan.
    let (failed_at, errno) = unsafe {
        (
            std::ptr::read_volatile(std::ptr::addr_of!(plan.failed_at)),
            std::ptr::read_volatile(std::ptr::addr_of!(plan.errno)),
        )
    };
    if failed_at != 0 {
        let mut status = 0;
        // SAFETY: reaps the child, which has exited already.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        let error = io::Error::from_raw_os_error(errno);
        return Err(match failed_at {
            FAILED_DIR => Failure::Dir(error),
            FAILED_CONFINE => Failure::Confine(error),
            _ => Failure::Program(error),
        });
    }
    Ok(Spawned {
        pid,
        pidfd,
        stdin,
        stdout,
        stderr,
    })
}

/// What a failed `clone` means: a passing shortage (EAGAIN, ENOMEM) is this handler's failure to
/// start; anything else is a refusal of this way of spawning, remembered for good.
fn clone_failed(error: io::Error) -> Failure {
    match error.raw_os_error() {
        Some(libc::EAGAIN | libc::ENOMEM) => Failure::Program(error),
        _ => {
            CLONE_REFUSED.store(true, Ordering::Relaxed);
            Failure::Unavailable
        }
    }
}

/// The paths the child tries: the program itself when it names a path, otherwise the name in
/// each `PATH` directory in turn (an empty entry is the current directory), as `execvp` does.
fn candidates(program: &CString) -> io::Result<Vec<CString>> {
    let name = program.as_bytes();
    if name.contains(&b'/') {
        return Ok(vec![program.clone()]);
    }
    if name.is_empty() {
        return Err(io::ErrorKind::NotFound.into());
    }
    let path = std::env::var_os("PATH");
    let path = path
        .as_deref()
        .map_or(&b"/bin:/usr/bin"[..], OsStr::as_bytes);
    path.split(|b| *b == b':')
        .map(|dir| {
            if dir.is_empty() {
                Ok(program.clone())
            } else {
                let mut full = Vec::with_capacity(dir.len() + 1 + name.len());
                full.extend_from_slice(dir);
                full.push(b'/');
                full.extend_from_slice(name);
                c_string(&full)
            }
        })
        .collect()
}

fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| nul_error())
}

fn nul_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "a NUL byte in the program, its arguments, the directory or a variable's value",
    )
}

/// `env` as the C library writes an environment: `KEY=value` and a NUL byte for each, one after
/// another in one buffer (one allocation, however many variables).
fn own_entries(env: &[(&str, String)]) -> io::Result<Vec<u8>> {
    let size = env.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
    let mut own = Vec::with_capacity(size);
    for (key, value) in env {
        if key.as_bytes().contains(&0) || value.as_bytes().contains(&0) {
            return Err(nul_error());
        }
        own.extend_from_slice(key.as_bytes());
        own.push(b'=');
        own.extend_from_slice(value.as_bytes());
        own.push(0);
    }
    Ok(own)
}

/// The child's environment, for `execve`: every variable of the process's own environment but
/// those `env` replaces and those in `unset`, then `own` ([`own_entries`] of `env`). The
/// pointers point into the process's environment and into `own`, which must outlive the list.
fn environment(env: &[(&str, String)], unset: &[&str], own: &[u8]) -> Vec<*const c_char> {
    extern "C" {
        static environ: *const *const c_char;
    }
    /// Returns true if and only if the entry `KEY=value` at `entry` has the name `key`. Reads
    /// no further than the first byte that differs, so never past the entry's NUL, which no
    /// name contains.
    ///
    /// # Safety
    ///
    /// `entry` points to a NUL-terminated string.
    unsafe fn named(entry: *const c_char, key: &[u8]) -> bool {
        for (i, byte) in key.iter().enumerate() {
            if *entry.add(i).cast::<u8>() != *byte {
                return false;
            }
        }
        *entry.add(key.len()).cast::<u8>() == b'='
    }
    let names = || {
        env.iter()
            .map(|(key, _)| key.as_bytes())
            .chain(unset.iter().map(|key| key.as_bytes()))
    };
    // Most variables start with a letter no name here starts with, and are passed by one look.
    let mut first = [false; 256];
    for name in names() {
        if let Some(&byte) = name.first() {
            first[usize::from(byte)] = true;
        }
    }
    let mut list = Vec::with_capacity(64 + env.len());
    // SAFETY: `environ` is the C library's list of NUL-terminated `KEY=value` strings, ending
    // with a null pointer. Nothing in the dispatcher changes the environment once it runs (no
    // `std::env::set_var`: each handler's own variables travel in its own list, built here), so
    // the list and its strings stay as they are while threads read them, and until `execve` has
    // copied them.
    unsafe {
        let mut at = environ;
        if !at.is_null() {
            while !(*at).is_null() {
                let entry = *at;
                let replaced = first[usize::from(*entry.cast::<u8>())]
                    && names().any(|name| named(entry, name));
                if !replaced {
                    list.push(entry);
                }
                at = at.add(1);
            }
        }
    }
    let mut start = 0;
    for end in crate::bytes::positions(0, own) {
        list.push(own[start..].as_ptr().cast());
        start = end + 1;
    }
    list.push(std::ptr::null());
    list
}

/// A pipe, close-on-exec, both ends numbered 3 or above, so the child's moves to 0, 1 and 2
/// never overwrite one another. (The dispatcher's start opens /dev/null on any of 0, 1 and 2
/// that is closed, so this matters only to a library caller that closed one since.)
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1; 2];
    // SAFETY: pipe2 writes two descriptors into the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nothing else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((above_stdio(read)?, above_stdio(write)?))
}

fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: duplicates a descriptor we own to the lowest free number from 3.
    let moved = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if moved < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fcntl just created it for us.
    Ok(unsafe { OwnedFd::from_raw_fd(moved) })
}

/// The signals the child resets to their default before executing: every one this process
/// catches, since a handler must never run in the child, which shares our memory. They are
/// [`signals::HANDLED`](crate::signals::HANDLED), the very list `signals::install` catches, so
/// the two cannot drift apart; then SIGSEGV and SIGBUS (std's stack overflow report, where std's
/// own start-up runs: tests, other platforms); and SIGPIPE, which the dispatcher ignores and std
/// resets for the programs it starts. A test compares this list with `/proc/self/status`.
const RESET: [c_int; crate::signals::HANDLED.len() + 3] = {
    let extra = [libc::SIGSEGV, libc::SIGBUS, libc::SIGPIPE];
    let mut all = [0; crate::signals::HANDLED.len() + 3];
    let mut i = 0;
    while i < crate::signals::HANDLED.len() {
        all[i] = crate::signals::HANDLED[i];
        i += 1;
    }
    let mut j = 0;
    while j < extra.len() {
        all[i + j] = extra[j];
        j += 1;
    }
    all
};

/// Fails the build, loudly, if a signal `signals::install` catches is ever missing from
/// [`RESET`] (say, the list above rewritten by hand).
const _: () = {
    let mut i = 0;
    while i < crate::signals::HANDLED.len() {
        let mut found = false;
        let mut j = 0;
        while j < RESET.len() {
            found |= RESET[j] == crate::signals::HANDLED[i];
            j += 1;
        }
        assert!(found, "a signal of signals::HANDLED is missing from RESET");
        i += 1;
    }
};

/// The child, between clone and execve. Async-signal-safe calls only; no allocation, no
/// panic (no indexing, no arithmetic that can overflow).
extern "C" fn child(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the parent's plan, alive and untouched by the parent while it waits.
    unsafe {
        let plan = arg.cast::<Plan>();
        let fail = |stage: c_int| -> ! {
            let errno = *libc::__errno_location();
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*plan).errno), errno);
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*plan).failed_at), stage);
            libc::_exit(127)
        };
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        let mut i = 0;
        while i < (*plan).reset_len {
            libc::sigaction(*(*plan).reset.add(i), &default, std::ptr::null_mut());
            i += 1;
        }
        if libc::setpgid(0, 0) != 0 {
            fail(FAILED_SETUP);
        }
        // dup2 leaves the new descriptor without close-on-exec: these three are inherited.
        let [stdin, stdout, stderr] = (*plan).fds;
        if libc::dup2(stdin, 0) < 0 || libc::dup2(stdout, 1) < 0 || libc::dup2(stderr, 2) < 0 {
            fail(FAILED_SETUP);
        }
        if libc::chdir((*plan).dir) != 0 {
            fail(FAILED_DIR);
        }
        // The plan's steps are of a confinement the parent holds until clone returns.
        if !apply((*plan).confine) {
            fail(FAILED_CONFINE);
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());

        // As execvp: try each path; remember a permission error and report it if nothing else
        // worked; stop at an error that says the file is there but cannot run.
        let mut denied = false;
        let mut program = (*plan).programs;
        while !(*program).is_null() {
            libc::execve(*program, (*plan).argv, (*plan).envp);
            match *libc::__errno_location() {
                libc::EACCES => denied = true,
                libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
                _ => fail(FAILED_EXEC),
            }
            program = program.add(1);
        }
        if denied {
            *libc::__errno_location() = libc::EACCES;
        }
        fail(FAILED_EXEC)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every signal this process catches, from `/proc/self/status`.
    fn caught() -> Vec<c_int> {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let mask = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .unwrap();
        let mask = u64::from_str_radix(mask.trim(), 16).unwrap();
        (1..=64)
            .filter(|sig| mask & (1 << (sig - 1)) != 0)
            .collect()
    }

    #[test]
    fn the_child_resets_every_signal_the_dispatcher_catches() {
        crate::signals::install();
        let caught = caught();
        assert!(caught.contains(&libc::SIGTERM), "{caught:?}");
        // 32 and 33 are the C library's own, for its threads (cancellation, set*id), caught
        // once a second thread exists, as in this test binary; they are never sent to another
        // process, and sigaction refuses them.
        for sig in caught
            .into_iter()
            .filter(|sig| !(32..libc::SIGRTMIN()).contains(sig))
        {
            assert!(
                RESET.contains(&sig),
                "signal {sig} has a handler in the dispatcher but is not in RESET: a spawned \
                 child could run it before executing"
            );
        }
    }

    /// A refused clone is remembered: later spawns do not try again. Run in a process of its
    /// own (this test binary, started again for this one test), since the refusal lasts as long
    /// as the process and would change how every other test here spawns.
    #[test]
    fn a_refused_clone_is_remembered_for_the_life_of_the_process() {
        const CHILD: &str = "LEVELCODE_HOOKS_TEST_CLONE_REFUSED";
        if std::env::var_os(CHILD).is_none() {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "runner::spawn::tests::a_refused_clone_is_remembered_for_the_life_of_the_process",
                    "--test-threads=1",
                ])
                .env(CHILD, "1")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{text}");
            assert!(
                text.contains("1 passed"),
                "the test ran in the child: {text}"
            );
            return;
        }
        let dir = std::env::temp_dir();
        assert!(spawn(&["/bin/sh", "-c", "exit 0"], &dir, &[], &[], Steps::NONE).is_ok());
        // A passing shortage is not a refusal.
        let shortage = clone_failed(io::Error::from_raw_os_error(libc::EAGAIN));
        assert!(matches!(shortage, Failure::Program(_)), "{shortage:?}");
        assert!(spawn(&["/bin/sh", "-c", "exit 0"], &dir, &[], &[], Steps::NONE).is_ok());
        // A sandbox's EPERM is, and from then on this way is not tried again.
        let refusal = clone_failed(io::Error::from_raw_os_error(libc::EPERM));
        assert!(matches!(refusal, Failure::Unavailable), "{refusal:?}");
        for _ in 0..3 {
            assert!(matches!(
                spawn(&["/bin/sh", "-c", "exit 0"], &dir, &[], &[], Steps::NONE),
                Err(Failure::Unavailable)
            ));
        }
    }

    #[test]
    fn a_failed_exec_or_chdir_says_which_and_why() {
        let dir = std::env::temp_dir();
        let missing = spawn(
            &["/nonexistent/levelcode-hooks-test"],
            &dir,
            &[],
            &[],
            Steps::NONE,
        );
        match missing {
            Err(Failure::Program(e)) => assert_eq!(e.kind(), io::ErrorKind::NotFound),
            other => panic!("{:?}", other.map(|s| s.pid)),
        }
        let nul = spawn(
            &["/bin/sh", "-c", "true"],
            &dir,
            &[("LEVELCODE_TOOL_NAME", "a\0b".to_string())],
            &[],
            Steps::NONE,
        );
        match nul {
            Err(Failure::Program(e)) => assert_eq!(e.kind(), io::ErrorKind::InvalidInput),
            other => panic!("{:?}", other.map(|s| s.pid)),
        }
        let no_dir = spawn(
            &["/bin/sh", "-c", "true"],
            Path::new("/nonexistent/levelcode-hooks"),
            &[],
            &[],
            Steps::NONE,
        );
        match no_dir {
            Err(Failure::Dir(e)) => assert_eq!(e.kind(), io::ErrorKind::NotFound),
            other => panic!("{:?}", other.map(|s| s.pid)),
        }
    }

    #[test]
    fn a_started_child_gets_its_pipes_directory_and_environment() {
        let dir = std::env::temp_dir().canonicalize().unwrap();
        let script = "pwd; cat; echo; cut -d' ' -f1,5 /proc/$$/stat; echo err >&2; \
                      echo \"$LEVELCODE_HOOK_EVENT ${HOME-no home} $(env | grep -c '^PATH=')\"";
        let before = std::env::var_os("LEVELCODE_HOOK_EVENT");
        let started = spawn(
            &["/bin/sh", "-c", script],
            &dir,
            &[
                ("LEVELCODE_HOOK_EVENT", "Stop".to_string()),
                ("PATH", std::env::var("PATH").unwrap()),
            ],
            &["HOME"],
            Steps::NONE,
        )
        .unwrap_or_else(|_| panic!("spawn failed"));
        let mut stdin = std::fs::File::from(started.stdin);
        std::io::Write::write_all(&mut stdin, b"payload").unwrap();
        drop(stdin);
        let mut out = String::new();
        std::io::Read::read_to_string(&mut std::fs::File::from(started.stdout), &mut out).unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(&mut std::fs::File::from(started.stderr), &mut err).unwrap();
        let mut status = 0;
        // SAFETY: waits for our own child.
        assert_eq!(
            unsafe { libc::waitpid(started.pid, &mut status, 0) },
            started.pid
        );
        assert_eq!(status, 0);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[..2], [dir.display().to_string().as_str(), "payload"]);
        // It leads its own process group: pid and process group are the same number.
        let ids: Vec<&str> = lines[2].split(' ').collect();
        assert_eq!(ids, [started.pid.to_string(), started.pid.to_string()]);
        assert_eq!(err, "err\n");
        // Its own variable; an inherited one left out; an inherited one replaced, not repeated;
        // and the process's own environment as it was.
        assert_eq!(lines[3], "Stop no home 1");
        assert_eq!(std::env::var_os("LEVELCODE_HOOK_EVENT"), before);
        assert!(
            started.pidfd.is_some(),
            "a kernel from 5.2 gives a pidfd from clone"
        );
    }
}
