//! Claude Code's configurations, black-box: the exec form (`command` with `args`, contract §16),
//! `import claude` of a file that uses it, and Claude Code's own settings files read as layers
//! when the person opts in (contract §12), trusted as the project layer is (§13).

use serde_json::{json, Value};

use crate::common::{server, Test};

/// Arguments no shell would leave alone: spaces, both quotes, a variable, a glob, a command
/// separator, a backslash, an empty one.
const AWKWARD: [&str; 8] = [
    "two words",
    "it's \"quoted\"",
    "$HOME",
    "*",
    "; echo injected",
    "back\\slash",
    "",
    "$(id)",
];

/// A script that prints each of its arguments between brackets, one a line.
const PRINT_ARGS: &str = "for a in \"$@\"; do printf '[%s]\\n' \"$a\"; done";

fn bracketed(args: &[&str]) -> String {
    args.iter().map(|a| format!("[{a}]\n")).collect()
}

#[test]
fn exec_form_arguments_reach_the_program_exactly_as_written() {
    let settings = json!({"hooks": {"Stop": [{"hooks": [
        {"command": "./hooks/print-args.sh", "args": AWKWARD}
    ]}]}});
    let out = Test::new()
        .project_script("hooks/print-args.sh", PRINT_ARGS)
        .project_settings(&settings)
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0, "{}", out.stdout());
    assert_eq!(out.outcomes(), ["proceed"]);
    assert_eq!(out.handler(0)["stdout"], bracketed(&AWKWARD));
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
    // The label is the program and its arguments quoted as a shell would need them.
    let label = out.handler(0)["label"].as_str().unwrap().to_string();
    assert_eq!(
        shell_words::split(&label).unwrap(),
        std::iter::once("./hooks/print-args.sh")
            .chain(AWKWARD)
            .collect::<Vec<_>>()
    );
}

#[test]
fn exec_form_through_serve_gives_the_same_arguments() {
    let settings = json!({"hooks": {"Stop": [{"hooks": [
        {"command": "./hooks/print-args.sh", "args": AWKWARD}
    ]}]}});
    let test = Test::new()
        .project_script("hooks/print-args.sh", PRINT_ARGS)
        .project_settings(&settings);
    let answers = server::answers(
        test,
        &[
            json!({"id": 1, "event": "Stop"}),
            json!({"id": 2, "event": "Stop"}),
        ],
    );
    for answer in answers {
        assert_eq!(answer["handlers"][0]["outcome"], "proceed", "{answer}");
        assert_eq!(answer["handlers"][0]["stdout"], bracketed(&AWKWARD));
    }
}

#[test]
fn a_claude_handler_in_exec_form_reads_claude_codes_payload_and_blocks() {
    // `sh -c SCRIPT NAME ARG`: the script gets the reason as `$1`, untouched by any shell.
    let guard = "input=$(cat); case \"$input\" in *'\"tool_name\":\"Bash\"'*) echo \"$1\" >&2; exit 2;; esac";
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "protocol": "claude", "hooks": [
        {"command": "sh", "args": ["-c", guard, "guard", "no \"rm\" here; $HOME stays"]}
    ]}]}});
    let payload = json!({"event": "PreToolUse", "tool_name": "run_terminal_command",
                         "tool_input": {"command": "rm -rf build"}});
    let out = Test::new()
        .project_settings(&settings)
        .payload(&payload)
        .run();
    assert_eq!(out.status(), 2, "{}", out.stdout());
    assert_eq!(out.json()["reason"], "no \"rm\" here; $HOME stays");
    let test = Test::new().project_settings(&settings);
    let mut request = payload.clone();
    request["id"] = json!(7);
    let answer = &server::answers(test, &[request])[0];
    assert_eq!(answer["decision"], "block");
    assert_eq!(answer["reason"], "no \"rm\" here; $HOME stays");
}

#[test]
fn exec_form_problems_are_warnings_naming_the_file_and_field() {
    let settings = json!({"hooks": {"Stop": [{"hooks": [
        {"command": "echo", "args": ["fine"]},
        {"command": "echo", "args": ["a", 2]},
        {"args": ["orphan"]},
        {"command": "echo hi", "shell": "fish"},
        {"argv": ["echo"], "args": ["x"]},
        {"command": " echo", "args": ["x"]}
    ]}]}});
    let out = Test::new().project_settings(&settings).event("Stop").run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.stdouts(), ["fine"], "the valid sibling still runs");
    let file = out.project().join(".levelcode/settings.json");
    let file = file.display().to_string();
    for (path, words) in [
        ("hooks.Stop[0].hooks[1].args", "element 1 is a number"),
        ("hooks.Stop[0].hooks[2].args", "needs command"),
        ("hooks.Stop[0].hooks[3].shell", "\"fish\" is not a shell"),
        ("hooks.Stop[0].hooks[4].args", "goes with command"),
        ("hooks.Stop[0].hooks[5].command", "spaces around it"),
    ] {
        let warning = out.warning(&[path, words]);
        assert!(
            warning.starts_with(&format!("{file}: {path}: ")),
            "{warning}"
        );
    }
    assert_eq!(out.warnings().len(), 5, "{:#?}", out.warnings());
}

