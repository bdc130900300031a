//! How a handler's action (`settings::Action`) is done: a process (`command` or `argv`), which
//! the runner starts, or a POST of the event to a URL (an http handler, contract §19), which
//! the dispatcher's HTTP client (`crate::http`) sends. Each kind ends in a [`Done`], the facts
//! `outcome::judge` reads, so that every kind is judged by the same rules.

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::dispatch::confine::Confine;
use crate::http::{self, Post, Roots, Url};
use crate::runner::{self, Invocation, Program};
use crate::settings::{Action, HttpHook};

/// How much of a stream (a process's stdout or stderr, an answer's body) is kept (contract §6,
/// §19).
pub const KEPT: usize = 64 * 1024;

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
    /// It got no answer, or was not sent, for this reason (an http handler: a connection that
    /// failed, a timeout, a URL its settings or the managed layer do not allow).
    Failed(String),
    /// It was still there a while after being killed, so the dispatcher gave up waiting.
    Unkillable,
}

/// What a run that answered said, in its kind's own terms (`settings::kind::Ends`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// A process's exit code.
    Exit(i32),
    /// An HTTP status.
    Status(u16),
}

impl Answer {
    /// The code a protocol reads the answer by (contract §6): 0 a reply to read, 2 a block,
    /// anything else a failure. A 2xx is read as a command's exit 0 with its body as stdout
    /// (contract §19; `outcome` refuses a body that is neither empty nor a JSON object); any
    /// other status is itself, never 0 or 2.
    pub fn code(self) -> i32 {
        match self {
            Answer::Exit(code) => code,
            Answer::Status(200..=299) => 0,
            Answer::Status(status) => i32::from(status),
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

impl Done {
    /// A run that got no answer, or was not sent, for `why`, after `duration`.
    pub fn failed(why: String, duration: Duration) -> Done {
        Done {
            duration,
            ..Done::not_run(Ending::Failed(why))
        }
    }

    /// A process that could not be started, for `why`.
    pub fn not_started(why: String) -> Done {
        Done::not_run(Ending::NotStarted(why))
    }

    /// How it ended, as a result entry says it: the exit code (of a process that exited, or of
    /// the shell that could not run its program; not the negative one of a process the
    /// dispatcher stopped), the signal that ended it, an http handler's status.
    pub fn codes(&self) -> Codes {
        let mut codes = Codes::default();
        match self.ending {
            Ending::Answered(Answer::Exit(code)) if self.stopped.is_none() || code >= 0 => {
                codes.exit_code = Some(code);
            }
            Ending::Answered(Answer::Status(status)) => codes.http_status = Some(status),
            Ending::NotRunnable(code) => codes.exit_code = Some(code),
            Ending::Signaled(sig) => codes.signal = Some(sig),
            Ending::Answered(Answer::Exit(_))
            | Ending::NotStarted(_)
            | Ending::Missing(_)
            | Ending::NotConfined(_)
            | Ending::Failed(_)
            | Ending::Lost
            | Ending::Unkillable => {}
        }
        codes
    }
}

/// What a result entry says of how a run ended ([`Done::codes`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Codes {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub http_status: Option<u16>,
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
    spawned: &dyn Fn(Option<u32>),
) -> Done {
    let confine = match confine {
        Confine::None => None,
        Confine::In(prepared) => Some(prepared),
        Confine::Refused(why) => {
            spawned(None);
            return Done::not_run(Ending::NotConfined(why));
        }
    };
    match action {
        Action::Process(program) => {
            if let Some(why) = missing_script(program, dir) {
                spawned(None);
                return Done::not_run(Ending::Missing(why));
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
        // An http handler is no process of its own: there is nothing to confine (contract §20
        // is about what a handler's processes may do); the dispatcher sends the request.
        Action::Http(hook) => {
            spawned(None);
            let traceparent = env
                .set
                .iter()
                .find(|(name, _)| *name == "TRACEPARENT")
                .map(|(_, value)| value.as_str());
            post(hook, input, timeout, traceparent)
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

/// An http handler's POST of `input` (contract §19): its headers filled in, its own
/// `traceparent`, one deadline for the whole exchange, the first [`KEPT`] bytes of the answer.
/// The request runs on a thread of its own, so that a signal to the dispatcher ends the wait
/// at once, as it ends a process's.
fn post(hook: &HttpHook, input: &[u8], timeout: Duration, traceparent: Option<&str>) -> Done {
    let started = Instant::now();
    let url = match Url::parse(&hook.url) {
        Ok(url) => url,
        Err(why) => return Done::failed(format!("not sent: {why}"), started.elapsed()),
    };
    if !url.https && !url.is_loopback() && !hook.plain_allowed {
        return Done::failed(
            format!(
                "not sent: plain http:// to {}, which is not this machine, would carry the event unprotected; use https://, or set \"{}\": true in this settings file",
                url.host,
                crate::settings::ALLOW_PLAIN_HTTP
            ),
            started.elapsed(),
        );
    }
    let mut headers = hook.header_values(crate::environment::handler_variable);
    if let Some(traceparent) = traceparent {
        headers.push(("traceparent".into(), traceparent.into()));
    }
    let (tx, answer) = mpsc::sync_channel(1);
    let request = (hook.url.clone(), input.to_vec());
    let spawned = std::thread::Builder::new()
        .name("http-hook".into())
        .spawn(move || {
            let (url, body) = request;
            let _ = tx.send(http::post(&Post {
                url: &url,
                headers: &headers,
                content_type: "application/json",
                encoding: None,
                body: &body,
                timeout,
                limit: KEPT,
                roots: &Roots::System,
            }));
        });
    let thread = match spawned {
        Ok(thread) => thread,
        Err(e) => {
            return Done::failed(
                format!("not sent: cannot start a thread: {e}"),
                started.elapsed(),
            )
        }
    };
    let answer = loop {
        // The answer, or every 20 ms a look for a signal; the client keeps the deadline.
        match answer.recv_timeout(Duration::from_millis(20)) {
            Ok(answer) => {
                // It has sent its answer and ends: joined, so that a dispatch that goes on to
                // start a background handler is again a process of one thread (contract §21).
                let _ = thread.join();
                break answer;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err(http::Failure::Other("the request's thread ended".into()))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Some(sig) = crate::signals::received() {
                    let mut done =
                        Done::failed("the request was abandoned".into(), started.elapsed());
                    done.stopped = Some(Stop::Interrupted(sig));
                    return done;
                }
            }
        }
    };
    let duration = started.elapsed();
    match answer {
        Ok(answer) => {
            let stdout = kept_text(answer.body, answer.truncated);
            Done {
                ending: Ending::Answered(Answer::Status(answer.status)),
                stopped: None,
                killed: false,
                stdout,
                stdout_truncated: answer.truncated,
                stderr: String::new(),
                stderr_truncated: false,
                duration,
                leftover_output: false,
            }
        }
        Err(http::Failure::Timeout) => Done::failed(
            format!(
                "no answer from {} within its timeout of {} s; raise \"timeout\" if it needs longer",
                url.host,
                timeout.as_secs_f64()
            ),
            duration,
        ),
        Err(http::Failure::Other(why)) => Done::failed(why, duration),
    }
}

/// An answer's body as text, bytes that are not UTF-8 replaced; when the limit cut it, a
/// character it cut in two left out (contract §6's rule for a process's output).
fn kept_text(mut body: Vec<u8>, truncated: bool) -> String {
    if truncated {
        if let Err(e) = std::str::from_utf8(&body) {
            if e.error_len().is_none() {
                body.truncate(e.valid_up_to());
            }
        }
    }
    String::from_utf8(body).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
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
