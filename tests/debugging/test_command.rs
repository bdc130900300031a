//! `test`: a payload from flags, dispatched exactly as `run` would; `--dry-run`; and the readable
//! trace of `-v`.

use serde_json::{json, Value};

use super::{strings, Env};

/// A guard that blocks writes under src/generated/, then a handler that records its stdin.
const GUARD: &str = r#"{"hooks":{"PreToolUse":[
  {"matcher":"write_file|str_replace","hooks":[
    {"name":"guard","command":"grep -q '\"path\":\"src/generated/' && { echo 'src/generated/ is produced by codegen' >&2; exit 2; }; exit 0"},
    {"name":"recorder","command":"cat > payload.json"}]}
]}}"#;

#[test]
fn blocks_as_run_would() {
    let env = Env::new();
    env.project_settings(GUARD);
    let out = env.run(&[
        "test",
        "--event",
        "PreToolUse",
        "--tool",
        "write_file",
        "--input",
        r#"{"path":"src/generated/api.ts","content":"x"}"#,
    ]);
    out.status(2);
    let json = out.json();
    assert_eq!(json["decision"], "block");
    assert_eq!(json["reason"], "src/generated/ is produced by codegen");
    assert_eq!(strings(&json["handlers"], "outcome"), ["block", "skipped"]);
    assert!(out.stderr.contains("src/generated/ is produced by codegen"));
    assert!(!env.project().join("payload.json").exists());

    // The same payload through `run` gives the same decision and handlers.
    let payload = json!({
        "event": "PreToolUse",
        "tool_name": "write_file",
        "tool_input": {"path": "src/generated/api.ts", "content": "x"}
    });
    let run = env.run_stdin(&["run"], &[], &payload.to_string());
    run.status(2);
    let run_json = run.json();
    assert_eq!(run_json["reason"], json["reason"]);
    assert_eq!(
        strings(&run_json["handlers"], "outcome"),
        strings(&json["handlers"], "outcome")
    );
}

#[test]
fn handlers_receive_the_payload_the_flags_describe() {
    let env = Env::new();
    env.project_settings(
        r#"{"hooks":{"PostToolUse":[{"hooks":[{"command":"cat > payload.json"}]}]}}"#,
    );
    let input = env.scratch("input.json");
    env.write(&input, r#"{"path":"README.md"}"#);
    let out = env.run(&[
        "test",
        "--event",
        "PostToolUse",
        "--tool",
        "write_file",
        "--input-file",
        input.to_str().unwrap(),
        "--result",
        r#"{"error":"disk full"}"#,
        "--cwd",
        ".",
    ]);
    out.status(0);
    let text = std::fs::read_to_string(env.project().join("payload.json")).unwrap();
    let payload: Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = payload
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["event", "tool_name", "tool_input", "tool_result", "cwd"]
    );
    assert_eq!(payload["tool_input"], json!({"path": "README.md"}));
    assert_eq!(payload["tool_result"], json!({"error": "disk full"}));
    let cwd = std::path::PathBuf::from(payload["cwd"].as_str().unwrap());
    assert!(cwd.is_absolute());
    assert_eq!(
        cwd.canonicalize().unwrap(),
        env.project().canonicalize().unwrap()
    );

    // Text that is not a JSON object or array stays text.
    env.run(&[
        "test",
        "--event",
        "PostToolUse",
        "--tool",
        "read_files",
        "--result",
        "42 lines",
    ])
    .status(0);
    let text = std::fs::read_to_string(env.project().join("payload.json")).unwrap();
    let payload: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(payload["tool_result"], "42 lines");
    assert!(payload.get("tool_input").is_none());
    assert_eq!(payload["cwd"], env.project().to_str().unwrap());
}