/// A NUL byte cannot be an argument: the handler fails to start (so a guard that fails closed
/// still blocks), and `validate` names the file, the field and the element.
#[test]
fn a_nul_byte_in_the_exec_form_is_a_spawn_error_that_validate_names() {
    let settings = json!({"hooks": {"PreToolUse": [{"hooks": [
        {"command": "echo", "args": ["ok", "nul\u{0}byte"], "onFailure": "block"}
    ]}]}});
    let out = Test::new()
        .project_settings(&settings)
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.status(), 2, "{}", out.stdout());
    assert_eq!(out.outcomes(), ["block"]);
    assert!(
        out.json()["reason"]
            .as_str()
            .unwrap()
            .contains("could not start"),
        "{}",
        out.stdout()
    );
    let out = Test::new()
        .project_settings(&settings)
        .args(["validate", "--json"])
        .run();
    assert_eq!(out.status(), 1);
    let problems = out.json()["problems"].as_array().unwrap().clone();
    let nul: Vec<&Value> = problems
        .iter()
        .filter(|p| p["kind"] == "nul_byte")
        .collect();
    assert_eq!(nul.len(), 1, "{problems:#?}");
    assert_eq!(nul[0]["path"], "hooks.PreToolUse[0].hooks[0].args");
    assert!(nul[0]["file"]
        .as_str()
        .unwrap()
        .ends_with(".levelcode/settings.json"));
    let message = nul[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("element 1 contains a NUL byte"),
        "{message}"
    );
}

#[test]
fn powershell_runs_the_command_or_says_what_to_install() {
    let settings = json!({"hooks": {"Stop": [{"hooks": [
        {"command": "Write-Output \"hi there\"", "shell": "powershell"}
    ]}]}});
    let out = Test::new().project_settings(&settings).event("Stop").run();
    if crate::common::runs("pwsh", &["-Version"]) {
        assert_eq!(out.stdouts(), ["hi there"], "{}", out.stdout());
        return;
    }
    assert_eq!(out.outcomes(), ["spawn_error"], "{}", out.stdout());
    let message = out.handler(0)["message"].as_str().unwrap().to_string();
    assert!(message.contains("PowerShell (pwsh)"), "{message}");
}

#[test]
fn list_and_validate_show_the_exec_form() {
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "run_terminal_command", "hooks": [
        {"command": "./hooks/print-args.sh", "args": ["two words", "x"]},
        {"command": "node", "args": ["$CLAUDE_PROJECT_DIR/g.js"]}
    ]}]}});
    let test = || {
        Test::new()
            .project_script("hooks/print-args.sh", PRINT_ARGS)
            .project_settings(&settings)
    };
    let out = test().args(["list", "--json"]).run();
    let handlers = out.json()["handlers"].as_array().unwrap().clone();
    assert_eq!(handlers[0]["command"], "./hooks/print-args.sh");
    assert_eq!(handlers[0]["args"], json!(["two words", "x"]));
    assert_eq!(handlers[0]["argv"], Value::Null);
    assert_eq!(handlers[0]["label"], "./hooks/print-args.sh 'two words' x");
    let out = test().args(["list"]).run();
    assert!(
        out.stdout().contains("./hooks/print-args.sh 'two words' x"),
        "{}",
        out.stdout()
    );
    let out = test().args(["validate", "--json"]).run();
    assert_eq!(out.status(), 1, "{}", out.stdout());
    let problems = out.json()["problems"].as_array().unwrap().clone();
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!(problems[0]["kind"], "variable_not_expanded");
    assert_eq!(problems[0]["path"], "hooks.PreToolUse[0].hooks[1].command");
    assert!(
        problems[0]["message"]
            .as_str()
            .unwrap()
            .contains("without a shell no variable is expanded"),
        "{problems:#?}"
    );
}

// ---------------------------------------------------------------------------------------------
// `import claude`, and the same file read as a layer

/// A realistic Claude Code settings file: the exec form, a commit checker behind an `if`, a
/// shell-form guard, a prompt guard on `UserPromptSubmit`, a handler type levelcode cannot run,
/// fields it does not honour, an event it does not know, and Claude Code's other settings, which
/// are not hooks.
fn claude_settings() -> Value {
    json!({
        "permissions": {"allow": ["Bash(npm test)"]},
        "model": "opus",
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "sh",
                     "args": [".claude/hooks/bash_guard.sh", "--deny", "rm -rf"], "timeout": 5},
                    {"type": "command", "command": "sh", "args": [".claude/hooks/commit_msg.sh"],
                     "if": "Bash(git commit *)"}
                ]},
                {"matcher": "Write|Edit|MultiEdit", "hooks": [
                    {"type": "command", "command": "sh .claude/hooks/protect.sh", "shell": "bash",
                     "onFailure": "block", "statusMessage": "checking the path"}
                ]}
            ],
            "UserPromptSubmit": [{"hooks": [
                {"type": "command", "command": "sh .claude/hooks/prompt.sh"},
                {"type": "prompt", "prompt": "does this prompt leak a secret?"}
            ]}],
            "PermissionRequest": [{"hooks": [{"type": "command", "command": "true"}]}]
        }
    })
}

