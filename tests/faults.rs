//! The fault matrix: real handlers and real files doing what hurried hook authors and hand
//! edits do, and signals to the dispatcher in each phase of a dispatch. Every case checks the
//! same promises: one JSON object on stdout, a bounded time, no panic, no process left behind
//! (except where the contract leaves background work alone, or the process left its group on
//! purpose: see `docs/RELIABILITY.md`).
//!
//! Time bounds are generous: the suite runs in parallel on small, loaded machines. A bound is
//! "the handler's timeout + 1.5 s" from the contract plus `SLACK`.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{alive, group, on, read_pids, wait_for_line, wait_gone, write, Output, Test};

/// Added to every time bound the contract gives, for a loaded machine.
const SLACK: Duration = Duration::from_secs(3);

/// Settings with one `Stop` group holding one `command` handler with a timeout in seconds.
fn stop_with_timeout(command: &str, timeout: f64) -> Value {
    group(
        "Stop",
        None,
        json!([{ "command": command, "timeout": timeout }]),
    )
}

/// The bound for one handler of `timeout` seconds: the contract's timeout + 1.5 s, plus slack.
fn bound(timeout: f64) -> Duration {
    Duration::from_secs_f64(timeout + 1.5) + SLACK
}

fn assert_within(out: &Output, limit: Duration) {
    assert!(
        out.elapsed() < limit,
        "took {:?}, over {limit:?}: {}",
        out.elapsed(),
        out.stdout()
    );
}

fn assert_all_gone(pids: &[i32]) {
    let left = wait_gone(pids, Duration::from_secs(3));
    assert!(left.is_empty(), "still running: {left:?} of {pids:?}");
}

// ---------------------------------------------------------------------------------------------
// Handlers that misbehave

#[test]
fn handler_ignoring_sigterm_is_killed_a_second_later() {
    let out = Test::new()
        .project_settings(stop_with_timeout(
            "trap '' TERM; sleep 30 & echo \"$$ $!\" > pids; wait; sleep 30",
            0.5,
        ))
        .reap("pids")
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0);
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "timeout");
    assert_eq!(handler["signal"], libc::SIGKILL);
    assert!(handler["message"].as_str().unwrap().contains("SIGKILL"));
    assert!(
        out.elapsed() >= Duration::from_millis(1400),
        "{:?}",
        out.elapsed()
    );
    assert_within(&out, bound(0.5));
    assert_all_gone(&read_pids(&out.project().join("pids")));
}

#[test]
fn grandchild_keeping_stdout_open_does_not_hold_the_dispatch() {
    let out = Test::new()
        .project_settings(on("Stop", "sleep 20 & echo $! > pids; echo started"))
        .reap("pids")
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0);
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "proceed");
    assert_eq!(handler["stdout"], "started\n");
    assert!(handler["message"]
        .as_str()
        .unwrap()
        .contains("still held its output"));
    assert_within(&out, Duration::from_millis(100) + SLACK);
    // Background work outlives the handler on purpose (a SessionStart hook may start a server).
    let pids = read_pids(&out.project().join("pids"));
    assert!(alive(pids[0]), "the contract leaves background work alone");
}

#[test]
fn grandchild_escaping_the_group_with_setsid_survives_but_the_dispatcher_returns_on_time() {
    let out = Test::new()
        .project_settings(stop_with_timeout(
            "setsid sh -c 'echo $$ > escaped; exec sleep 30' & sleep 30",
            0.5,
        ))
        .reap("escaped")
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0);
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "timeout");
    assert_within(&out, bound(0.5));
    // The one thing a process group cannot catch: a process that made its own session. It
    // still holds the handler's stdout, which the dispatcher stopped waiting for.
    let escaped_file = out.project().join("escaped");
    wait_for_line(&escaped_file, Duration::from_secs(5));
    let escaped = read_pids(&escaped_file);
    assert!(
        alive(escaped[0]),
        "a process in its own session is out of the group's reach"
    );
}

