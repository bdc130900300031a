//! `serve` with many requests at once (contract §14): each answered as soon as it is done, with
//! its own variables, stdin and directory; all of them answered, once; the ones in flight
//! finished when stdin ends, whether or not anyone still reads the answers; and all of them
//! stopped by a signal.
//!
//! The handlers here wait on gates (a file that appears, a count of arrivals) rather than on
//! the clock, so what is checked is the order of events, never how long something took.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{World, ANSWER_LIMIT};
use crate::common::{alive, group_members, read_pids, require, runs, wait_for_lines, write};

/// A gate handlers wait at, without polling: the test holds an exclusive lock on a file, and
/// each handler takes a shared one (`flock -s`), which it gets once the gate opens.
struct Gate {
    file: std::fs::File,
    path: std::path::PathBuf,
}

impl Gate {
    fn closed(path: std::path::PathBuf) -> Option<Gate> {
        if !require("flock", runs("flock", &["-V"]), "handlers wait at a lock") {
            return None;
        }
        let file = std::fs::File::create(&path).unwrap();
        file.lock().unwrap();
        Some(Gate { file, path })
    }

    /// `sh` that waits until the gate opens (at most 30 s, so nothing can hang for good).
    fn wait(&self) -> String {
        format!("flock -s -w 30 '{}' true", self.path.display())
    }

    fn open(&self) {
        self.file.unlock().unwrap();
    }
}

/// `sh` that adds a line to `file`, then waits until it holds `count` lines: handlers that pass
/// it were all running at the same moment.
fn barrier(file: &Path, count: usize) -> String {
    format!(
        "echo x >> '{file}'; i=0; while [ \"$(wc -l < '{file}')\" -lt {count} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done",
        file = file.display()
    )
}

/// The answers' ids, as numbers.
fn ids(answers: &[Value]) -> Vec<i64> {
    answers
        .iter()
        .map(|a| a["id"].as_i64().unwrap_or_else(|| panic!("{a}")))
        .collect()
}

