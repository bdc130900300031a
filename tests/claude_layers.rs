//! Claude Code's configurations, black-box: the exec form (`command` with `args`, contract §16),
//! `import claude` of a file that uses it, and Claude Code's own settings files read as layers
//! when the person opts in (contract §12), trusted as the project layer is (§13).

use serde_json::{json, Value};

use crate::common::Test;

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

/// The answers of one `serve` fed `requests`, by their `id`.
fn serve(test: Test, requests: &[Value]) -> Vec<Value> {
    let lines: String = requests.iter().map(|r| format!("{r}\n")).collect();
    let out = test.arg("serve").stdin(lines).run();
    assert_eq!(out.status(), 0, "{}", out.stderr());
    let mut answers: Vec<Value> = out
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    answers.sort_by_key(|a| a["id"].as_u64());
    assert_eq!(answers.len(), requests.len(), "{}", out.stdout());
    answers
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
    let answers = serve(
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
    let answer = &serve(test, &[request])[0];
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