#[test]
fn flood_of_100_mib_on_stdout_and_stderr_is_drained_and_cut_to_64_kib() {
    let out = Test::new()
        .project_settings(stop_with_timeout(
            "head -c 104857600 /dev/zero >&2 & head -c 104857600 /dev/zero; wait",
            60.0,
        ))
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0);
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "proceed");
    for stream in ["stdout", "stderr"] {
        assert_eq!(handler[format!("{stream}_truncated")], true);
        let text = handler[stream].as_str().unwrap();
        assert_eq!(text.len(), 64 * 1024);
        assert!(text.bytes().all(|b| b == 0));
    }
    assert_within(&out, Duration::from_secs(30));
}

#[test]
fn endless_output_is_cut_and_stopped_at_the_timeout() {
    let out = Test::new()
        .project_settings(stop_with_timeout("yes flood", 0.5))
        .event("Stop")
        .run();
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "timeout");
    assert_eq!(handler["stdout_truncated"], true);
    assert!(handler["stdout"].as_str().unwrap().starts_with("flood\n"));
    assert_within(&out, bound(0.5));
}

#[test]
fn handler_closing_stdout_and_running_on_is_waited_for() {
    let out = Test::new()
        .project_settings(on("Stop", "exec >&-; sleep 0.3; echo done >&2"))
        .event("Stop")
        .run();
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "proceed");
    assert_eq!(handler["stderr"], "done\n");
    assert_eq!(handler["message"], Value::Null);
    assert!(out.elapsed() >= Duration::from_millis(300));
}

#[test]
fn handler_closing_both_outputs_and_hanging_times_out() {
    let out = Test::new()
        .project_settings(stop_with_timeout(
            "exec >&- 2>&- <&-; echo $$ > pids; sleep 30",
            0.5,
        ))
        .reap("pids")
        .event("Stop")
        .run();
    assert_eq!(out.handler(0)["outcome"], "timeout");
    assert_within(&out, bound(0.5));
    assert_all_gone(&read_pids(&out.project().join("pids")));
}

/// A payload of exactly `len` bytes whose `event` and `cwd` are present, so handlers get it
/// unchanged.
fn padded_payload(project: &Path, len: usize) -> Vec<u8> {
    let head = json!({ "event": "Stop", "cwd": project, "pad": "" }).to_string();
    let pad = len - head.len();
    let text = json!({ "event": "Stop", "cwd": project, "pad": "a".repeat(pad) }).to_string();
    assert_eq!(text.len(), len);
    text.into_bytes()
}

/// Reads stdin one byte per millisecond and prints how many bytes it got.
const SLOW_READER: &str =
    "perl -e '$n = 0; while (sysread(STDIN, $c, 1)) { $n++; select(undef, undef, undef, 0.001) } print \"$n\\n\"'";

/// Returns true when perl is there; fails the test when it is not, unless skipping is asked for.
fn has_perl() -> bool {
    crate::common::require(
        "perl",
        crate::common::runs("perl", &["-e1"]),
        "the slow reader is a perl one-liner",
    )
}

#[test]
fn slow_reader_one_byte_per_millisecond_gets_the_whole_payload() {
    if !has_perl() {
        return;
    }
    let test = Test::new();
    let payload = padded_payload(&test.project(), 600);
    let out = test
        .project_settings(stop_with_timeout(SLOW_READER, 30.0))
        .stdin(&payload)
        .run();
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "proceed", "{}", out.stdout());
    assert_eq!(handler["stdout"], format!("{}\n", payload.len()));
}

#[test]
fn slow_reader_that_cannot_finish_in_time_times_out_cleanly() {
    if !has_perl() {
        return;
    }
    let test = Test::new();
    let payload = padded_payload(&test.project(), 256 * 1024);
    let out = test
        .project_settings(group(
            "Stop",
            None,
            json!([
                { "command": format!("echo $$ > pids; exec {SLOW_READER}"), "timeout": 0.5 },
                { "command": "wc -c" },
            ]),
        ))
        .reap("pids")
        .stdin(&payload)
        .run();
    assert_eq!(out.outcomes(), ["timeout", "proceed"]);
    // The next handler still gets the whole payload.
    assert_eq!(out.stdouts()[1], payload.len().to_string());
    assert_within(&out, bound(0.5));
    assert_all_gone(&read_pids(&out.project().join("pids")));
}

