//! `serve`, black-box: one server answers a stream of requests exactly as `run` answers each
//! payload alone, sees every settings edit, survives bad lines, and stops cleanly on a signal.
//! Many requests at once: [`concurrency`].

mod concurrency;
mod summary;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::server::{Server, ANSWER_LIMIT};
use crate::common::{alive, group_members, read_pids, wait_for_lines, write, Sandbox};

/// A temporary HOME and project, shared by `run` and `serve` in one test.
struct World {
    sandbox: Sandbox,
    env: Vec<(String, String)>,
}

impl World {
    fn new() -> World {
        World {
            sandbox: Sandbox::new(),
            env: Vec::new(),
        }
    }

    fn root(&self) -> PathBuf {
        self.sandbox.root().to_path_buf()
    }

    fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    fn project(&self) -> PathBuf {
        self.root().join("project")
    }

    fn user_settings(&self) -> PathBuf {
        self.home().join(".config/levelcode/settings.json")
    }

    fn data_settings(&self) -> PathBuf {
        self.home().join(".levelcode/settings.json")
    }

    fn project_settings(&self) -> PathBuf {
        self.project().join(".levelcode/settings.json")
    }

    fn env(mut self, key: &str, value: impl Into<String>) -> World {
        self.env.push((key.into(), value.into()));
        self
    }

    /// The binary with `args`, run in the project with the test's HOME.
    fn command(&self, args: &[&str]) -> Command {
        // Project hooks are trusted for the run, except in the tests about trust.
        let mut command = self.sandbox.command();
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in &self.env {
            command.env(key, value);
        }
        command
    }

    /// `run` with `args` on `payload`: its stdout line and exit status.
    fn run(&self, args: &[&str], payload: &str) -> (String, i32) {
        let mut child = self.command(args).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let payload = payload.as_bytes().to_vec();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&payload);
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        (stdout.trim_end().to_string(), out.status.code().unwrap())
    }

    fn serve(&self, args: &[&str]) -> Server {
        let mut full = vec!["serve"];
        full.extend_from_slice(args);
        Server::start(self.command(&full))
    }
}

/// An answer without what may differ between two dispatches of the same payload: the times, and
/// the request's id.
fn timeless(mut answer: Value) -> Value {
    if let Some(object) = answer.as_object_mut() {
        object.remove("duration_ms");
        object.remove("id");
        if let Some(Value::Array(handlers)) = object.get_mut("handlers") {
            for handler in handlers {
                handler.as_object_mut().unwrap().remove("duration_ms");
            }
        }
    }
    answer
}

/// A payload as a request: `id` put first, and `options` when there are any.
fn request_text(payload: &str, id: usize, options: Option<&Value>) -> String {
    let body = payload.strip_prefix('{').unwrap();
    let mut own = format!("\"id\":{id}");
    if let Some(options) = options {
        own.push_str(&format!(",\"options\":{options}"));
    }
    if body.trim_start().starts_with('}') {
        format!("{{{own}{body}")
    } else {
        format!("{{{own},{body}")
    }
}

/// `run`'s flags for a request's options.
fn run_flags(options: Option<&Value>) -> Vec<String> {
    let mut flags = vec!["run".to_string()];
    let Some(options) = options else {
        return flags;
    };
    for (key, value) in options.as_object().unwrap() {
        let flag = format!("--{}", key.replace('_', "-"));
        match value {
            Value::Bool(true) => flags.push(flag),
            Value::String(text) => flags.extend([flag, text.clone()]),
            Value::Array(files) => {
                for file in files {
                    flags.extend([flag.clone(), file.as_str().unwrap().to_string()]);
                }
            }
            other => panic!("no flag for {other}"),
        }
    }
    flags
}

