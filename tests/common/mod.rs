//! The test harness: a temporary HOME and project per test, and a builder that runs the real
//! binary against them.
//!
//! ```ignore
//! let out = Test::new()
//!     .project_settings(on("Stop", "echo hi"))
//!     .event("Stop")
//!     .run();
//! assert_eq!(out.status(), 0);
//! assert_eq!(out.outcomes(), ["proceed"]);
//! ```
//!
//! Every test gets its own [`Sandbox`] (`sandbox.rs`): a directory holding `home/` (the child's
//! `HOME`) and `project/` (the child's current directory, so a payload without `cwd` uses it as
//! the project root), with the variables of [`CLEARED`] removed from the child's environment
//! unless a test sets them. Test files that need their own builder start from
//! [`Sandbox::command`] or [`command`].

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub mod certs;
mod sandbox;
pub mod server;
pub use sandbox::{bin, command, Sandbox, CLEARED, TRUST};

/// Writes `contents` at `path`, creating its folders.
pub fn write(path: &Path, contents: impl AsRef<[u8]>) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, contents).unwrap();
}

/// The variable that lets a machine without some tool or privilege skip the tests that need it:
/// a comma-separated list of the names [`require`] is called with (`perl`, `python3`, `root`,
/// `proc-io`). Without it, such a test fails: a missing prerequisite never passes silently.
pub const SKIP_VAR: &str = "LEVELCODE_HOOKS_TEST_SKIP";

/// Returns true when the test may go on. When `available` is false, the test fails, unless
/// [`SKIP_VAR`] names `what`, in which case this returns false and the test returns early.
pub fn require(what: &str, available: bool, why: &str) -> bool {
    if available {
        return true;
    }
    let skipped = std::env::var(SKIP_VAR)
        .unwrap_or_default()
        .split(',')
        .any(|name| name.trim() == what);
    assert!(
        skipped,
        "this test needs {what} ({why}); provide it, or set {SKIP_VAR}={what} to skip the test"
    );
    eprintln!("skipped: {SKIP_VAR} names {what} ({why})");
    false
}

/// Returns true if and only if `program` runs (`program args` exits 0).
pub fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// How long any one dispatch may take before the harness kills it and fails the test: far above
/// every bound a test asserts, so only a hang reaches it.
const HANG_LIMIT: Duration = Duration::from_secs(45);

/// Settings with one group under `event` holding one `command` handler.
pub fn on(event: &str, command: &str) -> Value {
    json!({ "hooks": { event: [ { "hooks": [ { "command": command } ] } ] } })
}

/// Settings with one group under `event` holding the given handlers.
pub fn group(event: &str, matcher: Option<&str>, handlers: Value) -> Value {
    let mut group = json!({ "hooks": handlers });
    if let Some(matcher) = matcher {
        group["matcher"] = json!(matcher);
    }
    json!({ "hooks": { event: [group] } })
}

enum Input {
    Bytes(Vec<u8>),
    /// Written by this function on its own thread; the pipe closes when it returns.
    Stream(Box<dyn FnOnce(&mut ChildStdin) + Send>),
    /// Stdin stays open, for [`Running::write_stdin`], until the dispatcher exits.
    Open,
}

/// One dispatch to run, built fluently.
pub struct Test {
    sandbox: Sandbox,
    root: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, Option<OsString>)>,
    current_dir: PathBuf,
    input: Input,
    close_stdout: bool,
    /// Standard descriptors the dispatcher starts without (closed, not /dev/null).
    closed: Vec<i32>,
    /// Signals the dispatcher starts with ignored, and blocked, as a caller may leave them.
    ignored: Vec<i32>,
    blocked: Vec<i32>,
    reap: Vec<PathBuf>,
}

impl Default for Test {
    fn default() -> Test {
        Test::new()
    }
}

impl Test {
    pub fn new() -> Test {
        let sandbox = Sandbox::new();
        let root = sandbox.root().to_path_buf();
        let current_dir = sandbox.project();
        Test {
            sandbox,
            root,
            args: Vec::new(),
            env: Vec::new(),
            current_dir,
            input: Input::Bytes(Vec::new()),
            close_stdout: false,
            closed: Vec::new(),
            ignored: Vec::new(),
            blocked: Vec::new(),
            reap: Vec::new(),
        }
    }