#[test]
fn input_file_dash_reads_stdin() {
    let env = Env::new();
    env.project_settings(
        r#"{"hooks":{"PreToolUse":[{"hooks":[{"command":"cat > payload.json"}]}]}}"#,
    );
    env.run_stdin(
        &[
            "test",
            "--event",
            "PreToolUse",
            "--tool",
            "str_replace",
            "--input-file",
            "-",
        ],
        &[],
        r#"{"path":"a.rs"}"#,
    )
    .status(0);
    let text = std::fs::read_to_string(env.project().join("payload.json")).unwrap();
    assert!(text.contains(r#""tool_input":{"path":"a.rs"}"#), "{text}");
}

#[test]
fn bad_flags_are_errors_in_run_form() {
    let env = Env::new();
    let out = env.run(&["test", "--event", "PreToolUse"]);
    out.status(1);
    assert!(out.json()["error"].as_str().unwrap().contains("--tool"));

    let out = env.run(&[
        "test",
        "--event",
        "PreToolUse",
        "--tool",
        "write_file",
        "--input",
        "{not json",
    ]);
    out.status(1);
    assert!(out.json()["error"].as_str().unwrap().starts_with("--input"));

    let out = env.run(&[
        "test",
        "--event",
        "Stop",
        "--input-file",
        "/nonexistent/input.json",
    ]);
    out.status(1);
    assert!(out.json()["error"]
        .as_str()
        .unwrap()
        .contains("--input-file"));
}

/// `--field` gives the events beyond the four their fields (contract §15): the handler gets
/// them, the matcher is tested against the event's own member, and `--dry-run` agrees.
#[test]
fn fields_of_the_other_events_reach_handlers_and_matchers() {
    let env = Env::new();
    env.project_settings(
        r#"{"hooks":{
            "SessionEnd":[{"matcher":"clear","hooks":[{"command":"cat > ended.json"}]}],
            "UserPromptSubmit":[{"hooks":[{"command":"cat > prompt.json"}]}]}}"#,
    );
    let out = env.run(&[
        "test",
        "--event",
        "UserPromptSubmit",
        "--field",
        "prompt=fix the build",
        "--field",
        "stop_hook_active=true",
    ]);
    out.status(0);
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(env.project().join("prompt.json")).unwrap())
            .unwrap();
    assert_eq!(seen["prompt"], "fix the build");
    // A value that parses as JSON is JSON.
    assert_eq!(seen["stop_hook_active"], true);

    for (reason, runs) in [("clear", true), ("logout", false)] {
        let field = format!("reason={reason}");
        let args = ["test", "--event", "SessionEnd", "--field", &field];
        let dry = env
            .run(&[&args[..], &["--dry-run", "--json"]].concat())
            .status(0)
            .json();
        assert_eq!(
            strings(&dry["would_run"], "label").len(),
            usize::from(runs),
            "{reason}: {dry:#}"
        );
        let real = env.run(&args).status(0).json();
        assert_eq!(
            real["handlers"].as_array().unwrap().len(),
            usize::from(runs),
            "{reason}"
        );
    }
    assert!(env.project().join("ended.json").exists());

    for (field, says) in [
        ("reasn=clear", "did you mean --field reason=...?"),
        ("tool_input={}", "give it with --input instead"),
        ("Reason=clear", "the name must be a payload field"),
        ("reason", "expected NAME=VALUE"),
    ] {
        let out = env.run(&["test", "--event", "SessionEnd", "--field", field]);
        out.status(1);
        let error = out.json()["error"].as_str().unwrap().to_string();
        assert!(error.contains(says), "{field}: {error}");
    }
}

#[test]
fn compact_output_and_settings_flag_work_as_in_run() {
    let env = Env::new();
    let file = env.scratch("s.json");
    env.write(
        &file,
        r#"{"hooks":{"SessionStart":[{"hooks":[{"command":"echo '{\"additionalContext\":\"hello\"}'"}]}]}}"#,
    );
    let out = env.run(&[
        "test",
        "--event",
        "SessionStart",
        "--settings",
        file.to_str().unwrap(),
        "--output",
        "compact",
    ]);
    out.status(0);
    assert_eq!(
        out.stdout,
        "{\"decision\":\"proceed\",\"additionalContext\":\"hello\"}\n"
    );
}

