//! Background handlers (`"async": true`, contract §21), black-box: the dispatch answers at once
//! and the handler runs on; what it comes to is recorded in the execution log and handed on,
//! once, with the next answer of its session, in `run` (a spool under the data directory) and
//! in `serve` (the server's memory) alike; at most 16 run per session; `SessionEnd` stops them;
//! whatever a handler prints, what waits for the session stays bounded.
//!
//! Waits are for events (a marker file, the log's line of the handler's end), never for a
//! clock; the bounds are generous for a loaded two-core machine.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::server::Server;
use crate::common::{
    alive, assert_gone, parent_of, read_pids, signal, wait_for_lines, wait_gone, write, Sandbox,
};

/// How long a background handler's end may take to be recorded.
const RECORDED: Duration = Duration::from_secs(30);

/// One HOME and project for several dispatches, with the execution log on.
struct World {
    sandbox: Sandbox,
    log: PathBuf,
    more_threads: bool,
}

impl World {
    fn new() -> World {
        let sandbox = Sandbox::new();
        let log = sandbox.root().join("log.jsonl");
        World {
            sandbox,
            log,
            more_threads: false,
        }
    }

    /// A world whose dispatchers take the way of a process with more than one thread: each
    /// supervisor started by `exec` (a debug build's test switch).
    fn with_more_threads() -> World {
        let mut world = World::new();
        world.more_threads = true;
        world
    }

    fn project(&self) -> PathBuf {
        self.sandbox.project()
    }

