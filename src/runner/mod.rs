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
pub mod confine;

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
    /// `command` with `"shell": "powershell"`: run by PowerShell (`pwsh`, else `powershell`)
    /// with `-NoProfile -NonInteractive -Command`.
    PowerShell(String),
    /// `argv`: run directly, `argv[0]` looked up on `PATH`.
    Argv(Vec<String>),
    /// `command` with `args`, Claude Code's exec form: the program run directly, looked up as
    /// `argv[0]` is, with the arguments exactly as written.
    Exec { program: String, args: Vec<String> },
}

impl Program {
    /// The program to start and its arguments, as given to the system: `/bin/sh` and `-c`
    /// before a `command`, PowerShell and its flags before a PowerShell one.
    pub fn line(&self) -> (&str, Vec<&str>) {
        match self {
            Program::Shell(script) => (SHELL[0], vec![SHELL[1], script.as_str()]),
            Program::PowerShell(script) => {
                let mut args = POWERSHELL_FLAGS.to_vec();
                args.push(script.as_str());
                (powershell(), args)
            }
            Program::Argv(argv) => (
                argv.first().map_or("", String::as_str),
                argv.iter().skip(1).map(String::as_str).collect(),
            ),
            Program::Exec { program, args } => {
                (program.as_str(), args.iter().map(String::as_str).collect())
            }
        }
    }
}

/// The shell of a `command` and its flag.
#[cfg(unix)]
const SHELL: [&str; 2] = ["/bin/sh", "-c"];
#[cfg(windows)]
const SHELL: [&str; 2] = ["cmd.exe", "/c"];

/// PowerShell's flags before a `command` run by it.
const POWERSHELL_FLAGS: [&str; 3] = ["-NoProfile", "-NonInteractive", "-Command"];

/// PowerShell's program: `pwsh` (PowerShell 7, on every system) when it is on `PATH`, else
/// `powershell` (Windows PowerShell). Looked up once per process.
fn powershell() -> &'static str {
    static FOUND: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    FOUND.get_or_init(|| {
        let names: &[&str] = if cfg!(windows) {
            &["pwsh.exe"]
        } else {
            &["pwsh"]
        };
        let on_path = std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|dir| names.iter().any(|n| dir.join(n).is_file()))
        });
        if on_path {
            "pwsh"
        } else {
            "powershell"
        }
    })
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
    /// Variables the handler gets on top of the dispatcher's environment, replacing any it
    /// inherited of the same name.
    pub env: &'a [(&'a str, String)],
    /// Inherited variables the handler must not get.
    pub unset: &'a [&'a str],
    /// The confinement it and everything it starts run in (contract §20), when it has one.
    pub confine: Option<&'a confine::Prepared>,
    /// Called once the handler is started (its payload written to its stdin as far as the
    /// pipe takes it at once), or could not be, before the runner waits for it: what the
    /// caller does there overlaps the handler's own start instead of delaying it. It gets the
    /// handler's pid, `None` when it did not start.
    pub spawned: &'a dyn Fn(Option<u32>),
}

/// How the handler's process ended.
#[derive(Debug)]
pub enum Ending {
    Exited(i32),
    Signaled(i32),
    /// It could not be started; the text says why.
    SpawnFailed(String),
    /// Its confinement could not be applied, so it was not run; the text says why.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    NotConfined(String),
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
    fn not_started(ending: Ending, duration: Duration) -> Finished {
        Finished {
            ending,
            stopped: None,
            killed: false,
            stdout: Capture::default(),
            stderr: Capture::default(),
            duration,
            leftover_output: false,
        }
    }
}

/// Runs one handler to its end; never fails (a failure to start is an [`Ending`]). It changes
/// nothing of the process's own state (environment, current directory), so handlers of
/// different requests may run at once from different threads.
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
    let (program, args) = invocation.program.line();
    let mut line = Vec::with_capacity(args.len() + 1);
    line.push(match program_path(program, invocation.dir) {
        Cow::Borrowed(path) => Cow::Borrowed(path.as_os_str()),
        Cow::Owned(path) => Cow::Owned(path.into_os_string()),
    });
    line.extend(args.into_iter().map(|arg| Cow::Borrowed(OsStr::new(arg))));
    line
}

/// The process to start, without platform specifics such as the process group.
fn command(invocation: &Invocation<'_>) -> Command {
    let mut command = match invocation.program {
        Program::Shell(script) => shell(script),
        program => {
            let (name, args) = program.line();
            let mut command = Command::new(&*program_path(name, invocation.dir));
            command.args(args);
            command
        }
    };
    command.current_dir(invocation.dir);
    command.envs(invocation.env.iter().map(|(key, value)| (key, value)));
    for key in invocation.unset {
        command.env_remove(key);
    }
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

#[cfg(unix)]
fn shell(script: &str) -> Command {
    let mut command = Command::new(SHELL[0]);
    command.arg(SHELL[1]).arg(script);
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
    let what = program.line().0;
    let hint = match err.kind() {
        std::io::ErrorKind::NotFound if matches!(program, Program::PowerShell(_)) => {
            "; \"shell\": \"powershell\" needs PowerShell (pwsh) on PATH; install it, or leave \"shell\" out to run the command by /bin/sh"
        }
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
