//! OpenTelemetry export (contract §18), checked against a real OTLP decoder: a receiver that
//! decodes each request with the OpenTelemetry project's own protobuf definitions
//! (`tests/otlp/receiver.py`, with the `opentelemetry-proto` package that `make otlp-python`
//! installs under `target/`), listening on 127.0.0.1 only, over plain HTTP or HTTPS. A
//! collector that reads slowly: [`slow`]; `serve`'s batches: [`batches`]; a background
//! handler's span: [`background`].

mod background;
mod batches;
mod slow;

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver as Lines};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{command, group, on, require, Test};

const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

/// Where `make otlp-python` installs the decoder's packages.
fn python_path() -> PathBuf {
    std::env::var_os("LEVELCODE_HOOKS_OTLP_PYTHON").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/otlp-python"),
        PathBuf::from,
    )
}

/// The receiver, killed when dropped.
struct Receiver {
    child: Child,
    lines: Lines<String>,
    port: u16,
    https: bool,
}

impl Receiver {
    /// Starts the receiver; `None` when the decoder is not installed and the machine says to
    /// skip (see `LEVELCODE_HOOKS_TEST_SKIP`).
    fn start(args: &[&str]) -> Option<Receiver> {
        let path = python_path();
        let installed = path.join("opentelemetry/proto").is_dir();
        if !require(
            "opentelemetry-proto",
            installed,
            "the OTLP decoder; `make otlp-python` installs it under target/",
        ) {
            return None;
        }
        let mut child = Command::new("python3")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/otlp/receiver.py"
            ))
            .args(["--lifetime", "60"])
            .args(args)
            .env("PYTHONPATH", &path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 starts");
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        let first = lines
            .recv_timeout(Duration::from_secs(30))
            .expect("the receiver says its port");
        let port = serde_json::from_str::<Value>(&first).unwrap()["port"]
            .as_u64()
            .unwrap();
        Some(Receiver {
            child,
            lines,
            port: u16::try_from(port).unwrap(),
            https: args.contains(&"--tls"),
        })
    }

    /// The receiver over HTTPS, with the certificate `certs` made for it.
    fn start_tls(args: &[&str], certs: &crate::common::certs::Certs) -> Option<Receiver> {
        let mut all = vec![
            "--tls",
            certs.cert.to_str().unwrap(),
            certs.key.to_str().unwrap(),
        ];
        all.extend(args);
        Receiver::start(&all)
    }

    fn endpoint(&self) -> String {
        match self.https {
            true => format!("https://localhost:{}", self.port),
            false => format!("http://127.0.0.1:{}", self.port),
        }
    }

    /// The next decoded request, waiting at most 40 s.
    fn request(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(40))
            .expect("the receiver got a request");
        let record: Value = serde_json::from_str(&line).unwrap();
        assert!(record.get("error").is_none(), "not valid OTLP: {record}");
        record
    }

    /// Returns true if and only if a request arrives within `wait`.
    fn got_any_within(&self, wait: Duration) -> bool {
        self.lines.recv_timeout(wait).is_ok()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The spans of one decoded request.
fn spans(record: &Value) -> Vec<Value> {
    let resource_spans = record["request"]["resourceSpans"].as_array().unwrap();
    assert_eq!(resource_spans.len(), 1, "{record}");
    let scope_spans = resource_spans[0]["scopeSpans"].as_array().unwrap();
    assert_eq!(scope_spans.len(), 1, "{record}");
    assert_eq!(scope_spans[0]["scope"]["name"], "levelcode-hooks");
    scope_spans[0]["spans"].as_array().unwrap().clone()
}

/// A span's attributes as a map of key to plain value.
fn attributes(span: &Value) -> serde_json::Map<String, Value> {
    attributes_of(&span["attributes"])
}

fn attributes_of(list: &Value) -> serde_json::Map<String, Value> {
    list.as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|kv| {
            let value = &kv["value"];
            let plain = if let Some(s) = value.get("stringValue") {
                s.clone()
            } else if let Some(i) = value.get("intValue") {
                // Protobuf's JSON writes 64-bit integers as strings.
                json!(i.as_str().unwrap().parse::<i64>().unwrap())
            } else if let Some(b) = value.get("boolValue") {
                b.clone()
            } else if let Some(d) = value.get("doubleValue") {
                d.clone()
            } else {
                panic!("unexpected value {value}")
            };
            (kv["key"].as_str().unwrap().to_string(), plain)
        })
        .collect()
}

