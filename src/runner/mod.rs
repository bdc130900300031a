//! Running one handler process: how it is started, fed its payload, read, and stopped when its
//! timeout expires or the dispatcher is interrupted (contract §6).
//!
//! The platform halves live in `unix.rs` (process groups, one poll loop) and `windows.rs` (a job
//! object and threads); this module holds what they share.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::runner::capture::Capture;

pub mod capture;

#[cfg_attr(unix, path = "unix.rs")]
#[cfg_attr(windows, path = "windows.rs")]
mod os;
#[cfg(target_os = "linux")]
mod spawn;

/// What a handler runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Program {
    /// `command`: run by `/bin/sh -c` (`cmd.exe /d /s /c` on Windows).
    Shell(String),
    /// `argv`: run directly, `argv[0]` looked up on `PATH`.
    Argv(Vec<String>),
}

/// After the handler exits, how long output still held open by something it started is read.
pub const LEFTOVER_WAIT: Duration = Duration::from_millis(100);
/// Between SIGTERM and SIGKILL to a handler's process group.
pub const KILL_GRACE: Duration = Duration::from_secs(1);
/// How long after SIGKILL the handler's group, or the handler itself, may take to disappear
/// before the dispatcher moves on without it. With [`KILL_GRACE`], the "about 1.5 s" past its
/// timeout that a handler costs at most (contract §6).
pub const KILL_SETTLE: Duration = Duration::from_millis(500);

/// Everything needed to run one handler.
pub struct Invocation<'a> {
    pub program: &'a Program,
    /// The current directory for the handler: the project root.
    pub dir: &'a Path,
    /// The bytes written to the handler's stdin, which is then closed.
    pub input: &'a [u8],
    pub timeout: Duration,
}

/// How the handler's process ended.
#[derive(Debug)]
pub enum Ending {
    Exited(i32),
    Signaled(i32),
    /// It could not be started; the text says why.
    SpawnFailed(String),
    /// It ended, but its exit status could not be read: something else reaped it (a caller that
    /// left SIGCHLD ignored, say). Never read as success. (Unix only, as the next.)
    #[cfg_attr(windows, allow(dead_code))]
    Lost,
    /// It was still there a while after SIGKILL (stuck in uninterruptible sleep, on a hung
    /// network mount say), so the dispatcher gave up waiting for it.
    #[cfg_attr(windows, allow(dead_code))]
    Unkillable,
}

/// Why the dispatcher stopped a handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Timeout,
    /// The dispatcher received this signal.
    Interrupted(i32),
}

/// What running one handler gave.
#[derive(Debug)]
pub struct Finished {
    pub ending: Ending,
    /// Set when the dispatcher terminated the handler's group.
    pub stopped: Option<Stop>,
    /// Returns true when SIGKILL was needed after SIGTERM.
    pub killed: bool,
    pub stdout: Capture,
    pub stderr: Capture,
    pub duration: Duration,
    /// The handler exited while something it started still held its stdout or stderr.
    pub leftover_output: bool,
}

impl Finished {
    fn spawn_failed(message: String, duration: Duration) -> Finished {
        Finished {
            ending: Ending::SpawnFailed(message),
            stopped: None,
            killed: false,
            stdout: Capture::default(),
            stderr: Capture::default(),
            duration,
            leftover_output: false,
        }
    }
}

/// Sets the variables handlers receive (and removes those they must not inherit) in the
/// dispatcher's own environment, once per dispatch, so that every spawn passes the environment
/// on as it is. Giving them to each `Command` instead makes std copy the whole environment into a
/// map and back for every handler, which profiles showed to be most of the dispatcher's own cost
/// per handler. A variable already set to the same value by the previous call is left alone:
/// `serve` exports the same few values for request after request, and each `setenv` searches
/// the whole environment.
///
/// # Safety
///
/// No other thread may read or write the process environment while this runs (std's
/// `set_var` contract): the dispatcher runs every dispatch on its one thread.
pub(crate) unsafe fn export_env(set: &[(&str, String)], remove: &[&str]) {
    /// What the last call set; `None` before the first call.
    static EXPORTED: std::sync::Mutex<Option<Vec<(String, String)>>> = std::sync::Mutex::new(None);
    let mut exported = EXPORTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let before = exported.take();
    let had = |key: &str, value: Option<&str>| {
        before.as_ref().is_some_and(|before| {
            before
                .iter()
                .any(|(k, v)| k == key && value.is_none_or(|value| v == value))
        })
    };
    for (key, value) in set {
        if !had(key, Some(value)) {
            std::env::set_var(key, value);
        }
    }
    for key in remove {
        // Inherited, or set by the previous call: otherwise it is gone already.
        if before.is_none() || had(key, None) {
            std::env::remove_var(key);
        }
    }
    *exported = Some(
        set.iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    );
}

