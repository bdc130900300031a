//! `serve` exports as the OpenTelemetry SDKs' batch span processor does: a bounded queue that
//! one thread empties in batches, spans dropped and counted when it is full, and what is queued
//! sent, within a bound, when the server's input ends.

use std::io::Write as _;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{serve, spans, Receiver};
use crate::common::{group, on, Test};

/// The answer of the next line of `answers`, waiting at most 20 s.
fn next(answers: &std::sync::mpsc::Receiver<String>) -> Value {
    serde_json::from_str(&answers.recv_timeout(Duration::from_secs(20)).unwrap()).unwrap()
}

#[test]
fn serve_posts_many_requests_spans_in_one_batch_and_flushes_them_when_its_input_ends() {
    let Some(receiver) = Receiver::start(&[]) else {
        return;
    };
    let test = Test::new().user_settings(on("Stop", "true"));
    let endpoint = receiver.endpoint();
    let (mut child, answers) = serve(&test, &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)]);
    let mut stdin = child.stdin.take().unwrap();
    for id in 0..5 {
        writeln!(stdin, "{}", json!({ "id": id, "event": "Stop" })).unwrap();
    }
    stdin.flush().unwrap();
    for _ in 0..5 {
        assert_eq!(next(&answers)["decision"], "proceed");
    }
    // The batch waits a second for more; the end of the input sends it at once.
    let closed = Instant::now();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert!(
        closed.elapsed() < Duration::from_secs(10),
        "{:?}",
        closed.elapsed()
    );
    let mut traces = std::collections::BTreeSet::new();
    let mut requests = 0;
    while traces.len() < 5 {
        requests += 1;
        for span in spans(&receiver.request()) {
            traces.insert(span["traceId"].as_str().unwrap().to_string());
        }
    }
    assert!(
        requests < 5,
        "{requests} requests for 5 dispatches: no batch"
    );
    assert!(!receiver.got_any_within(Duration::from_millis(300)));
}

#[test]
fn serve_exits_within_the_flush_bound_when_the_collector_never_answers() {
    // Accepts the connection, reads nothing and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", silent.local_addr().unwrap());
    let test = Test::new().user_settings(on("Stop", "true"));
    let (mut child, answers) = serve(&test, &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)]);
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", json!({ "id": 1, "event": "Stop" })).unwrap();
    stdin.flush().unwrap();
    assert_eq!(next(&answers)["decision"], "proceed");
    let closed = Instant::now();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    // The flush waits 2 s at most; this allows for a loaded machine.
    let took = closed.elapsed();
    assert!(took < Duration::from_secs(8), "took {took:?}");
    assert!(
        took >= Duration::from_millis(1500),
        "did not wait: {took:?}"
    );
}

#[test]
fn a_full_queue_drops_the_spans_and_the_next_answer_says_how_many() {
    // One dispatch of 2,100 handlers (each a program that is not there, so nothing starts and
    // each is a span of its own) is more than the queue's 2,048 spans.
    let handlers: Vec<Value> = (0..2100)
        .map(|i| json!({ "argv": [format!("levelcode-no-such-program-{i}")] }))
        .collect();
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let endpoint = format!("http://{closed}");
    let test = Test::new().user_settings(group("Stop", None, Value::Array(handlers)));
    let (mut child, answers) = serve(&test, &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)]);
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", json!({ "id": 1, "event": "Stop" })).unwrap();
    stdin.flush().unwrap();
    let first = next(&answers);
    assert_eq!(first["handlers"].as_array().unwrap().len(), 2100);
    writeln!(stdin, "{}", json!({ "id": 2, "event": "Stop" })).unwrap();
    stdin.flush().unwrap();
    let second = next(&answers);
    let warnings = second["warnings"].to_string();
    assert!(
        warnings.contains("export queue") && warnings.contains("2101 span(s)"),
        "{warnings}"
    );
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