#[test]
fn serve_answers_what_run_answers_for_each_payload() {
    let world = World::new();
    let other = world.root().join("other");
    let cli_settings = world.root().join("cli.json");
    write(
        &world.user_settings(),
        json!({"hooks": {
            "PreToolUse": [
                {"matcher": "write_file|str_replace", "hooks": [
                    {"command": "echo '{\"additionalContext\":\"user says hi\"}'", "name": "hi"},
                ]},
                {"matcher": "[", "hooks": [{"command": "true"}]},
            ],
            "SessionStart": [{"hooks": [{"command": "cat"}]}],
            "Stop": [{"hooks": [{"argv": ["sh", "-c", "echo argv $LEVELCODE_HOOK_EVENT"]}]}],
        }})
        .to_string(),
    );
    write(
        &world.data_settings(),
        json!({"hooks": {
            "PreToolUse": [
                {"matcher": "^run_", "hooks": [
                    {"command": "echo rm is not allowed >&2; exit 2"},
                    {"command": "touch never"},
                ]},
                {"hooks": [
                    {"command": "true", "enabled": false},
                    {"command": "cat", "timeout": 0},
                ]},
            ],
            "PostToolUse": [{"hooks": [{"command": "echo done; exit 1"}, {"command": "cat"}]}],
            "Stop": [{"hooks": [{"command": "no-such-program-anywhere"}]}],
        }})
        .to_string(),
    );
    write(
        &world.project_settings(),
        json!({"hooks": {
            "PreToolUse": [
                {"matcher": "write_file", "hooks": [
                    {"command": "echo '{\"decision\":\"block\",\"reason\":\"generated\"}'"},
                ]},
                {"command": "true"},
            ],
            "Stop": [{"hooks": [{"command": "echo hi"}, {"command": "echo hi"}]}],
            "Custom": [{"matcher": "(", "hooks": [{"command": "printf custom"}]}],
        }})
        .to_string(),
    );
    write(
        &other.join(".levelcode/settings.json"),
        json!({"hooks": {"Stop": [{"hooks": [{"command": "pwd"}]}]}}).to_string(),
    );
    write(
        &cli_settings,
        json!({"hooks": {"Stop": [{"hooks": [{"command": "echo from cli"}]}]}}).to_string(),
    );
    write(&world.root().join("broken.json"), "{\"hooks\": [");

    let other = other.to_str().unwrap();
    let cli = cli_settings.to_str().unwrap();
    let broken = world.root().join("broken.json");
    let broken = broken.to_str().unwrap();
    let plain = |payload: Value| (payload.to_string(), None);
    let with = |payload: Value, options: Value| (payload.to_string(), Some(options));
    let write_file = json!({"event": "PreToolUse", "tool_name": "write_file"});
    let stop = json!({"event": "Stop"});
    let objects: Vec<(String, Option<Value>)> = vec![
        plain(stop.clone()),
        (
            r#"{"event":"Stop","session":{"id":"s1","n":1.0}}"#.into(),
            None,
        ),
        (
            r#"{ "hook_event_name" : "SessionStart", "x": [1, 2.50, "é"] }"#.into(),
            None,
        ),
        plain(json!({"event": "PreToolUse", "tool_name": "write_file", "tool_input": {"p": 1}})),
        plain(json!({"event": "PreToolUse", "tool_name": "str_replace"})),
        plain(json!({"event": "PreToolUse", "tool_name": "run_terminal_command"})),
        plain(json!({"event": "PreToolUse", "tool_name": "read_files"})),
        plain(json!({"event": "PostToolUse", "tool_name": "x", "tool_result": {"error": "x"}})),
        plain(json!({"event": "Custom"})),
        plain(json!({"event": "Stop", "cwd": other})),
        plain(json!({"event": "Stop", "cwd": "relative/dir"})),
        plain(json!({"event": "Stop", "cwd": 7})),
        with(stop.clone(), json!({"project_dir": other})),
        with(stop.clone(), json!({"no_project": true})),
        with(stop.clone(), json!({"settings": [cli, broken]})),
        with(write_file.clone(), json!({"output": "compact"})),
        with(stop.clone(), json!({"output": "compact"})),
        with(
            json!({"event": "PostToolUse", "tool_name": "x"}),
            json!({"team": "bad name!"}),
        ),
        plain(json!({"event": "PostToolUse", "tool_name": "x", "team": 5})),
        plain(json!({"tool_name": "x"})),
        plain(json!({"event": "PreToolUse"})),
        plain(json!({"event": "Stop", "hook_event_name": "SessionStart"})),
        plain(json!({"event": 1})),
        ("{}".into(), None),
    ];
    // Lines whose bytes are sent as they are: an id put in would move the place an error names.
    let raw: Vec<String> = vec![
        "not json".into(),
        "[1,2]".into(),
        r#"{"event":"Stop",}"#.into(),
        format!(
            "{{\"event\":\"Stop\",\"x\":{}{}}}",
            "[".repeat(130),
            "]".repeat(130)
        ),
    ];

    let mut expected = Vec::new();
    for (payload, options) in &objects {
        let flags = run_flags(options.as_ref());
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        expected.push(world.run(&flags, payload).0);
    }
    for payload in &raw {
        expected.push(world.run(&["run"], payload).0);
    }

    let mut server = world.serve(&[]);
    let mut answers = Vec::new();
    for (i, (payload, options)) in objects.iter().enumerate() {
        server.send(request_text(payload, i, options.as_ref()).as_bytes());
        let answer = server.answer();
        assert_eq!(answer["id"], json!(i), "{answer}");
        answers.push(answer);
    }
    for payload in &raw {
        server.send(payload.as_bytes());
        answers.push(server.answer());
    }
    let (status, rest) = server.finish();
    assert_eq!(status, 0);
    assert!(rest.is_empty(), "{rest:?}");

    let payloads = objects.iter().map(|(p, _)| p).chain(&raw);
    for ((payload, expected), answer) in payloads.zip(&expected).zip(answers) {
        let expected: Value = serde_json::from_str(expected).unwrap();
        assert_eq!(timeless(answer), timeless(expected), "payload {payload}");
    }
    assert!(!world.project().join("never").exists());
}

