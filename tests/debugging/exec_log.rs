//! The execution log (`LEVELCODE_HOOKS_LOG`), and `log` and `stats` that read it.

use serde_json::{json, Value};

use super::{strings, Env};

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn every_dispatch_appends_one_line() {
    let env = Env::new();
    env.project_settings(
        r#"{"hooks":{"PreToolUse":[{"matcher":"write_file","hooks":[
            {"name":"loud","command":"head -c 5000 /dev/zero | tr '\\0' x"},
            {"name":"guard","command":"echo nope >&2; exit 2"}]}],
          "Stop":[{"hooks":[{"command":"echo bye"}]}]}}"#,
    );
    let log = env.scratch("logs/hooks.jsonl");
    let log_var = [("LEVELCODE_HOOKS_LOG", log.to_str().unwrap())];
    env.run_stdin(&["run"], &log_var, r#"{"event":"Stop"}"#)
        .status(0);
    env.run_env(
        &["test", "--event", "PreToolUse", "--tool", "write_file"],
        &log_var,
    )
    .status(2);
    // Without the variable nothing is written.
    env.run_stdin(&["run"], &[], r#"{"event":"Stop"}"#)
        .status(0);

    let entries = lines(&log);
    assert_eq!(entries.len(), 2);
    let stop = &entries[0];
    assert_eq!(stop["event"], "Stop");
    assert_eq!(stop["decision"], "proceed");
    assert!(stop["tool"].is_null());
    assert_eq!(stop["handlers"][0]["label"], "echo bye");
    assert_eq!(stop["handlers"][0]["stdout"], "bye\n");
    let time = stop["time"].as_str().unwrap();
    assert_eq!(time.len(), "2024-05-01T12:34:56.789Z".len(), "{time}");
    assert!(time.ends_with('Z') && time.as_bytes()[10] == b'T', "{time}");

    let pre = &entries[1];
    assert_eq!(pre["tool"], "write_file");
    assert_eq!(pre["decision"], "block");
    assert_eq!(pre["reason"], "nope");
    let loud = &pre["handlers"][0];
    assert_eq!(loud["outcome"], "proceed");
    assert_eq!(loud["exit_code"], 0);
    assert!(loud["duration_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(loud["stdout"].as_str().unwrap().len(), 1024);
    assert_eq!(loud["output_truncated"], true);
    assert_eq!(pre["handlers"][1]["outcome"], "block");
    assert_eq!(pre["handlers"][1]["exit_code"], 2);

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&log).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "the log holds hook output: owner only");
    }
}

