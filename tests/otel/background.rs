//! A background handler's span (contract §21): exported when the handler ends, after its
//! dispatch's, as a child of the dispatch's span, with the id its `TRACEPARENT` named.

use serde_json::json;

use super::{attributes, spans, Receiver};
use crate::common::{group, wait_for_line, Test};

#[test]
fn a_background_handler_s_span_comes_when_it_ends_as_a_child_of_its_dispatch() {
    let Some(receiver) = Receiver::start(&[]) else {
        return;
    };
    let out = Test::new()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .user_settings(group(
            "Stop",
            None,
            json!([
                { "command": "true", "name": "now" },
                { "command": "sleep 0.3; echo \"$TRACEPARENT\" > traceparent", "async": true, "name": "later" },
            ]),
        ))
        .event("Stop")
        .run();
    assert_eq!(out.outcomes(), ["proceed", "started"]);
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
    let first = spans(&receiver.request());
    // The dispatch and the handler that ran in it; the background one is not among them.
    assert_eq!(first.len(), 2, "{first:?}");
    let dispatch = &first[0];
    assert_eq!(attributes(&first[1])["levelcode.hook.label"], "now");
    let given = wait_for_line(
        &out.project().join("traceparent"),
        std::time::Duration::from_secs(30),
    );
    let later = spans(&receiver.request());
    assert_eq!(later.len(), 1, "{later:?}");
    let span = &later[0];
    assert_eq!(span["traceId"], dispatch["traceId"]);
    assert_eq!(span["parentSpanId"], dispatch["spanId"]);
    assert_eq!(
        given.trim(),
        format!(
            "00-{}-{}-01",
            span["traceId"].as_str().unwrap(),
            span["spanId"].as_str().unwrap()
        ),
        "the span is the one the handler's TRACEPARENT named"
    );
    let a = attributes(span);
    assert_eq!(a["levelcode.hook.label"], "later");
    assert_eq!(a["levelcode.hook.outcome"], "proceed");
    assert_eq!(a["levelcode.hook.background"], true);
    assert!(a["levelcode.hook.duration_ms"].as_f64().unwrap() >= 300.0);
}
