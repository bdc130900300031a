//! What an http handler may send and where (contract §19): the variables its headers name, its
//! own trace context, the managed layer's allow-lists, and a project's handler before and after
//! trust.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use super::{http, write_file, Service};
use crate::common::{group, write, Sandbox, Test, TRUST};

#[test]
fn headers_fill_in_the_variables_allowed_and_send_the_others_empty() {
    let Some(service) = Service::start() else {
        return;
    };
    let handler = http(
        &service.url("/reply/200"),
        None,
        json!({
            "headers": {
                "Authorization": "Bearer $POLICY_TOKEN",
                "X-Secret": "[${HOME_SECRET}]",
                "X-Price": "costs $5"
            },
            "allowedEnvVars": ["POLICY_TOKEN"]
        }),
    );
    let out = write_file(json!([handler.clone()]))
        .env("POLICY_TOKEN", "t-123")
        .env("HOME_SECRET", "must-not-leave")
        .run();
    assert_eq!(out.outcomes(), ["proceed"]);
    let headers = &service.request()["headers"];
    assert_eq!(headers["authorization"], "Bearer t-123");
    assert_eq!(headers["x-secret"], "[]");
    assert_eq!(headers["x-price"], "costs $5");
    assert!(!headers.to_string().contains("must-not-leave"));
    // validate names the variable that is sent empty.
    let out = Test::new()
        .user_settings(group("PreToolUse", None, json!([handler])))
        .args(["validate", "--json"])
        .run();
    let text = out.stdout();
    assert!(
        text.contains("http_unlisted_variable") && text.contains("$HOME_SECRET"),
        "{text}"
    );
    assert!(!text.contains("$POLICY_TOKEN"), "{text}");
}

#[test]
fn an_exported_dispatch_gives_each_http_handler_its_own_traceparent() {
    let Some(service) = Service::start() else {
        return;
    };
    let caller = "4bf92f3577b34da6a3ce929d0e0e4736";
    // The collector is not there: one warning, and the handler is not affected.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let out = write_file(json!([http(&service.url("/reply/200"), None, json!({}))]))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{closed}"))
        .env("TRACEPARENT", format!("00-{caller}-00f067aa0ba902b7-01"))
        .run();
    assert_eq!(out.outcomes(), ["proceed"]);
    let traceparent = service.request()["headers"]["traceparent"]
        .as_str()
        .unwrap()
        .to_string();
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    assert_eq!(parts[1], caller);
    assert_ne!(parts[2], "00f067aa0ba902b7", "the handler's own span");
    // Without export, no trace context is made up.
    let out = write_file(json!([http(&service.url("/reply/200"), None, json!({}))])).run();
    assert_eq!(out.outcomes(), ["proceed"]);
    assert!(service.request()["headers"].get("traceparent").is_none());
}

/// Writes `settings` as the test's managed file, mode 0644, and names it with the variable.
fn managed(test: Test, settings: &Value) -> Test {
    let path = test.root().join("policy/managed-settings.json");
    write(&path, settings.to_string());
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    test.env("LEVELCODE_MANAGED_SETTINGS", &path)
}

#[test]
fn the_managed_allow_lists_keep_other_urls_and_variables_from_being_sent() {
    let Some(service) = Service::start() else {
        return;
    };
    let allowed = service.url("/reply/200");
    let elsewhere = service.url("/reply/201");
    let policy = json!({
        "allowedHttpHookUrls": [format!("http://127.0.0.1:{}/reply/200*", service.port)],
        "httpHookAllowedEnvVars": ["POLICY_TOKEN"]
    });
    let handlers = json!([
        http(
            &allowed,
            None,
            json!({ "allowedEnvVars": ["POLICY_TOKEN"] })
        ),
        http(&elsewhere, None, json!({})),
        http(
            &allowed,
            None,
            json!({ "allowedEnvVars": ["AWS_SECRET_ACCESS_KEY"], "headers": { "X": "$AWS_SECRET_ACCESS_KEY" } })
        ),
    ]);
    let out = managed(write_file(handlers.clone()), &policy).run();
    assert_eq!(out.outcomes(), ["proceed", "error", "error"]);
    let url_rule = out.warning(&["allowedHttpHookUrls", &elsewhere]);
    assert!(url_rule.contains("managed-settings.json"), "{url_rule}");
    out.warning(&["httpHookAllowedEnvVars", "AWS_SECRET_ACCESS_KEY"]);
    assert!(out.handler(1)["message"]
        .as_str()
        .unwrap()
        .contains("allowedHttpHookUrls"));
    // Only the allowed one reached the service.
    assert_eq!(service.request()["path"], "/reply/200");
    assert!(!service.got_any_within(Duration::from_millis(300)));
    // validate and list say which handlers the lists keep out, and by which rule.
    for args in [&["validate"][..], &["list", "--json"]] {
        let out = managed(
            Test::new().user_settings(group("PreToolUse", None, handlers.clone())),
            &policy,
        )
        .args(args)
        .run();
        let text = out.stdout() + &out.stderr();
        assert!(
            text.contains("hooks.PreToolUse[0].hooks[1]") && text.contains("allowedHttpHookUrls"),
            "{args:?}: {text}"
        );
        assert!(text.contains("httpHookAllowedEnvVars"), "{args:?}: {text}");
    }
    // Without the lists, all three are sent.
    let out = write_file(handlers).run();
    assert_eq!(out.outcomes(), ["proceed", "proceed", "proceed"]);
}