#[test]
fn handlers_exiting_before_reading_an_8_mib_payload() {
    let test = Test::new();
    let payload = padded_payload(&test.project(), 8 << 20);
    let out = test
        .project_settings(group(
            "Stop",
            None,
            json!([
                { "command": "exit 0" },
                { "command": "head -c 10 > /dev/null; echo read 10" },
                { "argv": ["true"] },
                { "command": "wc -c" },
            ]),
        ))
        .stdin(&payload)
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(out.outcomes(), ["proceed", "proceed", "proceed", "proceed"]);
    assert_eq!(out.stdouts()[1], "read 10");
    assert_eq!(out.stdouts()[3], payload.len().to_string());
    assert_within(&out, Duration::from_secs(20));
}

#[test]
fn invalid_utf8_and_nul_bytes_are_replaced_and_still_block() {
    let out = Test::new()
        .project_settings(group(
            "PreToolUse",
            None,
            json!([{ "command": "printf 'a\\377\\000b\\300'; printf 'no\\000\\376 way' >&2; exit 2" }]),
        ))
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.status(), 2);
    let handler = out.handler(0);
    assert_eq!(handler["stdout"], "a\u{FFFD}\u{0}b\u{FFFD}");
    assert_eq!(handler["stderr"], "no\u{0}\u{FFFD} way");
    assert_eq!(out.json()["reason"], "no\u{0}\u{FFFD} way");
}

fn nested_object(levels: usize) -> String {
    format!("{}1{}", "{\"a\":".repeat(levels), "}".repeat(levels))
}

#[test]
fn json_of_10000_nested_levels_on_stdout_is_a_warning_not_a_crash() {
    let out = Test::new()
        .project_file("nested.json", nested_object(10_000))
        .project_file(
            "nested-block.json",
            format!(
                "{{\"decision\":\"block\",\"reason\":\"deep\",\"x\":{}}}",
                nested_object(10_000)
            ),
        )
        .project_settings(group(
            "PreToolUse",
            None,
            json!([
                { "command": "cat nested.json" },
                { "command": "cat nested-block.json" },
                { "command": "cat nested.json; exit 2" },
            ]),
        ))
        .tool_event("PreToolUse", "write_file")
        .run();
    // Deeper than 128 levels is not read as a decision: a warning each, and the third handler
    // blocks with the default reason because its stdout holds no readable `reason`.
    assert_eq!(out.outcomes(), ["proceed", "proceed", "block"]);
    assert_eq!(out.status(), 2);
    let warnings = out.warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings.iter().all(|w| w.contains("not a JSON object")));
    assert_eq!(
        out.json()["reason"],
        "blocked by PreToolUse hook: cat nested.json; exit 2"
    );
    assert_eq!(out.handler(0)["stdout"].as_str().unwrap().len(), 60_001);
}

/// JavaScript writes a string cut inside an emoji as a lone surrogate escape (`\ud83d`), which
/// Rust strings cannot hold: payload fields the dispatcher does not read pass through as they
/// are, and handler output holding one is still read, the half character becoming U+FFFD.
#[test]
fn json_block_whose_reason_holds_a_lone_surrogate_still_blocks() {
    let test = Test::new();
    let payload = format!(
        r#"{{"event":"PreToolUse","tool_name":"write_file","tool_input":{{"content":"cut \ud83d"}},"cwd":{}}}"#,
        json!(test.project())
    );
    let out = test
        .project_file(
            "block.json",
            r#"{"decision":"block","reason":"refusing cut \ud83d","additionalContext":"seen \udc00"}"#,
        )
        .project_settings(group(
            "PreToolUse",
            None,
            json!([{ "command": "cat > seen.json; cat block.json" }]),
        ))
        .stdin(&payload)
        .run();
    assert_eq!(out.status(), 2, "{}", out.stdout());
    let json = out.json();
    assert_eq!(json["reason"], "refusing cut \u{FFFD}");
    assert_eq!(json["additionalContext"], "seen \u{FFFD}");
    assert_eq!(out.project_bytes("seen.json"), payload.as_bytes());
}

