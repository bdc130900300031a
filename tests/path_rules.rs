//! Path rules of `"if"` (contract §16) as Claude Code applies them, black-box: an `Edit(…)`
//! rule guards every tool that edits files, a `Read(…)` rule every tool that reads or searches
//! them by its path or folder arguments, and a path is tested as written and with its
//! symbolic links resolved, so a person's guard on a folder runs whichever way a call reaches
//! it.

use std::os::unix::fs::symlink;

use serde_json::{json, Value};

use crate::common::Test;

/// A person's own guard, in the user layer, that blocks every call it sees.
fn guard(rule: &str) -> Value {
    json!({"hooks": {"PreToolUse": [{"hooks": [{
        "command": "cat > /dev/null; echo guarded >&2; exit 2",
        "name": "guard",
        "if": rule,
    }]}]}})
}

fn call(tool: &str, input: Value) -> Value {
    json!({"event": "PreToolUse", "tool_name": tool, "tool_input": input})
}

fn write_file(path: &str) -> Value {
    call(
        "write_file",
        json!({"path": path, "instructions": "x", "content": "x"}),
    )
}

fn str_replace(path: &str) -> Value {
    call(
        "str_replace",
        json!({"path": path, "replacements": [{"old": "a", "new": "b", "allowMultiple": false}]}),
    )
}

/// The decision of one dispatch of `payload` with `rule` guarding it, in a project prepared
/// by `prepare` (given the project root).
fn decided(rule: &str, payload: &Value, prepare: impl FnOnce(&std::path::Path)) -> String {
    let test = Test::new().user_settings(guard(rule));
    prepare(&test.project());
    let out = test.payload(payload).run();
    let json = out.json();
    let decision = json["decision"].as_str().unwrap_or_default().to_string();
    assert_eq!(
        out.status(),
        if decision == "block" { 2 } else { 0 },
        "{json}"
    );
    if decision == "block" {
        assert_eq!(json["reason"], "guarded", "{json}");
    } else {
        // Not run, and not reported.
        assert_eq!(json["handlers"], json!([]), "{json}");
        assert_eq!(json["warnings"], json!([]), "{json}");
    }
    decision
}

fn blocks(rule: &str, payload: &Value) -> bool {
    decided(rule, payload, |_| {}) == "block"
}

#[test]
fn an_edit_rule_guards_write_file_as_well_as_str_replace() {
    // The example of docs/hooks.md: before, `Edit(…)` named str_replace only, and a
    // write_file into the guarded folder never started the guard.
    let rule = "Edit(src/generated/**)";
    assert!(blocks(rule, &write_file("src/generated/api.ts")));
    assert!(blocks(rule, &str_replace("src/generated/api.ts")));
    assert!(!blocks(rule, &write_file("src/api.ts")));
    assert!(!blocks(rule, &str_replace("docs/x.md")));
    // Claude Code reads every rule about one of its file-editing tools as an Edit rule.
    for rule in [
        "Write(src/generated/**)",
        "MultiEdit(src/generated/**)",
        "NotebookEdit(src/generated/**)",
    ] {
        assert!(blocks(rule, &write_file("src/generated/a.ts")), "{rule}");
        assert!(blocks(rule, &str_replace("src/generated/a.ts")), "{rule}");
        assert!(!blocks(rule, &write_file("src/a.ts")), "{rule}");
    }
    // levelcode's own names stay the one tool they name.
    assert!(!blocks(
        "write_file(src/generated/**)",
        &str_replace("src/generated/a.ts")
    ));
}