fn resource(record: &Value) -> serde_json::Map<String, Value> {
    attributes_of(&record["request"]["resourceSpans"][0]["resource"]["attributes"])
}

fn nanos(span: &Value, key: &str) -> u128 {
    span[key].as_str().unwrap().parse().unwrap()
}

#[test]
fn a_dispatch_is_one_span_with_a_child_span_per_handler_that_ran() {
    let Some(receiver) = Receiver::start(&[]) else {
        return;
    };
    let out = Test::new()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .user_settings(group(
            "PreToolUse",
            Some("write_file"),
            json!([
                { "command": "echo secret-output", "name": "first" },
                { "command": "exit 3" },
                { "command": "echo blocked-secret >&2; exit 2" },
                { "command": "echo never" },
            ]),
        ))
        .payload(&json!({
            "event": "PreToolUse",
            "tool_name": "write_file",
            "tool_input": { "path": "a.txt", "content": "payload-secret" }
        }))
        .run();
    assert_eq!(out.status(), 2);
    assert_eq!(out.outcomes(), ["proceed", "error", "block", "skipped"]);
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());

    let record = receiver.request();
    assert_eq!(record["path"], "/v1/traces");
    assert_eq!(record["content_type"], "application/x-protobuf");
    // One plain request, its length given, from the dispatcher's one HTTP client.
    assert_eq!(
        record["headers"]["content-length"].as_str(),
        Some(record["length"].to_string().as_str())
    );
    assert!(record["headers"].get("expect").is_none(), "{record}");
    assert!(record["headers"]["user-agent"]
        .as_str()
        .unwrap()
        .starts_with("levelcode-hooks/"));
    assert_eq!(
        record["reencoded_equal"], true,
        "protobuf as the definitions encode it"
    );
    assert_eq!(resource(&record)["service.name"], "levelcode-hooks");
    let spans = spans(&record);
    // The dispatch and the three handlers that ran; the skipped one did not.
    assert_eq!(spans.len(), 4, "{record}");
    let dispatch = &spans[0];
    let trace = dispatch["traceId"].as_str().unwrap();
    assert_eq!(trace.len(), 32);
    assert!(
        dispatch.get("parentSpanId").is_none(),
        "a root span: {dispatch}"
    );
    assert_eq!(dispatch["name"], "hooks PreToolUse");
    assert_eq!(dispatch["kind"], "SPAN_KIND_INTERNAL");
    let a = attributes(dispatch);
    assert_eq!(a["levelcode.hook.event"], "PreToolUse");
    assert_eq!(a["levelcode.hook.tool"], "write_file");
    assert_eq!(a["levelcode.hook.decision"], "block");
    assert_eq!(a["levelcode.hook.blocked"], true);
    assert_eq!(a["levelcode.hook.asked"], false);
    assert_eq!(a["levelcode.hook.rewrote_input"], false);
    assert_eq!(a["levelcode.hook.handlers"], 4);
    assert!(a["levelcode.hook.duration_ms"].as_f64().unwrap() > 0.0);

    let source = out.home().join(".config/levelcode/settings.json");
    let expected = [
        ("first", "proceed", 0, false, None),
        ("exit 3", "error", 3, false, Some("STATUS_CODE_ERROR")),
        ("echo blocked-secret >&2; exit 2", "block", 2, true, None),
    ];
    let mut ids = vec![dispatch["spanId"].as_str().unwrap().to_string()];
    for (span, (label, outcome, code, blocked, status)) in spans[1..].iter().zip(expected) {
        assert_eq!(span["traceId"], trace, "{span}");
        assert_eq!(span["parentSpanId"], dispatch["spanId"], "{span}");
        assert_eq!(span["name"], "hook PreToolUse");
        assert!(nanos(span, "startTimeUnixNano") >= nanos(dispatch, "startTimeUnixNano"));
        assert!(nanos(span, "endTimeUnixNano") <= nanos(dispatch, "endTimeUnixNano"));
        let a = attributes(span);
        assert_eq!(a["levelcode.hook.event"], "PreToolUse");
        assert_eq!(a["levelcode.hook.tool"], "write_file");
        assert_eq!(a["levelcode.hook.layer"], "user");
        assert_eq!(a["levelcode.hook.source"], source.display().to_string());
        assert_eq!(a["levelcode.hook.label"], label);
        assert_eq!(a["levelcode.hook.matcher"], "write_file");
        assert_eq!(a["levelcode.hook.outcome"], outcome);
        assert_eq!(a["levelcode.hook.exit_code"], code);
        assert_eq!(a["levelcode.hook.blocked"], blocked);
        assert_eq!(a["levelcode.hook.asked"], false);
        assert_eq!(a["levelcode.hook.rewrote_input"], false);
        assert!(a["levelcode.hook.duration_ms"].as_f64().unwrap() > 0.0);
        assert_eq!(span["status"].get("code").and_then(Value::as_str), status);
        ids.push(span["spanId"].as_str().unwrap().to_string());
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "every span has its own id");
    // Never the payload or the output unless asked for.
    let text = record.to_string();
    for secret in ["payload-secret", "secret-output", "blocked-secret\\n"] {
        assert!(!text.contains(secret), "{secret} was exported: {text}");
    }
}

