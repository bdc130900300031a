//! Settings layers and the schema (contract §3, §4): which files are read, in which order, and
//! how every problem in them becomes a warning naming the file and the entry.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{group, on, Test};

fn path_text(path: &Path) -> String {
    path.display().to_string()
}

fn layers_of(out: &crate::common::Output) -> Vec<String> {
    out.handlers()
        .iter()
        .map(|h| h["layer"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn layers_run_in_order_user_data_project() {
    let out = Test::new()
        .project_settings(on("Stop", "echo project"))
        .data_settings(on("Stop", "echo data"))
        .user_settings(on("Stop", "echo user"))
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.stdouts(), ["user", "data", "project"]);
    assert_eq!(layers_of(&out), ["user", "data", "project"]);
    let sources: Vec<Value> = out.handlers().iter().map(|h| h["source"].clone()).collect();
    assert_eq!(
        sources,
        [
            json!(path_text(
                &out.home().join(".config/levelcode/settings.json")
            )),
            json!(path_text(&out.home().join(".levelcode/settings.json"))),
            json!(path_text(&out.project().join(".levelcode/settings.json"))),
        ]
    );
    assert_eq!(out.warnings(), Vec::<String>::new());
}

#[test]
fn no_settings_anywhere_is_a_quiet_proceed() {
    let out = Test::new().event("Stop").run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.decision(), "proceed");
    assert!(out.handlers().is_empty());
    assert!(out.warnings().is_empty());
}

#[test]
fn levelcode_dir_replaces_the_data_layer() {
    let test = Test::new();
    let data = test.root().join("data");
    let out = test
        .file(
            "data/settings.json",
            on("Stop", "echo levelcode-dir").to_string(),
        )
        .data_settings(on("Stop", "echo home-data"))
        .env("LEVELCODE_DIR", &data)
        .event("Stop")
        .run();
    assert_eq!(out.stdouts(), ["levelcode-dir"]);
    assert_eq!(layers_of(&out), ["data"]);
    assert_eq!(
        out.handler(0)["source"],
        json!(path_text(&data.join("settings.json")))
    );
}

#[test]
fn empty_levelcode_dir_means_home() {
    let out = Test::new()
        .data_settings(on("Stop", "echo home-data"))
        .env("LEVELCODE_DIR", "")
        .event("Stop")
        .run();
    assert_eq!(out.stdouts(), ["home-data"]);
}

#[test]
fn environment_suffix_picks_the_user_folder() {
    let out = Test::new()
        .user_settings(on("Stop", "echo plain"))
        .file(
            "home/.config/levelcode-dev/settings.json",
            on("Stop", "echo dev").to_string(),
        )
        .env("NEXT_PUBLIC_CB_ENVIRONMENT", "dev")
        .event("Stop")
        .run();
    assert_eq!(out.stdouts(), ["dev"]);
    assert_eq!(layers_of(&out), ["user"]);
}

#[test]
fn prod_or_empty_environment_keeps_the_plain_user_folder() {
    for value in ["prod", ""] {
        let out = Test::new()
            .user_settings(on("Stop", "echo plain"))
            .file(
                "home/.config/levelcode-prod/settings.json",
                on("Stop", "echo suffixed").to_string(),
            )
            .file(
                "home/.config/levelcode-/settings.json",
                on("Stop", "echo suffixed").to_string(),
            )
            .env("NEXT_PUBLIC_CB_ENVIRONMENT", value)
            .event("Stop")
            .run();
        assert_eq!(
            out.stdouts(),
            ["plain"],
            "NEXT_PUBLIC_CB_ENVIRONMENT={value:?}"
        );
    }
}

#[test]
fn environment_suffix_does_not_touch_the_data_layer() {
    let out = Test::new()
        .data_settings(on("Stop", "echo data"))
        .env("NEXT_PUBLIC_CB_ENVIRONMENT", "staging")
        .event("Stop")
        .run();
    assert_eq!(out.stdouts(), ["data"]);
}

#[test]
fn project_root_at_home_reads_the_shared_file_once() {
    // The project layer $HOME/.levelcode/settings.json is also the data layer.
    let test = Test::new();
    let home = test.home();
    let out = test
        .data_settings(on("Stop", "echo once"))
        .current_dir(&home)
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.handlers().len(), 1, "{}", out.stdout());
    assert_eq!(out.outcomes(), ["proceed"]);
    assert_eq!(layers_of(&out), ["data"], "read at its first position");
}