#[test]
fn handlers_read_the_payload_without_id_and_options() {
    let world = World::new();
    write(
        &world.project_settings(),
        json!({"hooks": {"Stop": [{"hooks": [{"command": "cat"}]}]}}).to_string(),
    );
    let mut server = world.serve(&[]);
    server.send(br#"{"id":"a", "event":"Stop","options":{"output":"full"} ,"x":{"id":1}}"#);
    let answer = server.answer();
    let cwd = world.project();
    assert_eq!(
        answer["handlers"][0]["stdout"],
        format!(
            r#"{{ "event":"Stop" ,"x":{{"id":1}},"cwd":"{}"}}"#,
            cwd.display()
        )
    );
}

#[test]
fn each_request_gives_handlers_its_own_variables() {
    let world = World::new();
    let show = json!([{"hooks": [{"command": "echo \"$LEVELCODE_HOOK_EVENT ${LEVELCODE_TOOL_NAME-unset}\""}]}]);
    write(
        &world.project_settings(),
        json!({"hooks": {"PreToolUse": show, "Stop": show}}).to_string(),
    );
    let mut server = world.serve(&[]);
    for (request, expected) in [
        (
            json!({"event": "PreToolUse", "tool_name": "write_file"}),
            "PreToolUse write_file",
        ),
        (
            json!({"event": "PreToolUse", "tool_name": "write_file"}),
            "PreToolUse write_file",
        ),
        (json!({"event": "Stop"}), "Stop unset"),
        (json!({"event": "Stop"}), "Stop unset"),
        (
            json!({"event": "PreToolUse", "tool_name": "read_files"}),
            "PreToolUse read_files",
        ),
        (json!({"event": "Stop"}), "Stop unset"),
    ] {
        let answer = server.ask(&request);
        assert_eq!(
            answer["handlers"][0]["stdout"],
            format!("{expected}\n"),
            "{request}"
        );
    }
}

#[test]
fn settings_edits_between_requests_are_picked_up() {
    let world = World::new();
    let settings = world.project_settings();
    let labels = |answer: &Value| -> Vec<String> {
        answer["handlers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["label"].as_str().unwrap().to_string())
            .collect()
    };
    let on_stop = |command: &str| json!({"hooks": {"Stop": [{"hooks": [{"command": command}]}]}});
    let stop = json!({"event": "Stop"});
    let mut server = world.serve(&[]);

    // Absent, then appearing.
    assert!(labels(&server.ask(&stop)).is_empty());
    write(&settings, on_stop("echo a").to_string());
    assert_eq!(labels(&server.ask(&stop)), ["echo a"]);

    // Rewritten again and again at once with the same size: the same second, often the same
    // clock tick.
    for round in 0..20 {
        let command = if round % 2 == 0 { "echo b" } else { "echo a" };
        write(&settings, on_stop(command).to_string());
        assert_eq!(labels(&server.ask(&stop)), [command], "round {round}");
    }

    // Rewritten with the modification time put back as it was.
    let before = std::fs::metadata(&settings).unwrap().modified().unwrap();
    write(&settings, on_stop("echo c").to_string());
    std::fs::File::options()
        .write(true)
        .open(&settings)
        .unwrap()
        .set_modified(before)
        .unwrap();
    assert_eq!(labels(&server.ask(&stop)), ["echo c"]);

    // Replaced by a rename, as editors save.
    let next = settings.with_extension("json.new");
    write(&next, on_stop("echo d").to_string());
    std::fs::rename(&next, &settings).unwrap();
    assert_eq!(labels(&server.ask(&stop)), ["echo d"]);

    // Broken, then a directory, then gone.
    write(&settings, "{");
    let answer = server.ask(&stop);
    assert!(labels(&answer).is_empty());
    assert!(
        answer["warnings"][0]
            .as_str()
            .unwrap()
            .contains("invalid JSON"),
        "{answer}"
    );
    let answer = server.ask(&stop);
    assert!(
        answer["warnings"][0]
            .as_str()
            .unwrap()
            .contains("invalid JSON"),
        "the warning repeats from the cache: {answer}"
    );
    std::fs::remove_file(&settings).unwrap();
    std::fs::create_dir(&settings).unwrap();
    let answer = server.ask(&stop);
    assert!(
        answer["warnings"][0]
            .as_str()
            .unwrap()
            .contains("directory"),
        "{answer}"
    );
    std::fs::remove_dir(&settings).unwrap();
    let answer = server.ask(&stop);
    assert!(labels(&answer).is_empty());
    assert_eq!(answer["warnings"], json!([]));

    // Another layer appears; a whole folder of the path is removed.
    write(&world.user_settings(), on_stop("echo user").to_string());
    write(&settings, on_stop("echo project").to_string());
    assert_eq!(labels(&server.ask(&stop)), ["echo user", "echo project"]);
    std::fs::remove_dir_all(world.home().join(".config")).unwrap();
    assert_eq!(labels(&server.ask(&stop)), ["echo project"]);

    // Made unreadable.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read(&settings).is_err() {
        let answer = server.ask(&stop);
        assert!(labels(&answer).is_empty(), "{answer}");
        assert!(
            answer["warnings"][0]
                .as_str()
                .unwrap()
                .contains("cannot open"),
            "{answer}"
        );
    }
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(labels(&server.ask(&stop)), ["echo project"]);

    // A matcher edited under a tool event: the new one is compiled.
    write(
        &settings,
        json!({"hooks": {"PreToolUse": [{"matcher": "^read", "hooks": [{"command": "echo m"}]}]}})
            .to_string(),
    );
    let read = json!({"event": "PreToolUse", "tool_name": "read_files"});
    assert_eq!(labels(&server.ask(&read)), ["echo m"]);
    write(
        &settings,
        json!({"hooks": {"PreToolUse": [{"matcher": "^write", "hooks": [{"command": "echo m"}]}]}})
            .to_string(),
    );
    assert!(labels(&server.ask(&read)).is_empty());
}

#[test]
fn bad_lines_are_answered_and_serving_goes_on() {
    let world = World::new();
    write(
        &world.project_settings(),
        json!({"hooks": {"Stop": [{"hooks": [{"command": "echo ok"}]}]}}).to_string(),
    );
    let mut server = world.serve(&[]);
    let error = |answer: &Value| answer["error"].as_str().unwrap().to_string();

    server.send(b"{nope");
    let answer = server.answer();
    assert!(error(&answer).contains("invalid JSON"), "{answer}");
    assert!(answer.get("id").is_none());

    server.send(br#"{"id":7,"event":"Stop""#);
    let answer = server.answer();
    assert!(error(&answer).contains("invalid JSON"), "{answer}");
    assert_eq!(answer["id"], 7);

    server.send(br#"{"id":"no-event","tool_name":"x"}"#);
    let answer = server.answer();
    assert!(error(&answer).contains("no event"), "{answer}");
    assert_eq!(answer["id"], "no-event");

    server.send(br#"{"id":8,"event":"Stop","options":{"project-dir":"/"}}"#);
    let answer = server.answer();
    assert!(error(&answer).contains("unknown field"), "{answer}");
    assert_eq!(answer["id"], 8);

    server.send(b"");
    assert!(error(&server.answer()).contains("empty line"));

    server.send(b"\xff\xfe");
    assert!(error(&server.answer()).contains("not UTF-8"));

    // Over the limit: never kept whole, answered, and the next line is read as usual.
    let mut long = br#"{"id":"long","event":"Stop","pad":""#.to_vec();
    long.resize(64 * 1024 * 1024 + 10, b'x');
    long.extend_from_slice(b"\"}");
    server.send(&long);
    let answer = server.answer();
    assert!(error(&answer).contains("limit of 64 MiB"), "{answer}");
    assert_eq!(answer["id"], "long");

    let answer = server.ask(&json!({"id": 9, "event": "Stop"}));
    assert_eq!(answer["id"], 9);
    assert_eq!(answer["handlers"][0]["stdout"], "ok\n");

    // A last line without a newline is still a request.
    let stdin = server.stdin.as_mut().unwrap();
    stdin.write_all(br#"{"id":10,"event":"Stop"}"#).unwrap();
    let (status, rest) = server.finish();
    assert_eq!(status, 0);
    assert_eq!(rest.len(), 1);
    assert_eq!(serde_json::from_str::<Value>(&rest[0]).unwrap()["id"], 10);
}

#[test]
fn a_line_of_exactly_the_limit_is_dispatched() {
    let world = World::new();
    let mut server = world.serve(&[]);
    let mut line = br#"{"id":1,"event":"Stop","pad":""#.to_vec();
    line.resize(64 * 1024 * 1024 - 2, b'x');
    line.extend_from_slice(b"\"}");
    server.send(&line);
    let answer = server.answer();
    assert_eq!(answer["decision"], "proceed", "{answer}");
    assert_eq!(answer["id"], 1);
}

#[test]
fn ids_are_echoed_as_written() {
    let world = World::new();
    let mut server = world.serve(&[]);
    for id in [
        "1",
        "\"a\"",
        "null",
        "1.50",
        "12345678901234567890123",
        r#"{"k":[1,"x"]}"#,
        r#""\u00e9\n""#,
    ] {
        server.send(format!(r#"{{"event":"Stop","id":{id}}}"#).as_bytes());
        let text = server.answer_text();
        assert!(text.ends_with(&format!(",\"id\":{id}}}")), "{text}");
        server.send(
            format!(r#"{{"id":{id},"event":"Stop","options":{{"output":"compact"}}}}"#).as_bytes(),
        );
        assert_eq!(
            server.answer_text(),
            format!(r#"{{"decision":"proceed","id":{id}}}"#)
        );
    }
    server.send(br#"{"event":"Stop"}"#);
    assert!(server.answer().get("id").is_none());
}

#[test]
fn the_server_flags_are_defaults_a_request_overrides() {
    let world = World::new();
    write(
        &world.project_settings(),
        json!({"hooks": {"Stop": [{"hooks": [{"command": "echo project"}]}]}}).to_string(),
    );
    let mut server = world.serve(&["--output", "compact", "--no-project"]);
    let answer = server.ask(&json!({"event": "Stop"}));
    assert_eq!(answer, json!({"decision": "proceed"}));
    let answer =
        server.ask(&json!({"event": "Stop", "options": {"output": "full", "no_project": false}}));
    assert_eq!(
        answer["handlers"],
        json!([]),
        "--no-project cannot be undone by a request"
    );

    let mut server = world.serve(&[]);
    let answer = server.ask(&json!({"event": "Stop"}));
    assert_eq!(answer["handlers"][0]["label"], "echo project");
}

#[test]
fn sigterm_during_a_handler_answers_interrupted_and_exits_143() {
    let world = World::new();
    write(
        &world.project_settings(),
        json!({"hooks": {"Stop": [{"hooks": [
            {"command": "echo $$ >> pids; exec sleep 30", "timeout": 60},
            {"command": "touch later"},
        ]}]}})
        .to_string(),
    );
    let mut server = world.serve(&[]);
    // Two requests in flight at once (contract §14): both handlers run side by side.
    server.send(br#"{"id":1,"event":"Stop"}"#);
    server.send(br#"{"id":2,"event":"Stop"}"#);
    let pids = world.project().join("pids");
    wait_for_lines(&pids, 2, Duration::from_secs(20));
    let sent = Instant::now();
    // SAFETY: kill(2) with plain integers.
    unsafe { libc::kill(server.pid(), libc::SIGTERM) };
    let mut ids = Vec::new();
    for _ in 0..2 {
        let answer = server.answer();
        assert_eq!(answer["interrupted"], true, "{answer}");
        assert_ne!(answer["handlers"][0]["outcome"], "proceed", "{answer}");
        assert_eq!(answer["handlers"][1]["outcome"], "skipped", "{answer}");
        ids.push(answer["id"].as_i64().unwrap());
    }
    ids.sort_unstable();
    assert_eq!(ids, [1, 2]);
    let (status, rest) = server.finish();
    assert!(sent.elapsed() < Duration::from_secs(6));
    assert_eq!(status, 143);
    assert!(
        rest.is_empty(),
        "no request is answered twice, none after the signal: {rest:?}"
    );
    for pid in read_pids(&pids) {
        assert!(!alive(pid), "the handler survived");
        assert!(group_members(pid).is_empty());
    }
    assert!(!world.project().join("later").exists());
}

#[test]
fn a_signal_while_idle_ends_the_server_without_a_line() {
    let world = World::new();
    let mut server = world.serve(&[]);
    assert_eq!(server.ask(&json!({"event": "Stop"}))["decision"], "proceed");
    server.wait_until_idle();
    // SAFETY: kill(2) with plain integers.
    unsafe { libc::kill(server.pid(), libc::SIGINT) };
    let (status, rest) = server.finish();
    assert_eq!(status, 130);
    assert!(rest.is_empty(), "{rest:?}");

    // With half a request read.
    let mut server = world.serve(&[]);
    server
        .stdin
        .as_mut()
        .unwrap()
        .write_all(br#"{"event":"#)
        .unwrap();
    server.wait_until_idle();
    // SAFETY: kill(2) with plain integers.
    unsafe { libc::kill(server.pid(), libc::SIGTERM) };
    let (status, rest) = server.finish();
    assert_eq!(status, 143);
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn end_of_input_exits_0() {
    let world = World::new();
    let server = world.serve(&[]);
    let (status, rest) = server.finish();
    assert_eq!(status, 0);
    assert!(rest.is_empty());
}

#[test]
fn handlers_cannot_write_into_the_protocol_stream() {
    let world = World::new();
    // Every descriptor the handler holds, and writes to each one, now and after it exits.
    let handler = [
        "for f in /proc/$$/fd/*; do echo \"$(readlink $f)\" >> fds; done",
        // One subshell per write: a redirection to a descriptor that is not open would end the
        // whole script, and the lines after it would never run.
        "for n in 1 2 3 4 5 6 7 8 9 10 11 12; do (echo '{\"forged\":1}' >&$n) 2>/dev/null; done",
        // A late write, after the server stopped reading; SIGPIPE ignored so it lives on to say
        // it tried, which the test waits for instead of guessing a time.
        "(trap '' PIPE; sleep 0.3; echo '{\"forged\":\"late\"}'; echo tried >> late) &",
        "true",
    ]
    .join("\n");
    write(
        &world.project_settings(),
        json!({"hooks": {"Stop": [{"hooks": [{"command": handler}]}]}}).to_string(),
    );
    let mut server = world.serve(&[]);
    let own_stdout = std::fs::read_link(format!("/proc/{}/fd/1", server.pid())).unwrap();
    let late = world.project().join("late");
    let first = server.ask(&json!({"id": 1, "event": "Stop"}));
    assert_eq!(first["id"], 1);
    wait_for_lines(&late, 1, ANSWER_LIMIT);
    assert_eq!(
        first["handlers"][0]["exit_code"], 0,
        "the whole script ran: {first}"
    );
    let second = server.ask(&json!({"id": 2, "event": "Stop"}));
    assert_eq!(second["id"], 2, "{second}");
    wait_for_lines(&late, 2, ANSWER_LIMIT);
    let (status, rest) = server.finish();
    assert_eq!(status, 0);
    assert!(rest.is_empty(), "only answers on stdout: {rest:?}");
    let fds = std::fs::read_to_string(world.project().join("fds")).unwrap();
    assert!(
        fds.lines().count() >= 6,
        "two handlers, three descriptors each: {fds}"
    );
    assert!(
        !fds.lines().any(|fd| Path::new(fd) == own_stdout),
        "a handler holds the server's stdout ({}): {fds}",
        own_stdout.display()
    );
}

#[test]
fn each_request_is_logged_as_run_logs_it() {
    let world = World::new();
    let log = world.root().join("exec.log");
    let world = world.env("LEVELCODE_HOOKS_LOG", log.to_str().unwrap());
    write(
        &world.project_settings(),
        json!({"hooks": {"Stop": [{"hooks": [{"command": "true"}]}]}}).to_string(),
    );
    let lines = || {
        std::fs::read_to_string(&log)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    for _ in 0..3 {
        world.run(&["run"], r#"{"event":"Stop"}"#);
    }
    let by_run = lines();
    let mut server = world.serve(&[]);
    for _ in 0..3 {
        server.ask(&json!({"event": "Stop"}));
    }
    server.send(b"bad");
    server.answer();
    let (status, _) = server.finish();
    assert_eq!(status, 0);
    assert!(by_run > 0, "run logs its dispatches");
    assert_eq!(
        lines() - by_run,
        by_run,
        "bad lines are not dispatched, so not logged"
    );
}

#[test]
fn compliance_records_are_written_per_request() {
    let world = World::new();
    let events = world
        .home()
        .join(".levelcode/swarm/t1/compliance/events.jsonl");
    let count = || {
        std::fs::read_to_string(&events)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let post =
        json!({"event": "PostToolUse", "tool_name": "write_file", "tool_input": {}}).to_string();
    world.run(&["run", "--team", "t1"], &post);
    let by_run = count();
    let mut server = world.serve(&["--team", "t1"]);
    let first =
        server.ask(&json!({"event": "PostToolUse", "tool_name": "write_file", "tool_input": {}}));
    let second = server.ask(&json!({"event": "Stop"}));
    let third =
        server.ask(&json!({"event": "PostToolUse", "tool_name": "x", "options": {"team": "t1"}}));
    assert_eq!(first["warnings"], second["warnings"]);
    assert_eq!(third["warnings"], json!([]), "{third}");
    let (status, _) = server.finish();
    assert_eq!(status, 0);
    assert_eq!(by_run, 1);
    assert_eq!(count(), 3, "one record per PostToolUse request");
}

/// A NUL byte (`"\u0000"`, valid JSON) in any member that becomes an environment variable or a
/// path is that request's error, naming the member; the server goes on with the next line.
#[test]
fn a_nul_byte_in_any_field_is_that_requests_error_and_serving_goes_on() {
    let world = World::new();
    write(
        &world.user_settings(),
        json!({"hooks": {
            "Stop": [{"hooks": [{"command": "echo stop"}]}],
            "PreToolUse": [{"hooks": [{"command": "echo pre"}]}],
        }})
        .to_string(),
    );
    let mut server = world.serve(&[]);
    let bad = [
        ("event", json!({"event": "Stop\u{0}"})),
        ("hook_event_name", json!({"hook_event_name": "Stop\u{0}x"})),
        (
            "tool_name",
            json!({"event": "PreToolUse", "tool_name": "write\u{0}file"}),
        ),
        ("cwd", json!({"event": "Stop", "cwd": "/tmp/a\u{0}b"})),
        (
            "options.project_dir",
            json!({"event": "Stop", "options": {"project_dir": "/tmp/\u{0}"}}),
        ),
        (
            "options.settings[1]",
            json!({"event": "Stop", "options": {"settings": ["/a.json", "/b\u{0}.json"]}}),
        ),
    ];
    for (i, (field, request)) in bad.iter().enumerate() {
        let mut request = request.clone();
        request["id"] = json!(i);
        let answer = server.ask(&request);
        let error = answer["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{field}: an error answer: {answer}"));
        assert!(
            error.contains(&format!("{field} contains a NUL byte")),
            "{field}: {error}"
        );
        assert_eq!(answer["id"], i, "{answer}");
        // The next line is served as usual.
        let good = server.ask(&json!({"id": "next", "event": "Stop"}));
        assert_eq!(good["id"], "next", "{good}");
        assert_eq!(good["handlers"][0]["stdout"], "stop\n", "{good}");
    }
    let (status, rest) = server.finish();
    assert_eq!(status, 0, "the server never died");
    assert!(rest.is_empty(), "{rest:?}");
}

/// A server started with SIGCHLD ignored (which survives exec) still reads each handler's exit
/// status: a block stays a block.
#[test]
fn a_server_started_with_sigchld_ignored_still_sees_a_block() {
    use std::os::unix::process::CommandExt;
    let world = World::new();
    write(
        &world.user_settings(),
        json!({"hooks": {"PreToolUse": [{"hooks": [{"command": "echo no >&2; exit 2"}]}]}})
            .to_string(),
    );
    let mut command = world.command(&["serve"]);
    // SAFETY: signal(2) is async-signal-safe and changes only the child's disposition.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGCHLD, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut server = Server::start(command);
    for id in 0..2 {
        let answer = server.ask(&json!({"id": id, "event": "PreToolUse", "tool_name": "x"}));
        assert_eq!(answer["decision"], "block", "{answer}");
        assert_eq!(answer["handlers"][0]["exit_code"], 2, "{answer}");
        assert_eq!(answer["reason"], "no", "{answer}");
    }
    let (status, _) = server.finish();
    assert_eq!(status, 0);
}