#[test]
fn a_handler_that_cannot_start_is_exported_and_several_handlers_are_one_request() {
    // The request is begun once the first handler is under way, started or not.
    let Some(receiver) = Receiver::start(&[]) else {
        return;
    };
    let out = Test::new()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .user_settings(group(
            "PreToolUse",
            Some("write_file"),
            json!([
                { "argv": ["levelcode-no-such-program"] },
                { "command": "true" },
                { "argv": ["levelcode-no-such-program", "again"] },
            ]),
        ))
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.outcomes(), ["spawn_error", "proceed", "spawn_error"]);
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
    let three = spans(&receiver.request());
    assert_eq!(three.len(), 4, "the dispatch and its three handlers");
    let outcomes: Vec<_> = three[1..]
        .iter()
        .map(|span| attributes(span)["levelcode.hook.outcome"].clone())
        .collect();
    assert_eq!(outcomes, ["spawn_error", "proceed", "spawn_error"]);
    assert_eq!(
        three[1]["status"]["code"], "STATUS_CODE_ERROR",
        "{}",
        three[1]
    );
    assert!(
        !receiver.got_any_within(Duration::from_millis(500)),
        "one request per dispatch"
    );

    // The only handler cannot start: its span goes all the same.
    let out = Test::new()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .user_settings(group(
            "Stop",
            None,
            json!([{ "argv": ["levelcode-no-such-program"] }]),
        ))
        .event("Stop")
        .run();
    assert_eq!(out.outcomes(), ["spawn_error"]);
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
    let only = spans(&receiver.request());
    assert_eq!(only.len(), 2, "{only:?}");
    assert_eq!(
        attributes(&only[1])["levelcode.hook.outcome"],
        "spawn_error"
    );
}

#[test]
fn the_caller_s_traceparent_makes_the_dispatch_its_child_and_each_handler_gets_its_own() {
    let Some(receiver) = Receiver::start(&[]) else {
        return;
    };
    let out = Test::new()
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("{}/", receiver.endpoint()),
        )
        .env("TRACEPARENT", format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01"))
        .user_settings(group(
            "Stop",
            None,
            json!([{ "command": "echo $TRACEPARENT" }, { "command": "echo \"$TRACEPARENT\" " }]),
        ))
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0);
    let spans = spans(&receiver.request());
    assert_eq!(spans.len(), 3);
    assert_eq!(spans[0]["traceId"], CALLER_TRACE);
    assert_eq!(spans[0]["parentSpanId"], CALLER_SPAN);
    // A remote parent, in the span's flags (sampled, parent known to be remote).
    assert_eq!(spans[0]["flags"], 0x301);
    for (i, stdout) in out.stdouts().iter().enumerate() {
        let span = &spans[i + 1];
        assert_eq!(span["traceId"], CALLER_TRACE);
        assert_eq!(span["parentSpanId"], spans[0]["spanId"]);
        assert_eq!(
            stdout,
            &format!("00-{CALLER_TRACE}-{}-01", span["spanId"].as_str().unwrap())
        );
    }

    // A caller that does not sample: nothing recorded, and handlers see the caller's own.
    let parent = format!("00-{CALLER_TRACE}-{CALLER_SPAN}-00");
    let out = Test::new()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("TRACEPARENT", &parent)
        .user_settings(on("Stop", "echo $TRACEPARENT"))
        .event("Stop")
        .run();
    assert_eq!(out.stdouts(), [parent]);
    assert!(!receiver.got_any_within(Duration::from_millis(500)));

    // A traceparent that is not one: a warning, and a trace of its own.
    let out = Test::new()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("TRACEPARENT", "00-nonsense")
        .user_settings(on("Stop", "true"))
        .event("Stop")
        .run();
    out.warning(&["TRACEPARENT", "a trace of its own"]);
    let spans = self::spans(&receiver.request());
    assert!(spans[0].get("parentSpanId").is_none());
}

