//! What is generated from the code and committed: `docs/settings.schema.json` (the `schema`
//! command's output) and `docs/levelcode-hooks.1` (the man page); and the completion scripts.
//!
//! When the code changes on purpose, regenerate both with `UPDATE_DOCS=1 cargo test docs`.

use std::path::PathBuf;

use serde_json::Value;

use super::Env;

fn committed(name: &str) -> (PathBuf, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    (path, text)
}

/// Fails when `generated` differs from the committed file; rewrites it under `UPDATE_DOCS=1`.
fn assert_current(name: &str, generated: &str) {
    let (path, text) = committed(name);
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, generated).unwrap();
        return;
    }
    assert!(
        text == generated,
        "docs/{name} is not what the code generates; run `UPDATE_DOCS=1 cargo test docs` and commit the result"
    );
}

#[test]
fn schema_command_prints_the_committed_schema() {
    let out = Env::new().run(&["schema"]);
    out.status(0);
    assert_current("settings.schema.json", &out.stdout);
    assert_eq!(out.stdout, levelcode_hooks::commands::schema::text());
}

#[test]
fn schema_describes_the_hooks_key() {
    let schema: Value = serde_json::from_str(&levelcode_hooks::commands::schema::text()).unwrap();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["properties"]["hooks"]["$ref"], "#/$defs/hooks");
    let defs = &schema["$defs"];
    for event in [
        "SessionStart",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "UserPromptSubmit",
        "SessionEnd",
        "PostToolUseFailure",
        "SubagentStart",
        "SubagentStop",
        "PreCompact",
        "Notification",
    ] {
        assert_eq!(defs["hooks"]["properties"][event]["$ref"], "#/$defs/groups");
    }
    let handler = &defs["handler"];
    let keys: Vec<&str> = handler["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "type",
            "command",
            "args",
            "shell",
            "argv",
            "url",
            "headers",
            "allowedEnvVars",
            "timeout",
            "enabled",
            "name",
            "onFailure",
            "protocol",
            "if",
            "async",
            "sandbox"
        ]
    );
    assert_eq!(handler["properties"]["async"]["default"], false);
    for at in [&schema, &defs["group"], handler] {
        assert_eq!(at["properties"]["sandbox"]["$ref"], "#/$defs/sandbox");
    }
    assert_eq!(defs["group"]["properties"]["if"]["$ref"], "#/$defs/if");
    assert_eq!(handler["properties"]["if"]["$ref"], "#/$defs/if");
    assert_eq!(
        defs["protocol"]["enum"],
        serde_json::json!(["levelcode", "claude", null])
    );
    assert_eq!(handler["additionalProperties"], false);
    assert_eq!(handler["properties"]["timeout"]["maximum"], 600.0);
    assert_eq!(defs["group"]["required"], serde_json::json!(["hooks"]));
    // Other keys of settings.json belong to levelcode.
    assert!(schema.get("additionalProperties").is_none());
}

#[test]
fn man_page_is_current() {
    let page = levelcode_hooks::cli::man_page();
    assert_current("levelcode-hooks.1", &page);
    for needle in [
        ".TH LEVELCODE\\-HOOKS 1",
        ".SS \"levelcode-hooks validate\"",
        ".SS \"levelcode-hooks test\"",
        "\\-\\-dry\\-run",
        ".SH \"EXIT STATUS\"",
        "LEVELCODE_HOOKS_LOG",
    ] {
        assert!(page.contains(needle), "man page lacks {needle:?}");
    }
}

#[test]
fn completions_for_each_shell() {
    let env = Env::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = env.run(&["completions", shell]);
        out.status(0);
        for word in ["validate", "dry-run", "list", "stats"] {
            assert!(out.stdout.contains(word), "{shell} completions lack {word}");
        }
    }
    let out = env.run(&["completions", "tcsh"]);
    out.status(1);
    assert!(out.stderr.contains("bash"), "{}", out.stderr);
}

/// Every settings example of the guide is plain JSON that parses as written: a settings file
/// with a comment or a trailing comma is skipped whole, so a reader who copies one must get a
/// file that runs.
#[test]
fn the_guides_settings_examples_are_plain_json() {
    let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&docs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.push(docs.join("../README.md"));
    let mut checked = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains("```jsonc"),
            "{}: a jsonc block",
            file.display()
        );
        for block in text.split("```json\n").skip(1) {
            let block = block.split("```").next().unwrap();
            let settings = block.trim_start().trim_start_matches('{').trim_start();
            if !settings.starts_with("\"hooks\"") {
                continue;
            }
            checked += 1;
            if let Err(e) = serde_json::from_str::<Value>(block) {
                panic!("{}: {e}:\n{block}", file.display());
            }
        }
    }
    assert!(checked >= 8, "{checked} settings examples found");
}