#[test]
fn concurrent_dispatches_never_interleave() {
    let env = Env::new();
    env.project_settings(
        r#"{"hooks":{"Stop":[{"hooks":[
            {"command":"head -c 3000 /dev/zero | tr '\\0' a"},
            {"command":"head -c 3000 /dev/zero | tr '\\0' b >&2"}]}]}}"#,
    );
    let log = env.scratch("hooks.jsonl");
    let children: Vec<_> = (0..24)
        .map(|_| {
            let mut cmd = env.command(&["test", "--event", "Stop"]);
            cmd.env("LEVELCODE_HOOKS_LOG", &log)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            cmd.spawn().unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let entries = lines(&log);
    assert_eq!(entries.len(), 24);
    for entry in &entries {
        assert_eq!(entry["handlers"][0]["stdout"], "a".repeat(1024));
        assert_eq!(entry["handlers"][1]["stderr"], "b".repeat(1024));
    }
}

#[test]
fn a_log_that_cannot_be_written_is_a_warning() {
    let env = Env::new();
    env.project_settings(r#"{"hooks":{"Stop":[{"hooks":[{"command":"true"}]}]}}"#);
    let dir = env.scratch("a-directory");
    std::fs::create_dir_all(&dir).unwrap();
    let out = env.run_stdin(
        &["run"],
        &[("LEVELCODE_HOOKS_LOG", dir.to_str().unwrap())],
        r#"{"event":"Stop"}"#,
    );
    out.status(0);
    let json = out.json();
    assert_eq!(json["decision"], "proceed");
    let warning = json["warnings"][0].as_str().unwrap();
    assert!(warning.contains("LEVELCODE_HOOKS_LOG"), "{warning}");
    assert!(warning.contains("not recorded"), "{warning}");
}

/// A log written by hand: known durations and outcomes.
fn sample_log(env: &Env) -> std::path::PathBuf {
    let entry = |event: &str, handlers: Value| {
        json!({"time":"2024-05-01T12:00:00.000Z","event":event,"tool":null,
               "decision":"proceed","duration_ms":1.0,"handlers":handlers,"warnings":[]})
        .to_string()
    };
    let handler = |label: &str, outcome: &str, ms: f64| {
        json!({"label":label,"layer":"project","source":"/p/s.json","outcome":outcome,
               "exit_code":0,"signal":null,"duration_ms":ms,"stdout":"","stderr":"",
               "output_truncated":false})
    };
    let mut text = String::new();
    for i in 1..=20 {
        let outcome = match i {
            3 | 7 => "block",
            5 => "error",
            9 => "timeout",
            _ => "proceed",
        };
        let hs = json!([
            handler("slow", outcome, f64::from(i) * 10.0),
            handler("fast", "proceed", 1.0),
            handler("after", "skipped", 0.0)
        ]);
        text.push_str(&entry("PreToolUse", hs));
        text.push('\n');
    }
    text.push_str("this line is not JSON\n");
    text.push_str(&entry("Stop", json!([handler("bye", "spawn_error", 2.0)])));
    text.push('\n');
    let path = env.scratch("sample.jsonl");
    env.write(&path, &text);
    path
}

#[test]
fn stats_summarise_each_handler() {
    let env = Env::new();
    let log = sample_log(&env);
    let out = env.run_env(
        &["stats", "--json"],
        &[("LEVELCODE_HOOKS_LOG", log.to_str().unwrap())],
    );
    out.status(0);
    assert!(
        out.stderr.contains("1 line(s) are not log entries"),
        "{}",
        out.stderr
    );
    let json = out.json();
    assert_eq!(json["dispatches"], 21);
    let handlers = &json["handlers"];
    // Slowest first; skipped handlers did not run.
    assert_eq!(strings(handlers, "label"), ["slow", "bye", "fast"]);
    let slow = &handlers[0];
    assert_eq!(slow["runs"], 20);
    assert_eq!(slow["blocks"], 2);
    assert_eq!(slow["errors"], 1);
    assert_eq!(slow["timeouts"], 1);
    assert_eq!(slow["median_ms"], 105.0);
    assert_eq!(slow["p95_ms"], 190.0);
    assert_eq!(slow["max_ms"], 200.0);
    assert_eq!(handlers[1]["errors"], 1);
    assert_eq!(handlers[1]["event"], "Stop");

    let only_stop = env
        .run(&[
            "stats",
            "--json",
            "--event",
            "Stop",
            "--file",
            log.to_str().unwrap(),
        ])
        .status(0)
        .json();
    assert_eq!(strings(&only_stop["handlers"], "label"), ["bye"]);

    let table = env
        .run(&["stats", "--file", log.to_str().unwrap()])
        .status(0)
        .stdout
        .clone();
    assert!(table.contains("HANDLER"), "{table}");
    let slow_row = table.lines().find(|l| l.starts_with("slow ")).unwrap();
    assert!(
        slow_row.contains("105.0 ms") && slow_row.contains("190.0 ms"),
        "{slow_row}"
    );
}

#[test]
fn log_shows_the_most_recent_entries() {
    let env = Env::new();
    let log = sample_log(&env);
    let file = log.to_str().unwrap();
    let out = env.run(&["log", "-n", "2", "--json", "--file", file]);
    out.status(0);
    let shown: Vec<&str> = out.stdout.lines().collect();
    let all: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(String::from)
        .collect();
    assert_eq!(shown, all[all.len() - 2..]);

    let text = env
        .run(&["log", "-n", "1", "--file", file])
        .status(0)
        .stdout
        .clone();
    assert!(
        text.starts_with("2024-05-01T12:00:00.000Z  Stop  proceed"),
        "{text}"
    );
    assert!(text.contains("spawn_error"), "{text}");
    assert!(!text.contains("PreToolUse"), "{text}");
}

#[test]
fn log_without_a_file_says_how_to_get_one() {
    let env = Env::new();
    let out = env.run(&["log"]);
    out.status(1);
    assert!(out.stderr.contains("LEVELCODE_HOOKS_LOG"), "{}", out.stderr);
    let out = env.run(&[
        "stats",
        "--file",
        env.scratch("none.jsonl").to_str().unwrap(),
    ]);
    out.status(0);
    assert!(out.stdout.contains("0 dispatch(es)"), "{}", out.stdout);
}

/// A log line says which project the dispatch ran for and what the tool was given (its first
/// 200 bytes), and `stats` counts the same handler in two projects as two rows, each naming
/// its project.
#[test]
fn lines_name_the_project_and_the_input_and_stats_split_by_project() {
    let env = Env::new();
    env.user_settings(
        r#"{"hooks":{"PreToolUse":[{"matcher":"run_terminal_command","hooks":[{"command":"true"}]}]}}"#,
    );
    let log = env.scratch("hooks.jsonl");
    let other = env.scratch("other");
    std::fs::create_dir_all(&other).unwrap();
    let long = "x".repeat(500);
    for (dir, command) in [
        (env.project(), "git push --force".to_string()),
        (other.clone(), long.clone()),
    ] {
        let input = json!({ "command": command }).to_string();
        env.run_env(
            &[
                "test",
                "--event",
                "PreToolUse",
                "--tool",
                "run_terminal_command",
                "--input",
                &input,
                "--project-dir",
                dir.to_str().unwrap(),
            ],
            &[("LEVELCODE_HOOKS_LOG", log.to_str().unwrap())],
        )
        .status(0);
    }
    let entries = lines(&log);
    assert_eq!(entries[0]["project"], env.project().to_str().unwrap());
    assert_eq!(entries[0]["input"], r#"{"command":"git push --force"}"#);
    assert!(
        entries[0].get("input_truncated").is_none(),
        "{}",
        entries[0]
    );
    assert_eq!(entries[1]["project"], other.to_str().unwrap());
    assert_eq!(entries[1]["input"].as_str().unwrap().len(), 200);
    assert_eq!(entries[1]["input_truncated"], true);

    let file = log.to_str().unwrap();
    let text = env.run(&["log", "--file", file]).status(0).stdout.clone();
    assert!(
        text.contains(&format!("  in {}", env.project().display()))
            && text.contains(r#"input: {"command":"git push --force"}"#),
        "{text}"
    );
    let stats = env
        .run(&["stats", "--json", "--file", file])
        .status(0)
        .json();
    let handlers = &stats["handlers"];
    assert_eq!(strings(handlers, "label"), ["true", "true"], "{stats:#}");
    let mut projects = strings(handlers, "project");
    projects.sort_unstable();
    let mut expected = [env.project(), other];
    expected.sort();
    assert_eq!(
        projects,
        expected
            .iter()
            .map(|p| p.to_str().unwrap())
            .collect::<Vec<_>>()
    );
    let table = env.run(&["stats", "--file", file]).status(0).stdout.clone();
    assert!(table.contains("PROJECT"), "{table}");
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("true ")).collect();
    assert_eq!(rows.len(), 2, "{table}");
    assert_ne!(rows[0], rows[1], "{table}");
}

#[test]
fn log_with_logging_off_says_how_to_keep_it_on() {
    let env = Env::new();
    let out = env.run(&["log"]);
    out.status(1);
    assert!(
        out.stderr.contains("shell profile") && out.stderr.contains("export LEVELCODE_HOOKS_LOG="),
        "{}",
        out.stderr
    );
    let log = env.scratch("old.jsonl");
    env.write(&log, "");
    let out = env.run(&["log", "--file", log.to_str().unwrap()]);
    out.status(0);
    assert!(out.stderr.contains("logging is off"), "{}", out.stderr);
}