#[test]
fn json_headers_service_name_and_resource_attributes_follow_the_variables() {
    let Some(receiver) = Receiver::start(&[]) else {
        return;
    };
    let out = Test::new()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .env(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            format!("{}/custom/traces", receiver.endpoint()),
        )
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer%20abc,x-team=core",
        )
        .env("OTEL_SERVICE_NAME", "guards")
        .env(
            "OTEL_RESOURCE_ATTRIBUTES",
            "deployment.environment=ci,service.name=ignored",
        )
        .user_settings(on("SessionStart", "true"))
        .event("SessionStart")
        .run();
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
    let record = receiver.request();
    assert_eq!(record["path"], "/custom/traces");
    assert_eq!(record["content_type"], "application/json");
    assert_eq!(record["headers"]["authorization"], "Bearer abc");
    assert_eq!(record["headers"]["x-team"], "core");
    let resource = resource(&record);
    assert_eq!(resource["service.name"], "guards");
    assert_eq!(resource["deployment.environment"], "ci");
    let spans = spans(&record);
    assert_eq!(spans.len(), 2);
    assert_eq!(spans[1]["parentSpanId"], spans[0]["spanId"]);
    assert_eq!(
        attributes(&spans[0])["levelcode.hook.event"],
        "SessionStart"
    );
    assert!(!attributes(&spans[0]).contains_key("levelcode.hook.tool"));
}

#[test]
fn payload_and_output_are_exported_only_when_asked_for() {
    let Some(receiver) = Receiver::start(&[]) else {
        return;
    };
    let out = Test::new()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("LEVELCODE_HOOKS_OTEL_CONTENT", "1")
        .user_settings(on("PreToolUse", "echo visible; echo because >&2; exit 2"))
        .payload(&json!({ "event": "PreToolUse", "tool_name": "run_terminal_command", "tool_input": { "command": "ls" } }))
        .run();
    assert_eq!(out.status(), 2);
    let spans = spans(&receiver.request());
    let dispatch = attributes(&spans[0]);
    let payload: Value =
        serde_json::from_str(dispatch["levelcode.hook.payload"].as_str().unwrap()).unwrap();
    assert_eq!(payload["tool_input"]["command"], "ls");
    assert_eq!(dispatch["levelcode.hook.reason"], "because");
    let handler = attributes(&spans[1]);
    assert_eq!(handler["levelcode.hook.stdout"], "visible\n");
    assert_eq!(handler["levelcode.hook.stderr"], "because\n");
}

#[test]
fn a_dispatch_that_runs_no_handler_exports_nothing_and_opens_no_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    for test in [
        // Nothing configured; a handler for another tool; hooks off.
        Test::new().event("Stop"),
        Test::new()
            .user_settings(group(
                "PreToolUse",
                Some("read_files"),
                json!([{ "command": "true" }]),
            ))
            .tool_event("PreToolUse", "write_file"),
        Test::new()
            .user_settings(on("Stop", "true"))
            .env("LEVELCODE_HOOKS", "0")
            .event("Stop"),
    ] {
        let out = test.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint).run();
        assert_eq!(out.status(), 0);
        assert!(out.handlers().is_empty(), "{}", out.stdout());
        // The dispatcher has exited: a connection it made would be waiting here.
        match listener.accept() {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            other => panic!("the dispatcher connected: {other:?}"),
        }
    }
}