#[test]
fn command_with_quotes_substitutions_globs_and_newlines_runs_as_sh_runs_it() {
    let out = Test::new()
        .project_file("a.txt", "")
        .project_file("b.txt", "")
        .project_settings(group(
            "Stop",
            None,
            json!([
                { "command": "printf '%s|' \"a b\" '$(echo no)' \"$(echo yes)\" *.txt\nprintf 'line2|%s|' `echo bt` \"it's\"" },
                { "argv": ["printf", "%s|", "$(echo no)", "*.txt", "a\nb", "it's \"q\""] },
            ]),
        ))
        .event("Stop")
        .run();
    assert_eq!(out.outcomes(), ["proceed", "proceed"]);
    assert_eq!(
        out.handler(0)["stdout"],
        "a b|$(echo no)|yes|a.txt|b.txt|line2|bt|line2|it's|"
    );
    // argv runs without a shell: nothing is expanded.
    assert_eq!(
        out.handler(1)["stdout"],
        "$(echo no)|*.txt|a\nb|it's \"q\"|"
    );
}

#[test]
fn argv0_that_is_a_directory_not_executable_or_a_dangling_symlink_is_a_spawn_error() {
    let test = Test::new()
        .project_file("tools/keep", "")
        .project_file("not-executable.sh", "#!/bin/sh\necho ran\n");
    std::os::unix::fs::symlink(
        test.project().join("nowhere"),
        test.project().join("dangling"),
    )
    .unwrap();
    let out = test
        .project_settings(group(
            "Stop",
            None,
            json!([
                { "argv": ["./tools"] },
                { "argv": ["./not-executable.sh"] },
                { "argv": ["./dangling"] },
                { "command": "./tools" },
                { "command": "./dangling" },
                { "command": "echo still runs" },
            ]),
        ))
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0);
    assert_eq!(
        out.outcomes(),
        [
            "spawn_error",
            "spawn_error",
            "spawn_error",
            "error",
            "error",
            "proceed"
        ]
    );
    for i in 0..3 {
        let message = out.handler(i)["message"].as_str().unwrap().to_string();
        assert!(message.starts_with("could not start"), "{message}");
    }
    assert!(out.handler(3)["message"]
        .as_str()
        .unwrap()
        .contains("not executable"));
    assert!(out.handler(4)["message"]
        .as_str()
        .unwrap()
        .contains("not found"));
}

// ---------------------------------------------------------------------------------------------
// Settings files that are not what they should be

/// A test whose user layer runs `echo user`, so each case shows that a broken layer costs only
/// itself.
fn with_user_layer() -> Test {
    Test::new().user_settings(on("Stop", "echo user"))
}

fn project_settings_path(test: &Test) -> std::path::PathBuf {
    test.project().join(".levelcode/settings.json")
}

fn assert_only_user_ran(out: &Output) {
    assert_eq!(out.status(), 0, "{}", out.stdout());
    assert_eq!(out.stdouts(), ["user"]);
}

#[test]
fn settings_file_that_is_a_directory_is_a_warning() {
    let test = with_user_layer();
    std::fs::create_dir_all(project_settings_path(&test)).unwrap();
    let out = test.event("Stop").run();
    assert_only_user_ran(&out);
    out.warning(&["is a directory"]);
}

#[test]
fn settings_file_that_is_a_fifo_never_blocks() {
    let test = with_user_layer();
    let path = project_settings_path(&test);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo takes a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0);
    let out = test.event("Stop").run();
    assert_only_user_ran(&out);
    out.warning(&["not a regular file"]);
    assert_within(&out, SLACK);
}

#[test]
fn settings_file_over_16_mib_is_a_warning() {
    let test = with_user_layer();
    let path = project_settings_path(&test);
    write(&path, "");
    // Sparse: the size alone decides, the bytes are never read.
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len((16 << 20) + 1)
        .unwrap();
    let out = test.event("Stop").run();
    assert_only_user_ran(&out);
    out.warning(&["over the 16 MiB limit"]);
}

