//! http handlers (contract §19), against a real policy service on loopback: Python's
//! `http.server` (`tests/http/server.py`), over plain HTTP or HTTPS with a certificate authority
//! the test makes. Every reply row of §19 here; the managed layer's allow-lists, trust and the
//! variables in headers: [`policy`]; Claude Code's settings with http hooks: [`claude`].

mod claude;
mod policy;

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::certs::Certs;
use crate::common::{group, require, runs, Test};

/// The policy service, killed when dropped.
pub struct Service {
    child: Child,
    lines: Receiver<String>,
    port: u16,
    https: bool,
}

impl Service {
    /// Starts it over plain HTTP; `None` when there is no `python3` and the machine says to
    /// skip.
    pub fn start() -> Option<Service> {
        Service::start_with(&[])
    }

    /// Starts it over HTTPS with `certs`.
    pub fn start_tls(certs: &Certs) -> Option<Service> {
        Service::start_with(&[
            "--tls",
            certs.cert.to_str().unwrap(),
            certs.key.to_str().unwrap(),
        ])
    }

    fn start_with(args: &[&str]) -> Option<Service> {
        if !require(
            "python3",
            runs("python3", &["--version"]),
            "the policy service",
        ) {
            return None;
        }
        let mut child = Command::new("python3")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/http/server.py"))
            .args(["--lifetime", "90"])
            .args(args)
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
            .expect("the service says its port");
        let port = serde_json::from_str::<Value>(&first).unwrap()["port"]
            .as_u64()
            .unwrap();
        Some(Service {
            child,
            lines,
            port: u16::try_from(port).unwrap(),
            https: args.contains(&"--tls"),
        })
    }

    /// The URL of `path` on it.
    pub fn url(&self, path: &str) -> String {
        match self.https {
            true => format!("https://localhost:{}{path}", self.port),
            false => format!("http://127.0.0.1:{}{path}", self.port),
        }
    }

    /// The next line it printed, waiting at most 40 s.
    pub fn request(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(40))
            .expect("the service got a request");
        serde_json::from_str(&line).unwrap()
    }

    /// Returns true if and only if it printed a line within `wait`.
    pub fn got_any_within(&self, wait: Duration) -> bool {
        self.lines.recv_timeout(wait).is_ok()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An http handler posting to `url`, answered with `reply` as its body (the service's
/// `X-Reply`), with `more` fields.
pub fn http(url: &str, reply: Option<&str>, more: Value) -> Value {
    let mut handler = json!({ "type": "http", "url": url });
    if let Some(reply) = reply {
        handler["headers"] = json!({ "X-Reply": reply });
    }
    for (key, value) in more.as_object().into_iter().flatten() {
        handler[key] = value.clone();
    }
    handler
}

/// A `PreToolUse` of `write_file` answered by `handlers`.
fn write_file(handlers: Value) -> Test {
    Test::new()
        .user_settings(group("PreToolUse", None, handlers))
        .payload(&json!({
            "event": "PreToolUse",
            "tool_name": "write_file",
            "tool_input": { "path": "src/a.rs", "content": "x" }
        }))
}

#[test]
fn a_2xx_reply_is_read_as_a_command_s_stdout_on_exit_0() {
    let Some(service) = Service::start() else {
        return;
    };
    let url = service.url("/reply/200");
    // An empty body: proceed, no output.
    let out = write_file(json!([http(&url, None, json!({}))])).run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.outcomes(), ["proceed"]);
    let entry = out.handler(0);
    assert_eq!(entry["http_status"], 200);
    assert!(
        entry["exit_code"].is_null() && entry["signal"].is_null(),
        "{entry}"
    );
    assert_eq!(entry["label"], url.as_str());
    assert_eq!(entry["stdout"], "");
    // The request: a POST of levelcode's payload, as JSON, naming the dispatcher.
    let request = service.request();
    assert_eq!(request["method"], "POST");
    assert_eq!(request["path"], "/reply/200");
    assert_eq!(request["headers"]["content-type"], "application/json");
    assert!(request["headers"]["user-agent"]
        .as_str()
        .unwrap()
        .starts_with("levelcode-hooks/"));
    assert_eq!(request["body"]["event"], "PreToolUse");
    assert_eq!(request["body"]["tool_name"], "write_file");
    assert_eq!(request["body"]["tool_input"]["path"], "src/a.rs");

    // A JSON block, context, an ask, a rewrite and a stop, as §6 and §11 read them.
    let block = r#"{"decision":"block","reason":"generated files are read-only"}"#;
    let out = write_file(json!([http(&url, Some(block), json!({}))])).run();
    assert_eq!(out.status(), 2);
    assert_eq!(out.decision(), "block");
    assert_eq!(out.json()["reason"], "generated files are read-only");
    assert_eq!(out.handler(0)["stdout"], block);
    service.request();

    let context = r#"{"additionalContext":"ticket ABC-1","systemMessage":"checked"}"#;
    let rewrite = r#"{"updatedInput":{"path":"src/b.rs","content":"y"}}"#;
    let out = write_file(json!([
        http(&url, Some(context), json!({})),
        http(&url, Some(rewrite), json!({})),
    ]))
    .run();
    assert_eq!(out.outcomes(), ["proceed", "proceed"]);
    assert_eq!(out.json()["additionalContext"], "ticket ABC-1");
    assert_eq!(out.json()["system_message"], "checked");
    assert_eq!(out.json()["updated_input"]["path"], "src/b.rs");
    assert_eq!(out.handler(1)["rewrote_input"], true);
    service.request();
    service.request();

    let ask = r#"{"decision":"ask","reason":"a person decides"}"#;
    let out = write_file(json!([http(&url, Some(ask), json!({}))])).run();
    assert_eq!(out.decision(), "ask");
    service.request();

    // Any other 2xx body is an error, fail-open.
    let out = write_file(json!([http(&url, Some("all good"), json!({}))])).run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.outcomes(), ["error"]);
    let message = out.handler(0)["message"].as_str().unwrap().to_string();
    assert!(message.contains("not a JSON object"), "{message}");
    assert_eq!(out.handler(0)["stdout"], "all good");
}