#[test]
fn a_collector_that_is_slow_or_not_there_costs_one_warning_and_never_the_dispatch() {
    // One that accepts the connection and never answers; one where nothing listens.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    for endpoint in [
        format!("http://{}", silent.local_addr().unwrap()),
        format!("http://{closed}"),
        // A name to resolve (`.invalid` never resolves): the post runs on a thread of its own.
        "http://collector.invalid:4318".to_string(),
        format!("http://localhost:{}", closed.port()),
    ] {
        let started = Instant::now();
        let out = Test::new()
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
            .user_settings(on("PreToolUse", "echo 'blocked by policy' >&2; exit 2"))
            .tool_event("PreToolUse", "write_file")
            .run();
        let elapsed = started.elapsed();
        assert_eq!(out.status(), 2, "{endpoint}");
        assert_eq!(out.decision(), "block");
        let warning = out.warning(&["OpenTelemetry", "not exported", &endpoint]);
        assert_eq!(out.warnings().len(), 1, "{warning}");
        // The bound is 250 ms (docs/BENCHMARKS.md measures it); this only catches a wait
        // without bound.
        assert!(elapsed < Duration::from_secs(8), "{elapsed:?}");
    }
}

#[test]
fn a_collector_that_refuses_the_spans_costs_one_warning() {
    // As a collector with an authentication extension does: the request is refused.
    let Some(receiver) = Receiver::start(&["--status", "401"]) else {
        return;
    };
    let out = Test::new()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20wrong")
        .user_settings(on("PreToolUse", "echo 'blocked by policy' >&2; exit 2"))
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.status(), 2);
    assert_eq!(out.decision(), "block");
    let warning = out.warning(&["OpenTelemetry", "not exported", "answered 401"]);
    assert_eq!(out.warnings().len(), 1, "{warning}");
    let record = receiver.request();
    assert_eq!(record["headers"]["authorization"], "Bearer wrong");
}

#[test]
fn run_waits_for_the_collector_s_verdict_within_the_bound_and_no_longer() {
    // A collector that reads every request and answers 500, two seconds later: slower than the
    // bound, so `run` answers at the bound, with a warning.
    let Some(slow) = Receiver::start(&["--status", "500", "--delay", "2"]) else {
        return;
    };
    let settings = on("Stop", "true");
    let started = Instant::now();
    let out = Test::new()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", slow.endpoint())
        .user_settings(&settings)
        .event("Stop")
        .run();
    let took = started.elapsed();
    assert_eq!(out.outcomes(), ["proceed"]);
    let warning = out.warning(&["OpenTelemetry", "not exported", "no answer within 200 ms"]);
    assert_eq!(out.warnings().len(), 1, "{warning}");
    // The collector got the spans all the same; `run` did not wait for its answer.
    assert_eq!(spans(&slow.request()).len(), 2);
    assert!(took < Duration::from_millis(1900), "took {took:?}");

    // A verdict that comes at once is heard, by `run` and by `test` alike.
    let Some(receiver) = Receiver::start(&["--status", "500"]) else {
        return;
    };
    for args in [&["run"][..], &["test", "--event", "Stop"]] {
        let mut test = Test::new()
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
            .user_settings(&settings)
            .args(args);
        if args == ["run"] {
            test = test.event("Stop");
        }
        let out = test.run();
        assert_eq!(out.outcomes(), ["proceed"]);
        let warning = out.warning(&["OpenTelemetry", "not exported", "answered 500"]);
        assert_eq!(out.warnings().len(), 1, "{warning}");
        assert_eq!(spans(&receiver.request()).len(), 2);
    }
}

#[test]
fn a_collector_that_closes_the_idle_connection_during_a_long_handler_still_gets_the_spans() {
    // The connection is opened as the handler starts; the collector closes it after 0.3 s of
    // silence, and the dispatch posts on a new one.
    let Some(receiver) = Receiver::start(&["--read-timeout", "0.3"]) else {
        return;
    };
    let out = Test::new()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .user_settings(on("Stop", "sleep 1"))
        .event("Stop")
        .run();
    assert_eq!(out.outcomes(), ["proceed"]);
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
    let record = receiver.request();
    assert!(record["headers"].get("expect").is_none(), "{record}");
    assert_eq!(spans(&record).len(), 2);
}