#[test]
fn settings_nested_deeply_is_a_warning_and_siblings_still_load() {
    let deep = 100_000;
    let nested = format!("{}{}", "[".repeat(deep), "]".repeat(deep));
    // Deep under the event: that event is skipped with a warning.
    let out = with_user_layer()
        .project_settings(format!("{{\"hooks\":{{\"Stop\":{nested}}}}}"))
        .event("Stop")
        .run();
    assert_only_user_ran(&out);
    out.warning(&["hooks.Stop", "recursion limit"]);
    // Deep under a key nobody reads: the hooks next to it run.
    let out = with_user_layer()
        .project_settings(format!(
            "{{\"other\":{nested},\"hooks\":{{\"Stop\":[{{\"hooks\":[{{\"command\":\"echo project\"}}]}}]}}}}"
        ))
        .event("Stop")
        .run();
    assert_eq!(out.stdouts(), ["user", "project"]);
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
}

#[test]
fn settings_not_utf8_is_a_warning() {
    let test = with_user_layer();
    write(
        &project_settings_path(&test),
        b"{\"hooks\":{\"Stop\":[{\"hooks\":[{\"command\":\"echo caf\xe9\"}]}]}}",
    );
    let out = test.event("Stop").run();
    assert_only_user_ran(&out);
    out.warning(&["not UTF-8"]);
}

/// A Linux user id with no entry in the password database, for running the dispatcher where
/// `chmod 000` means something and no home directory can be found.
const NO_SUCH_UID: u32 = 3_999_999;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs the dispatcher on `test`'s directories with the standard layers, as user `uid` and with
/// `HOME` set or not. Everything under the test's directory is made readable by that user.
fn run_as(test: &Test, uid: u32, home: Option<&Path>, stdin: &[u8]) -> (i32, Value) {
    for dir in [test.root(), &test.home(), &test.project()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut command = crate::common::command(&test.home(), &test.project());
    command
        .env_remove("HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(home) = home {
        command.env("HOME", home);
    }
    if is_root() {
        command.uid(uid).gid(uid);
    }
    let mut child = command.spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("the dispatcher hung");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.ends_with('\n') && stdout.matches('\n').count() == 1,
        "{stdout:?}"
    );
    (
        output.status.code().expect("exited"),
        serde_json::from_str(&stdout).unwrap(),
    )
}

