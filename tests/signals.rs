//! SIGINT, SIGTERM and SIGHUP to the dispatcher (contract §7, §8): the running handler's
//! process group is stopped, the result so far is printed with `"interrupted":true`, and the exit
//! status is 128+N.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::{assert_gone, group, read_pids, wait_for_line, wait_for_lines, Output, Test};

/// Starts a `Stop` dispatch whose first handler writes its pid and then runs `command`, waits
/// until the pid file has `lines` lines (`command` may add some), sends `sig`, and returns the
/// output and the time from the signal to the exit.
fn interrupt_mid_handler(command: &str, lines: usize, sig: i32) -> (Output, Duration) {
    let handlers = json!([
        {"command": format!("echo $$ > pids; {command}"), "timeout": 30},
        {"command": "touch later"},
    ]);
    let running = Test::new()
        .project_settings(group("Stop", None, handlers))
        .event("Stop")
        .reap("pids")
        .spawn();
    wait_for_lines(
        &running.project().join("pids"),
        lines,
        Duration::from_secs(20),
    );
    let sent = Instant::now();
    running.signal(sig);
    let out = running.wait();
    (out, sent.elapsed())
}

fn assert_interrupted(out: &Output, sig: i32, after_signal: Duration) {
    assert!(after_signal < Duration::from_secs(6), "{after_signal:?}");
    assert_eq!(out.status(), 128 + sig, "{}", out.stdout());
    let json = out.json();
    assert_eq!(json["interrupted"], true, "{json}");
    assert_eq!(json["decision"], "proceed");
    let pids = read_pids(&out.project().join("pids"));
    assert_gone(&pids, pids[0]);
    assert!(
        !out.project_has("later"),
        "no handler starts after a signal"
    );
    let outcomes = out.outcomes();
    assert_eq!(outcomes.len(), 2, "{json}");
    assert_ne!(outcomes[0], "proceed");
    assert_eq!(outcomes[1], "skipped");
}

#[test]
fn sigterm_mid_handler() {
    let (out, after) = interrupt_mid_handler("exec sleep 30", 1, libc::SIGTERM);
    assert_interrupted(&out, libc::SIGTERM, after);
    assert_eq!(out.status(), 143);
}

#[test]
fn sigint_mid_handler() {
    let (out, after) = interrupt_mid_handler("exec sleep 30", 1, libc::SIGINT);
    assert_interrupted(&out, libc::SIGINT, after);
    assert_eq!(out.status(), 130);
}

#[test]
fn sighup_mid_handler() {
    let (out, after) = interrupt_mid_handler("exec sleep 30", 1, libc::SIGHUP);
    assert_interrupted(&out, libc::SIGHUP, after);
}

#[test]
fn sigterm_mid_handler_that_ignores_sigterm() {
    let (out, after) = interrupt_mid_handler(
        "trap '' TERM; sleep 30 & echo $! >> pids; wait; sleep 30",
        2,
        libc::SIGTERM,
    );
    assert_interrupted(&out, libc::SIGTERM, after);
    assert_eq!(read_pids(&out.project().join("pids")).len(), 2);
}

#[test]
fn sigterm_mid_handler_with_a_grandchild_holding_stdout() {
    let (out, after) = interrupt_mid_handler(
        "sh -c 'echo $$ >> pids; exec sleep 30' & exec sleep 30",
        2,
        libc::SIGTERM,
    );
    assert_interrupted(&out, libc::SIGTERM, after);
    assert_eq!(read_pids(&out.project().join("pids")).len(), 2);
}

#[test]
fn sigterm_with_compact_output_still_says_interrupted() {
    let running = Test::new()
        .project_settings(json!({"hooks": {"Stop": [{"hooks": [
            {"command": "echo $$ > pids; exec sleep 30"},
        ]}]}}))
        .arg("--output")
        .arg("compact")
        .event("Stop")
        .reap("pids")
        .spawn();
    wait_for_line(&running.project().join("pids"), Duration::from_secs(20));
    running.signal(libc::SIGTERM);
    let out = running.wait();
    assert_eq!(out.status(), 143);
    assert_eq!(out.json()["interrupted"], true);
}

#[test]
fn sigterm_while_waiting_on_stdin() {
    let running = Test::new()
        .project_settings(json!({"hooks": {"Stop": [{"hooks": [{"command": "touch ran"}]}]}}))
        .stdin_open()
        .spawn();
    running.wait_until_sleeping();
    let sent = Instant::now();
    running.signal(libc::SIGTERM);
    let out = running.wait();
    assert!(sent.elapsed() < Duration::from_secs(6));
    assert_eq!(out.status(), 143);
    let json = out.json();
    assert_eq!(json["interrupted"], true, "{json}");
    assert_eq!(json["handlers"], json!([]));
    assert!(!out.project_has("ran"));
}

#[test]
fn sigint_while_a_partial_payload_waits_for_more() {
    let mut running = Test::new().stdin_open().spawn();
    running.write_stdin(br#"{"event":"Stop","#);
    running.wait_until_sleeping();
    running.signal(libc::SIGINT);
    let out = running.wait();
    assert_eq!(out.status(), 130);
    assert_eq!(out.json()["interrupted"], true);
}