#[test]
fn dry_run_runs_nothing_and_agrees_with_a_real_run() {
    let env = Env::new();
    env.project_settings(
        r#"{"hooks":{"PreToolUse":[
            {"matcher":"write_file","hooks":[{"command":"touch ran-1"},{"command":"touch ran-2","enabled":false}]},
            {"matcher":"code_search","hooks":[{"command":"touch ran-3"}]},
            {"matcher":"write.*","hooks":[{"command":"touch ran-1"},{"argv":["touch","ran-4"]}]}]}}"#,
    );
    let args = [
        "test",
        "--event",
        "PreToolUse",
        "--tool",
        "write_file",
        "--dry-run",
        "--json",
    ];
    let out = env.run(&args);
    out.status(0);
    let dry = out.json();
    assert!(std::fs::read_dir(env.project()).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with("ran-")));
    let planned = strings(&dry["would_run"], "label");
    assert_eq!(planned, ["touch ran-1", "touch ran-4"]);
    assert_eq!(
        strings(&dry["not_run"], "state"),
        ["disabled", "no_match", "duplicate"]
    );
    assert_eq!(dry["payload"]["cwd"], env.project().to_str().unwrap());

    let real = env.run(&args[..5]).status(0).json();
    let ran: Vec<&str> = real["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["outcome"] == "proceed")
        .map(|h| h["label"].as_str().unwrap())
        .collect();
    assert_eq!(ran, planned);
    assert!(env.project().join("ran-4").exists());

    let text = env.run(&args[..6]).status(0).stdout.clone();
    assert!(text.contains("1. touch ran-1"), "{text}");
    assert!(text.contains("2. touch ran-4"), "{text}");
    assert!(text.contains("dry run"), "{text}");
}

#[test]
fn trace_shows_each_handler_the_reason_and_the_decision() {
    let env = Env::new();
    env.project_settings(
        r#"{"hooks":{"PreToolUse":[{"hooks":[
            {"name":"fails","command":"echo 'lint crashed' >&2; exit 3"},
            {"name":"blocks","command":"echo 'no writes on Fridays' >&2; exit 2"},
            {"name":"never","command":"true"}]}]}}"#,
    );
    let out = env.run(&[
        "test",
        "--event",
        "PreToolUse",
        "--tool",
        "write_file",
        "-v",
    ]);
    out.status(2);
    let trace = &out.stderr;
    let line = |needle: &str| {
        trace
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{trace}"))
    };
    let fails = line(" fails ");
    assert!(
        fails.contains("error") && fails.contains("exit 3") && fails.contains(" ms"),
        "{fails}"
    );
    assert!(line("stderr:").contains("lint crashed"));
    let blocks = line(" blocks ");
    assert!(
        blocks.contains("BLOCK") && blocks.contains("exit 2"),
        "{blocks}"
    );
    assert!(line("reason:").contains("no writes on Fridays"));
    assert!(line(" never ").contains("skipped"));
    // The reason is said under the handler that gave it, not again in the decision line.
    assert!(line("levelcode-hooks: decision").contains("decision block;"));
    assert_eq!(
        trace.matches("reason: no writes on Fridays").count(),
        1,
        "{trace}"
    );
    assert!(!trace.contains('\x1b'), "colors on a pipe:\n{trace}");
}

