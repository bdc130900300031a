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