/// The scripts of [`claude_settings`], as a project keeps them.
fn with_claude_scripts(test: Test) -> Test {
    test.project_file(
        ".claude/hooks/bash_guard.sh",
        "input=$(cat)\ncase \"$input\" in *\"$2\"*) echo \"refused: $2\" >&2; exit 2;; esac\n",
    )
    // A commit-message checker that refuses whatever it is given: its `if` keeps it to commits.
    .project_file(
        ".claude/hooks/commit_msg.sh",
        "cat >/dev/null\necho 'say why in the commit message' >&2\nexit 2\n",
    )
    .project_file(
        ".claude/hooks/protect.sh",
        "input=$(cat)\ncase \"$input\" in *'.env\"'*) printf '%s' '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"secrets stay out\"}}';; esac\n",
    )
    .project_file(
        ".claude/hooks/prompt.sh",
        "input=$(cat)\ncase \"$input\" in\n  *password*) echo '{\"decision\":\"block\",\"reason\":\"no secrets in prompts\"}';;\n  *) echo '{\"hookSpecificOutput\":{\"hookEventName\":\"UserPromptSubmit\",\"additionalContext\":\"ticket ABC-1\"}}';;\nesac\n",
    )
}

#[test]
fn import_keeps_the_exec_form_the_shell_and_the_new_events_and_names_what_it_drops() {
    let out = with_claude_scripts(Test::new())
        .project_file(".claude/settings.json", claude_settings().to_string())
        .args(["import", "claude"])
        .run();
    assert_eq!(out.status(), 0, "{}", out.stderr());
    let expected = r#"{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "protocol": "claude",
        "hooks": [
          {
            "command": "sh",
            "args": [
              ".claude/hooks/bash_guard.sh",
              "--deny",
              "rm -rf"
            ],
            "timeout": 5
          },
          {
            "command": "sh",
            "args": [
              ".claude/hooks/commit_msg.sh"
            ],
            "timeout": 600,
            "if": "Bash(git commit *)"
          }
        ]
      },
      {
        "matcher": "Write|Edit|MultiEdit",
        "protocol": "claude",
        "hooks": [
          {
            "command": "sh .claude/hooks/protect.sh",
            "shell": "bash",
            "timeout": 600,
            "onFailure": "block"
          }
        ]
      }
    ],
    "UserPromptSubmit": [
      {
        "protocol": "claude",
        "hooks": [
          {
            "command": "sh .claude/hooks/prompt.sh",
            "timeout": 30
          }
        ]
      }
    ]
  }
}
"#;
    assert_eq!(out.stdout(), expected);
    let file = out.project().join(".claude/settings.json");
    let file = file.display();
    let expected_notes = format!(
        "levelcode-hooks: {file}: hooks.PreToolUse[1].hooks[0]: \"statusMessage\" is one of Claude Code's fields that levelcode does not honour: levelcode shows no status line while a handler runs; the handler was imported without it\n\
         levelcode-hooks: {file}: hooks.UserPromptSubmit[0].hooks[1]: a handler of type \"prompt\"; levelcode runs only \"command\", \"http\" handlers, so it was left out\n\
         levelcode-hooks: {file}: hooks.PermissionRequest: levelcode-hooks knows no event PermissionRequest (it knows SessionStart, PreToolUse, PostToolUse, Stop, UserPromptSubmit, SessionEnd, PostToolUseFailure, SubagentStart, SubagentStop, PreCompact, Notification); its 1 group(s) were left out\n"
    );
    assert_eq!(out.stderr(), expected_notes);
}

/// Payloads each of [`claude_settings`]'s guards decides, one way or the other.
fn round_trip_payloads() -> Vec<Value> {
    vec![
        json!({"event": "PreToolUse", "tool_name": "run_terminal_command",
               "tool_input": {"command": "rm -rf build"}}),
        json!({"event": "PreToolUse", "tool_name": "run_terminal_command",
               "tool_input": {"command": "ls -la"}}),
        json!({"event": "PreToolUse", "tool_name": "run_terminal_command",
               "tool_input": {"command": "git add . && git commit -m x"}}),
        json!({"event": "PreToolUse", "tool_name": "run_terminal_command",
               "tool_input": {"command": "git status"}}),
        json!({"event": "PreToolUse", "tool_name": "write_file",
               "tool_input": {"path": ".env", "content": "KEY=1"}}),
        json!({"event": "PreToolUse", "tool_name": "write_file",
               "tool_input": {"path": "src/main.rs", "content": "fn main() {}"}}),
        json!({"event": "PreToolUse", "tool_name": "str_replace",
               "tool_input": {"path": "config/../.env", "replacements": [{"old": "a", "new": "b"}]}}),
        json!({"event": "UserPromptSubmit", "prompt": "my password is hunter2"}),
        json!({"event": "UserPromptSubmit", "prompt": "fix the failing test"}),
        json!({"event": "PostToolUse", "tool_name": "run_terminal_command",
               "tool_input": {"command": "rm -rf build"}, "tool_result": "ok"}),
    ]
}

/// What a dispatch decided, without what says where the hooks were written.
fn decisions(out: &crate::common::Output) -> Value {
    let answer = out.json();
    json!({
        "status": out.status(),
        "decision": answer["decision"],
        "reason": answer["reason"],
        "additionalContext": answer["additionalContext"],
        "outcomes": out.outcomes(),
        "labels": out.labels(),
    })
}