#[test]
fn gzip_compression_sends_the_body_gzipped_as_the_variable_asks() {
    let Some(receiver) = Receiver::start(&[]) else {
        return;
    };
    let out = Test::new()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
        .user_settings(on("Stop", "true"))
        .event("Stop")
        .run();
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
    let record = receiver.request();
    assert_eq!(record["content_encoding"], "gzip");
    assert_eq!(record["reencoded_equal"], true, "{record}");
    assert_eq!(spans(&record).len(), 2);
}

#[test]
fn https_export_is_verified_against_the_certificate_the_variables_name() {
    let test = Test::new();
    let Some(certs) = crate::common::certs::Certs::make(&test.root().join("certs")) else {
        return;
    };
    let Some(receiver) = Receiver::start_tls(&[], &certs) else {
        return;
    };
    let settings = on("Stop", "true");
    // The collector's own certificate authority, by the export's variable or the system's.
    for (key, value) in [
        ("OTEL_EXPORTER_OTLP_CERTIFICATE", &certs.ca),
        ("SSL_CERT_FILE", &certs.ca),
    ] {
        let out = Test::new()
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
            .env(key, value)
            .user_settings(&settings)
            .event("Stop")
            .run();
        assert!(out.warnings().is_empty(), "{key}: {:?}", out.warnings());
        let record = receiver.request();
        assert_eq!(record["path"], "/v1/traces");
        assert_eq!(spans(&record).len(), 2);
    }
    // Without it the collector's certificate is not trusted: one warning, nothing sent.
    let out = Test::new()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .user_settings(&settings)
        .event("Stop")
        .run();
    assert_eq!(out.outcomes(), ["proceed"]);
    let warning = out.warning(&["OpenTelemetry", "not exported", "TLS"]);
    assert_eq!(out.warnings().len(), 1, "{warning}");
    assert!(!receiver.got_any_within(Duration::from_millis(300)));
}

#[test]
fn what_cannot_be_exported_is_one_warning_naming_the_variable_and_what_to_do() {
    for (key, value, says) in [
        (
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "grpc",
            &[
                "OTEL_EXPORTER_OTLP_PROTOCOL is \"grpc\"",
                "http/protobuf",
                "4318",
            ][..],
        ),
        (
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "grpc",
            &[
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL is \"grpc\"",
                "set OTEL_EXPORTER_OTLP_TRACES_PROTOCOL to http/protobuf",
            ],
        ),
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "ftp://collector.example:4318/v1/traces",
            &[
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "not an http:// or https:// URL",
                "https://collector.example.com:4318",
            ],
        ),
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "collector:4318",
            &[
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "not an http:// or https:// URL",
            ],
        ),
        (
            "OTEL_EXPORTER_OTLP_COMPRESSION",
            "zstd",
            &["OTEL_EXPORTER_OTLP_COMPRESSION is \"zstd\"", "gzip or none"],
        ),
    ] {
        let out = Test::new()
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
            .env(key, value)
            .user_settings(on("Stop", "true"))
            .event("Stop")
            .run();
        assert_eq!(out.status(), 0);
        assert_eq!(out.outcomes(), ["proceed"]);
        let mut needles = vec!["OpenTelemetry export is off"];
        needles.extend(says);
        out.warning(&needles);
        assert_eq!(out.warnings().len(), 1, "{:?}", out.warnings());
    }
}

#[test]
fn serve_says_once_what_cannot_be_exported() {
    let test = Test::new().user_settings(on("Stop", "true"));
    let (mut child, answers) = serve(
        &test,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ],
    );
    let mut stdin = child.stdin.take().unwrap();
    let mut said = Vec::new();
    for id in 0..3 {
        writeln!(stdin, "{}", json!({ "id": id, "event": "Stop" })).unwrap();
        stdin.flush().unwrap();
        let answer: Value =
            serde_json::from_str(&answers.recv_timeout(Duration::from_secs(20)).unwrap()).unwrap();
        assert_eq!(answer["handlers"][0]["outcome"], "proceed", "{answer}");
        said.push(answer["warnings"].as_array().unwrap().len());
    }
    // Its configuration cannot change while it runs: the first answer says it, the others not.
    assert_eq!(said, [1, 0, 0]);
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// `serve` with the test's HOME and project; requests written, answers read one by one.
fn serve(test: &Test, env: &[(&str, &str)]) -> (Child, Lines<String>) {
    let mut command = command(&test.home(), &test.project());
    command
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if send.send(line).is_err() {
                return;
            }
        }
    });
    (child, lines)
}