#[test]
fn levelcode_dir_inside_the_project_reads_the_file_once() {
    let test = Test::new();
    let dir = test.project().join(".levelcode");
    let out = test
        .project_settings(on("Stop", "echo once"))
        .env("LEVELCODE_DIR", &dir)
        .event("Stop")
        .run();
    assert_eq!(out.handlers().len(), 1, "{}", out.stdout());
    assert_eq!(layers_of(&out), ["data"]);
}

#[test]
fn a_file_reached_through_a_symlink_is_read_once() {
    let test = Test::new().data_settings(on("Stop", "echo once"));
    std::os::unix::fs::symlink(
        test.home().join(".levelcode"),
        test.project().join(".levelcode"),
    )
    .unwrap();
    let out = test.event("Stop").run();
    assert_eq!(out.handlers().len(), 1, "{}", out.stdout());
    assert_eq!(layers_of(&out), ["data"]);
}

#[test]
fn settings_flag_replaces_the_three_layers_in_its_order() {
    let out = Test::new()
        .user_settings(on("Stop", "echo user"))
        .data_settings(on("Stop", "echo data"))
        .project_settings(on("Stop", "echo project"))
        .settings_file("b.json", on("Stop", "echo b"))
        .settings_file("a.json", on("Stop", "echo a"))
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.stdouts(), ["b", "a"]);
    assert_eq!(layers_of(&out), ["cli", "cli"]);
    assert!(out.handler(0)["source"]
        .as_str()
        .unwrap()
        .ends_with("b.json"));
}

#[test]
fn settings_flag_naming_one_file_twice_reads_it_once() {
    let test = Test::new().settings_file("s.json", on("Stop", "echo once"));
    let file = test.root().join("s.json");
    let out = test.arg("--settings").arg(file).event("Stop").run();
    assert_eq!(out.handlers().len(), 1, "{}", out.stdout());
}

#[test]
fn no_project_flag_skips_the_project_layer() {
    let out = Test::new()
        .user_settings(on("Stop", "echo user"))
        .project_settings(on("Stop", "echo project"))
        .arg("--no-project")
        .event("Stop")
        .run();
    assert_eq!(out.stdouts(), ["user"]);
}

#[test]
fn no_project_environment_skips_the_project_layer() {
    for value in ["1", "true", "ON"] {
        let out = Test::new()
            .user_settings(on("Stop", "echo user"))
            .project_settings(on("Stop", "echo project"))
            .env("LEVELCODE_HOOKS_NO_PROJECT", value)
            .event("Stop")
            .run();
        assert_eq!(
            out.stdouts(),
            ["user"],
            "LEVELCODE_HOOKS_NO_PROJECT={value}"
        );
    }
}

#[test]
fn no_project_environment_off_values_keep_the_project_layer() {
    for value in ["0", "", "false"] {
        let out = Test::new()
            .project_settings(on("Stop", "echo project"))
            .env("LEVELCODE_HOOKS_NO_PROJECT", value)
            .event("Stop")
            .run();
        assert_eq!(
            out.stdouts(),
            ["project"],
            "LEVELCODE_HOOKS_NO_PROJECT={value:?}"
        );
    }
}