#[test]
fn a_status_that_is_not_2xx_a_redirect_and_a_refused_connection_fail_open_or_block_as_asked() {
    let Some(service) = Service::start() else {
        return;
    };
    let block = r#"{"decision":"block","reason":"no"}"#;
    for (path, says) in [
        ("/reply/403", "answered 403"),
        ("/reply/503", "answered 503"),
        ("/redirect", "a redirect, which is not followed"),
    ] {
        // Even a body that would block is not read as a decision.
        let out = write_file(json!([http(&service.url(path), Some(block), json!({}))])).run();
        assert_eq!(out.status(), 0, "{path}");
        assert_eq!(out.outcomes(), ["error"], "{path}");
        let entry = out.handler(0);
        assert!(entry["message"].as_str().unwrap().contains(says), "{entry}");
        assert!(entry["http_status"].as_u64().unwrap() >= 300, "{entry}");
        assert_eq!(service.request()["path"], path);
    }
    // The redirect's target was never asked.
    assert!(!service.got_any_within(Duration::from_millis(300)));

    // Nothing listens: an error with why, and with `onFailure: block` a block.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{closed}/hook");
    let out = write_file(json!([http(&url, None, json!({}))])).run();
    assert_eq!(out.outcomes(), ["error"]);
    let message = out.handler(0)["message"].as_str().unwrap().to_string();
    assert!(message.contains("127.0.0.1"), "{message}");
    assert!(out.handler(0).get("http_status").is_none());
    let out = write_file(json!([http(&url, None, json!({ "onFailure": "block" }))])).run();
    assert_eq!(out.status(), 2);
    assert_eq!(out.outcomes(), ["block"]);
    assert!(
        out.json()["reason"].as_str().unwrap().contains("failed"),
        "{}",
        out.stdout()
    );
}

