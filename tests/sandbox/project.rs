//! `"sandboxProjectHooks": true` in a user or managed layer (contract §20): every handler of
//! the project's layers, trusted or not by its own settings, runs in at least the default
//! sandbox, and the project cannot widen it.

use serde_json::{json, Value};

use super::{landlock, stop, Place};
use crate::common::write;

/// A project handler that plants a line in `~/.bashrc`, and what it left there.
const PLANT: &str = "echo planted >> \"$HOME/.bashrc\"";

fn planted(place: &Place) -> bool {
    place.home().join(".bashrc").exists()
}

fn warnings(out: &Value) -> Vec<String> {
    out["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_user_layer_sandboxes_a_trusted_project_handler() {
    if !landlock() {
        return;
    }
    let place = Place::new();
    place.project_settings(&stop(json!({"command": PLANT})));
    // Trusted and unsandboxed, it plants.
    let out = place.dispatch(&json!({"event": "Stop"}));
    assert_eq!(out["handlers"][0]["outcome"], "proceed", "{out}");
    assert!(planted(&place), "{out}");
    std::fs::remove_file(place.home().join(".bashrc")).unwrap();

    place.user_settings(&json!({"sandboxProjectHooks": true}));
    let out = place.dispatch(&json!({"event": "Stop"}));
    assert!(!planted(&place), "{out}");
    assert!(
        out["handlers"][0]["stderr"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{out}"
    );
    let listed = place.exec(&["list", "--json"], b"").json();
    assert_eq!(
        listed["handlers"][0]["sandbox"]["from"], "sandboxProjectHooks",
        "{listed}"
    );
}

/// The project's own widening (`network`, `write`, best effort, or `false`) is left out, with a
/// warning that names it and the layer that set the switch.
#[test]
fn the_project_cannot_widen_the_sandbox_the_user_layer_puts_it_in() {
    if !landlock() {
        return;
    }
    let place = Place::new();
    place.user_settings(&json!({"sandboxProjectHooks": true}));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "{PLANT}; python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5); print(\"CONNECTED\")'"
    );
    for widening in [
        json!({"network": true, "write": ["~"]}),
        json!(false),
        json!("best-effort"),
    ] {
        place.project_settings(&json!({
            "sandbox": {"write": ["~"]},
            "hooks": stop(json!({"command": command, "sandbox": widening}))["hooks"]
        }));
        let out = place.dispatch(&json!({"event": "Stop"}));
        let entry = &out["handlers"][0];
        assert!(!planted(&place), "{widening}: {out}");
        assert!(
            !entry["stdout"].as_str().unwrap().contains("CONNECTED"),
            "{widening}: {out}"
        );
        let warning = warnings(&out)
            .into_iter()
            .find(|w| w.contains("sandboxProjectHooks"))
            .unwrap_or_else(|| panic!("no warning: {out}"));
        assert!(
            warning.contains("hooks.Stop[0].hooks[0].sandbox: ")
                && warning.contains("ignored")
                && warning.contains(".config/levelcode/settings.json sets sandboxProjectHooks"),
            "{warning}"
        );
    }
    // The project's own switch is read from nowhere inside the project.
    place.user_settings(&json!({}));
    place.project_settings(
        &json!({"sandboxProjectHooks": false, "hooks": stop(json!({"command": "true"}))["hooks"]}),
    );
    let validated = place.exec(&["validate", "--json"], b"").json();
    assert!(
        validated.to_string().contains("ignored_in_project"),
        "{validated}"
    );
}

/// The managed layer's switch is applied whatever the other layers say, by `run` and by a
/// `serve` that keeps the project's groups between requests.
#[test]
fn the_managed_layer_sandboxes_project_handlers_in_run_and_serve() {
    if !landlock() {
        return;
    }
    let place = Place::new();
    let managed = place.root().join("managed-settings.json");
    write(&managed, json!({"sandboxProjectHooks": true}).to_string());
    let place = place.env("LEVELCODE_MANAGED_SETTINGS", managed.display().to_string());
    place.project_settings(&stop(
        json!({"command": PLANT, "sandbox": {"write": ["~"]}}),
    ));
    let out = place.dispatch(&json!({"event": "Stop"}));
    assert!(!planted(&place), "{out}");
    assert!(
        warnings(&out)
            .iter()
            .any(|w| w.contains("managed-settings.json sets sandboxProjectHooks")),
        "{out}"
    );
    let served = place.exec(
        &["serve"],
        b"{\"id\":1,\"event\":\"Stop\"}\n{\"id\":2,\"event\":\"Stop\"}\n",
    );
    assert_eq!(served.stdout.lines().count(), 2, "{}", served.stdout);
    for line in served.stdout.lines() {
        let answer: Value = serde_json::from_str(line).unwrap();
        let stderr = answer["handlers"][0]["stderr"].as_str().unwrap_or_default();
        assert!(stderr.contains("Permission denied"), "{answer}");
    }
    assert!(!planted(&place), "{}", served.stdout);
    // Without the managed file's switch, the same handler plants.
    write(&managed, json!({}).to_string());
    place.dispatch(&json!({"event": "Stop"}));
    assert!(planted(&place));
}

/// Claude Code's project files are the project's too.
#[test]
fn a_claude_code_project_handler_is_sandboxed_too() {
    if !landlock() {
        return;
    }
    let place = Place::new();
    write(
        &place.project().join(".claude/settings.json"),
        stop(json!({"type": "command", "command": PLANT})).to_string(),
    );
    place.user_settings(&json!({"claudeCodeHooks": true}));
    let out = place.dispatch(&json!({"event": "Stop"}));
    assert_eq!(out["handlers"][0]["layer"], "claude-project", "{out}");
    assert!(planted(&place), "without the switch it plants: {out}");
    std::fs::remove_file(place.home().join(".bashrc")).unwrap();
    place.user_settings(&json!({"claudeCodeHooks": true, "sandboxProjectHooks": true}));
    let out = place.dispatch(&json!({"event": "Stop"}));
    assert_eq!(out["handlers"][0]["layer"], "claude-project", "{out}");
    assert!(!planted(&place), "{out}");
}