#[test]
fn a_claude_code_file_read_as_a_layer_decides_as_its_import_does() {
    let imported = with_claude_scripts(Test::new())
        .project_file(".claude/settings.json", claude_settings().to_string())
        .args(["import", "claude", "--write"])
        .run();
    assert_eq!(imported.status(), 0, "{}", imported.stderr());
    let levelcode = imported.project_text(".levelcode/settings.json");
    let expected = [
        ("block", Some("refused: rm -rf")),
        ("proceed", None),
        ("block", Some("say why in the commit message")),
        ("proceed", None),
        ("block", Some("secrets stay out")),
        ("proceed", None),
        ("block", Some("secrets stay out")),
        ("block", Some("no secrets in prompts")),
        ("proceed", None),
        ("proceed", None),
    ];
    for (payload, (decision, reason)) in round_trip_payloads().iter().zip(expected) {
        // The import, in the project layer, with Claude Code's own file not read.
        let by_import = with_claude_scripts(Test::new())
            .project_file(".claude/settings.json", claude_settings().to_string())
            .project_settings(&levelcode)
            .payload(payload)
            .run();
        // The file itself as a layer, nothing imported.
        let by_layer = with_claude_scripts(Test::new())
            .user_settings(json!({"claudeCodeHooks": true}))
            .project_file(".claude/settings.json", claude_settings().to_string())
            .payload(payload)
            .run();
        assert_eq!(decisions(&by_layer), decisions(&by_import), "{payload}");
        assert_eq!(
            by_layer.decision(),
            decision,
            "{payload}: {}",
            by_layer.stdout()
        );
        assert_eq!(by_layer.json()["reason"].as_str(), reason, "{payload}");
        assert!(
            by_layer
                .handlers()
                .iter()
                .all(|h| h["layer"] == "claude-project" && h["protocol"] == "claude"),
            "{}",
            by_layer.stdout()
        );
        assert!(
            by_import.handlers().iter().all(|h| h["layer"] == "project"),
            "{}",
            by_import.stdout()
        );
    }
    let context = with_claude_scripts(Test::new())
        .user_settings(json!({"claudeCodeHooks": true}))
        .project_file(".claude/settings.json", claude_settings().to_string())
        .payload(&round_trip_payloads()[8])
        .run();
    assert_eq!(context.json()["additionalContext"], "ticket ABC-1");
}

// ---------------------------------------------------------------------------------------------
// Claude Code's files as layers

/// `$HOME/.claude/settings.json`.
fn claude_user(test: Test, settings: &Value) -> Test {
    let path = test.home().join(".claude/settings.json");
    crate::common::write(&path, settings.to_string());
    test
}

fn stop_echo(word: &str) -> Value {
    crate::common::on("Stop", &format!("echo {word}"))
}

fn layers_of(out: &crate::common::Output) -> Vec<String> {
    out.handlers()
        .iter()
        .map(|h| h["layer"].as_str().unwrap().to_string())
        .collect()
}

/// Every layer, each with a `Stop` handler naming it, and the switch on in the user layer.
fn every_layer(test: Test) -> Test {
    let mut user = stop_echo("user");
    user["claudeCodeHooks"] = json!(true);
    claude_user(test, &stop_echo("claude-user"))
        .user_settings(user)
        .data_settings(stop_echo("data"))
        .project_settings(stop_echo("project"))
        .project_file(
            ".claude/settings.json",
            stop_echo("claude-project").to_string(),
        )
        .project_file(
            ".claude/settings.local.json",
            stop_echo("claude-local").to_string(),
        )
}

#[test]
fn with_the_switch_on_claude_codes_files_are_layers_after_levelcodes_of_their_level() {
    let out = every_layer(Test::new()).event("Stop").run();
    assert_eq!(out.status(), 0, "{}", out.stdout());
    let order = [
        "user",
        "data",
        "claude-user",
        "project",
        "claude-project",
        "claude-local",
    ];
    assert_eq!(layers_of(&out), order);
    assert_eq!(out.stdouts(), order);
    let protocols: Vec<String> = out
        .handlers()
        .iter()
        .map(|h| h["protocol"].as_str().unwrap_or("levelcode").to_string())
        .collect();
    assert_eq!(
        protocols,
        [
            "levelcode",
            "levelcode",
            "claude",
            "levelcode",
            "claude",
            "claude"
        ]
    );
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
    // A handler there without a timeout gets the one `import` would give it.
    let listed = every_layer(Test::new()).args(["list", "--json"]).run();
    let handlers = listed.json()["handlers"].as_array().unwrap().clone();
    let claude = handlers
        .iter()
        .find(|h| h["layer"] == "claude-local")
        .unwrap();
    assert_eq!(claude["timeout"], 600.0);
    assert_eq!(claude["protocol"], "claude");
}

/// Claude Code's handlers without a `timeout`, one under each event whose default its hooks
/// reference gives apart (docs/claude-code.md).
fn claude_without_timeouts() -> Value {
    let handler = || json!([{"hooks": [{"type": "command", "command": "true"}]}]);
    json!({"hooks": {
        "PreToolUse": handler(),
        "Stop": handler(),
        "UserPromptSubmit": handler(),
        "SessionEnd": handler()
    }})
}