/// Moves the process back to the directory it started in, after a chain of handlers.
pub(crate) fn restore_dir() {
    os::restore_dir();
}

/// Runs one handler to its end; never fails (a failure to start is an [`Ending`]). It may change
/// the process's current directory to the handler's ([`restore_dir`] undoes it), so it is for the
/// dispatcher's one thread only.
pub(crate) fn run(invocation: &Invocation<'_>) -> Finished {
    os::run(invocation)
}

/// The program to start: a relative path such as `./hooks/guard.sh` means the project's,
/// whatever directory the dispatcher was started in; a bare name is looked up in `PATH`.
fn program_path<'a>(argv0: &'a str, dir: &Path) -> std::borrow::Cow<'a, Path> {
    let program = Path::new(argv0);
    if program.is_relative() && argv0.contains(['/', '\\']) {
        dir.join(program).into()
    } else {
        program.into()
    }
}

/// The whole command line of a handler, program first (`/bin/sh -c SCRIPT` for `command`).
#[cfg(target_os = "linux")]
fn command_line<'a>(invocation: &Invocation<'a>) -> Vec<std::borrow::Cow<'a, std::ffi::OsStr>> {
    use std::borrow::Cow;
    use std::ffi::OsStr;
    match invocation.program {
        Program::Shell(script) => vec![
            Cow::Borrowed(OsStr::new("/bin/sh")),
            Cow::Borrowed(OsStr::new("-c")),
            Cow::Borrowed(OsStr::new(script.as_str())),
        ],
        Program::Argv(argv) => {
            let mut line = Vec::with_capacity(argv.len());
            line.push(match program_path(&argv[0], invocation.dir) {
                Cow::Borrowed(path) => Cow::Borrowed(path.as_os_str()),
                Cow::Owned(path) => Cow::Owned(path.into_os_string()),
            });
            line.extend(
                argv[1..]
                    .iter()
                    .map(|arg| Cow::Borrowed(OsStr::new(arg.as_str()))),
            );
            line
        }
    }
}

/// The process to start, without platform specifics such as the process group.
fn command(invocation: &Invocation<'_>) -> Command {
    let mut command = match invocation.program {
        Program::Shell(script) => shell(script),
        Program::Argv(argv) => {
            let mut command = Command::new(&*program_path(&argv[0], invocation.dir));
            command.args(&argv[1..]);
            command
        }
    };
    if !os::enter_dir(invocation.dir) {
        command.current_dir(invocation.dir);
    }
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

#[cfg(unix)]
fn shell(script: &str) -> Command {
    let mut command = Command::new("/bin/sh");
    command.arg("-c").arg(script);
    command
}

#[cfg(windows)]
fn shell(script: &str) -> Command {
    use std::os::windows::process::CommandExt;
    let mut command = Command::new("cmd.exe");
    command
        .args(["/d", "/s", "/c"])
        .raw_arg(format!("\"{script}\""));
    command
}

/// A spawn error as a handler's message.
fn spawn_message(program: &Program, err: &std::io::Error) -> String {
    let what = match program {
        Program::Shell(_) => "/bin/sh".to_string(),
        Program::Argv(argv) => argv[0].clone(),
    };
    let hint = match err.kind() {
        std::io::ErrorKind::NotFound => "; check the name, or give a full path (PATH is searched)",
        std::io::ErrorKind::PermissionDenied => {
            "; is it a directory, or missing its executable bit (chmod +x)?"
        }
        _ if is_exec_format_error(err) => {
            "; it is not a program the system can start: if it is a script, add a #! line at its \
             top (such as #!/bin/sh), or run it through its interpreter ([\"sh\", \"script.sh\"])"
        }
        _ => "",
    };
    format!("could not start {what}: {err}{hint}")
}

/// Returns true if and only if `err` is ENOEXEC: a file without a `#!` line and not a binary.
#[cfg(unix)]
fn is_exec_format_error(err: &std::io::Error) -> bool {
    err.raw_os_error() == Some(libc::ENOEXEC)
}

#[cfg(not(unix))]
fn is_exec_format_error(_err: &std::io::Error) -> bool {
    false
}
