//! A person's own handlers, and their organisation's, run in the project root without importing
//! the repository's code by accident (docs/trust.md, "What a handler of yours may pick up from
//! the project"): Python is started with `PYTHONSAFEPATH=1`, so `python3 -c` and `python3 -m`
//! do not put the project root first on `sys.path`. The project's own handlers, trusted as the
//! repository's code, keep Python's default.

use std::os::unix::fs::PermissionsExt as _;

use serde_json::{json, Value};

use crate::common::{require, runs, Test};

/// A repository's `json.py`, which leaves a marker when anything imports it.
const SHADOW: &str = "open('imported-from-the-project', 'w').write('x')\nimport sys; sys.exit(3)\n";

/// A handler that imports the standard library's `json` and prints what it reads of the payload.
fn hook() -> Value {
    json!({"hooks": {"Stop": [{"hooks": [{
        "command": "python3 -c 'import json, sys; print(json.load(sys.stdin)[\"event\"])'"
    }]}]}})
}

/// Python 3.11 or later, which reads `PYTHONSAFEPATH`.
fn have_python() -> bool {
    let safe_path = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)",
        ])
        .status()
        .is_ok_and(|s| s.success());
    require(
        "python3",
        runs("python3", &["--version"]) && safe_path,
        "PYTHONSAFEPATH needs Python 3.11 or later",
    )
}

/// Puts the hook in one layer of a test.
type Layer = fn(Test) -> Test;

fn imported(out: &crate::common::Output) -> bool {
    out.project_has("imported-from-the-project")
}

#[test]
fn a_persons_python_hook_does_not_import_the_repositorys_module() {
    if !have_python() {
        return;
    }
    // The user layer, the data layer and the organisation's.
    let managed = |test: Test| {
        let path = test.root().join("policy/managed-settings.json");
        crate::common::write(&path, hook().to_string());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        test.env("LEVELCODE_MANAGED_SETTINGS", &path)
    };
    let layers: [(&str, Layer); 3] = [
        ("user", |t| t.user_settings(hook())),
        ("data", |t| t.data_settings(hook())),
        ("managed", managed),
    ];
    for (layer, with) in layers {
        let out = with(Test::new().project_file("json.py", SHADOW))
            .event("Stop")
            .run();
        assert!(
            !imported(&out),
            "{layer}: the repository's json.py ran: {}",
            out.json()
        );
        assert_eq!(out.stdouts(), ["Stop"], "{layer}: {}", out.json());
    }
}

#[test]
fn a_safe_path_the_person_set_is_left_as_it_is_and_the_projects_own_hooks_keep_the_default() {
    if !have_python() {
        return;
    }
    // Set, even to nothing: the person decided; an empty value is Python's own "off".
    let out = Test::new()
        .project_file("json.py", SHADOW)
        .user_settings(hook())
        .env("PYTHONSAFEPATH", "")
        .event("Stop")
        .run();
    assert!(imported(&out), "{}", out.json());
    // The project's own handler is the repository's code: trusted, it imports what it ships.
    let out = Test::new()
        .project_file("json.py", SHADOW)
        .project_settings(hook())
        .event("Stop")
        .run();
    assert!(imported(&out), "{}", out.json());
}