#[test]
fn a_claude_handler_without_a_timeout_gets_claude_codes_default_for_its_event() {
    let expected = [
        ("PreToolUse", 600.0),
        ("Stop", 600.0),
        ("UserPromptSubmit", 30.0),
        ("SessionEnd", 1.5),
    ];
    // Read as a layer, as `list` shows it; levelcode's own layer keeps levelcode's 10 s.
    let listed = claude_user(Test::new(), &claude_without_timeouts())
        .user_settings(
            json!({"claudeCodeHooks": true, "hooks": claude_without_timeouts()["hooks"]}),
        )
        .args(["list", "--json"])
        .run();
    assert_eq!(listed.status(), 0, "{}", listed.stderr());
    let handlers = listed.json()["handlers"].as_array().unwrap().clone();
    for (event, secs) in expected {
        let of = |layer: &str| {
            handlers
                .iter()
                .find(|h| h["event"] == event && h["layer"] == layer)
                .unwrap_or_else(|| panic!("no {layer} handler for {event}: {handlers:#?}"))
                ["timeout"]
                .clone()
        };
        assert_eq!(of("claude-user"), secs, "{event}");
        assert_eq!(of("user"), 10.0, "{event}");
    }
    // Imported, each handler is written with the same number.
    let imported = Test::new()
        .project_file(
            ".claude/settings.json",
            claude_without_timeouts().to_string(),
        )
        .args(["import", "claude"])
        .run();
    assert_eq!(imported.status(), 0, "{}", imported.stderr());
    let hooks = serde_json::from_str::<Value>(&imported.stdout()).unwrap()["hooks"].clone();
    for (event, secs) in expected {
        assert_eq!(hooks[event][0]["hooks"][0]["timeout"], secs, "{event}");
    }
    assert!(
        imported.stdout().contains("\"timeout\": 600\n"),
        "a whole number is written whole: {}",
        imported.stdout()
    );
    // The dispatch itself: a `SessionEnd` handler that takes 5 s is cut at Claude Code's
    // 1.5 s, where levelcode's own default of 10 s would have let it finish.
    let slow =
        json!({"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "sleep 5"}]}]}});
    let out = claude_user(Test::new(), &slow)
        .user_settings(json!({"claudeCodeHooks": true}))
        .event("SessionEnd")
        .run();
    assert_eq!(out.status(), 0, "{}", out.stdout());
    assert_eq!(layers_of(&out), ["claude-user"]);
    assert_eq!(out.handler(0)["outcome"], "timeout", "{}", out.stdout());
}

#[test]
fn the_switch_counts_in_the_data_layer_and_nowhere_else() {
    let out = claude_user(Test::new(), &stop_echo("claude-user"))
        .data_settings(json!({"claudeCodeHooks": true}))
        .event("Stop")
        .run();
    assert_eq!(layers_of(&out), ["claude-user"]);
    // In the project layer, or in Claude Code's own file, it turns nothing on.
    let mut project = stop_echo("project");
    project["claudeCodeHooks"] = json!(true);
    let mut own = stop_echo("claude-user");
    own["claudeCodeHooks"] = json!(true);
    let test = || {
        claude_user(Test::new(), &own)
            .project_settings(&project)
            .project_file(
                ".claude/settings.json",
                stop_echo("claude-project").to_string(),
            )
    };
    let out = test().event("Stop").run();
    assert_eq!(layers_of(&out), ["project"]);
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
    let out = test().args(["validate", "--json"]).run();
    let problems = out.json()["problems"].as_array().unwrap().clone();
    assert!(
        problems
            .iter()
            .any(|p| p["kind"] == "ignored_outside_user_and_data"
                && p["layer"] == "project"
                && p["path"] == "claudeCodeHooks"),
        "{problems:#?}"
    );
    // Not a boolean: a warning naming the file, and off.
    let out = claude_user(Test::new(), &stop_echo("claude-user"))
        .user_settings(json!({"claudeCodeHooks": "yes"}))
        .event("Stop")
        .run();
    assert!(out.handlers().is_empty(), "{}", out.stdout());
    out.warning(&[
        ".config/levelcode/settings.json",
        "claudeCodeHooks must be true or false",
    ]);
}

/// With the switch off, Claude Code's files are not even opened: one that is a FIFO would give a
/// warning if it were, and one that is invalid JSON would too.
#[test]
fn with_the_switch_off_claude_codes_files_are_not_read_at_all() {
    let test = || {
        let test = claude_user(Test::new(), &stop_echo("claude-user"))
            .user_settings(stop_echo("user"))
            .project_file(".claude/settings.local.json", "{ not json");
        let fifo = test.project().join(".claude/settings.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        test
    };
    let out = test().arg("-v").event("Stop").run();
    assert_eq!(layers_of(&out), ["user"]);
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
    assert!(
        out.stderr().contains("claude-project layer: ")
            && out
                .stderr()
                .contains("(off: no user or data layer sets \"claudeCodeHooks\": true)"),
        "{}",
        out.stderr()
    );
    let out = test().args(["list", "--json"]).run();
    let layers: Vec<String> = out.json()["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["layer"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(layers, ["user", "data", "project"]);
    let out = test().arg("validate").run();
    assert_eq!(out.status(), 0, "{}", out.stdout());
    // What a served answer depends on leaves them out too: a client watches none of them.
    let answers = server::answers(
        test(),
        &[json!({"id": 1, "event": "Stop", "options": {"watch": true}})],
    );
    let watched = answers[0]["watch"].as_array().unwrap();
    assert!(!watched.is_empty());
    assert!(
        !watched
            .iter()
            .any(|w| w[0].as_str().unwrap().contains(".claude")),
        "{watched:?}"
    );
}

#[test]
fn no_project_the_kill_switch_and_managed_hooks_only_apply_to_claude_codes_layers() {
    let out = every_layer(Test::new())
        .arg("--no-project")
        .event("Stop")
        .run();
    assert_eq!(layers_of(&out), ["user", "data", "claude-user"]);
    let out = every_layer(Test::new())
        .env("LEVELCODE_HOOKS_NO_PROJECT", "1")
        .event("Stop")
        .run();
    assert_eq!(layers_of(&out), ["user", "data", "claude-user"]);
    let out = every_layer(Test::new())
        .env("LEVELCODE_HOOKS", "0")
        .event("Stop")
        .run();
    assert!(out.handlers().is_empty(), "{}", out.stdout());
    // The managed layer's managedHooksOnly keeps them out with the rest, and says how many.
    let test = every_layer(Test::new());
    let policy = test.root().join("policy/managed-settings.json");
    let mut managed = stop_echo("managed");
    managed["managedHooksOnly"] = json!(true);
    crate::common::write(&policy, managed.to_string());
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&policy, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = test
        .env("LEVELCODE_MANAGED_SETTINGS", &policy)
        .event("Stop")
        .run();
    assert_eq!(layers_of(&out), ["managed"]);
    out.warning(&["managedHooksOnly", "6 handler(s)"]);
}

#[test]
fn list_and_validate_show_claude_codes_layers_by_name() {
    let test = || {
        let mut settings = claude_settings();
        settings["hooks"]["Stop"] = json!([{"hooks": [{"command": "true", "timeout": "soon"}]}]);
        with_claude_scripts(every_layer(Test::new()))
            .project_file(".claude/settings.json", settings.to_string())
    };
    let out = test().args(["list", "--json"]).run();
    let listing = out.json();
    let layers: Vec<(String, String)> = listing["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["layer"].as_str().unwrap().to_string(),
                l["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let read = |name: &str| (name.to_string(), "read".to_string());
    assert_eq!(
        layers,
        [
            read("user"),
            (String::from("data"), String::from("read")),
            read("claude-user"),
            read("project"),
            read("claude-project"),
            read("claude-local")
        ]
    );
    let handler = listing["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["command"] == "sh")
        .unwrap()
        .clone();
    assert_eq!(handler["layer"], "claude-project");
    assert_eq!(
        handler["args"],
        json!([".claude/hooks/bash_guard.sh", "--deny", "rm -rf"])
    );
    let text = test().arg("list").run().stdout();
    for name in ["claude-user", "claude-project", "claude-local"] {
        assert!(text.contains(name), "{name}: {text}");
    }
    let out = test().args(["validate", "--json"]).run();
    assert_eq!(out.status(), 1);
    let problems = out.json()["problems"].as_array().unwrap().clone();
    let ours: Vec<(&str, &str, &str)> = problems
        .iter()
        .filter(|p| p["layer"] == "claude-project")
        .map(|p| {
            (
                p["kind"].as_str().unwrap(),
                p["path"].as_str().unwrap_or(""),
                p["message"].as_str().unwrap(),
            )
        })
        .collect();
    let kinds: Vec<(&str, &str)> = ours.iter().map(|(k, p, _)| (*k, *p)).collect();
    assert!(
        kinds.contains(&("not_honoured", "hooks.PreToolUse[1].hooks[0].statusMessage")),
        "{ours:#?}"
    );
    assert!(
        kinds.contains(&("invalid_entry", "hooks.UserPromptSubmit[0].hooks[1].type")),
        "{ours:#?}"
    );
    assert!(
        kinds.contains(&("timeout", "hooks.Stop[0].hooks[0].timeout")),
        "{ours:#?}"
    );
    assert!(
        kinds.contains(&("unknown_event", "hooks.PermissionRequest")),
        "{ours:#?}"
    );
    // Claude Code's other settings are its own: not a word about them.
    assert!(
        !problems.iter().any(|p| {
            let text = p.to_string();
            text.contains("permissions") || text.contains("\"model\"")
        }),
        "{problems:#?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Trust of Claude Code's project files

/// A HOME and a project that outlive one command, without the harness's opt-in to trust, and
/// with Claude Code's files turned on.
struct Place {
    sandbox: crate::common::Sandbox,
}

impl Place {
    fn new() -> Place {
        let place = Place {
            sandbox: crate::common::Sandbox::new(),
        };
        place.write(
            &place.home().join(".config/levelcode/settings.json"),
            &json!({"claudeCodeHooks": true}),
        );
        place
    }

    fn home(&self) -> std::path::PathBuf {
        self.sandbox.home()
    }

    fn project(&self) -> std::path::PathBuf {
        self.sandbox.project()
    }

    fn write(&self, path: &std::path::Path, value: &Value) {
        crate::common::write(path, value.to_string());
    }

    /// `args` with `stdin`: exit status, stdout, stderr.
    fn exec(&self, args: &[&str], stdin: &str) -> (i32, String, String) {
        use std::io::Write as _;
        let mut child = crate::common::command(&self.home(), &self.project())
            .env_remove(crate::common::TRUST)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn stop(&self) -> Value {
        let (_, stdout, stderr) = self.exec(&["run"], r#"{"event":"Stop"}"#);
        serde_json::from_str(stdout.trim_end()).unwrap_or_else(|e| panic!("{e}: {stdout} {stderr}"))
    }

    fn status(&self) -> (i32, Value) {
        let dir = self.project().display().to_string();
        let (code, stdout, stderr) =
            self.exec(&["trust", "--status", "--json", "--project-dir", &dir], "");
        let value = serde_json::from_str(stdout.trim_end())
            .unwrap_or_else(|e| panic!("{e}: {stdout} {stderr}"));
        (code, value)
    }

    fn trust(&self, extra: &[&str]) -> (i32, String, String) {
        let dir = self.project().display().to_string();
        let mut args = vec!["trust", "--project-dir", dir.as_str()];
        args.extend_from_slice(extra);
        self.exec(&args, "")
    }
}

fn stdouts_of(answer: &Value) -> Vec<String> {
    answer["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["stdout"].as_str().unwrap().trim().to_string())
        .collect()
}

#[test]
fn claude_project_hooks_run_only_once_trusted_and_stop_when_edited() {
    let place = Place::new();
    let settings =
        json!({"hooks": {"Stop": [{"hooks": [{"command": "sh .claude/hooks/done.sh"}]}]}});
    place.write(&place.project().join(".claude/settings.json"), &settings);
    crate::common::write(
        &place.project().join(".claude/hooks/done.sh"),
        "echo done\n",
    );

    let answer = place.stop();
    assert!(
        answer["handlers"].as_array().unwrap().is_empty(),
        "{answer}"
    );
    let file = place.project().join(".claude/settings.json");
    let warnings = answer["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{answer}");
    let warning = warnings[0].as_str().unwrap();
    assert!(
        warning.starts_with(&format!(
            "{}: the project's hooks (layer claude-project) are not trusted; 1 handler(s) skipped",
            file.display()
        )) && warning.contains("levelcode-hooks trust --project-dir"),
        "{warning}"
    );
    assert_eq!(answer["project_trust"]["layer"], "claude-project");
    assert_eq!(answer["project_trust"]["state"], "untrusted");
    assert_eq!(answer["project_trust"]["path"], file.display().to_string());

    let (code, stdout, stderr) = place.trust(&["--yes"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("(layer claude-project)"), "{stdout}");
    assert!(stdout.contains("Files in .claude/hooks/"), "{stdout}");
    assert!(
        stdout.contains(".claude/hooks/done.sh  sha256:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Trusted 1 handler(s) of layer claude-project"),
        "{stdout}"
    );
    let answer = place.stop();
    assert_eq!(stdouts_of(&answer), ["done"], "{answer}");
    assert_eq!(answer["handlers"][0]["layer"], "claude-project");
    assert!(answer.get("project_trust").is_none(), "{answer}");

    // A script in Claude Code's hooks folder changes: trusted no longer.
    crate::common::write(
        &place.project().join(".claude/hooks/done.sh"),
        "echo edited\n",
    );
    let answer = place.stop();
    assert!(
        answer["handlers"].as_array().unwrap().is_empty(),
        "{answer}"
    );
    assert_eq!(answer["project_trust"]["state"], "changed");
    let (code, status) = place.status();
    assert_eq!(code, 4, "{status}");
    assert_eq!(status["layer"], "claude-project");
}

#[test]
fn each_file_inside_the_project_has_its_own_digest() {
    let place = Place::new();
    place.write(
        &place.project().join(".levelcode/settings.json"),
        &stop_echo("levelcode"),
    );
    place.write(
        &place.project().join(".claude/settings.json"),
        &stop_echo("claude"),
    );
    place.write(
        &place.project().join(".claude/settings.local.json"),
        &stop_echo("local"),
    );
    let (code, status) = place.status();
    assert_eq!(code, 3, "{status}");
    let layers = status["layers"].as_array().unwrap().clone();
    let names: Vec<&str> = layers
        .iter()
        .map(|l| l["layer"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["project", "claude-project", "claude-local"]);
    let digests: Vec<String> = layers
        .iter()
        .map(|l| l["digest"].as_str().unwrap().to_string())
        .collect();
    assert!(
        digests[0] != digests[1] && digests[1] != digests[2],
        "{digests:?}"
    );
    // The same hooks in levelcode's file and in Claude Code's still have two digests.
    place.write(
        &place.project().join(".claude/settings.json"),
        &stop_echo("levelcode"),
    );
    let (_, again) = place.status();
    assert_ne!(again["layers"][0]["digest"], again["layers"][1]["digest"]);

    // Without a terminal, the refusal names every digest to pass.
    let (code, _, stderr) = place.trust(&[]);
    assert_eq!(code, 1);
    let digests: Vec<String> = again["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["digest"].as_str().unwrap().to_string())
        .collect();
    for digest in &digests {
        assert!(stderr.contains(&format!("--digest {digest}")), "{stderr}");
    }
    // Trusting Claude Code's shared file trusts it alone.
    let (code, _, stderr) = place.trust(&["--digest", &digests[1]]);
    assert_eq!(code, 0, "{stderr}");
    let answer = place.stop();
    assert_eq!(stdouts_of(&answer), ["levelcode"], "{answer}");
    assert_eq!(answer["handlers"][0]["layer"], "claude-project");
    let warnings: Vec<&str> = answer["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(warnings[0].contains(".levelcode/settings.json: the project's hooks are not trusted"));
    assert!(warnings[1].contains("(layer claude-local) are not trusted"));
    assert_eq!(answer["project_trust"]["layer"], "project");
    // The other two, each by its digest.
    let (code, _, stderr) = place.trust(&["--digest", &digests[0], "--digest", &digests[2]]);
    assert_eq!(code, 0, "{stderr}");
    let answer = place.stop();
    assert_eq!(
        stdouts_of(&answer),
        ["levelcode", "", "local"],
        "the same command ran once, in the first layer: {answer}"
    );
    assert_eq!(answer["handlers"][1]["outcome"], "duplicate");
    let (code, status) = place.status();
    assert_eq!(code, 0, "{status}");
    // A denial covers every file of the project, and a revocation forgets them all.
    let (code, _, _) = place.trust(&["--deny"]);
    assert_eq!(code, 0);
    let (code, status) = place.status();
    assert_eq!(code, 5, "{status}");
    assert!(
        status["layers"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["state"] == "denied"),
        "{status}"
    );
    let (code, _, _) = place.trust(&["--revoke"]);
    assert_eq!(code, 0);
    let (code, status) = place.status();
    assert_eq!(code, 3, "{status}");
    let store =
        std::fs::read_to_string(place.home().join(".levelcode/trusted-hooks.json")).unwrap();
    let store: Value = serde_json::from_str(&store).unwrap();
    assert_eq!(store["projects"], json!({}), "{store}");
}

#[test]
fn the_opt_ins_trust_claude_codes_project_files_too() {
    let place = Place::new();
    place.write(
        &place.project().join(".claude/settings.json"),
        &stop_echo("claude"),
    );
    let (_, stdout, _) = place.exec(&["run"], r#"{"event":"Stop"}"#);
    assert!(stdout.contains("\"project_trust\""), "{stdout}");
    let dir = place.project().display().to_string();
    let mut command = crate::common::command(&place.home(), &place.project());
    let out = command
        .args(["run", "--project-dir", &dir])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    let mut out = out;
    out.stdin
        .take()
        .unwrap()
        .write_all(br#"{"event":"Stop"}"#)
        .unwrap();
    let out = out.wait_with_output().unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        stdouts_of(&answer),
        ["claude"],
        "LEVELCODE_TRUST_PROJECT_HOOKS=1: {answer}"
    );
    place.write(
        &place.home().join(".config/levelcode/settings.json"),
        &json!({"claudeCodeHooks": true, "trustAllProjectHooks": true}),
    );
    assert_eq!(stdouts_of(&place.stop()), ["claude"]);
}

#[test]
fn serve_asks_and_records_trust_for_claude_codes_files_and_sees_their_edits() {
    let place = Place::new();
    place.write(
        &place.project().join(".claude/settings.json"),
        &stop_echo("first"),
    );
    let requests = [
        json!({"id": 1, "op": "trust_status"}),
        json!({"id": 2, "event": "Stop"}),
    ];
    let lines: String = requests.iter().map(|r| format!("{r}\n")).collect();
    let (code, stdout, stderr) = place.exec(&["serve"], &lines);
    assert_eq!(code, 0, "{stderr}");
    let mut answers: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    answers.sort_by_key(|a| a["id"].as_u64());
    let status = &answers[0]["project_trust"];
    assert_eq!(status["layer"], "claude-project", "{status}");
    assert_eq!(status["state"], "untrusted");
    assert_eq!(status["layers"][0]["layer"], "claude-project");
    assert_eq!(status["hooks"][0]["command"], "echo first");
    assert_eq!(answers[1]["project_trust"]["layer"], "claude-project");
    let digest = status["digest"].as_str().unwrap().to_string();

    // One server: trust by the digest, dispatch, edit the file, dispatch again.
    use std::io::{BufRead as _, Write as _};
    let mut child = crate::common::command(&place.home(), &place.project())
        .env_remove(crate::common::TRUST)
        .arg("serve")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = |request: Value| -> Value {
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap()
    };
    let trusted = ask(json!({"id": 3, "op": "trust", "digest": digest}));
    assert_eq!(trusted["project_trust"]["state"], "trusted", "{trusted}");
    let answer = ask(json!({"id": 4, "event": "Stop", "options": {"watch": true}}));
    assert_eq!(stdouts_of(&answer), ["first"], "{answer}");
    let watched: Vec<String> = answer["watch"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w[0].as_str().unwrap().to_string())
        .collect();
    let file = place
        .project()
        .join(".claude/settings.json")
        .display()
        .to_string();
    assert!(watched.contains(&file), "{watched:?}");
    place.write(
        &place.project().join(".claude/settings.json"),
        &stop_echo("second"),
    );
    let answer = ask(json!({"id": 5, "event": "Stop"}));
    assert!(
        answer["handlers"].as_array().unwrap().is_empty(),
        "{answer}"
    );
    assert_eq!(answer["project_trust"]["state"], "changed", "{answer}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