#[test]
fn a_fast_request_is_answered_before_a_slow_one_sent_first() {
    let world = World::new();
    let Some(gate) = Gate::closed(world.root().join("gate")) else {
        return;
    };
    let slow = json!({"Stop": [{"hooks": [
        {"command": format!("{}; echo slow", gate.wait()), "timeout": 60},
    ]}]});
    let fast = json!({"Stop": [{"hooks": [{"command": "echo fast"}]}]});
    let mut server = world.serve(&[]);
    server.send(
        json!({"id": "slow", "event": "Stop", "options": {"hooks": slow}})
            .to_string()
            .as_bytes(),
    );
    server.send(
        json!({"id": "fast", "event": "Stop", "options": {"hooks": fast}})
            .to_string()
            .as_bytes(),
    );
    // The slow handler cannot end before the gate opens, and the gate opens only once the fast
    // request is answered: the answers come out of order, each with its id.
    let first = server.answer();
    assert_eq!(first["id"], "fast", "{first}");
    assert_eq!(first["handlers"][0]["stdout"], "fast\n");
    gate.open();
    let second = server.answer();
    assert_eq!(second["id"], "slow", "{second}");
    assert_eq!(second["handlers"][0]["stdout"], "slow\n");
    assert_eq!(second["handlers"][0]["outcome"], "proceed");
    let (status, rest) = server.finish();
    assert_eq!(status, 0);
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn a_burst_of_200_requests_is_answered_once_each() {
    let world = World::new();
    // Half match a handler that echoes its payload back; half match nothing.
    write(
        &world.user_settings(),
        json!({"hooks": {"PreToolUse": [{"matcher": "run_terminal_command", "hooks": [{"command": "cat"}]}]}})
            .to_string(),
    );
    let mut burst = String::new();
    for n in 0..200 {
        let tool = if n % 2 == 0 {
            "run_terminal_command"
        } else {
            "read_files"
        };
        burst.push_str(
            &json!({"id": n, "event": "PreToolUse", "tool_name": tool, "tool_input": {"n": n}})
                .to_string(),
        );
        burst.push('\n');
    }
    let mut server = world.serve(&[]);
    // One write: the server reads the lines as fast as its bound lets it.
    let stdin = server.stdin.as_mut().unwrap();
    stdin.write_all(burst.as_bytes()).unwrap();
    stdin.flush().unwrap();
    let answers: Vec<Value> = (0..200).map(|_| server.answer()).collect();
    let (status, rest) = server.finish();
    assert_eq!(status, 0);
    assert!(rest.is_empty(), "no request answered twice: {rest:?}");
    let mut seen = ids(&answers);
    seen.sort_unstable();
    assert_eq!(seen, (0..200).collect::<Vec<i64>>());
    for answer in &answers {
        let n = answer["id"].as_i64().unwrap();
        assert_eq!(answer["decision"], "proceed", "{answer}");
        let handlers = answer["handlers"].as_array().unwrap();
        if n % 2 == 0 {
            assert_eq!(handlers.len(), 1, "{answer}");
            // Its own payload on its own stdin, whatever ran beside it.
            let payload: Value =
                serde_json::from_str(handlers[0]["stdout"].as_str().unwrap()).unwrap();
            assert_eq!(payload["tool_input"]["n"], n, "{answer}");
        } else {
            assert!(handlers.is_empty(), "{answer}");
        }
    }
}

#[test]
fn requests_side_by_side_each_see_their_own_variables_stdin_and_directory() {
    const COUNT: usize = 8;
    let world = World::new();
    let arrived = world.root().join("arrived");
    let wait = barrier(&arrived, COUNT);
    write(
        &world.user_settings(),
        json!({"hooks": {
            "PreToolUse": [{"hooks": [{"timeout": 60, "command": format!(
                "input=$(cat); {wait}; printf '%s|%s|%s|%s|%s\\n' \"$LEVELCODE_HOOK_EVENT\" \"$LEVELCODE_TOOL_NAME\" \"$LEVELCODE_PROJECT_DIR\" \"$(pwd)\" \"${{CLAUDE_ENV_FILE-none}}\"; printf '%s' \"$input\""
            )}]}],
            "SessionStart": [{"protocol": "claude", "hooks": [{"timeout": 60, "command": format!(
                "{wait}; echo \"export FROM=$(basename \"$CLAUDE_PROJECT_DIR\")\" >> \"$CLAUDE_ENV_FILE\"; printf '%s|%s|%s' \"$LEVELCODE_HOOK_EVENT\" \"${{LEVELCODE_TOOL_NAME-none}}\" \"$(pwd)\""
            )}]}]
        }})
        .to_string(),
    );
    let project = |n: usize| world.root().join(format!("p{n}"));
    let mut server = world.serve(&[]);
    for n in 0..COUNT {
        std::fs::create_dir_all(project(n)).unwrap();
        let options = json!({"project_dir": project(n)});
        let request = if n % 2 == 0 {
            json!({"id": n, "event": "PreToolUse", "tool_name": format!("tool_{n}"), "tool_input": {"n": n}, "options": options})
        } else {
            json!({"id": n, "event": "SessionStart", "options": options})
        };
        server.send(request.to_string().as_bytes());
    }
    // Every handler waits for all the others to arrive: they can only end if all ran at once.
    let answers: BTreeMap<i64, Value> = (0..COUNT)
        .map(|_| {
            let answer = server.answer();
            (answer["id"].as_i64().unwrap(), answer)
        })
        .collect();
    assert_eq!(answers.len(), COUNT);
    for (n, answer) in answers {
        let dir = project(usize::try_from(n).unwrap()).display().to_string();
        let handler = &answer["handlers"][0];
        assert_eq!(handler["outcome"], "proceed", "{answer}");
        if n % 2 == 0 {
            let stdout = handler["stdout"].as_str().unwrap();
            let (vars, input) = stdout.split_once('\n').unwrap();
            assert_eq!(
                vars,
                format!("PreToolUse|tool_{n}|{dir}|{dir}|none"),
                "{answer}"
            );
            let input: Value = serde_json::from_str(input).unwrap();
            assert_eq!(input["tool_input"]["n"], n, "{answer}");
            assert!(answer.get("session_env").is_none(), "{answer}");
        } else {
            assert_eq!(
                answer["additionalContext"],
                format!("SessionStart|none|{dir}"),
                "{answer}"
            );
            // Its own CLAUDE_ENV_FILE: what it wrote, and no other request's lines.
            assert_eq!(
                answer["session_env"],
                format!("export FROM=p{n}\n"),
                "{answer}"
            );
        }
    }
    let (status, _) = server.finish();
    assert_eq!(status, 0);
}

#[test]
fn end_of_input_with_stdout_closed_still_finishes_every_request_then_exits() {
    const COUNT: usize = 5;
    let world = World::new();
    let Some(gate) = Gate::closed(world.root().join("gate")) else {
        return;
    };
    let marks = world.root().join("marks");
    let pids = world.root().join("pids");
    write(
        &world.user_settings(),
        json!({"hooks": {"Stop": [{"hooks": [{"timeout": 60, "command": format!(
            // The payload and its newline in one write, so that marks never interleave.
            "echo $$ >> '{}'; {}; payload=$(cat); echo \"$payload\" >> '{}'",
            pids.display(), gate.wait(), marks.display()
        )}]}]}})
        .to_string(),
    );
    let mut child = world.command(&["serve"]).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for n in 0..COUNT {
        writeln!(stdin, "{}", json!({"id": n, "event": "Stop", "n": n})).unwrap();
    }
    stdin.flush().unwrap();
    // Every request in flight; then the client goes away: no one will read an answer.
    wait_for_lines(&pids, COUNT, ANSWER_LIMIT);
    drop(child.stdout.take());
    drop(stdin);
    gate.open();
    let deadline = Instant::now() + ANSWER_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "serve did not exit");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(0));
    // Each handler left its mark: its own payload, once.
    let text = std::fs::read_to_string(&marks).unwrap();
    let mut seen: Vec<i64> = text
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["n"]
                .as_i64()
                .unwrap()
        })
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..5).collect::<Vec<i64>>());
    for pid in read_pids(&pids) {
        assert!(!alive(pid), "handler {pid} outlived the server");
        assert!(group_members(pid).is_empty());
    }
}