#[test]
fn run_verbose_uses_the_same_trace() {
    let env = Env::new();
    env.project_settings(
        r#"{"hooks":{"Stop":[{"hooks":[{"name":"hello","command":"echo hi"}]}]}}"#,
    );
    let out = env.run_stdin(&["run", "-v"], &[], r#"{"event":"Stop"}"#);
    out.status(0);
    assert!(
        out.stderr
            .lines()
            .any(|l| l.contains("proceed") && l.contains(" hello ")),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("decision proceed"), "{}", out.stderr);
    let quiet = env.run_stdin(&["run"], &[], r#"{"event":"Stop"}"#);
    assert_eq!(quiet.stderr, "");
}

#[test]
fn colors_only_when_asked_and_never_with_no_color() {
    let env = Env::new();
    env.project_settings(r#"{"hooks":{"Stop":[{"hooks":[{"command":"echo hi"}]}]}}"#);
    let args = ["test", "--event", "Stop", "-v"];
    let forced = env.run_env(&args, &[("CLICOLOR_FORCE", "1")]);
    assert!(forced.stderr.contains("\x1b[32m"), "{}", forced.stderr);
    // The JSON on stdout is never colored.
    assert!(!forced.stdout.contains('\x1b'));
    let refused = env.run_env(&args, &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!refused.stderr.contains('\x1b'), "{}", refused.stderr);
    let list = env.run_env(&["list"], &[("CLICOLOR_FORCE", "1")]);
    assert!(list.stdout.contains("\x1b["), "{}", list.stdout);
    let list = env.run_env(&["list"], &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!list.stdout.contains('\x1b'), "{}", list.stdout);
}

/// `--dry-run` shows what each handler would read: a Claude Code handler gets Claude Code's
/// payload (`Bash`, `tool_input.command`), each run of its own (`Read` once per path), while
/// levelcode's handlers read levelcode's.
#[cfg(unix)]
#[test]
fn dry_run_shows_each_handler_the_payload_of_its_own_protocol() {
    let env = Env::new();
    env.project_settings(
        r#"{"hooks":{"PreToolUse":[
            {"matcher":"Bash|Read","protocol":"claude","hooks":[{"name":"claude-guard","command":"true"}]},
            {"hooks":[{"name":"ours","command":"echo ours"}]}]}}"#,
    );
    let dry = |tool: &str, input: &str| {
        env.run(&[
            "test",
            "--event",
            "PreToolUse",
            "--tool",
            tool,
            "--input",
            input,
            "--dry-run",
            "--json",
        ])
        .status(0)
        .json()
    };
    let json = dry("run_terminal_command", r#"{"command":"git push --force"}"#);
    assert_eq!(json["payload"]["tool_name"], "run_terminal_command");
    let claude = &json["would_run"][0];
    assert_eq!(claude["label"], "claude-guard");
    let payloads = claude["payloads"].as_array().unwrap();
    assert_eq!(payloads.len(), 1, "{json:#}");
    assert_eq!(payloads[0]["tool_name"], "Bash");
    assert_eq!(payloads[0]["hook_event_name"], "PreToolUse");
    assert_eq!(payloads[0]["tool_input"]["command"], "git push --force");
    let ours = &json["would_run"][1];
    assert_eq!(ours["payloads"][0]["tool_name"], "run_terminal_command");
    assert_eq!(ours["payloads"][0], json["payload"]);

    let json = dry("read_files", r#"{"paths":["a.txt","b.txt"]}"#);
    let reads: Vec<&str> = json["would_run"][0]["payloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["tool_input"]["file_path"].as_str().unwrap())
        .collect();
    let root = env.project();
    assert_eq!(
        reads,
        [
            root.join("a.txt").to_str().unwrap(),
            root.join("b.txt").to_str().unwrap()
        ]
    );

    let out = env.run(&[
        "test",
        "--event",
        "PreToolUse",
        "--tool",
        "run_terminal_command",
        "--input",
        r#"{"command":"ls"}"#,
        "--dry-run",
    ]);
    let text = &out.status(0).stdout;
    assert!(text.contains("reads (claude): {"), "{text}");
    assert!(text.contains(r#""tool_name":"Bash""#), "{text}");
}

/// A pseudo-terminal: the master end the test reads and types into, the slave end the child
/// gets, and what the child wrote to it, read on a thread of its own so that the test never
/// waits for more than its bound.
#[cfg(unix)]
struct Terminal {
    master: std::fs::File,
    slave: std::os::fd::OwnedFd,
    shown: std::sync::mpsc::Receiver<Vec<u8>>,
    text: String,
}

#[cfg(unix)]
impl Terminal {
    fn open() -> Terminal {
        use std::io::Read;
        use std::os::fd::{FromRawFd, OwnedFd};
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty writes two descriptors; the null pointers ask for default settings.
        let made = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(made, 0, "openpty");
        // SAFETY: both descriptors were just opened and are owned here alone.
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let mut reader = std::fs::File::from(master.try_clone().unwrap());
        let (send, shown) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            // Ends with an error (EIO) once every slave end is closed.
            while let Ok(n @ 1..) = reader.read(&mut buffer) {
                if send.send(buffer[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Terminal {
            master: std::fs::File::from(master),
            slave,
            shown,
            text: String::new(),
        }
    }

    fn end(&self) -> std::process::Stdio {
        std::process::Stdio::from(self.slave.try_clone().unwrap())
    }

    /// Waits until the terminal shows `needle`; false after a generous bound.
    fn wait_for(&mut self, needle: &str) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !self.text.contains(needle) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.shown.recv_timeout(left) {
                Ok(bytes) => self.text.push_str(&String::from_utf8_lossy(&bytes)),
                Err(_) => return false,
            }
        }
        true
    }

    /// Everything shown until the child closed its end (the test's own end is dropped first).
    fn rest(mut self) -> String {
        drop(self.slave);
        while let Ok(bytes) = self.shown.recv_timeout(std::time::Duration::from_secs(30)) {
            self.text.push_str(&String::from_utf8_lossy(&bytes));
        }
        self.text
    }
}

/// A bare `levelcode-hooks` at a terminal says, before it waits, that it reads a payload and
/// how to end it; a payload typed then is dispatched as usual. A pipe gets no such line.
#[cfg(unix)]
#[test]
fn a_bare_dispatcher_at_a_terminal_says_it_reads_a_payload() {
    use std::io::Write;
    let env = Env::new();
    let mut terminal = Terminal::open();
    let mut command = env.command(&[]);
    command
        .stdin(terminal.end())
        .stderr(terminal.end())
        .stdout(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    drop(command);
    let hinted = terminal.wait_for("end with Ctrl-D");
    if !hinted {
        let _ = child.kill();
    }
    assert!(hinted, "no hint on the terminal: {:?}", terminal.text);
    assert!(
        terminal.text.contains("levelcode-hooks test"),
        "{}",
        terminal.text
    );
    terminal
        .master
        .write_all(b"{\"event\":\"Stop\"}\n\x04")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let shown = terminal.rest();
    assert_eq!(out.status.code(), Some(0), "{shown}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["event"], "Stop", "{shown}");

    let piped = env.run_stdin(&[], &[], r#"{"event":"Stop"}"#);
    assert!(
        !piped.status(0).stderr.contains("Ctrl-D"),
        "{}",
        piped.stderr
    );
}

/// `test` at a terminal traces the dispatch: the reason of a block is shown once, under the
/// handler that gave it, not again in the decision line and as a bare line after it; with
/// stderr a pipe, the bare line a program reads is still there.
#[cfg(unix)]
#[test]
fn test_at_a_terminal_shows_the_block_reason_once() {
    let env = Env::new();
    env.project_settings(GUARD);
    let args = [
        "test",
        "--event",
        "PreToolUse",
        "--tool",
        "write_file",
        "--input",
        r#"{"path":"src/generated/api.ts","content":"x"}"#,
    ];
    let terminal = Terminal::open();
    let mut command = env.command(&args);
    command
        .env("NO_COLOR", "1")
        .stderr(terminal.end())
        .stdout(std::process::Stdio::piped());
    let child = command.spawn().unwrap();
    drop(command);
    let out = child.wait_with_output().unwrap();
    let shown = terminal.rest();
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert_eq!(
        shown
            .matches("src/generated/ is produced by codegen")
            .count(),
        1,
        "{shown}"
    );
    assert!(shown.contains("decision block"), "{shown}");
    let piped = env.run(&args);
    assert!(
        piped
            .status(2)
            .stderr
            .lines()
            .any(|l| l == "src/generated/ is produced by codegen"),
        "{}",
        piped.stderr
    );
}