fn stdouts_of(json: &Value) -> Vec<String> {
    json["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["stdout"].as_str().unwrap().trim().to_string())
        .collect()
}

/// Root reads a `chmod 000` file anyway, so as root the dispatcher is run as a user without
/// privileges; that is the honest way to reach the "cannot open" path.
#[test]
fn settings_file_that_cannot_be_read_is_a_warning() {
    let test = with_user_layer();
    let path = project_settings_path(&test);
    write(&path, on("Stop", "echo project").to_string());
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    std::fs::set_permissions(
        path.parent().unwrap(),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    for dir in [".config", ".config/levelcode"] {
        std::fs::set_permissions(
            test.home().join(dir),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    let home = test.home();
    let (status, json) = run_as(&test, NO_SUCH_UID, Some(&home), br#"{"event":"Stop"}"#);
    assert_eq!(status, 0, "{json}");
    assert_eq!(stdouts_of(&json), ["user"]);
    let warnings: Vec<&str> = json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("cannot open") && warnings[0].contains("ermission denied"));
}

#[test]
fn home_unset_with_no_home_in_the_password_database_is_a_warning() {
    // Without root, the dispatcher would fall back on this user's real home directory.
    if !crate::common::require(
        "root",
        is_root(),
        "to run the dispatcher as a user without a home directory",
    ) {
        return;
    }
    let test = Test::new().project_settings(on("Stop", "echo project"));
    for home in [None, Some(Path::new(""))] {
        let (status, json) = run_as(&test, NO_SUCH_UID, home, br#"{"event":"Stop"}"#);
        assert_eq!(status, 0, "{json}");
        assert_eq!(stdouts_of(&json), ["project"]);
        let warnings = json["warnings"].as_array().unwrap();
        assert_eq!(warnings.len(), 1, "{json}");
        assert!(warnings[0].as_str().unwrap().contains("no home directory"));
    }
}

#[test]
fn project_directory_that_does_not_exist_runs_handlers_in_the_current_directory() {
    let test = Test::new().user_settings(on("Stop", "pwd; echo \"$LEVELCODE_PROJECT_DIR\""));
    let gone = test.root().join("gone");
    let here = test.project();
    let out = test.payload(&json!({ "event": "Stop", "cwd": gone })).run();
    assert_eq!(out.status(), 0);
    assert_eq!(
        out.stdouts(),
        [format!("{}\n{}", here.display(), gone.display())]
    );
    out.warning(&["does not exist"]);
}

// ---------------------------------------------------------------------------------------------
// Signals to the dispatcher, in each phase

const SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

fn assert_interrupted(out: &Output, sig: i32) -> Value {
    let json = out.json();
    assert_eq!(out.status(), 128 + sig, "{json}");
    assert_eq!(json["interrupted"], true, "{json}");
    json
}

#[test]
fn signal_while_reading_stdin() {
    for sig in SIGNALS {
        let running = Test::new()
            .project_settings(on("Stop", "touch ran"))
            .stdin_open()
            .spawn();
        running.wait_until_sleeping();
        running.signal(sig);
        let out = running.wait();
        let json = assert_interrupted(&out, sig);
        assert_eq!(json["handlers"], json!([]));
        assert!(!out.project_has("ran"));
        assert_within(&out, Duration::from_millis(300) + SLACK);
    }
}

#[test]
fn signal_while_a_handler_runs() {
    for sig in SIGNALS {
        // One handler ignores every signal it can, so only SIGKILL ends its group.
        let ignore = if sig == libc::SIGTERM {
            "trap '' TERM INT HUP; "
        } else {
            ""
        };
        let running = Test::new()
            .project_settings(group(
                "Stop",
                None,
                json!([
                    { "command": format!("{ignore}sleep 30 & echo \"$$ $!\" > pids; wait") },
                    { "command": "touch ran" },
                ]),
            ))
            .reap("pids")
            .event("Stop")
            .spawn();
        let pids_file = running.project().join("pids");
        wait_for_line(&pids_file, Duration::from_secs(10));
        let signalled = Instant::now();
        running.signal(sig);
        let out = running.wait();
        let after = signalled.elapsed();
        let json = assert_interrupted(&out, sig);
        assert_eq!(out.outcomes(), ["interrupted", "skipped"], "{json}");
        assert!(!out.project_has("ran"));
        assert!(after < Duration::from_secs_f64(1.5) + SLACK, "{after:?}");
        assert_all_gone(&read_pids(&pids_file));
    }
}

/// Bytes read so far by process `pid`, from /proc.
fn bytes_read(pid: i32) -> Option<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .and_then(|n| n.trim().parse().ok())
}

/// A signal that lands while the settings load, when no handler is left to notice it, still
/// stops the dispatch. Loading is made long with millions of nested brackets beside `hooks`
/// (never parsed into values, but scanned); the signal goes out once the whole file has been
/// read, while the dispatcher is still scanning it.
#[test]
fn signal_while_loading_settings_is_not_lost() {
    if !crate::common::require(
        "proc-io",
        Path::new("/proc/self/io").exists(),
        "/proc/<pid>/io shows the settings being read",
    ) {
        return;
    }
    let levels = 3_000_000;
    let settings = format!(
        "{{\"hooks\":{{\"Stop\":[]}},\"pad\":{}{}}}",
        "[".repeat(levels),
        "]".repeat(levels)
    );
    let size = settings.len() as u64;
    for sig in SIGNALS {
        let running = Test::new()
            .project_settings(&settings)
            .event("Stop")
            .spawn();
        let pid = running.pid();
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut sent = false;
        while Instant::now() < deadline {
            match bytes_read(pid) {
                Some(n) if n >= size => {
                    running.signal(sig);
                    sent = true;
                    break;
                }
                Some(_) => std::thread::sleep(Duration::from_micros(500)),
                None => break,
            }
        }
        let out = running.wait();
        assert!(
            sent,
            "the dispatcher ended before the settings were seen read: {}",
            out.stdout()
        );
        let json = assert_interrupted(&out, sig);
        assert_eq!(json["handlers"], json!([]));
    }
}
