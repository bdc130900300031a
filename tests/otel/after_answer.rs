//! Once the collector has taken the head of a dispatch's request, `run` answers without waiting
//! for the body to go: a child of its own sends it, with the export's whole timeout, holding none
//! of the caller's descriptors.

use std::io::Write as _;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{attributes, spans, Receiver};
use crate::common::{group, group_members, on, require, write, Sandbox, Test};

/// The label of handler `n` in [`big_labels`]: 2 MiB.
pub(super) fn label(n: u8) -> String {
    format!("{n}{}", "x".repeat(2 << 20))
}

/// Settings under `event` whose three handler spans have a 2 MiB label each: a body no
/// connection's buffers take whole, so that sending it waits for the collector. The first
/// handler runs `first`: long enough, where it matters, for the collector's `100 Continue` to
/// be there when the handlers end.
pub(super) fn big_labels(event: &str, first: &str) -> serde_json::Value {
    group(
        event,
        None,
        json!([
            { "command": first, "name": label(1) },
            { "command": "true", "name": label(2) },
            { "command": "exit 0", "name": label(3) },
        ]),
    )
}

/// A `Stop` dispatch running `command`, exported to `receiver`.
fn stop_exported(receiver: &Receiver, command: &str) -> crate::common::Output {
    let out = Test::new()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .user_settings(on("Stop", command))
        .event("Stop")
        .run();
    assert_eq!(out.outcomes(), ["proceed"]);
    out
}

/// The spans of the receiver's next request, which it did not drop.
fn kept_spans(receiver: &Receiver) -> Vec<serde_json::Value> {
    let record = receiver.request();
    assert!(record.get("dropped").is_none(), "{record}");
    spans(&record)
}

/// A collector that says `100 Continue` at once and reads no body until the file `go` (in
/// `dir`) exists.
fn holding(dir: &std::path::Path) -> Option<(Receiver, std::path::PathBuf)> {
    let go = dir.join("go");
    Receiver::start(&["--hold-until", go.to_str().unwrap()]).map(|r| (r, go))
}

#[test]
fn run_answers_and_ends_its_output_while_the_collector_has_not_read_the_body() {
    let test = Test::new();
    let Some((receiver, go)) = holding(&test.home()) else {
        return;
    };
    let settings = big_labels("PreToolUse", "sleep 1");
    let test = test
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "60000")
        .user_settings(&settings)
        .tool_event("PreToolUse", "write_file");
    let (done, out) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(test.run());
    });
    // The answer, the exit and the end of stdout and stderr, all while the body waits: were
    // any of the caller's pipes held by the process sending it, their end would come only
    // when the collector had read it all, which it does only after this.
    let out = out
        .recv_timeout(Duration::from_secs(30))
        .expect("run ended while its export's body waited for the collector");
    assert_eq!(out.outcomes(), ["proceed", "proceed", "proceed"]);
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());

    std::fs::write(&go, "").unwrap();
    let spans = spans(&receiver.request());
    assert_eq!(spans.len(), 4);
    // Sent in process instead (for valgrind), the same body waits for the collector within
    // run's bound, and is not exported.
    std::fs::remove_file(&go).unwrap();
    let out = Test::new()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("LEVELCODE_HOOKS_OTEL_IN_PROCESS", "1")
        .user_settings(&settings)
        .tool_event("PreToolUse", "write_file")
        .run();
    out.warning(&["OpenTelemetry", "not exported", "too slowly"]);
    for (n, span) in (1..).zip(&spans[1..]) {
        assert_eq!(
            attributes(span)["levelcode.hook.label"].as_str(),
            Some(label(n).as_str()),
            "every span whole, sent after the dispatch ended"
        );
    }
}