#[test]
fn a_read_rule_guards_the_searches_and_listings_that_reach_its_folder() {
    let rule = "Read(secrets/**)";
    let search = |cwd: Option<&str>| {
        let mut input = json!({"pattern": "KEY"});
        if let Some(cwd) = cwd {
            input["cwd"] = json!(cwd);
        }
        input
    };
    // Before, a Read rule named read_files only: a search inside secrets/ ran no guard.
    assert!(blocks(rule, &call("code_search", search(Some("secrets")))));
    assert!(blocks(rule, &call("glob", search(Some("secrets")))));
    assert!(blocks(
        rule,
        &call("list_directory", json!({"path": "secrets"}))
    ));
    assert!(blocks(
        rule,
        &call(
            "read_files",
            json!({"paths": ["README.md", "secrets/key.pem"]})
        )
    ));
    // A search of the whole project can reach secrets/, and find_files searches it whole.
    assert!(blocks(rule, &call("code_search", search(None))));
    assert!(blocks(rule, &call("glob", json!({"pattern": "**/*.pem"}))));
    assert!(blocks(rule, &call("glob", json!({"pattern": "secrets/*"}))));
    assert!(blocks(
        rule,
        &call("find_files", json!({"prompt": "the api keys"}))
    ));
    assert!(blocks(
        rule,
        &call("read_subtree", json!({"paths": ["secrets"]}))
    ));
    // A search that names a folder of its own through ripgrep's flags reaches it too.
    assert!(blocks(
        rule,
        &call(
            "code_search",
            json!({"pattern": "../secrets", "flags": "KEY", "cwd": "docs"})
        )
    ));
    // What cannot reach secrets/ runs no guard.
    assert!(!blocks(rule, &call("code_search", search(Some("docs")))));
    assert!(!blocks(
        rule,
        &call("glob", json!({"pattern": "docs/*.md"}))
    ));
    assert!(!blocks(
        rule,
        &call("list_directory", json!({"path": "src"}))
    ));
    assert!(!blocks(
        rule,
        &call("read_files", json!({"paths": ["README.md"]}))
    ));
    assert!(!blocks(
        rule,
        &call("read_subtree", json!({"paths": ["src", "docs"]}))
    ));
}

/// A project that ships `gen -> src/generated`, and `s -> secrets`.
fn linked(project: &std::path::Path) {
    std::fs::create_dir_all(project.join("src/generated")).unwrap();
    std::fs::create_dir_all(project.join("secrets")).unwrap();
    std::fs::write(project.join("src/generated/api.ts"), "a").unwrap();
    symlink("src/generated", project.join("gen")).unwrap();
    symlink("secrets", project.join("s")).unwrap();
}

#[test]
fn a_symlink_into_a_guarded_folder_is_guarded_as_the_folder() {
    // What the link lets through really lands in the guarded folder.
    let test = Test::new();
    linked(&test.project());
    std::fs::write(test.project().join("gen/new.ts"), "edited").unwrap();
    assert_eq!(
        std::fs::read_to_string(test.project().join("src/generated/new.ts")).unwrap(),
        "edited"
    );
    drop(test);

    let edit = "Edit(src/generated/**)";
    let block = |rule: &str, payload: &Value| decided(rule, payload, linked) == "block";
    assert!(block(edit, &str_replace("gen/api.ts")));
    // A file that does not exist yet: its longest existing prefix is resolved.
    assert!(block(edit, &write_file("gen/new.ts")));
    assert!(block(edit, &write_file("gen/deeper/new.ts")));
    // `..` after a link is the link's parent, as the system reads it.
    assert!(block("Edit(src/*.ts)", &write_file("gen/../x.ts")));
    assert!(!block(edit, &write_file("src/other.ts")));
    let read = "Read(secrets/**)";
    assert!(block(
        read,
        &call("read_files", json!({"paths": ["s/key.pem"]}))
    ));
    assert!(block(
        read,
        &call("code_search", json!({"pattern": "KEY", "cwd": "s"}))
    ));
    assert!(block(read, &call("list_directory", json!({"path": "s"}))));
}

#[test]
fn validate_takes_claude_codes_file_tool_names_as_the_kinds_they_stand_for() {
    let hooks = json!({"hooks": {"PreToolUse": [{"hooks": [
        {"command": "true 1", "if": "NotebookEdit(src/generated/**)"},
        {"command": "true 2", "if": "LS(secrets)"},
        {"command": "true 3", "if": "Read(secrets/**)"},
    ]}]}});
    let out = Test::new()
        .user_settings(&hooks)
        .args(["validate", "--json"])
        .run();
    let problems = &out.json()["problems"];
    assert_eq!(problems, &json!([]), "{}", out.stdout());
    assert_eq!(out.status(), 0, "{}", out.stdout());
}
