//! A collector that takes the request a little at a time holds a dispatch no longer than one
//! that takes nothing: the bound is on the whole exchange, not on each write.

use std::time::{Duration, Instant};

use serde_json::json;

use super::Receiver;
use crate::common::{group, Test};

/// The label of handler `n` in [`big_labels`]: 2 MiB.
fn label(n: u8) -> String {
    format!("{n}{}", "x".repeat(2 << 20))
}

/// Settings under `event` whose three handler spans have a 2 MiB label each: a body no
/// connection's buffers take whole, so that sending it waits for the collector.
fn big_labels(event: &str) -> serde_json::Value {
    group(
        event,
        None,
        json!([
            { "command": ":", "name": label(1) },
            { "command": "true", "name": label(2) },
            { "command": "exit 0", "name": label(3) },
        ]),
    )
}

#[test]
fn a_collector_that_reads_slowly_holds_the_dispatch_no_longer_than_the_bound() {
    let Some(receiver) = Receiver::start(&["--trickle"]) else {
        return;
    };
    // At the collector's 10 KiB a second, a send that waited on each write in turn would take
    // minutes.
    let settings = big_labels("Stop");
    for args in [
        &["run", "--event", "Stop"][..],
        &["test", "--event", "Stop"],
    ] {
        let started = Instant::now();
        let out = Test::new()
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
            .user_settings(&settings)
            .args(args)
            .stdin("{}")
            .run();
        let took = started.elapsed();
        assert_eq!(out.outcomes(), ["proceed", "proceed", "proceed"]);
        let warning = out.warning(&["OpenTelemetry", "not exported", "no answer within 200 ms"]);
        assert_eq!(out.warnings().len(), 1, "{warning}");
        // The bound is 200 ms; this allows for a loaded machine's scheduling, and fails a send
        // that waits on each write.
        assert!(took < Duration::from_secs(20), "{args:?} took {took:?}");
    }
}