    /// The test's own directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The child's `HOME`.
    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    /// The project root (the child's current directory unless a test changes it).
    pub fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Test {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, args: I) -> Test {
        for arg in args {
            self.args.push(arg.as_ref().to_owned());
        }
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Test {
        self.env
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Runs without the opt-in that trusts the project's hooks, as a person's machine does.
    pub fn untrusted(mut self) -> Test {
        self.env.push((OsString::from(TRUST), None));
        self
    }

    /// The child's current directory (default: the project).
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Test {
        self.current_dir = dir.as_ref().to_owned();
        self
    }

    /// Writes `contents` at `path`, relative to the test's directory.
    pub fn file(self, path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> Test {
        write(&self.root.join(path), contents);
        self
    }

    /// Writes `contents` at `path` relative to the project.
    pub fn project_file(self, path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> Test {
        write(&self.project().join(path), contents);
        self
    }

    /// Writes an executable shell script at `path` relative to the project.
    pub fn project_script(self, path: impl AsRef<Path>, body: &str) -> Test {
        use std::os::unix::fs::PermissionsExt;
        let path = self.project().join(path);
        write(&path, format!("#!/bin/sh\n{body}\n"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        self
    }

    /// `$HOME/.config/levelcode/settings.json`.
    pub fn user_settings(self, settings: impl std::fmt::Display) -> Test {
        let path = self.home().join(".config/levelcode/settings.json");
        write(&path, settings.to_string());
        self
    }

    /// `$HOME/.levelcode/settings.json`.
    pub fn data_settings(self, settings: impl std::fmt::Display) -> Test {
        let path = self.home().join(".levelcode/settings.json");
        write(&path, settings.to_string());
        self
    }

    /// `<project>/.levelcode/settings.json`.
    pub fn project_settings(self, settings: impl std::fmt::Display) -> Test {
        let path = self.project().join(".levelcode/settings.json");
        write(&path, settings.to_string());
        self
    }

    /// Writes `settings` at `path` (relative to the test's directory) and passes it with
    /// `--settings`.
    pub fn settings_file(self, path: impl AsRef<Path>, settings: impl std::fmt::Display) -> Test {
        let full = self.root.join(path);
        write(&full, settings.to_string());
        self.arg("--settings").arg(full)
    }

    /// The exact bytes on the child's stdin.
    pub fn stdin(mut self, bytes: impl AsRef<[u8]>) -> Test {
        self.input = Input::Bytes(bytes.as_ref().to_vec());
        self
    }

    /// A JSON payload on stdin.
    pub fn payload(self, payload: &Value) -> Test {
        self.stdin(payload.to_string())
    }

    /// `{"event": <event>}` on stdin.
    pub fn event(self, event: &str) -> Test {
        self.payload(&json!({ "event": event }))
    }

    /// `{"event": <event>, "tool_name": <tool>}` on stdin.
    pub fn tool_event(self, event: &str, tool: &str) -> Test {
        self.payload(&json!({ "event": event, "tool_name": tool }))
    }

    /// Stdin written by `write` on its own thread (for payloads too large to hold twice).
    pub fn stdin_stream(mut self, write: impl FnOnce(&mut ChildStdin) + Send + 'static) -> Test {
        self.input = Input::Stream(Box::new(write));
        self
    }

    /// Leaves stdin open until the dispatcher exits; see [`Running::write_stdin`].
    pub fn stdin_open(mut self) -> Test {
        self.input = Input::Open;
        self
    }

    /// Closes the read end of the child's stdout before it writes anything.
    pub fn close_stdout(mut self) -> Test {
        self.close_stdout = true;
        self
    }

    /// Starts the dispatcher with descriptor `fd` (0, 1 or 2) closed, not even /dev/null.
    pub fn closed(mut self, fd: i32) -> Test {
        self.closed.push(fd);
        self
    }

    /// Starts the dispatcher with `sig` ignored (SIG_IGN survives exec), as some callers do.
    pub fn ignore_signal(mut self, sig: i32) -> Test {
        self.ignored.push(sig);
        self
    }

    /// Starts the dispatcher with `sig` blocked in its signal mask, as some callers do.
    pub fn block_signal(mut self, sig: i32) -> Test {
        self.blocked.push(sig);
        self
    }

    /// Kills, when the test ends however it ends, every process whose pid a handler wrote (one
    /// per line) in `path`, relative to the project, so a failing test leaves nothing running.
    pub fn reap(mut self, path: impl AsRef<Path>) -> Test {
        self.reap.push(self.project().join(path));
        self
    }

    /// Runs the binary to its end.
    pub fn run(self) -> Output {
        self.spawn().wait()
    }

    /// Starts the binary and returns while it runs.
    pub fn spawn(self) -> Running {
        // Project hooks run only once trusted (contract §13); tests about something else trust
        // them for the run. Tests about trust remove it with `.untrusted()`.
        let mut command = command(&self.sandbox.home(), &self.current_dir);
        command
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in &self.env {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        if !self.closed.is_empty() {
            use std::os::unix::process::CommandExt;
            for fd in &self.closed {
                match fd {
                    0 => command.stdin(Stdio::inherit()),
                    1 => command.stdout(Stdio::inherit()),
                    _ => command.stderr(Stdio::inherit()),
                };
            }
            let closed = self.closed.clone();
            // SAFETY: close(2) is async-signal-safe and touches nothing but the descriptors.
            unsafe {
                command.pre_exec(move || {
                    for fd in &closed {
                        libc::close(*fd);
                    }
                    Ok(())
                });
            }
        }
        if !self.ignored.is_empty() || !self.blocked.is_empty() {
            use std::os::unix::process::CommandExt;
            let (ignored, blocked) = (self.ignored.clone(), self.blocked.clone());
            // SAFETY: signal, sigemptyset, sigaddset and sigprocmask are async-signal-safe and
            // touch only the child's own dispositions and a set on its stack. std has reset the
            // mask before this runs, so what is set here is what the dispatcher inherits.
            unsafe {
                command.pre_exec(move || {
                    for sig in &ignored {
                        libc::signal(*sig, libc::SIG_IGN);
                    }
                    let mut set: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut set);
                    for sig in &blocked {
                        libc::sigaddset(&mut set, *sig);
                    }
                    libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                    Ok(())
                });
            }
        }
        let started = Instant::now();
        let mut child = command.spawn().expect("the binary under test starts");
        let stdout = child.stdout.take().filter(|_| !self.close_stdout);
        let stdout = read_in_background(stdout);
        let stderr = read_in_background(child.stderr.take());
        let (writer, stdin) = match (child.stdin.take(), self.input) {
            (None, _) => (None, None),
            (Some(mut stdin), input) => match input {
                Input::Bytes(bytes) => (
                    Some(std::thread::spawn(move || {
                        // The dispatcher may stop reading early (an over-long payload): not an error.
                        let _ = stdin.write_all(&bytes);
                    })),
                    None,
                ),
                Input::Stream(write) => (Some(std::thread::spawn(move || write(&mut stdin))), None),
                Input::Open => (None, Some(stdin)),
            },
        };
        Running {
            guard: Guard {
                reap: self.reap,
                _sandbox: self.sandbox,
            },
            root: self.root,
            child,
            started,
            stdin,
            writer,
            stdout,
            stderr,
        }
    }
}

fn read_in_background<R: Read + Send + 'static>(stream: Option<R>) -> Option<JoinHandle<Vec<u8>>> {
    let mut stream = stream?;
    Some(std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        bytes
    }))
}

/// A dispatcher that is running.
pub struct Running {
    guard: Guard,
    root: PathBuf,
    child: Child,
    started: Instant,
    stdin: Option<ChildStdin>,
    writer: Option<JoinHandle<()>>,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr: Option<JoinHandle<Vec<u8>>>,
}

impl Running {
    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap()
    }

    pub fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    /// Sends `sig` to the dispatcher.
    pub fn signal(&self, sig: i32) {
        signal(self.pid(), sig);
    }

    /// Waits until the dispatcher is asleep (blocked reading its stdin, say), at most 10 s.
    pub fn wait_until_sleeping(&self) {
        wait_asleep(self.pid(), "the dispatcher");
    }

    /// Writes to a stdin left open by [`Test::stdin_open`].
    pub fn write_stdin(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin was left open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Waits for the dispatcher to exit; kills it and fails the test after [`HANG_LIMIT`].
    pub fn wait(mut self) -> Output {
        let deadline = self.started + HANG_LIMIT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("the dispatcher hung: still running after {HANG_LIMIT:?}");
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let elapsed = self.started.elapsed();
        self.stdin = None;
        if let Some(writer) = self.writer.take() {
            writer.join().unwrap();
        }
        let stdout = self
            .stdout
            .take()
            .map(|t| t.join().unwrap())
            .unwrap_or_default();
        let stderr = self
            .stderr
            .take()
            .map(|t| t.join().unwrap())
            .unwrap_or_default();
        Output {
            _guard: self.guard,
            root: self.root,
            exit: status,
            stdout,
            stderr,
            elapsed,
        }
    }
}

/// What one dispatch printed, with the test's directory kept alive for inspection.
pub struct Output {
    _guard: Guard,
    root: PathBuf,
    exit: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    elapsed: Duration,
}

impl Output {
    /// The exit code; fails the test when the dispatcher was killed by a signal.
    pub fn status(&self) -> i32 {
        use std::os::unix::process::ExitStatusExt;
        match self.exit.code() {
            Some(code) => code,
            None => panic!(
                "the dispatcher died of signal {:?}; stderr: {}",
                self.exit.signal(),
                self.stderr()
            ),
        }
    }

    pub fn stdout(&self) -> String {
        String::from_utf8(self.stdout.clone()).expect("stdout is UTF-8")
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// Wall-clock time from start to exit.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// stdout parsed, after checking it is exactly one JSON object on one line ending in a
    /// newline.
    pub fn json(&self) -> Value {
        let stdout = self.stdout();
        assert!(
            stdout.ends_with('\n'),
            "stdout must end in a newline: {stdout:?}; stderr: {}",
            self.stderr()
        );
        let line = &stdout[..stdout.len() - 1];
        assert!(!line.contains('\n'), "stdout must be one line: {stdout:?}");
        let value: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout:?}"));
        assert!(value.is_object(), "stdout must be an object: {stdout:?}");
        value
    }

    /// The `error` of a failed dispatch, after checking exit 1 and `{"error": "..."}` alone.
    pub fn error(&self) -> String {
        let json = self.json();
        assert_eq!(self.status(), 1, "a failure exits 1: {json}");
        let object = json.as_object().unwrap();
        assert_eq!(object.len(), 1, "an error prints only \"error\": {json}");
        object["error"]
            .as_str()
            .unwrap_or_else(|| panic!("\"error\" must be a string: {json}"))
            .to_string()
    }

    /// `decision` of the output.
    pub fn decision(&self) -> String {
        self.json()["decision"].as_str().unwrap().to_string()
    }

    /// The `handlers` array.
    pub fn handlers(&self) -> Vec<Value> {
        self.json()["handlers"]
            .as_array()
            .unwrap_or_else(|| panic!("no handlers array: {}", self.stdout()))
            .clone()
    }

    /// The `i`-th handler's result.
    pub fn handler(&self, i: usize) -> Value {
        let handlers = self.handlers();
        handlers
            .get(i)
            .unwrap_or_else(|| panic!("no handler {i}: {}", self.stdout()))
            .clone()
    }

    /// Every handler's `outcome`, in order.
    pub fn outcomes(&self) -> Vec<String> {
        self.field_of_handlers("outcome")
    }

    /// Every handler's `label`, in order.
    pub fn labels(&self) -> Vec<String> {
        self.field_of_handlers("label")
    }

    /// Every handler's `stdout` trimmed, in order.
    pub fn stdouts(&self) -> Vec<String> {
        self.field_of_handlers("stdout")
            .into_iter()
            .map(|s| s.trim().to_string())
            .collect()
    }

    fn field_of_handlers(&self, key: &str) -> Vec<String> {
        self.handlers()
            .iter()
            .map(|h| h[key].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// The `warnings` array.
    pub fn warnings(&self) -> Vec<String> {
        self.json()["warnings"]
            .as_array()
            .unwrap_or_else(|| panic!("no warnings array: {}", self.stdout()))
            .iter()
            .map(|w| w.as_str().unwrap().to_string())
            .collect()
    }

    /// The one warning containing every one of `needles`; fails the test when there is not
    /// exactly one.
    pub fn warning(&self, needles: &[&str]) -> String {
        let warnings = self.warnings();
        let found: Vec<&String> = warnings
            .iter()
            .filter(|w| needles.iter().all(|n| w.contains(n)))
            .collect();
        assert_eq!(
            found.len(),
            1,
            "expected one warning containing {needles:?}, got: {warnings:#?}"
        );
        found[0].clone()
    }

    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    pub fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    /// A file relative to the project, as bytes.
    pub fn project_bytes(&self, path: impl AsRef<Path>) -> Vec<u8> {
        let path = self.project().join(path);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// A file relative to the project, as text.
    pub fn project_text(&self, path: impl AsRef<Path>) -> String {
        String::from_utf8(self.project_bytes(path)).unwrap()
    }

    /// Returns true if and only if the file exists, relative to the project.
    pub fn project_has(&self, path: impl AsRef<Path>) -> bool {
        self.project().join(path).exists()
    }
}

/// Sends `sig` to process `pid` (a negative pid: to that process group).
pub fn signal(pid: i32, sig: i32) {
    // SAFETY: kill(2) takes plain integers; a failure (no such process) is ignored.
    unsafe { libc::kill(pid, sig) };
}

/// Waits until the process `pid` has been asleep for 200 ms on end (blocked reading its input,
/// not between two steps of starting up), at most 10 s; `what` names it if it never is.
pub fn wait_asleep(pid: i32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut asleep_since: Option<Instant> = None;
    while Instant::now() < deadline {
        if process_state(pid) == Some('S') {
            let since = *asleep_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= Duration::from_millis(200) {
                return;
            }
        } else {
            asleep_since = None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{what} never went to sleep");
}

/// A process's state letter from `/proc/<pid>/stat` (`R`, `S`, `Z`, …); `None` when it is gone.
fn process_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces; the state follows the last `)`.
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// The parent of process `pid`, from `/proc/<pid>/stat` (the field after its state).
pub fn parent_of(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(1)
        .and_then(|ppid| ppid.parse().ok())
        .unwrap_or_else(|| panic!("no parent in {stat:?}"))
}

/// Returns true if and only if process `pid` exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    if Path::new("/proc/self/stat").exists() {
        return process_state(pid).is_some_and(|s| s != 'Z' && s != 'X');
    }
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// The live (not zombie) processes of process group `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        // SAFETY: signal 0 only checks for existence.
        let any = unsafe { libc::kill(-pgid, 0) == 0 };
        return if any { vec![pgid] } else { Vec::new() };
    };
    let mut members = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // After the name: state, ppid, pgrp.
        if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" {
            members.push(pid);
        }
    }
    members
}

/// Waits until `path` exists and holds a complete line, at most `limit`; returns its text.
pub fn wait_for_line(path: &Path, limit: Duration) -> String {
    wait_for_lines(path, 1, limit)
}

/// Waits until `path` holds at least `count` complete lines, at most `limit`; returns its text.
pub fn wait_for_lines(path: &Path, count: usize, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if text.ends_with('\n') && text.lines().count() >= count {
                return text;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} did not get {count} line(s) within {limit:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The pids written one per line in `path`.
pub fn read_pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

/// Waits at most `limit` for every one of `pids` to be gone; returns those still alive.
pub fn wait_gone(pids: &[i32], limit: Duration) -> Vec<i32> {
    let deadline = Instant::now() + limit;
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|p| alive(*p)).collect();
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A process sent SIGKILL is gone for good, but on a loaded machine it may take a moment to
/// vanish from /proc: allow for that, no more.
pub const VANISH: Duration = Duration::from_secs(2);

/// Checks that none of `pids` and no other member of the group `pgid` is alive.
pub fn assert_gone(pids: &[i32], pgid: i32) {
    let left = wait_gone(pids, VANISH);
    assert!(left.is_empty(), "still alive: {left:?} of {pids:?}");
    let members = group_members(pgid);
    let left = wait_gone(&members, VANISH);
    assert!(left.is_empty(), "process group {pgid} still has {left:?}");
}

/// Owns the test's directory; first kills the processes listed in its pid files.
struct Guard {
    reap: Vec<PathBuf>,
    _sandbox: Sandbox,
}

impl Drop for Guard {
    fn drop(&mut self) {
        for file in &self.reap {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            for pid in text
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
            {
                if pid > 1 && alive(pid) {
                    signal(pid, libc::SIGKILL);
                }
            }
        }
    }
}
