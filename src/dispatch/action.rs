//! How a handler's action (`settings::Action`) is done: today one kind of action, a process
//! (`command` or `argv`), which the runner starts. Each kind ends in a [`Done`], the
//! facts `outcome::judge` reads, so that another kind would be judged by the same rules.

use std::path::Path;
use std::time::Duration;

use crate::dispatch::confine::Confine;
use crate::runner::{self, Invocation, Program};
use crate::settings::Action;

/// How long a handler that outlived its forced stop is waited for before the dispatch moves on.
pub use crate::runner::KILL_SETTLE;

/// Why the dispatcher stopped a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Timeout,
    /// The dispatcher received this signal.
    Interrupted(i32),
}

/// How a run ended, whatever its kind.
#[derive(Debug)]
pub enum Ending {
    /// It answered, in its kind's terms.
    Answered(Answer),
    /// The shell it went through exited 126 or 127: the program it was to start was not found,
    /// or not executable.
    NotRunnable(i32),
    /// A process was ended by this signal.
    Signaled(i32),
    /// It could not be started; the text says why.
    NotStarted(String),
    /// It was not started: a file it was to run is not there (contract §6); the text names it.
    Missing(String),
    /// Its sandbox could not be had, so it was not run (contract §20); the text says why.
    NotConfined(String),
    /// It ended, but how could not be read: something else reaped it. Never read as success.
    Lost,
    /// It was still there a while after being killed, so the dispatcher gave up waiting.
    Unkillable,
}

/// What a run that answered said, in its kind's own terms (`settings::kind::Ends`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// A process's exit code.
    Exit(i32),
}

impl Answer {
    /// The code a protocol reads the answer by (contract §6): 0 a reply to read, 2 a block,
    /// anything else a failure.
    pub fn code(self) -> i32 {
        match self {
            Answer::Exit(code) => code,
        }
    }
}

/// What one run of an action gave, whatever the action.
#[derive(Debug)]
pub struct Done {
    pub ending: Ending,
    /// Set when the dispatcher stopped it.
    pub stopped: Option<Stop>,
    /// Stopping it took force (SIGKILL after SIGTERM).
    pub killed: bool,
    pub stdout: String,
    pub stdout_truncated: bool,
    pub stderr: String,
    pub stderr_truncated: bool,
    pub duration: Duration,
    /// It ended while something it started still held its output.
    pub leftover_output: bool,
}

/// The environment of one run: the variables it gets on top of the dispatcher's (replacing
/// any it inherited of the same name), and the inherited ones it must not get.
#[derive(Clone, Copy)]
pub struct Environment<'a> {
    pub set: &'a [(&'a str, String)],
    pub unset: &'a [&'a str],
}

/// Runs the action once in `dir` with `input` on stdin, for at most `timeout`, in `env`,
/// confined by `confine` (not at all when its sandbox was refused); never fails (a failure is
/// a [`Done`]). `spawned` is called once the action is under way (for a process, once it is
/// started, or could not be), before its end is waited for. Changes nothing of the process's
/// own state, so runs of different requests may go on at once (`runner::run`).
pub fn perform(
    action: &Action,
    dir: &Path,
    input: &[u8],
    timeout: Duration,
    env: Environment<'_>,
    confine: Confine<'_>,
    spawned: &dyn Fn(),
) -> Done {
    let confine = match confine {
        Confine::None => None,
        Confine::In(prepared) => Some(prepared),
        Confine::Refused(why) => {
            spawned();
            return Done::not_run(Ending::NotConfined(why));
        }
    };
    match action {
        Action::Process(program) => {
            if let Some(why) = missing_script(program, dir) {
                spawned();
                return Done {
                    ending: Ending::Missing(why),
                    stopped: None,
                    killed: false,
                    stdout: String::new(),
                    stdout_truncated: false,
                    stderr: String::new(),
                    stderr_truncated: false,
                    duration: Duration::ZERO,
                    leftover_output: false,
                };
            }
            let finished = runner::run(&Invocation {
                program,
                dir,
                input,
                timeout,
                env: env.set,
                unset: env.unset,
                confine,
                spawned,
            });
            process_done(program, finished)
        }
    }
}