#[test]
fn serve_answers_before_the_collector_does_and_takes_a_traceparent_per_request() {
    // The collector takes 3 s to answer each request.
    let Some(receiver) = Receiver::start(&["--delay", "3"]) else {
        return;
    };
    let test = Test::new().user_settings(on("Stop", "echo $TRACEPARENT"));
    let endpoint = receiver.endpoint();
    let (mut child, answers) = serve(&test, &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)]);
    let mut stdin = child.stdin.take().unwrap();
    let request = json!({
        "id": 1,
        "event": "Stop",
        "options": { "traceparent": format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01") }
    });
    writeln!(stdin, "{request}").unwrap();
    writeln!(stdin, "{}", json!({ "id": 2, "event": "Stop" })).unwrap();
    stdin.flush().unwrap();
    let mut got: Vec<Value> = (0..2)
        .map(|_| {
            serde_json::from_str(&answers.recv_timeout(Duration::from_secs(20)).unwrap()).unwrap()
        })
        .collect();
    // Both answered while the collector was still holding the first export.
    assert!(
        receiver.lines.try_recv().is_err(),
        "the answers waited for the collector"
    );
    // Requests run side by side (contract §14): the answers come tagged, in either order.
    got.sort_by_key(|answer| answer["id"].as_u64());
    let [first, second] = <[Value; 2]>::try_from(got).unwrap();
    assert_eq!(first["id"], 1);
    assert_eq!(second["id"], 2);
    // The exports arrive in the background, in one batch or in two.
    let mut received: Vec<Value> = Vec::new();
    let ours = |span: &Value| span["traceId"] == CALLER_TRACE;
    while !(received.iter().any(ours) && received.iter().any(|s| !ours(s))) {
        received.extend(spans(&receiver.request()));
    }
    let (first_spans, second_spans): (Vec<Value>, Vec<Value>) =
        received.into_iter().partition(|s| ours(s));
    drop(stdin);
    assert_eq!(first_spans[0]["traceId"], CALLER_TRACE);
    assert_eq!(first_spans[0]["parentSpanId"], CALLER_SPAN);
    let handler_traceparent = first["handlers"][0]["stdout"].as_str().unwrap().trim();
    assert_eq!(
        handler_traceparent,
        format!(
            "00-{CALLER_TRACE}-{}-01",
            first_spans[1]["spanId"].as_str().unwrap()
        )
    );
    assert_ne!(second_spans[0]["traceId"], CALLER_TRACE);
    assert!(second_spans[0].get("parentSpanId").is_none());
    // Having flushed what it queued, the server exits.
    let status = child.wait().unwrap();
    assert!(status.success());
}

#[test]
fn serve_with_no_collector_says_so_in_a_later_answer_and_answers_all() {
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let endpoint = format!("http://{closed}");
    let test = Test::new().user_settings(on("Stop", "true"));
    let (mut child, answers) = serve(&test, &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)]);
    let mut stdin = child.stdin.take().unwrap();
    let mut said = false;
    // The first export waits a second for a batch to gather.
    for id in 0..100 {
        writeln!(stdin, "{}", json!({ "id": id, "event": "Stop" })).unwrap();
        stdin.flush().unwrap();
        let answer: Value =
            serde_json::from_str(&answers.recv_timeout(Duration::from_secs(20)).unwrap()).unwrap();
        assert_eq!(answer["decision"], "proceed");
        let warnings = answer["warnings"].as_array().unwrap();
        assert!(warnings.len() <= 1, "{warnings:?}");
        if let Some(w) = warnings.first() {
            assert!(w.as_str().unwrap().contains("earlier export(s)"), "{w}");
            said = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(said, "no answer said the exports failed");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