#[test]
fn the_process_sending_the_body_ends_on_a_signal_to_its_group_as_any_process_does() {
    let sandbox = Sandbox::new();
    let Some((receiver, go)) = holding(sandbox.root()) else {
        return;
    };
    let settings = big_labels("PreToolUse", "sleep 1");
    write(
        &sandbox.home().join(".config/levelcode/settings.json"),
        settings.to_string(),
    );
    let mut child = {
        use std::os::unix::process::CommandExt as _;
        sandbox
            .command()
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
            .env("OTEL_EXPORTER_OTLP_TIMEOUT", "60000")
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let group = i32::try_from(child.id()).unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"event":"PreToolUse","tool_name":"write_file"}"#)
        .unwrap();
    assert!(child.wait().unwrap().success());
    // The dispatcher is gone; what sends the body is left in its group, waiting for the
    // collector.
    let sender = group_members(group);
    assert_eq!(sender.len(), 1, "{sender:?}");
    // SAFETY: a signal to the test's own child's group.
    assert_eq!(unsafe { libc::kill(-group, libc::SIGTERM) }, 0);
    let limit = Instant::now() + Duration::from_secs(20);
    while !group_members(group).is_empty() {
        assert!(
            Instant::now() < limit,
            "{sender:?} outlived SIGTERM to its group"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    std::fs::write(&go, "").unwrap();
}

#[test]
fn the_spans_reach_a_collector_that_drops_a_request_whose_client_left_before_its_answer() {
    // Such a collector (hyper's HTTP/1 server, say) gives up on a request whose connection
    // ends before it has answered; this one answers half a second after the body.
    let Some(receiver) = Receiver::start(&["--delay", "0.5", "--drop-if-closed"]) else {
        return;
    };
    let out = stop_exported(&receiver, "sleep 1");
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
    // `run` has answered; what sends the body keeps the connection until the answer.
    assert_eq!(kept_spans(&receiver).len(), 2);
}

#[test]
fn the_answer_is_waited_for_after_the_dispatch_when_the_collector_says_continue_late() {
    // A collector that says `100 Continue` only once the body arrives (hyper's way), answers
    // half a second later, and drops the request if the connection has ended by then.
    let Some(receiver) =
        Receiver::start(&["--late-continue", "--delay", "0.5", "--drop-if-closed"])
    else {
        return;
    };
    // `run` waits 200 ms at most for that `100 Continue`; on a loaded machine the collector
    // can be slower, and the attempt shows nothing: it is made again.
    for _ in 0..5 {
        let out = stop_exported(&receiver, "true");
        if !out.warnings().is_empty() {
            out.warning(&["OpenTelemetry", "no answer within 200 ms"]);
            receiver.request();
            continue;
        }
        assert_eq!(kept_spans(&receiver).len(), 2);
        return;
    }
    panic!("the collector was slower than the bound five times");
}

#[test]
fn the_request_again_with_its_length_is_sent_after_the_answer_too() {
    // A collector that takes no announced body (417 to the head), answers the plain request
    // half a second after it, and drops it if the connection has ended by then: `run` neither
    // waits for that answer nor closes the connection before it.
    let Some(receiver) =
        Receiver::start(&["--reject", "417", "--delay", "0.5", "--drop-if-closed"])
    else {
        return;
    };
    let out = stop_exported(&receiver, "sleep 1");
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
    assert_eq!(receiver.request()["rejected"], 417);
    assert_eq!(kept_spans(&receiver).len(), 2);
}

#[test]
fn a_run_whose_parent_is_an_init_process_sends_the_body_itself() {
    // A container's first process may never reap a child it did not start: under one, `run`
    // leaves nothing behind, and a body the collector does not read costs it the bound and
    // the warning, as off Linux.
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() == 0 };
    let unshare = std::process::Command::new("unshare")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !require(
        "root",
        root && unshare,
        "a PID namespace (unshare --pid, util-linux) whose init starts the dispatcher",
    ) {
        return;
    }
    let sandbox = Sandbox::new();
    let Some((receiver, go)) = holding(sandbox.root()) else {
        return;
    };
    write(
        &sandbox.home().join(".config/levelcode/settings.json"),
        big_labels("PreToolUse", "sleep 1").to_string(),
    );
    let payload = sandbox.root().join("payload.json");
    write(
        &payload,
        r#"{"event":"PreToolUse","tool_name":"write_file"}"#,
    );
    // `sh` is the namespace's init (pid 1) and the dispatcher's parent.
    let mut unshare = std::process::Command::new("unshare");
    for key in crate::common::CLEARED {
        unshare.env_remove(key);
    }
    let out = unshare
        .args(["--pid", "--fork", "sh", "-c", "\"$0\" < \"$1\"; :"])
        .arg(crate::common::bin())
        .arg(&payload)
        .current_dir(sandbox.project())
        .env("HOME", sandbox.home())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "60000")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings = answer["warnings"].to_string();
    assert!(
        warnings.contains("OpenTelemetry") && warnings.contains("too slowly"),
        "{warnings}"
    );
    std::fs::write(&go, "").unwrap();
}