impl Done {
    /// A run that never started, ending so.
    fn not_run(ending: Ending) -> Done {
        Done {
            ending,
            stopped: None,
            killed: false,
            stdout: String::new(),
            stdout_truncated: false,
            stderr: String::new(),
            stderr_truncated: false,
            duration: Duration::ZERO,
            leftover_output: false,
        }
    }
}

/// A process's end in the terms every action shares.
fn process_done(program: &Program, finished: runner::Finished) -> Done {
    let ending = match finished.ending {
        runner::Ending::Exited(code @ (126 | 127)) if matches!(program, Program::Shell(_)) => {
            Ending::NotRunnable(code)
        }
        runner::Ending::Exited(code) => Ending::Answered(Answer::Exit(code)),
        runner::Ending::Signaled(sig) => Ending::Signaled(sig),
        runner::Ending::SpawnFailed(why) => Ending::NotStarted(why),
        runner::Ending::NotConfined(why) => Ending::NotConfined(why),
        runner::Ending::Lost => Ending::Lost,
        runner::Ending::Unkillable => Ending::Unkillable,
    };
    Done {
        ending,
        stopped: finished.stopped.map(|stop| match stop {
            runner::Stop::Timeout => Stop::Timeout,
            runner::Stop::Interrupted(sig) => Stop::Interrupted(sig),
        }),
        killed: finished.killed,
        stdout: finished.stdout.text(),
        stdout_truncated: finished.stdout.truncated(),
        stderr: finished.stderr.text(),
        stderr_truncated: finished.stderr.truncated(),
        duration: finished.duration,
        leftover_output: finished.leftover_output,
    }
}

/// The first script an interpreter of `program` is to run (`sh .levelcode/hooks/guard.sh`,
/// `bun scripts/x.ts`) that is not there, under the project root `dir` or the home directory:
/// what the handler's message says (contract §6). Such a handler is not started: dash exits 2 on
/// a missing script, which would read as a block. A word the dispatcher cannot resolve without
/// a shell (a variable other than the project root's, a glob) is left to the interpreter.
fn missing_script(program: &Program, dir: &Path) -> Option<String> {
    use crate::shell::scripts::{interpreter_script, interpreter_scripts};
    let scripts: Vec<String> = match program {
        // Only a command that could name a file is read at all: `true` costs nothing here.
        Program::Shell(command) if command.contains(['.', '/']) => interpreter_scripts(command),
        Program::Shell(_) | Program::PowerShell(_) => return None,
        Program::Argv(argv) => {
            let (first, args) = argv.split_first()?;
            interpreter_script(first, args)
                .map(str::to_string)
                .into_iter()
                .collect()
        }
        Program::Exec { program, args } => interpreter_script(program, args)
            .map(str::to_string)
            .into_iter()
            .collect(),
    };
    let home = crate::environment::home();
    scripts.into_iter().find_map(|word| {
        let path = script_path(&word, dir, home)?;
        let gone =
            std::fs::metadata(&path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
        gone.then(|| {
            format!(
                "{word:?} does not exist ({}); not started, since a missing script is an error, \
                 not a block (check the path: handlers run in the project root); the tool call proceeds",
                path.display()
            )
        })
    })
}

/// Where a script word points, when that is under the project root `dir` or the home directory
/// and can be told without a shell.
fn script_path(word: &str, dir: &Path, home: Option<&Path>) -> Option<std::path::PathBuf> {
    use crate::shell::scripts::strip_project_dir;
    let plain = |text: &str| !text.chars().any(|c| "$`*?[]{}~".contains(c));
    if let Some(rest) = strip_project_dir(word) {
        let rest = rest.trim_start_matches('/');
        return plain(rest).then(|| dir.join(rest));
    }
    if let Some(rest) = word.strip_prefix("~/") {
        return home.filter(|_| plain(rest)).map(|h| h.join(rest));
    }
    if !plain(word) || word.is_empty() {
        return None;
    }
    let path = Path::new(word);
    if path.is_relative() {
        return Some(dir.join(path));
    }
    (path.starts_with(dir) || home.is_some_and(|h| path.starts_with(h))).then(|| path.to_path_buf())
}