#[test]
fn the_project_cannot_turn_no_project_back_on() {
    let project = json!({
        "env": {"LEVELCODE_HOOKS_NO_PROJECT": "0"},
        "noProject": false,
        "hooks": {"Stop": [{"hooks": [{"command": "touch project-ran"}]}]}
    });
    let out = Test::new()
        .project_settings(project)
        .env("LEVELCODE_HOOKS_NO_PROJECT", "1")
        .event("Stop")
        .run();
    assert!(out.handlers().is_empty(), "{}", out.stdout());
    assert!(!out.project_has("project-ran"));
}

#[test]
fn only_the_hooks_key_is_read() {
    let settings = json!({
        "model": 5,
        "permissions": [1, 2],
        "hooks": {"Stop": [{"hooks": [{"command": "echo ran"}]}]},
        "zzz": {"hooks": "not this one"}
    });
    let out = Test::new().project_settings(settings).event("Stop").run();
    assert_eq!(out.stdouts(), ["ran"]);
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
}

#[test]
fn settings_without_hooks_are_quiet() {
    for settings in [
        r#"{}"#,
        r#"{"hooks":null}"#,
        r#"{"hooks":{}}"#,
        r#"{"theme":"dark"}"#,
    ] {
        let out = Test::new().project_settings(settings).event("Stop").run();
        assert_eq!(out.status(), 0);
        assert!(out.handlers().is_empty());
        assert!(
            out.warnings().is_empty(),
            "{settings}: {:?}",
            out.warnings()
        );
    }
}

/// Runs a `Stop` dispatch with a good user layer and `project` as the project layer; checks the
/// user layer still ran and returns the output.
fn with_bad_project(project: &str) -> crate::common::Output {
    let out = Test::new()
        .user_settings(on("Stop", "echo user"))
        .project_settings(project)
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0, "a settings problem is never an exit code");
    assert_eq!(out.stdouts()[0], "user", "{}", out.stdout());
    out
}

fn project_file(out: &crate::common::Output) -> String {
    path_text(&out.project().join(".levelcode/settings.json"))
}

#[test]
fn invalid_json_warns_naming_the_file() {
    let out = with_bad_project(r#"{"hooks": {"Stop": [}"#);
    assert_eq!(out.handlers().len(), 1);
    out.warning(&[&project_file(&out), "invalid JSON"]);
}

#[test]
fn settings_not_utf8_warns_naming_the_file() {
    let test = Test::new()
        .user_settings(on("Stop", "echo user"))
        .project_file(
            ".levelcode/settings.json",
            b"{\"hooks\":{\"Stop\":[{\"hooks\":[{\"command\":\"echo \xff\"}]}]}}",
        );
    let out = test.event("Stop").run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.stdouts(), ["user"]);
    out.warning(&[&project_file(&out), "UTF-8"]);
}

#[test]
fn top_level_not_an_object_warns_naming_the_file() {
    for settings in ["[]", "42", r#""hooks""#] {
        let out = with_bad_project(settings);
        out.warning(&[&project_file(&out), "not a JSON object"]);
    }
}

#[test]
fn hooks_not_an_object_warns_naming_the_file() {
    for settings in [r#"{"hooks":[]}"#, r#"{"hooks":"Stop"}"#, r#"{"hooks":3}"#] {
        let out = with_bad_project(settings);
        assert_eq!(out.handlers().len(), 1);
        out.warning(&[&project_file(&out), "\"hooks\" must be an object"]);
    }
}