#[test]
fn a_signal_stops_every_request_in_flight_and_answers_each() {
    const COUNT: usize = 6;
    let world = World::new();
    let pids = world.root().join("pids");
    write(
        &world.user_settings(),
        json!({"hooks": {
            "Stop": [{"hooks": [
                {"timeout": 60, "command": format!("echo $$ >> '{}'; exec sleep 30", pids.display())},
                {"command": "touch later"},
            ]}],
        }})
        .to_string(),
    );
    let mut server = world.serve(&["--output", "compact"]);
    for n in 0..COUNT {
        server.send(json!({"id": n, "event": "Stop"}).to_string().as_bytes());
    }
    wait_for_lines(&pids, COUNT, ANSWER_LIMIT);
    // A request that runs no handler, answered while the others wait.
    let quick = server.ask(&json!({"id": "quick", "event": "PreToolUse", "tool_name": "x"}));
    assert_eq!(quick["id"], "quick");
    assert!(quick.get("interrupted").is_none(), "{quick}");
    let sent = Instant::now();
    // SAFETY: kill(2) with plain integers.
    unsafe { libc::kill(server.pid(), libc::SIGINT) };
    let answers: Vec<Value> = (0..COUNT).map(|_| server.answer()).collect();
    for answer in &answers {
        assert_eq!(answer["interrupted"], true, "{answer}");
    }
    let mut seen = ids(&answers);
    seen.sort_unstable();
    assert_eq!(seen, (0..6).collect::<Vec<i64>>());
    let (status, rest) = server.finish();
    assert_eq!(status, 130);
    assert!(
        sent.elapsed() < Duration::from_secs(6),
        "{:?}",
        sent.elapsed()
    );
    assert!(rest.is_empty(), "{rest:?}");
    for pid in read_pids(&pids) {
        assert!(!alive(pid), "handler {pid} survived the signal");
        assert!(group_members(pid).is_empty());
    }
    assert!(
        !world.project().join("later").exists(),
        "no handler starts after the signal"
    );
}

#[test]
fn no_more_than_the_bound_run_at_once_and_the_rest_wait_their_turn() {
    // The documented bound of requests in flight (docs/serve.md).
    const BOUND: usize = 64;
    const COUNT: usize = BOUND + 6;
    let world = World::new();
    let log = world.root().join("log");
    let Some(gate) = Gate::closed(world.root().join("gate")) else {
        return;
    };
    write(
        &world.user_settings(),
        json!({"hooks": {"Stop": [{"hooks": [{"timeout": 60, "command": format!(
            "echo start >> '{log}'; {}; echo end >> '{log}'",
            gate.wait(), log = log.display()
        )}]}]}})
        .to_string(),
    );
    let mut server = world.serve(&[]);
    let mut burst = String::new();
    for n in 0..COUNT {
        burst.push_str(&json!({"id": n, "event": "Stop"}).to_string());
        burst.push('\n');
    }
    server
        .stdin
        .as_mut()
        .unwrap()
        .write_all(burst.as_bytes())
        .unwrap();
    // The bound's worth start; the others wait, unread, until one is answered.
    wait_for_lines(&log, BOUND, ANSWER_LIMIT);
    std::thread::sleep(Duration::from_millis(500));
    let started = std::fs::read_to_string(&log).unwrap().lines().count();
    assert_eq!(started, BOUND, "only the bound's worth run at once");
    gate.open();
    let answers: Vec<Value> = (0..COUNT).map(|_| server.answer()).collect();
    let mut seen = ids(&answers);
    seen.sort_unstable();
    assert_eq!(
        seen,
        (0..i64::try_from(COUNT).unwrap()).collect::<Vec<i64>>()
    );
    let (status, rest) = server.finish();
    assert_eq!(status, 0);
    assert!(rest.is_empty(), "{rest:?}");
    // Never more than the bound between a start and its end.
    let mut running = 0usize;
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        running = if line == "start" {
            running + 1
        } else {
            running - 1
        };
        assert!(running <= BOUND);
    }
    assert_eq!(running, 0);
}