#[test]
fn a_service_that_never_answers_costs_the_handler_s_timeout_and_no_more() {
    let Some(service) = Service::start() else {
        return;
    };
    let started = Instant::now();
    let out = write_file(json!([http(
        &service.url("/hang"),
        None,
        json!({ "timeout": 1 })
    )]))
    .run();
    let took = started.elapsed();
    assert_eq!(out.outcomes(), ["error"]);
    let message = out.handler(0)["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("no answer") && message.contains("1 s"),
        "{message}"
    );
    // One second, with room for a loaded machine; the service would hold it for 90.
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(took >= Duration::from_millis(900), "did not wait: {took:?}");
    assert_eq!(service.request()["path"], "/hang");
}

#[test]
fn a_body_over_64_kib_is_kept_to_64_kib_and_not_read_past_it() {
    let Some(service) = Service::start() else {
        return;
    };
    let out = write_file(json!([http(&service.url("/big"), None, json!({}))])).run();
    assert_eq!(out.outcomes(), ["error"]);
    let entry = out.handler(0);
    assert_eq!(entry["stdout"].as_str().unwrap().len(), 64 * 1024);
    assert_eq!(entry["stdout_truncated"], true);
    assert!(
        entry["message"].as_str().unwrap().contains("over 64 KiB"),
        "{entry}"
    );
    assert_eq!(service.request()["path"], "/big");
    // The service could not write its 200 KiB: the dispatcher stopped reading.
    let written = service.request()["big_written"].as_u64().unwrap();
    assert!(written < 200 * 1024, "{written}");
}

#[test]
fn the_same_url_with_the_same_headers_runs_once_and_other_headers_run_again() {
    let Some(service) = Service::start() else {
        return;
    };
    let url = service.url("/reply/200");
    let out = write_file(json!([
        http(&url, None, json!({})),
        http(&url, None, json!({ "name": "again" })),
        http(&url, Some("{}"), json!({})),
    ]))
    .run();
    assert_eq!(out.outcomes(), ["proceed", "duplicate", "proceed"]);
    service.request();
    service.request();
    assert!(!service.got_any_within(Duration::from_millis(300)));
}

#[test]
fn https_is_verified_against_the_system_s_certificates_as_ssl_cert_file_names_them() {
    let test = write_file(Value::Null);
    let Some(certs) = Certs::make(&test.root().join("certs")) else {
        return;
    };
    let Some(service) = Service::start_tls(&certs) else {
        return;
    };
    let context = r#"{"additionalContext":"over TLS"}"#;
    let handlers = json!([http(&service.url("/reply/200"), Some(context), json!({}))]);
    let out = write_file(handlers.clone())
        .env("SSL_CERT_FILE", &certs.ca)
        .run();
    assert_eq!(out.outcomes(), ["proceed"], "{}", out.stdout());
    assert_eq!(out.json()["additionalContext"], "over TLS");
    assert_eq!(service.request()["path"], "/reply/200");
    // A folder of certificates, as SSL_CERT_DIR names one.
    let out = write_file(handlers.clone())
        .env("SSL_CERT_DIR", certs.ca.parent().unwrap())
        .run();
    assert_eq!(out.outcomes(), ["proceed"], "{}", out.stdout());
    service.request();
    // The system's own certificates do not include the test's authority: not trusted, and
    // nothing is sent.
    let out = write_file(handlers).run();
    assert_eq!(out.outcomes(), ["error"]);
    let message = out.handler(0)["message"].as_str().unwrap().to_string();
    assert!(message.contains("TLS"), "{message}");
    assert!(!service.got_any_within(Duration::from_millis(300)));
}