#[test]
fn event_not_an_array_warns_with_its_path() {
    let out = with_bad_project(r#"{"hooks":{"Stop":{"hooks":[{"command":"echo project"}]}}}"#);
    assert_eq!(out.handlers().len(), 1);
    let warning = out.warning(&[&project_file(&out), "hooks.Stop:"]);
    assert!(warning.contains("array"), "{warning}");
}

#[test]
fn other_events_of_the_file_do_not_matter() {
    let settings = json!({"hooks": {
        "PreToolUse": "not an array",
        "Stop": [{"hooks": [{"command": "echo project"}]}],
    }});
    let out = with_bad_project(&settings.to_string());
    assert_eq!(out.stdouts(), ["user", "project"]);
}

#[test]
fn handler_directly_under_the_event_warns_and_its_siblings_run() {
    let settings = json!({"hooks": {"Stop": [
        {"command": "touch slipped"},
        {"hooks": [{"command": "echo project"}]},
    ]}});
    let out = with_bad_project(&settings.to_string());
    assert_eq!(out.stdouts(), ["user", "project"]);
    let warning = out.warning(&[&project_file(&out), "hooks.Stop[0]"]);
    assert!(warning.contains("directly under the event"), "{warning}");
    assert!(!out.project_has("slipped"));
}

#[test]
fn bad_handlers_warn_with_their_paths_and_their_siblings_run() {
    let settings = json!({"hooks": {"Stop": [
        {"hooks": [
            {"command": "touch both", "argv": ["touch", "both"]},
            {"command": "echo first"},
            {"timeout": 5},
            {"type": "prompt", "command": "touch typed"},
            {"command": ""},
            {"argv": []},
            {"argv": ["echo", 1]},
            {"command": 5},
            "echo not an object",
            {"argv": ["echo", "second"]},
        ]},
        {"matcher": "(", "hooks": [{"command": "echo third"}]},
    ]}});
    let out = with_bad_project(&settings.to_string());
    assert_eq!(out.stdouts(), ["user", "first", "second", "third"]);
    let file = project_file(&out);
    let both = out.warning(&[&file, "hooks.Stop[0].hooks[0]"]);
    assert!(both.contains("both command and argv"), "{both}");
    let neither = out.warning(&[&file, "hooks.Stop[0].hooks[2]"]);
    assert!(neither.contains("neither"), "{neither}");
    let typed = out.warning(&[&file, "hooks.Stop[0].hooks[3]"]);
    assert!(typed.contains("prompt"), "{typed}");
    for index in 4..=8 {
        out.warning(&[&file, &format!("hooks.Stop[0].hooks[{index}]")]);
    }
    assert_eq!(out.warnings().len(), 8, "{:#?}", out.warnings());
    assert!(!out.project_has("both"));
    assert!(!out.project_has("typed"));
}

#[test]
fn bad_groups_warn_with_their_paths_and_their_siblings_run() {
    let settings = json!({"hooks": {"Stop": [
        {"hooks": []},
        {"matcher": "x"},
        {"hooks": "echo nope"},
        "echo nope",
        {"hooks": [{"command": "echo project"}]},
    ]}});
    let out = with_bad_project(&settings.to_string());
    assert_eq!(out.stdouts(), ["user", "project"]);
    let file = project_file(&out);
    for index in 0..4 {
        out.warning(&[&file, &format!("hooks.Stop[{index}]")]);
    }
}

fn timeout_settings(timeouts: &[Value]) -> Value {
    let handlers: Vec<Value> = timeouts
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"command": format!("echo {i}"), "timeout": t}))
        .collect();
    group("Stop", None, Value::Array(handlers))
}

#[test]
fn good_timeouts_give_no_warning() {
    let out = Test::new()
        .project_settings(timeout_settings(&[
            json!(1),
            json!(0.5),
            json!(600),
            json!(null),
        ]))
        .event("Stop")
        .run();
    assert_eq!(out.stdouts(), ["0", "1", "2", "3"]);
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
}

#[test]
fn bad_timeouts_warn_and_use_10() {
    let out = Test::new()
        .project_settings(timeout_settings(&[
            json!("5"),
            json!(0),
            json!(-1),
            json!(true),
        ]))
        .event("Stop")
        .run();
    assert_eq!(
        out.stdouts(),
        ["0", "1", "2", "3"],
        "the handlers still run"
    );
    let file = project_file(&out);
    for index in 0..4 {
        let warning = out.warning(&[&file, &format!("hooks.Stop[0].hooks[{index}].timeout")]);
        assert!(warning.contains("10"), "{warning}");
    }
}