/// `levelcode-hooks ARGS` in `sandbox`'s project with `stdin`, without the harness's opt-in to
/// trust.
fn in_project(sandbox: &Sandbox, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = sandbox
        .command()
        .env_remove(TRUST)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn settings_at(project: &Path, url: &str) {
    write(
        &project.join(".levelcode/settings.json"),
        group(
            "Stop",
            None,
            json!([http(url, None, json!({ "headers": { "X-Team": "core" } }))]),
        )
        .to_string(),
    );
}

#[test]
fn a_project_s_http_handler_runs_only_once_trusted_and_again_after_its_url_changes() {
    let Some(service) = Service::start() else {
        return;
    };
    let sandbox = Sandbox::new();
    let project = sandbox.project();
    settings_at(&project, &service.url("/reply/200"));
    let stop = br#"{"event":"Stop"}"#;
    let answer = |out: &Output| -> Value { serde_json::from_slice(&out.stdout).unwrap() };

    // Untrusted: nothing is sent.
    let out = answer(&in_project(&sandbox, &["run"], stop));
    assert_eq!(out["project_trust"]["state"], "untrusted", "{out}");
    assert!(out["handlers"].as_array().unwrap().is_empty());
    assert!(!service.got_any_within(Duration::from_millis(300)));

    // The review shows what would be sent, and where.
    let review = in_project(&sandbox, &["trust", "--yes"], b"");
    let text = String::from_utf8_lossy(&review.stdout).to_string()
        + &String::from_utf8_lossy(&review.stderr);
    assert!(review.status.success(), "{text}");
    assert!(text.contains(&service.url("/reply/200")), "{text}");
    assert!(text.contains("X-Team"), "{text}");
    let out = answer(&in_project(&sandbox, &["run"], stop));
    assert_eq!(out["handlers"][0]["outcome"], "proceed", "{out}");
    assert_eq!(service.request()["path"], "/reply/200");

    // Another URL is another handler: trust again.
    settings_at(&project, &service.url("/reply/201"));
    let out = answer(&in_project(&sandbox, &["run"], stop));
    assert_eq!(out["project_trust"]["state"], "changed", "{out}");
    assert!(!service.got_any_within(Duration::from_millis(300)));
    let status = in_project(&sandbox, &["trust", "--status", "--json"], b"");
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert!(
        status.to_string().contains("/reply/201"),
        "the status lists the new url: {status}"
    );
}

#[test]
fn list_and_test_dry_run_show_an_http_handler_s_request() {
    let handler = http(
        "https://policy.example.com/hooks",
        None,
        json!({ "headers": { "Authorization": "Bearer $T" }, "allowedEnvVars": ["T"] }),
    );
    let settings = group("PreToolUse", None, json!([handler]));
    let out = Test::new()
        .user_settings(&settings)
        .args(["list", "--json"])
        .run();
    let list: Value = serde_json::from_str(&out.stdout()).unwrap();
    let entry = list["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["url"].is_string())
        .unwrap_or_else(|| panic!("{list}"))
        .clone();
    assert_eq!(entry["url"], "https://policy.example.com/hooks");
    assert_eq!(entry["headers"]["Authorization"], "Bearer $T");
    assert_eq!(entry["allowedEnvVars"], json!(["T"]));
    assert_eq!(entry["label"], "https://policy.example.com/hooks");
    // A dry run says it would be sent, and sends nothing.
    let out = Test::new()
        .user_settings(&settings)
        .args([
            "test",
            "--dry-run",
            "--event",
            "PreToolUse",
            "--tool",
            "write_file",
        ])
        .run();
    let text = out.stdout() + &out.stderr();
    assert!(text.contains("https://policy.example.com/hooks"), "{text}");
}
