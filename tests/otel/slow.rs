//! A collector that takes the request a little at a time holds a dispatch no longer than one
//! that takes nothing: the bound is on the whole send, not on each write.

use std::time::{Duration, Instant};

use super::after_answer::big_labels;
use super::Receiver;
use crate::common::Test;

#[test]
fn a_collector_that_reads_slowly_holds_the_dispatch_no_longer_than_the_bound() {
    let Some(receiver) = Receiver::start(&["--trickle"]) else {
        return;
    };
    // Three spans of a 2 MiB label each, far more than the connection's buffers take: at the
    // collector's 10 KiB a second, a send that waited on each write in turn would take
    // minutes.
    let settings = big_labels("Stop", ":");
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