#[test]
fn timeouts_over_600_are_clamped_with_a_warning() {
    let out = Test::new()
        .project_settings(timeout_settings(&[json!(601), json!(999.5)]))
        .event("Stop")
        .run();
    assert_eq!(out.stdouts(), ["0", "1"]);
    let file = project_file(&out);
    for index in 0..2 {
        let warning = out.warning(&[&file, &format!("hooks.Stop[0].hooks[{index}].timeout")]);
        assert!(warning.contains("600"), "{warning}");
        assert!(!warning.contains("unit is seconds"), "{warning}");
    }
}

#[test]
fn timeouts_of_1000_or_more_say_the_unit_is_seconds() {
    let out = Test::new()
        .project_settings(timeout_settings(&[json!(1000), json!(30000)]))
        .event("Stop")
        .run();
    assert_eq!(out.stdouts(), ["0", "1"]);
    let file = project_file(&out);
    for index in 0..2 {
        let warning = out.warning(&[&file, &format!("hooks.Stop[0].hooks[{index}].timeout")]);
        assert!(warning.contains("600"), "{warning}");
        assert!(warning.contains("unit is seconds"), "{warning}");
    }
}

#[test]
fn a_directory_where_the_file_should_be_warns() {
    let test = Test::new().user_settings(on("Stop", "echo user"));
    std::fs::create_dir_all(test.project().join(".levelcode/settings.json")).unwrap();
    let out = test.event("Stop").run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.stdouts(), ["user"]);
    out.warning(&[&project_file(&out), "directory"]);
}

#[test]
fn a_fifo_where_the_file_should_be_warns_without_hanging() {
    let test = Test::new().user_settings(on("Stop", "echo user"));
    let fifo = test.project().join(".levelcode/settings.json");
    std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let out = test.event("Stop").run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.stdouts(), ["user"]);
    out.warning(&[&project_file(&out)]);
    assert!(
        out.elapsed() < Duration::from_secs(10),
        "{:?}",
        out.elapsed()
    );
}

#[test]
fn an_unreadable_file_warns() {
    use std::os::unix::fs::PermissionsExt;
    let test = Test::new()
        .user_settings(on("Stop", "echo user"))
        .project_settings(on("Stop", "echo project"));
    let file = test.project().join(".levelcode/settings.json");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
    let readable_anyway = std::fs::File::open(&file).is_ok();
    let out = test.event("Stop").run();
    assert_eq!(out.status(), 0);
    if readable_anyway {
        // Running with privileges that ignore file modes: the file is simply read.
        assert_eq!(out.stdouts(), ["user", "project"]);
    } else {
        assert_eq!(out.stdouts(), ["user"]);
        out.warning(&[&project_file(&out)]);
    }
}

#[test]
fn disabled_groups_and_handlers_are_neither_run_nor_reported() {
    let settings = json!({"hooks": {"Stop": [
        {"enabled": false, "hooks": [{"command": "touch group-off"}]},
        {"hooks": [
            {"command": "touch handler-off", "enabled": false},
            {"command": "echo on", "enabled": true},
        ]},
    ]}});
    let out = Test::new().project_settings(settings).event("Stop").run();
    assert_eq!(out.stdouts(), ["on"]);
    assert_eq!(out.handlers().len(), 1);
    assert!(!out.project_has("group-off"));
    assert!(!out.project_has("handler-off"));
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
}

#[test]
fn enabled_that_is_not_a_boolean_warns() {
    let settings = json!({"hooks": {"Stop": [
        {"hooks": [{"command": "echo on", "enabled": "no"}]},
    ]}});
    let out = Test::new().project_settings(settings).event("Stop").run();
    assert_eq!(out.status(), 0);
    let warning = out.warning(&["hooks.Stop[0].hooks[0]"]);
    assert!(warning.contains("enabled"), "{warning}");
}