    /// Writes the data layer's settings.
    fn settings(&self, settings: &Value) -> &World {
        write(
            &self.sandbox.home().join(".levelcode/settings.json"),
            settings.to_string(),
        );
        self
    }

    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut command = self.sandbox.command();
        command
            .args(args)
            .env("LEVELCODE_HOOKS_LOG", &self.log)
            .envs(
                self.more_threads
                    .then_some(("LEVELCODE_HOOKS_TEST_MORE_THREADS", "1")),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// One `run` of `payload`: its answer and how long it took to come.
    fn dispatch(&self, payload: &Value) -> (Value, Duration) {
        let (answer, _, took) = self.dispatch_with(&["run"], payload);
        (answer, took)
    }

    /// The binary with `args` on `payload`: its answer, its stderr and how long it took.
    fn dispatch_with(&self, args: &[&str], payload: &Value) -> (Value, String, Duration) {
        let started = Instant::now();
        let out = fed(self.command(args), payload);
        let took = started.elapsed();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let answer = serde_json::from_str(stdout.trim_end())
            .unwrap_or_else(|e| panic!("one JSON answer ({e}): {stdout:?}"));
        (
            answer,
            String::from_utf8_lossy(&out.stderr).into_owned(),
            took,
        )
    }

    /// Waits until the execution log holds `count` lines of background handlers that ended,
    /// and returns them.
    fn ended(&self, count: usize) -> Vec<Value> {
        let deadline = Instant::now() + RECORDED;
        loop {
            let lines = self.background_lines();
            if lines.len() >= count {
                return lines;
            }
            assert!(
                Instant::now() < deadline,
                "{count} background end(s) not recorded within {RECORDED:?}: {lines:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn background_lines(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|l| l["background"] == true)
            .collect()
    }

    /// The session spools under the data directory.
    fn spools(&self) -> PathBuf {
        self.sandbox.home().join(".levelcode/background")
    }

    fn serve(&self) -> Server {
        Server::start(self.command(&["serve"]))
    }
}

/// Kills whatever a test's handlers wrote to `pids` files, however the test ends.
impl Drop for World {
    fn drop(&mut self) {
        for entry in std::fs::read_dir(self.project())
            .into_iter()
            .flatten()
            .flatten()
        {
            if !entry.file_name().to_string_lossy().starts_with("pids") {
                continue;
            }
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            for pid in text
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
            {
                if pid > 1 && alive(pid) {
                    signal(-pid, libc::SIGKILL);
                    signal(pid, libc::SIGKILL);
                }
            }
        }
    }
}

/// `command` run on `payload` and read to its end: a background handler must not hold the
/// dispatcher's stdout.
fn fed(mut command: std::process::Command, payload: &Value) -> std::process::Output {
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn handlers(settings_event: &str, handlers: Value) -> Value {
    json!({ "hooks": { settings_event: [{ "hooks": handlers }] } })
}

fn post_tool_use(world: &World, session: &str) -> Value {
    json!({
        "event": "PostToolUse", "tool_name": "write_file", "tool_input": {"path": "a"},
        "cwd": world.project(), "session_id": session,
    })
}

fn stop(world: &World, session: &str) -> Value {
    json!({ "event": "Stop", "cwd": world.project(), "session_id": session })
}

/// A `Stop` of `session` that asks serve for what its answer depends on (`options.watch`), as
/// a client that remembers answers does.
fn watched_stop(world: &World, session: &str) -> Value {
    let mut request = stop(world, session);
    request["options"] = json!({"watch": true});
    request
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

fn waits_for(path: &Path) {
    let deadline = Instant::now() + RECORDED;
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_two_second_handler_does_not_hold_the_dispatch_and_runs_on() {
    let world = World::new();
    world.settings(&handlers(
        "PostToolUse",
        json!([{"command": "cut -d' ' -f19 /proc/$$/stat > nice; sleep 2; touch ran", "async": true, "name": "slow"}]),
    ));
    let (answer, took) = world.dispatch(&post_tool_use(&world, "s1"));
    assert!(took < Duration::from_millis(1500), "{took:?}: {answer}");
    assert_eq!(answer["decision"], "proceed");
    assert_eq!(answer["handlers"][0]["outcome"], "started", "{answer}");
    assert!(
        !world.project().join("ran").exists(),
        "the answer came before the handler was done"
    );
    // It ran on after the dispatcher had exited, at a lower priority than the agent's.
    waits_for(&world.project().join("ran"));
    let nice: i32 = std::fs::read_to_string(world.project().join("nice"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(nice >= 10, "niceness {nice}");
    let ended = world.ended(1);
    assert_eq!(ended[0]["handlers"][0]["outcome"], "proceed");
    assert_eq!(ended[0]["handlers"][0]["label"], "slow");
    let ms = ended[0]["handlers"][0]["duration_ms"].as_f64().unwrap();
    assert!(ms >= 2000.0, "it ran its two seconds: {ms}");
}

#[test]
fn its_context_is_handed_on_once_to_its_session_and_no_other() {
    let world = World::new();
    world.settings(&handlers(
        "PostToolUse",
        json!([{
            "command": r#"echo '{"additionalContext":"3 tests passed","systemMessage":"suite done"}'"#,
            "async": true,
            "name": "suite",
        }]),
    ));
    let (answer, _) = world.dispatch(&post_tool_use(&world, "s1"));
    assert_eq!(answer["handlers"][0]["outcome"], "started");
    assert!(answer.get("additionalContext").is_none(), "{answer}");
    world.ended(1);
    let (other, _) = world.dispatch(&stop(&world, "s2"));
    assert!(other.get("additionalContext").is_none(), "{other}");
    assert!(other.get("background").is_none(), "{other}");
    let (next, _) = world.dispatch(&stop(&world, "s1"));
    assert_eq!(
        next["additionalContext"], "from the background PostToolUse hook suite: 3 tests passed",
        "{next}"
    );
    assert_eq!(
        next["system_message"],
        "from the background PostToolUse hook suite: suite done"
    );
    assert_eq!(next["background"][0]["label"], "suite");
    assert_eq!(next["background"][0]["outcome"], "proceed");
    let (again, _) = world.dispatch(&stop(&world, "s1"));
    assert!(again.get("additionalContext").is_none(), "once: {again}");
    assert!(again.get("background").is_none(), "once: {again}");
}

#[test]
fn a_failing_handler_is_reported_with_its_output_and_in_the_log() {
    let world = World::new();
    world.settings(&handlers(
        "PostToolUse",
        json!([{"command": "echo 'FAIL src/a.test.ts' >&2; exit 3", "async": true, "name": "npm test"}]),
    ));
    world.dispatch(&post_tool_use(&world, "s1"));
    world.ended(1);
    let (next, _) = world.dispatch(&stop(&world, "s1"));
    let warnings = strings(&next["warnings"]);
    assert_eq!(warnings.len(), 1, "{next}");
    let warning = &warnings[0];
    for part in [
        "background PostToolUse hook npm test",
        "exit 3",
        "FAIL src/a.test.ts",
    ] {
        assert!(warning.contains(part), "{part:?} in {warning}");
    }
    assert_eq!(next["background"][0]["outcome"], "error");
    assert_eq!(next["background"][0]["exit_code"], 3);
    let mut log = world.command(&["log"]);
    let shown = log.output().unwrap();
    let shown = String::from_utf8(shown.stdout).unwrap();
    assert!(shown.contains("background run ended"), "{shown}");
    assert!(
        shown.contains("exit 3") && shown.contains("npm test"),
        "{shown}"
    );
}

#[test]
fn a_timeout_stops_the_handler_and_its_children() {
    let world = World::new();
    world.settings(&handlers(
        "Stop",
        json!([{
            "command": "echo $$ > pids; sleep 30 & echo $! >> pids; wait",
            "async": true,
            "timeout": 1,
        }]),
    ));
    let (answer, took) = world.dispatch(&stop(&world, "s1"));
    assert!(took < Duration::from_millis(1500), "{took:?}");
    assert_eq!(answer["handlers"][0]["outcome"], "started");
    let ended = world.ended(1);
    assert_eq!(ended[0]["handlers"][0]["outcome"], "timeout");
    let pids = read_pids(&world.project().join("pids"));
    assert_eq!(pids.len(), 2);
    assert_gone(&pids, pids[0]);
    let (next, _) = world.dispatch(&stop(&world, "s1"));
    let warnings = strings(&next["warnings"]);
    assert!(
        warnings.iter().any(|w| w.contains("timed out after 1 s")),
        "{warnings:?}"
    );
}

/// Dispatches `SessionEnd` for `session`, whose answer says `stopped` handlers were stopped.
fn end_session(world: &World, session: &str, stopped: usize) {
    ends_stopping(|end| world.dispatch(end).0, world, session, stopped);
}

/// Ends `session` by `ask` (a `run`, a server's request) and checks that its answer says
/// `stopped` handlers still running were stopped.
fn ends_stopping(ask: impl FnOnce(&Value) -> Value, world: &World, session: &str, stopped: usize) {
    let answer = ask(&json!({
        "event": "SessionEnd", "reason": "other", "cwd": world.project(), "session_id": session,
    }));
    let said = format!("{stopped} background handler(s) still running were stopped");
    assert!(
        strings(&answer["warnings"])
            .iter()
            .any(|w| w.contains(&said)),
        "{answer}"
    );
}

/// The pid a handler wrote to the project's `pids` file, once it is there.
fn handler_pid(world: &World) -> i32 {
    waits_for(&world.project().join("pids"));
    read_pids(&world.project().join("pids"))[0]
}

/// 17 handlers that each write their pid and sleep.
fn sleepers(count: usize) -> Value {
    let list: Vec<Value> = (0..count)
        .map(|n| json!({"command": format!("echo $$ >> pids; exec sleep 60 # {n}"), "async": true}))
        .collect();
    handlers("PostToolUse", Value::Array(list))
}

#[test]
fn at_most_sixteen_run_per_session_and_session_end_stops_them() {
    sixteen_at_most_and_session_end(World::new());
}

#[test]
fn supervisors_started_by_exec_hold_their_places_and_stop_at_session_end_too() {
    sixteen_at_most_and_session_end(World::with_more_threads());
}

fn sixteen_at_most_and_session_end(world: World) {
    world.settings(&sleepers(17));
    let (answer, _) = world.dispatch(&post_tool_use(&world, "s1"));
    let outcomes: Vec<&str> = answer["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes[..16], ["started"; 16], "{answer}");
    assert_eq!(outcomes[16], "skipped", "{answer}");
    let warnings = strings(&answer["warnings"]);
    assert!(
        warnings.len() == 1
            && warnings[0].contains("16 background handlers of this session are running"),
        "{warnings:?}"
    );
    // Another session has room of its own.
    world.settings(&sleepers(1));
    let (other, _) = world.dispatch(&post_tool_use(&world, "s2"));
    assert_eq!(other["handlers"][0]["outcome"], "started", "{other}");
    let pids_file = world.project().join("pids");
    wait_for_lines(&pids_file, 17, RECORDED);
    let pids = read_pids(&pids_file);
    // Each handler's supervisor is the dispatcher gone on (`run` still in its command line),
    // or, from a process of more threads, this executable started again as `background`.
    for pid in &pids {
        let parent = parent_of(*pid);
        let command = std::fs::read(format!("/proc/{parent}/cmdline")).unwrap();
        let command: Vec<&[u8]> = command.split(|b| *b == 0).collect();
        let word = if world.more_threads {
            "background"
        } else {
            "run"
        };
        assert_eq!(
            command.get(1),
            Some(&word.as_bytes()),
            "{pid}'s supervisor {parent}"
        );
    }
    end_session(&world, "s1", 16);
    // Sixteen stopped; the other session's goes on.
    let deadline = Instant::now() + RECORDED;
    let left = loop {
        let left: Vec<i32> = pids.iter().copied().filter(|p| alive(*p)).collect();
        if left.len() <= 1 || Instant::now() > deadline {
            break left;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(
        left.len(),
        1,
        "only the other session's handler runs on: {left:?}"
    );
    let lines = world.ended(16);
    assert!(
        lines
            .iter()
            .all(|l| l["handlers"][0]["outcome"] == "interrupted"),
        "{lines:?}"
    );
    // The ended session's spool is gone; nothing is handed on to it any more.
    let spools: Vec<_> = std::fs::read_dir(world.spools())
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(spools.len(), 1, "the other session's spool stays");
    let (after, _) = world.dispatch(&stop(&world, "s1"));
    assert!(after.get("background").is_none(), "{after}");
}

#[test]
fn session_end_stops_a_handler_whose_supervisor_is_gone_and_nothing_else() {
    let world = World::new();
    world.settings(&handlers(
        "Stop",
        json!([{"command": "echo $$ > pids; exec sleep 60", "async": true}]),
    ));
    world.dispatch(&stop(&world, "s1"));
    waits_for(&world.project().join("pids"));
    let handler = read_pids(&world.project().join("pids"))[0];
    // Its supervisor, the handler's parent, dies without a word.
    let supervisor = parent_of(handler);
    // A process a record names by a pid it was not started with is left alone: a forged
    // record names this test's own unrelated sleeper, with the start times of the real one.
    let mut bystander = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let spool = std::fs::read_dir(world.spools())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    // The handler's place names it (slot.0); another, not held, is forged to name the
    // bystander with the real one's start times.
    let place: Value = serde_json::from_str(
        std::fs::read_to_string(spool.join("slot.0"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    assert_eq!(place["supervisor"][0], json!(supervisor), "{place}");
    assert_eq!(place["handler"][0], json!(handler), "{place}");
    let forged = json!({
        "supervisor": [bystander.id(), place["supervisor"][1]],
        "handler": [bystander.id(), place["handler"][1]],
    });
    std::fs::write(spool.join("slot.5"), forged.to_string()).unwrap();
    signal(supervisor, libc::SIGKILL);
    assert!(wait_gone(&[supervisor], Duration::from_secs(10)).is_empty());
    world.dispatch(&json!({
        "event": "SessionEnd", "reason": "other", "cwd": world.project(), "session_id": "s1",
    }));
    assert!(
        bystander.try_wait().unwrap().is_none(),
        "a process given a recorded pid later is never signalled"
    );
    assert_gone(&[handler], handler);
    let _ = bystander.kill();
    let _ = bystander.wait();
}

#[test]
fn a_handler_that_prints_100_mib_leaves_a_bounded_spool() {
    let world = World::new();
    world.settings(&handlers(
        "PostToolUse",
        json!([
            {"command": "printf '{\"additionalContext\":\"'; head -c 104857600 /dev/zero | tr '\\0' x; printf '\"}'", "async": true, "name": "flood"},
            {"command": "head -c 104857600 /dev/zero | tr '\\0' y >&2; exit 1", "async": true, "name": "flood-err"},
            {"command": "printf '{\"additionalContext\":\"%s\"}' \"$(head -c 60000 /dev/zero | tr '\\0' z)\"", "async": true, "name": "big-context"},
        ]),
    ));
    world.dispatch(&post_tool_use(&world, "s1"));
    world.ended(3);
    let size: u64 = walk(&world.spools())
        .iter()
        .map(|p| p.metadata().unwrap().len())
        .sum();
    assert!(size <= 1 << 20, "the spool holds {size} bytes");
    let (next, _) = world.dispatch(&stop(&world, "s1"));
    let results = next["background"].as_array().unwrap();
    assert_eq!(results.len(), 3, "{next}");
    for result in results {
        let text = result.to_string();
        assert!(text.len() < 64 << 10, "{} bytes", text.len());
    }
    let context = next["additionalContext"].as_str().unwrap();
    assert!(context.contains("[cut:"), "the 60 KB context is cut");
    assert!(context.len() < 16 << 10, "{}", context.len());
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn a_blocked_dispatch_starts_none_and_the_others_do_not_wait() {
    let world = World::new();
    world.settings(&json!({ "hooks": { "PreToolUse": [{ "hooks": [
        {"command": "touch ran-before", "async": true},
        {"command": "echo no >&2; exit 2"},
        {"command": "touch ran-after", "async": true},
    ]}]}}));
    let (answer, _) = world.dispatch(&json!({
        "event": "PreToolUse", "tool_name": "write_file", "cwd": world.project(), "session_id": "s1",
    }));
    assert_eq!(answer["decision"], "block");
    let outcomes: Vec<&str> = answer["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["skipped", "block", "skipped"], "{answer}");
    assert_eq!(
        answer["handlers"][0]["message"],
        "not started: the dispatch blocked"
    );
    assert!(
        !world.spools().exists(),
        "nothing was started, so nothing was spooled"
    );
}

#[test]
fn an_id_that_is_no_session_starts_nothing() {
    let world = World::new();
    world.settings(&handlers(
        "Stop",
        json!([{"command": "touch ran", "async": true}]),
    ));
    let (answer, _) = world.dispatch(&stop(&world, "../../x"));
    assert_eq!(answer["handlers"][0]["outcome"], "skipped");
    let warnings = strings(&answer["warnings"]);
    assert!(
        warnings[0].contains("cannot name a session"),
        "{warnings:?}"
    );
}

#[test]
fn test_waits_for_a_background_handler_and_says_so() {
    let world = World::new();
    world.settings(&handlers(
        "Stop",
        json!([{"command": "sleep 0.2; echo '{\"additionalContext\":\"done\"}'", "async": true, "name": "later"}]),
    ));
    let (answer, stderr, _) = world.dispatch_with(&["test", "--event", "Stop"], &json!({}));
    assert_eq!(answer["handlers"][0]["outcome"], "started");
    let message = answer["handlers"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("levelcode-hooks test waited for it"),
        "{message}"
    );
    assert_eq!(
        answer["additionalContext"],
        "from the background Stop hook later: done"
    );
    assert!(
        stderr.contains("waited for 1 background handler(s)"),
        "{stderr}"
    );
}

#[test]
fn serve_keeps_results_for_its_own_requests_of_the_session() {
    let world = World::new();
    world.settings(&json!({ "hooks": {
        "PostToolUse": [{ "hooks": [{"command": "echo '{\"additionalContext\":\"lint clean\"}'", "async": true, "name": "lint"}]}],
        "Stop": [{ "hooks": [{"command": "echo $$ > pids; exec sleep 60", "async": true, "name": "watch"}]}],
    }}));
    let mut server = world.serve();
    let first = server.ask(&post_tool_use(&world, "s1"));
    assert_eq!(first["handlers"][0]["outcome"], "started", "{first}");
    world.ended(1);
    // Another session's request, and another server, get nothing of it.
    let other =
        server.ask(&json!({"event": "Notification", "cwd": world.project(), "session_id": "s2"}));
    assert!(other.get("background").is_none(), "{other}");
    {
        let (run_answer, _) = world.dispatch(
            &json!({"event": "Notification", "cwd": world.project(), "session_id": "s1"}),
        );
        assert!(run_answer.get("background").is_none(), "{run_answer}");
    }
    // The server takes the result off its supervisor a moment after the log has it.
    let mut handed = Vec::new();
    for _ in 0..200 {
        let answer = server
            .ask(&json!({"event": "Notification", "cwd": world.project(), "session_id": "s1"}));
        if let Some(context) = answer.get("additionalContext") {
            handed.push(context.clone());
        }
        if !handed.is_empty() && answer.get("additionalContext").is_none() {
            break;
        }
    }
    assert_eq!(
        handed,
        [json!(
            "from the background PostToolUse hook lint: lint clean"
        )]
    );
    // SessionEnd stops the session's handler that still runs.
    let started = server.ask(&stop(&world, "s1"));
    assert_eq!(started["handlers"][0]["outcome"], "started");
    let pid = handler_pid(&world);
    ends_stopping(|end| server.ask(end), &world, "s1", 1);
    assert_gone(&[pid], pid);
}

#[test]
fn serve_says_a_session_has_results_to_come_and_gives_nothing_to_remember_meanwhile() {
    let world = World::new();
    let go = world.project().join("go");
    world.settings(&handlers(
        "PostToolUse",
        json!([{"command": format!("while [ ! -e '{}' ]; do sleep 0.01; done; echo '{{\"additionalContext\":\"lint clean\"}}'", go.display()), "async": true, "name": "lint"}]),
    ));
    let mut server = world.serve();
    let watched = |session: &str| watched_stop(&world, session);
    let quiet = server.ask(&watched("s1"));
    assert!(quiet.get("watch").is_some(), "{quiet}");
    assert!(quiet.get("background_pending").is_none(), "{quiet}");
    let started = server.ask(&post_tool_use(&world, "s1"));
    assert_eq!(started["handlers"][0]["outcome"], "started", "{started}");
    assert_eq!(started["background_pending"], true, "{started}");
    // While it runs: the session's answer is not one to keep; another session's is.
    let running = server.ask(&watched("s1"));
    assert_eq!(running["background_pending"], true, "{running}");
    assert!(running.get("watch").is_none(), "{running}");
    let other = server.ask(&watched("s2"));
    assert!(other.get("watch").is_some(), "{other}");
    assert!(other.get("background_pending").is_none(), "{other}");
    write(&go, "");
    world.ended(1);
    // Pending until the answer that hands the result on; that answer says it no longer is.
    let mut answers = Vec::new();
    for _ in 0..400 {
        let answer = server.ask(&watched("s1"));
        let handed = answer.get("background").is_some();
        answers.push(answer);
        if handed {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let last = answers.last().unwrap();
    assert_eq!(
        last["additionalContext"], "from the background PostToolUse hook lint: lint clean",
        "{answers:?}"
    );
    assert!(last.get("background_pending").is_none(), "{last}");
    assert!(
        answers[..answers.len() - 1]
            .iter()
            .all(|a| a["background_pending"] == true && a.get("watch").is_none()),
        "{answers:?}"
    );
    let after = server.ask(&watched("s1"));
    assert!(after.get("watch").is_some(), "{after}");
    assert!(after.get("background_pending").is_none(), "{after}");
}

/// Dispatches `payload` with `ask` until `count` contexts were handed on, and returns them.
fn contexts_handed_on(count: usize, mut ask: impl FnMut() -> Value) -> Vec<String> {
    let deadline = Instant::now() + RECORDED;
    let mut handed = Vec::new();
    while handed.len() < count {
        let answer = ask();
        handed.extend(
            answer["additionalContext"]
                .as_str()
                .into_iter()
                .flat_map(str::lines)
                .map(str::to_string),
        );
        assert!(Instant::now() < deadline, "handed on: {handed:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    handed.sort();
    handed
}

#[test]
fn results_outlive_their_server_and_go_to_the_next_dispatch_of_their_session() {
    let world = World::new();
    let go = world.project().join("go");
    world.settings(&handlers(
        "PostToolUse",
        json!([
            {"command": format!("while [ ! -e '{}' ]; do sleep 0.01; done; echo '{{\"additionalContext\":\"suite passed\"}}'", go.display()), "async": true, "name": "suite"},
            {"command": "echo '{\"additionalContext\":\"lint clean\"}'", "async": true, "name": "lint"},
        ]),
    ));
    let mut server = world.serve();
    let started = server.ask(&post_tool_use(&world, "s1"));
    assert_eq!(started["handlers"][0]["outcome"], "started", "{started}");
    assert_eq!(started["handlers"][1]["outcome"], "started", "{started}");
    world.ended(1);
    // The server ends (its client went idle) with one result kept and one handler running.
    let (status, _) = server.finish();
    assert_eq!(status, 0);
    write(&go, "");
    world.ended(2);
    let handed = contexts_handed_on(2, || world.dispatch(&stop(&world, "s1")).0);
    assert_eq!(
        handed,
        [
            "from the background PostToolUse hook lint: lint clean",
            "from the background PostToolUse hook suite: suite passed"
        ]
    );
    // Once each: nothing more comes.
    let (again, _) = world.dispatch(&stop(&world, "s1"));
    assert!(again.get("background").is_none(), "{again}");
}

#[test]
fn a_server_whose_input_ends_right_after_it_started_a_handler_leaves_it_running() {
    let world = World::new();
    world.settings(&handlers(
        "PostToolUse",
        json!([{"command": "echo ran >> ran", "async": true, "name": "note"}]),
    ));
    // Each server is told of one call and of the end of its input at once, as a client that
    // closes its runner after a tool call does.
    let times = 20;
    for _ in 0..times {
        let out = fed(world.command(&["serve"]), &post_tool_use(&world, "s1"));
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(answer["handlers"][0]["outcome"], "started", "{answer}");
    }
    world.ended(times);
    let ran = std::fs::read_to_string(world.project().join("ran")).unwrap();
    assert_eq!(ran.lines().count(), times);
}

#[test]
fn session_end_stops_what_an_ended_server_left_running_and_nothing_of_it_is_handed_on() {
    let world = World::new();
    world.settings(&handlers(
        "PostToolUse",
        json!([{"command": "echo $$ > pids; sleep 60; echo '{\"additionalContext\":\"late\"}'", "async": true, "name": "late"}]),
    ));
    let mut server = world.serve();
    let started = server.ask(&post_tool_use(&world, "s1"));
    assert_eq!(started["handlers"][0]["outcome"], "started", "{started}");
    let pid = handler_pid(&world);
    let (status, _) = server.finish();
    assert_eq!(status, 0);
    assert!(alive(pid));
    // The session ends in a `run`: the handler the server left is stopped, and its spool goes.
    end_session(&world, "s1", 1);
    assert_gone(&[pid], pid);
    let lines = world.ended(1);
    assert_eq!(
        lines[0]["handlers"][0]["outcome"], "interrupted",
        "{lines:?}"
    );
    assert_eq!(walk(&world.spools()), Vec::<PathBuf>::new());
    let (after, _) = world.dispatch(&stop(&world, "s1"));
    assert!(after.get("background").is_none(), "{after}");
}

#[test]
fn the_next_server_says_what_an_ended_one_left_running_is_still_to_come() {
    let world = World::new();
    let go = world.project().join("go");
    world.settings(&handlers(
        "PostToolUse",
        json!([{"command": format!("while [ ! -e '{}' ]; do sleep 0.01; done; echo '{{\"additionalContext\":\"suite passed\"}}'", go.display()), "async": true, "name": "suite"}]),
    ));
    let mut first = world.serve();
    let started = first.ask(&post_tool_use(&world, "s1"));
    assert_eq!(started["handlers"][0]["outcome"], "started", "{started}");
    assert_eq!(first.finish().0, 0);
    let mut next = world.serve();
    let watched = |session: &str| watched_stop(&world, session);
    // Still to come for its session, and not a call a client may answer from memory; another
    // session's is.
    let waiting = next.ask(&watched("s1"));
    assert_eq!(waiting["background_pending"], true, "{waiting}");
    assert!(waiting.get("watch").is_none(), "{waiting}");
    let other = next.ask(&watched("s2"));
    assert!(other.get("background_pending").is_none(), "{other}");
    write(&go, "");
    world.ended(1);
    let handed = contexts_handed_on(1, || next.ask(&watched("s1")));
    assert_eq!(
        handed,
        ["from the background PostToolUse hook suite: suite passed"]
    );
    let after = next.ask(&watched("s1"));
    assert!(after.get("background_pending").is_none(), "{after}");
    assert!(after.get("watch").is_some(), "{after}");
}

#[test]
fn serve_hands_on_what_a_run_of_the_session_left_and_ends_its_spool_at_session_end() {
    let world = World::new();
    world.settings(&json!({ "hooks": {
        "PostToolUse": [{ "hooks": [{"command": "echo '{\"additionalContext\":\"lint clean\"}'", "async": true, "name": "lint"}]}],
        "Stop": [{ "hooks": [{"command": "echo $$ > pids; exec sleep 60", "async": true, "name": "watch"}]}],
    }}));
    let (first, _) = world.dispatch(&post_tool_use(&world, "s1"));
    assert_eq!(first["handlers"][0]["outcome"], "started", "{first}");
    world.ended(1);
    let mut server = world.serve();
    let handed = contexts_handed_on(1, || {
        server.ask(&json!({"event": "Notification", "cwd": world.project(), "session_id": "s1"}))
    });
    assert_eq!(
        handed,
        ["from the background PostToolUse hook lint: lint clean"]
    );
    // A handler a `run` started is stopped by the server's SessionEnd, and the spool goes.
    let (started, _) = world.dispatch(&stop(&world, "s1"));
    assert_eq!(started["handlers"][0]["outcome"], "started", "{started}");
    let pid = handler_pid(&world);
    ends_stopping(|end| server.ask(end), &world, "s1", 1);
    assert_gone(&[pid], pid);
    assert_eq!(walk(&world.spools()), Vec::<PathBuf>::new());
}

#[test]
fn a_claude_code_async_hook_runs_in_the_background_and_its_message_is_handed_on() {
    let world = World::new();
    world.settings(&json!({"claudeCodeHooks": true}));
    write(
        &world.sandbox.home().join(".claude/settings.json"),
        json!({"hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [{
            "type": "command",
            "command": "cat > /dev/null; echo '{\"systemMessage\":\"formatted\",\"hookSpecificOutput\":{\"hookEventName\":\"PostToolUse\",\"additionalContext\":\"prettier ran\"}}'",
            "async": true,
        }]}]}})
        .to_string(),
    );
    let (answer, _) = world.dispatch(&post_tool_use(&world, "s1"));
    assert_eq!(answer["handlers"][0]["outcome"], "started", "{answer}");
    world.ended(1);
    let (next, _) = world.dispatch(&stop(&world, "s1"));
    let context = next["additionalContext"].as_str().unwrap_or_default();
    assert!(context.ends_with(": prettier ran"), "{next}");
    assert!(next["system_message"]
        .as_str()
        .unwrap()
        .ends_with(": formatted"));
}

#[test]
fn list_validate_and_the_trust_review_say_what_async_does() {
    let world = World::new();
    write(
        &world.project().join(".levelcode/settings.json"),
        json!({"hooks": {"PostToolUse": [{"hooks": [
            {"command": "true suite", "async": true},
            {"command": "true guard", "async": true, "onFailure": "block"},
            {"command": "true rewake", "asyncRewake": true},
        ]}]}})
        .to_string(),
    );
    let output = |args: &[&str]| {
        let out = world.command(args).stdin(Stdio::null()).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let listed: Value = serde_json::from_str(&output(&["list", "--json"])).unwrap();
    let handlers = listed["handlers"].as_array().unwrap();
    assert_eq!(handlers[0]["async"], true, "{listed}");
    assert_eq!(
        handlers[2]["async"], true,
        "asyncRewake implies async: {listed}"
    );
    assert_eq!(handlers[0]["timeout"], 600.0, "the background default");
    assert!(output(&["list"]).contains("async: started once the chain has decided"));
    let validated: Value = serde_json::from_str(&output(&["validate", "--json"])).unwrap();
    let problems: Vec<(String, String)> = validated["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["kind"].as_str().unwrap().to_string(),
                p["path"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let at = "hooks.PostToolUse[0].hooks";
    assert_eq!(
        problems,
        [
            (
                "async_cannot_block".to_string(),
                format!("{at}[1].onFailure")
            ),
            ("not_honoured".to_string(), format!("{at}[2].asyncRewake")),
        ],
        "async itself is honoured: {validated}"
    );
    let review = output(&[
        "trust",
        "--yes",
        "--project-dir",
        world.project().to_str().unwrap(),
    ]);
    assert_eq!(
        review
            .matches("(async: in the background, not waited for)")
            .count(),
        3,
        "{review}"
    );
}

#[test]
fn the_caller_gets_its_status_and_its_descriptors_back_while_the_handler_runs() {
    let world = World::new();
    world.settings(&handlers(
        "PreToolUse",
        json!([
            {"command": "echo '{\"decision\":\"ask\",\"reason\":\"a person should look\"}'"},
            {"command": "sleep 2; touch ran", "async": true, "name": "slow"},
        ]),
    ));
    // A pipe the caller leaves open in the dispatcher as its descriptor 3, not closed on exec,
    // as some harnesses do: reading it to its end must not wait for the handler.
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new descriptors into the array.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    let (read, write) = (fds[0], fds[1]);
    let mut command = world.command(&["run"]);
    use std::os::unix::process::CommandExt as _;
    // SAFETY: dup2 only, between fork and exec; the copy at 3 is not closed on exec.
    unsafe {
        command.pre_exec(move || {
            if libc::dup2(write, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let payload = json!({"event": "PreToolUse", "tool_name": "write_file", "session_id": "s1", "cwd": world.project(), "tool_input": {}});
    let out = fed(command, &payload);
    // SAFETY: this process's copy of the write end, closed once.
    unsafe { libc::close(write) };
    // SAFETY: `read` is ours; File takes it over and closes it.
    let mut extra = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(read) };
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut extra, &mut rest).unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_millis(1500), "{took:?}");
    assert!(!world.project().join("ran").exists(), "it answered first");
    assert_eq!(out.status.code(), Some(2), "ask's status");
    let answer: Value = serde_json::from_slice(out.stdout.trim_ascii()).unwrap();
    assert_eq!(answer["decision"], "ask", "{answer}");
    assert_eq!(answer["handlers"][1]["outcome"], "started", "{answer}");
    waits_for(&world.project().join("ran"));
}

/// A dispatch that starts several: each handler's place names its own supervisor and handler,
/// and no supervisor holds another's place, so `SessionEnd` stops exactly what still runs.
#[test]
fn session_end_stops_every_handler_of_a_dispatch_that_started_several() {
    let world = World::new();
    world.settings(&handlers(
        "PostToolUse",
        json!([
            {"command": "echo $$ >> pids; exec sleep 60", "async": true, "name": "long"},
            {"command": "true", "async": true, "name": "short"},
        ]),
    ));
    world.dispatch(&post_tool_use(&world, "s1"));
    let pids_file = world.project().join("pids");
    wait_for_lines(&pids_file, 1, RECORDED);
    let long = read_pids(&pids_file)[0];
    let ended = world.ended(1);
    assert_eq!(ended[0]["handlers"][0]["label"], "short", "{ended:?}");
    let spool = std::fs::read_dir(world.spools())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    // The short one's supervisor is gone, and with it its place: one is held, the long one's,
    // naming it.
    let deadline = Instant::now() + RECORDED;
    let held = loop {
        let held: Vec<Value> = (0..16)
            .filter_map(|n| {
                let path = spool.join(format!("slot.{n}"));
                let file = std::fs::File::open(&path).ok()?;
                let free = file.try_lock().is_ok();
                let text = std::fs::read_to_string(&path).ok()?;
                (!free).then(|| serde_json::from_str(text.trim()).unwrap())
            })
            .collect();
        if held.len() <= 1 || Instant::now() > deadline {
            break held;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0]["handler"][0], json!(long), "{held:?}");
    end_session(&world, "s1", 1);
    assert!(
        wait_gone(&[long], RECORDED).is_empty(),
        "the long one was stopped"
    );
}