#[test]
fn plain_http_to_another_machine_is_not_sent_and_validate_says_so() {
    // TEST-NET-1: an address no test may reach, and this one never tries.
    let handlers = json!([http("http://192.0.2.1:8080/hook", None, json!({}))]);
    let started = Instant::now();
    let out = write_file(handlers.clone()).run();
    assert_eq!(out.outcomes(), ["error"]);
    let message = out.handler(0)["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("plain http://") && message.contains("allowPlainHttp"),
        "{message}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    let out = Test::new()
        .user_settings(group("PreToolUse", None, handlers.clone()))
        .args(["validate", "--json"])
        .run();
    assert!(out.stdout().contains("http_plain"), "{}", out.stdout());
    // The file's own "allowPlainHttp": true lets it be sent; validate says nothing more.
    let mut settings = group("PreToolUse", None, handlers);
    settings["allowPlainHttp"] = json!(true);
    let out = Test::new()
        .user_settings(&settings)
        .args(["validate", "--json"])
        .run();
    assert!(!out.stdout().contains("http_plain"), "{}", out.stdout());
}

#[test]
fn serve_runs_http_handlers_as_run_does() {
    let Some(service) = Service::start() else {
        return;
    };
    let block = r#"{"decision":"block","reason":"served"}"#;
    let settings = group(
        "PreToolUse",
        None,
        json!([http(&service.url("/reply/200"), Some(block), json!({}))]),
    );
    let request =
        json!({ "id": 7, "event": "PreToolUse", "tool_name": "write_file", "tool_input": {} });
    let out = Test::new()
        .user_settings(&settings)
        .args(["serve"])
        .stdin(format!("{request}\n"))
        .run();
    let answer: Value = serde_json::from_str(out.stdout().lines().next().unwrap()).unwrap();
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["decision"], "block");
    assert_eq!(answer["reason"], "served");
    assert_eq!(answer["handlers"][0]["http_status"], 200);
    assert_eq!(service.request()["body"]["tool_name"], "write_file");
}

#[test]
fn an_if_keeps_an_http_handler_to_the_calls_it_matches() {
    let Some(service) = Service::start() else {
        return;
    };
    let handlers = json!([http(
        &service.url("/reply/200"),
        None,
        json!({ "if": "Write(docs/**)" })
    )]);
    // `write_file` of src/a.rs: filtered out, nothing sent, not reported.
    let out = write_file(handlers.clone()).run();
    assert!(out.handlers().is_empty(), "{}", out.stdout());
    assert!(!service.got_any_within(Duration::from_millis(300)));
    let out = Test::new()
        .user_settings(group("PreToolUse", None, handlers))
        .payload(&json!({
            "event": "PreToolUse",
            "tool_name": "write_file",
            "tool_input": { "path": "docs/a.md", "content": "x" }
        }))
        .run();
    assert_eq!(out.outcomes(), ["proceed"]);
    assert_eq!(service.request()["body"]["tool_input"]["path"], "docs/a.md");
}

#[test]
fn a_signal_ends_the_wait_for_a_service_at_once_and_the_result_says_so() {
    let Some(service) = Service::start() else {
        return;
    };
    let running = write_file(json!([
        http(&service.url("/hang"), None, json!({ "timeout": 60 })),
        http(&service.url("/reply/200"), None, json!({})),
    ]))
    .spawn();
    // The request is in; the service holds it.
    assert_eq!(service.request()["path"], "/hang");
    let signalled = Instant::now();
    running.signal(libc::SIGTERM);
    let out = running.wait();
    assert!(
        signalled.elapsed() < Duration::from_secs(10),
        "{:?}",
        signalled.elapsed()
    );
    assert_eq!(out.status(), 128 + libc::SIGTERM);
    assert_eq!(out.json()["interrupted"], true);
    assert_eq!(out.outcomes(), ["interrupted", "skipped"]);
    assert!(!service.got_any_within(Duration::from_millis(300)));
}

/// Claude Code has `async` on command hooks only. An http guard that asks for it is waited for
/// (a background run could not block), with a warning that says so: the service's block still
/// stops the call.
#[test]
fn async_on_an_http_handler_is_a_warning_and_the_guard_still_decides() {
    let Some(service) = Service::start() else {
        return;
    };
    let block = r#"{"decision":"block","reason":"policy says no"}"#;
    let handler = http(
        &service.url("/reply/200"),
        Some(block),
        json!({ "async": true }),
    );
    let out = write_file(json!([handler])).run();
    assert_eq!(out.status(), 2, "{}", out.stdout());
    assert_eq!(out.outcomes(), ["block"]);
    assert_eq!(out.json()["reason"], "policy says no");
    let warned = out
        .warnings()
        .iter()
        .any(|w| w.contains("async") && w.contains("is waited for"));
    assert!(warned, "{:?}", out.warnings());
    service.request();
}
