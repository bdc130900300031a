//! The managed layer (contract §17): the organisation's hooks run first, need no trust, and
//! nothing a person, a settings file or a project controls turns them off; `managedHooksOnly`
//! keeps every other layer out, loudly; a file others could write is refused.
//!
//! The tests place the file with `LEVELCODE_MANAGED_SETTINGS`, which counts only while nothing
//! is at the system path; the tests of the system path itself run the dispatcher in a mount
//! namespace of its own, where a folder of the test stands at `/etc`.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{json, Value};

use crate::common::{command, group, on, require, write, Test};

const VAR: &str = "LEVELCODE_MANAGED_SETTINGS";

/// Writes `settings` as the test's managed file, mode 0644, and names it with the variable.
fn managed(test: Test, settings: &Value) -> Test {
    let path = managed_path(&test);
    write(&path, settings.to_string());
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    test.env(VAR, &path)
}

fn managed_path(test: &Test) -> PathBuf {
    test.root().join("policy/managed-settings.json")
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn layers_of(out: &crate::common::Output) -> Vec<String> {
    out.handlers()
        .iter()
        .map(|h| h["layer"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn managed_hooks_run_first_before_every_other_layer() {
    let out = managed(Test::new(), &on("Stop", "echo managed"))
        .user_settings(on("Stop", "echo user"))
        .data_settings(on("Stop", "echo data"))
        .project_settings(on("Stop", "echo project"))
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(layers_of(&out), ["managed", "user", "data", "project"]);
    assert_eq!(out.stdouts(), ["managed", "user", "data", "project"]);
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
}

#[test]
fn managed_hooks_need_no_trust_while_the_untrusted_project_is_held_back() {
    let out = managed(Test::new(), &on("Stop", "echo managed"))
        .project_settings(on("Stop", "echo project"))
        .untrusted()
        .event("Stop")
        .run();
    assert_eq!(out.stdouts(), ["managed"]);
    assert_eq!(out.json()["project_trust"]["state"], "untrusted");
}

#[test]
fn the_kill_switch_does_not_turn_managed_hooks_off_and_says_so_once() {
    for value in ["0", "false", "OFF"] {
        let out = managed(Test::new(), &on("Stop", "echo managed"))
            .user_settings(on("Stop", "echo user"))
            .env("LEVELCODE_HOOKS", value)
            .event("Stop")
            .run();
        assert_eq!(out.stdouts(), ["managed"], "LEVELCODE_HOOKS={value}");
        let warnings = out.warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("LEVELCODE_HOOKS is off"),
            "{warnings:?}"
        );
        assert!(warnings[0].contains("managed layer"), "{warnings:?}");
    }
}

#[test]
fn the_depth_guard_does_not_turn_managed_hooks_off() {
    let out = managed(Test::new(), &on("Stop", "echo managed"))
        .user_settings(on("Stop", "echo user"))
        .env("LEVELCODE_HOOKS_DEPTH", "4")
        .event("Stop")
        .run();
    assert_eq!(out.stdouts(), ["managed"]);
    out.warning(&["LEVELCODE_HOOKS_DEPTH is 4", "managed layer"]);
}

#[test]
fn no_project_settings_files_and_other_layers_cannot_displace_managed_hooks() {
    // --no-project and its variable only concern the project layer.
    let out = managed(Test::new(), &on("Stop", "echo managed"))
        .project_settings(on("Stop", "echo project"))
        .arg("--no-project")
        .env("LEVELCODE_HOOKS_NO_PROJECT", "1")
        .event("Stop")
        .run();
    assert_eq!(out.stdouts(), ["managed"]);

    // --settings replaces the standard layers, not the managed one.
    let out = managed(Test::new(), &on("Stop", "echo managed"))
        .settings_file("cli.json", on("Stop", "echo cli"))
        .event("Stop")
        .run();
    assert_eq!(layers_of(&out), ["managed", "cli"]);

    // A user or project layer cannot claim the key, nor disable the managed command by
    // repeating it: the managed run comes first, the repeat is the duplicate.
    let mut user = on("Stop", "echo managed");
    user["managedHooksOnly"] = json!(true);
    user["hooks"]["Stop"][0]["enabled"] = json!(false);
    let mut project = on("Stop", "echo managed");
    project["managedHooksOnly"] = json!(false);
    let out = managed(Test::new(), &on("Stop", "echo managed"))
        .user_settings(&user)
        .data_settings(on("Stop", "echo data"))
        .project_settings(&project)
        .event("Stop")
        .run();
    assert_eq!(out.outcomes(), ["proceed", "proceed", "duplicate"]);
    assert_eq!(layers_of(&out), ["managed", "data", "project"]);
}

#[test]
fn managed_hooks_only_keeps_every_other_layer_out_with_one_warning() {
    let mut policy = group(
        "PreToolUse",
        Some("write_file"),
        json!([{ "command": "echo managed" }]),
    );
    policy["managedHooksOnly"] = json!(true);
    let out = managed(Test::new(), &policy)
        .user_settings(group(
            "PreToolUse",
            None,
            json!([{ "command": "echo user-1" }, { "command": "echo user-2" }]),
        ))
        .data_settings(group(
            "PreToolUse",
            Some("read_files"),
            json!([{ "command": "echo data" }]),
        ))
        .project_settings(on("PreToolUse", "touch ran-project"))
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.stdouts(), ["managed"]);
    assert!(!out.project_has("ran-project"));
    let file = managed_path_of(&out);
    let warnings = out.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let warning = &warnings[0];
    assert!(
        warning.starts_with(&format!("{file}: managedHooksOnly")),
        "{warning}"
    );
    // The handlers that would have run, by layer and file; the data layer's does not match.
    assert!(warning.contains("3 handler(s)"), "{warning}");
    assert!(warning.contains("2 of the user layer"), "{warning}");
    assert!(warning.contains("1 of the project layer"), "{warning}");
    assert!(!warning.contains("data layer"), "{warning}");

    // Nothing the other layers would run: nothing to say.
    let out = managed(Test::new(), &policy)
        .user_settings(on("Stop", "echo user"))
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.stdouts(), ["managed"]);
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
}

fn managed_path_of(out: &crate::common::Output) -> String {
    out.project()
        .parent()
        .unwrap()
        .join("policy/managed-settings.json")
        .display()
        .to_string()
}

#[test]
fn a_managed_file_others_can_write_is_refused_and_the_dispatch_goes_on() {
    for mode in [0o664, 0o646, 0o666] {
        let test = managed(Test::new(), &on("Stop", "echo managed"));
        std::fs::set_permissions(managed_path(&test), std::fs::Permissions::from_mode(mode))
            .unwrap();
        let out = test
            .user_settings(on("Stop", "echo user"))
            .event("Stop")
            .run();
        assert_eq!(out.status(), 0);
        assert_eq!(out.stdouts(), ["user"], "mode {mode:o}");
        let warning = out.warning(&["refused", "writable by"]);
        assert!(warning.contains(&managed_path_of(&out)), "{warning}");
    }
}

#[test]
fn a_managed_file_owned_by_another_user_is_refused() {
    if !require("root", is_root(), "chown a file to another user") {
        return;
    }
    let test = managed(Test::new(), &on("Stop", "echo managed"));
    std::os::unix::fs::chown(managed_path(&test), Some(65534), Some(65534)).unwrap();
    let out = test
        .user_settings(on("Stop", "echo user"))
        .event("Stop")
        .run();
    assert_eq!(out.stdouts(), ["user"]);
    out.warning(&["refused", "owned by uid 65534, not root"]);
}

#[test]
fn a_managed_file_that_is_a_directory_or_invalid_is_a_warning_not_a_failure() {
    let test = Test::new();
    let path = managed_path(&test);
    std::fs::create_dir_all(&path).unwrap();
    let out = test
        .env(VAR, &path)
        .user_settings(on("Stop", "echo user"))
        .event("Stop")
        .run();
    assert_eq!(out.stdouts(), ["user"]);
    out.warning(&["not a regular file"]);

    let test = Test::new();
    let path = managed_path(&test);
    write(&path, "{ not json");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = test
        .env(VAR, &path)
        .user_settings(on("Stop", "echo user"))
        .event("Stop")
        .run();
    assert_eq!(out.stdouts(), ["user"]);
    out.warning(&["invalid JSON"]);
}

#[test]
fn list_validate_and_test_show_the_managed_layer_and_what_it_holds_back() {
    let mut policy = on("Stop", "echo managed");
    policy["managedHooksOnly"] = json!(true);
    let make = || {
        managed(Test::new(), &policy)
            .user_settings(on("Stop", "echo user"))
            .env("NO_COLOR", "1")
    };

    let out = make().args(["list", "--json", "--event", "Stop"]).run();
    let json = out.json();
    assert_eq!(json["layers"][0]["layer"], "managed");
    let states: Vec<(&str, &str)> = json["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["layer"].as_str().unwrap(), h["state"].as_str().unwrap()))
        .collect();
    assert_eq!(states, [("managed", "would_run"), ("user", "managed_only")]);
    let warnings = json["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("managedHooksOnly is set")),
        "{warnings:?}"
    );

    let out = make().arg("validate").run();
    assert_eq!(out.status(), 0, "{}", out.stdout());
    let text = out.stdout();
    assert!(text.contains("managed"), "{text}");
    assert!(text.contains("managedHooksOnly is set"), "{text}");

    let out = make().args(["test", "--event", "Stop", "--dry-run"]).run();
    let text = out.stdout();
    assert!(text.contains("1. echo managed"), "{text}");
    assert!(text.contains("managed_only  echo user"), "{text}");

    let out = make().args(["test", "--event", "Stop"]).run();
    assert_eq!(out.stdouts(), ["managed"]);
    out.warning(&["managedHooksOnly is set"]);

    // Off: the list says the managed layer still runs.
    let out = make()
        .env("LEVELCODE_HOOKS", "0")
        .args(["list", "--json", "--event", "Stop"])
        .run();
    let json = out.json();
    assert_eq!(json["handlers"][0]["state"], "would_run");
    assert!(json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("but the managed layer's")));

    // A refused file is a problem `validate` reports.
    let test = make();
    std::fs::set_permissions(managed_path(&test), std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = test.arg("validate").run();
    assert_eq!(
        out.status(),
        1,
        "a refused managed file is a problem for CI"
    );
    assert!(out.stdout().contains("refused"), "{}", out.stdout());
}

#[test]
fn serve_runs_managed_hooks_before_a_request_s_inline_hooks() {
    let line = json!({
        "id": 1,
        "options": { "hooks": { "Stop": [ { "hooks": [ { "command": "echo inline" } ] } ] } },
        "event": "Stop"
    });
    let out = managed(Test::new(), &on("Stop", "echo managed"))
        .arg("serve")
        .stdin(format!("{line}\n"))
        .run();
    let answer: Value = serde_json::from_str(out.stdout().lines().next().unwrap()).unwrap();
    let stdouts: Vec<&str> = answer["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["stdout"].as_str().unwrap().trim())
        .collect();
    assert_eq!(stdouts, ["managed", "inline"]);
}

/// Runs the dispatcher as root in a mount namespace of its own, where `etc` (a folder of the
/// test) stands at `/etc`, so the system path holds the test's file and nothing else sees it.
fn run_with_etc(test: &Test, etc: &Path, env: &[(&str, &Path)]) -> Value {
    let mut command = command(&test.home(), &test.project());
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let etc = std::ffi::CString::new(etc.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: unshare and mount are plain system calls on the child's own namespace, with
    // strings made before the fork; nothing else runs in the child between fork and exec.
    unsafe {
        command.pre_exec(move || {
            if libc::unshare(libc::CLONE_NEWNS) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let root = c"/";
            let target = c"/etc";
            if libc::mount(
                std::ptr::null(),
                root.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
                || libc::mount(
                    etc.as_ptr(),
                    target.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command
        .spawn()
        .expect("the dispatcher starts in its own namespace");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"event":"Stop"}"#)
        .unwrap();
    let output = child.wait_with_output().unwrap();
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {} / {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

#[test]
fn the_system_path_is_read_and_the_variable_cannot_stand_in_for_it() {
    if !require(
        "root",
        is_root(),
        "a mount namespace to place /etc/levelcode",
    ) {
        return;
    }
    let test = Test::new().user_settings(on("Stop", "echo user"));
    let etc = test.root().join("etc");
    let system = etc.join("levelcode/managed-settings.json");
    let mut policy = on("Stop", "echo system");
    policy["managedHooksOnly"] = json!(true);
    write(&system, policy.to_string());
    std::fs::set_permissions(&system, std::fs::Permissions::from_mode(0o644)).unwrap();
    // The variable's file would let the user's own hooks in and run its own.
    let escape = test.root().join("escape.json");
    write(&escape, on("Stop", "echo escape").to_string());
    std::fs::set_permissions(&escape, std::fs::Permissions::from_mode(0o644)).unwrap();

    let answer = run_with_etc(&test, &etc, &[(VAR, &escape)]);
    let handlers = answer["handlers"].as_array().unwrap();
    assert_eq!(handlers.len(), 1, "{answer}");
    assert_eq!(
        handlers[0]["source"],
        "/etc/levelcode/managed-settings.json"
    );
    assert_eq!(handlers[0]["stdout"], "system\n");
    let warnings: Vec<&str> = answer["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains(VAR) && w.contains("is ignored")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("managedHooksOnly is set")),
        "{warnings:?}"
    );

    // A system file refused (not root's) still keeps the variable out: the dispatch goes on as
    // if there were no managed file at all.
    std::os::unix::fs::chown(&system, Some(65534), None).unwrap();
    let answer = run_with_etc(&test, &etc, &[(VAR, &escape)]);
    let stdouts: Vec<&str> = answer["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["stdout"].as_str().unwrap())
        .collect();
    assert_eq!(stdouts, ["user\n"], "{answer}");
    assert!(
        answer.to_string().contains("owned by uid 65534"),
        "{answer}"
    );
}

#[test]
fn as_an_ordinary_user_the_variable_takes_a_file_of_root_or_of_that_user_only() {
    if !require("root", is_root(), "switch to an ordinary user") {
        return;
    }
    const UID: u32 = 3_999_998;
    let test = Test::new();
    let dir = test.root().join("policy");
    std::fs::create_dir_all(&dir).unwrap();
    for d in [test.root(), &dir, &test.home(), &test.project()] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let place = |name: &str, owner: u32| {
        let path = dir.join(name);
        write(&path, on("Stop", &format!("echo {name}")).to_string());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::chown(&path, Some(owner), Some(owner)).unwrap();
        path
    };
    let run = |path: &Path| -> Value {
        let mut child = command(&test.home(), &test.project())
            .env(VAR, path)
            .uid(UID)
            .gid(UID)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(br#"{"event":"Stop"}"#)
            .unwrap();
        serde_json::from_slice(&child.wait_with_output().unwrap().stdout).unwrap()
    };
    for (name, owner, runs) in [
        ("root", 0, true),
        ("own", UID, true),
        ("other", 65534, false),
    ] {
        let answer = run(&place(name, owner));
        let ran = answer["handlers"].as_array().unwrap().len() == 1;
        assert_eq!(ran, runs, "{name}: {answer}");
        if !runs {
            assert!(
                answer.to_string().contains("owned by uid 65534"),
                "{answer}"
            );
        }
    }
}
