//! A collector that takes the request a little at a time holds a dispatch no longer than one
//! that takes nothing: the bound is on the whole send, not on each write.

use std::time::{Duration, Instant};

use serde_json::json;

use super::Receiver;
use crate::common::{group, Test};

#[test]
fn a_collector_that_reads_slowly_holds_the_dispatch_no_longer_than_the_bound() {
    let Some(receiver) = Receiver::start(&["--trickle"]) else {
        return;
    };
    // Three spans of a 2 MiB label each, far more than the connection's buffers take: at the
    // collector's 10 KiB a second, a send that waited on each write in turn would take
    // minutes.
    let label = |n: u8| format!("{n}{}", "x".repeat(2 << 20));
    let settings = group(
        "Stop",
        None,
        json!([
            { "command": "true", "name": label(1) },
            { "command": "exit 0", "name": label(2) },
            { "command": ":", "name": label(3) },
        ]),
    );
    let started = Instant::now();
    // `test`, which waits for the collector's verdict, sends the body itself.
    let out = Test::new()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .user_settings(&settings)
        .args(["test", "--event", "Stop"])
        .run();
    let took = started.elapsed();
    assert_eq!(out.outcomes(), ["proceed", "proceed", "proceed"]);
    let warning = out.warning(&["OpenTelemetry", "not exported", "too slowly"]);
    assert_eq!(out.warnings().len(), 1, "{warning}");
    // The bound is 200 ms; this allows for a loaded machine's scheduling, and fails a send
    // that waits on each write.
    assert!(took < Duration::from_secs(20), "took {took:?}");
}
