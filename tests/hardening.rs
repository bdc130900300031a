//! Faults found by reviewing the runner, the spawner and the start-up, and the risks behind them
//! (docs/RELIABILITY.md): each one reproduced here against the real binary, so it stays fixed.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{
    group, read_pids, require, runs, wait_for_line, wait_gone, Output, Test, VANISH,
};

/// Settings with a handler for every event the NUL cases use, each printing its event: were the
/// bad value let through, it would reach a handler's environment, directory or arguments.
fn every_event() -> Value {
    let handler = json!([{"command": "echo \"$LEVELCODE_HOOK_EVENT\""}]);
    json!({"hooks": {
        "Stop": [{"hooks": handler}],
        "PreToolUse": [{"hooks": handler}],
        "PostToolUse": [{"hooks": handler}],
    }})
}

/// Checks that `out` is the payload error naming `field`, and no panic.
fn assert_nul_error(out: &Output, field: &str) {
    let error = out.error();
    assert!(
        error.starts_with(&format!("payload: {field} contains a NUL byte")),
        "{field}: {error}"
    );
    assert!(error.contains("remove it"), "{error}");
    assert!(!out.stderr().contains("panicked"), "{}", out.stderr());
}

/// A NUL byte is valid JSON (`"\u0000"`) but fits in no environment variable, path or argument:
/// every member that becomes one is checked first, and the payload is refused naming it.
#[test]
fn a_nul_byte_in_any_field_is_a_payload_error_naming_it() {
    let cases = [
        ("event", json!({"event": "Stop\u{0}"})),
        ("hook_event_name", json!({"hook_event_name": "Stop\u{0}x"})),
        (
            "tool_name",
            json!({"event": "PreToolUse", "tool_name": "write\u{0}file"}),
        ),
        (
            "tool_name",
            json!({"event": "PostToolUse", "tool_name": "\u{0}"}),
        ),
        ("cwd", json!({"event": "Stop", "cwd": "/tmp/a\u{0}b"})),
    ];
    for (field, payload) in cases {
        let out = Test::new()
            .user_settings(every_event())
            .payload(&payload)
            .run();
        assert_nul_error(&out, field);
    }
}

/// Members the dispatcher does not turn into anything are not its business: a `tool_name` on
/// `Stop` is passed through, and a team name with a NUL is refused as every invalid team name is
/// (contract §9: a warning, and no path built from it).
#[test]
fn a_nul_byte_where_it_is_never_used_changes_nothing() {
    let out = Test::new()
        .user_settings(every_event())
        .payload(&json!({"event": "Stop", "tool_name": "a\u{0}b"}))
        .run();
    assert_eq!(out.status(), 0, "{}", out.stdout());
    assert_eq!(out.stdouts(), ["Stop"]);
    let out = Test::new()
        .user_settings(every_event())
        .env("LEVELCODE_DIR", "data")
        .payload(&json!({"event": "PostToolUse", "tool_name": "t", "team": "a\u{0}b"}))
        .run();
    assert_eq!(out.status(), 0, "{}", out.stdout());
    out.warning(&["not a valid team name"]);
    assert!(!out.project_has("data/swarm"));
}

/// A caller that ignores SIGCHLD (which survives exec) would have the kernel reap every handler
/// and its exit status lost, turning a block into a proceed. The dispatcher restores the default
/// at start.
#[test]
fn a_caller_that_ignores_sigchld_does_not_turn_a_block_into_a_proceed() {
    let out = Test::new()
        .user_settings(group(
            "PreToolUse",
            None,
            json!([{"command": "echo 'not here' >&2; exit 2"}]),
        ))
        .ignore_signal(libc::SIGCHLD)
        .tool_event("PreToolUse", "write_file")
        .run();
    assert_eq!(out.status(), 2, "{}", out.stdout());
    assert_eq!(out.decision(), "block");
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "block");
    assert_eq!(handler["exit_code"], 2);
    assert_eq!(out.json()["reason"], "not here");
}

/// A caller that blocks SIGTERM (the mask survives exec) would leave the dispatcher deaf to it,
/// and the handler would run on to its timeout. The dispatcher unblocks the signals it handles.
#[test]
fn a_caller_that_blocks_sigterm_still_interrupts_the_dispatch_promptly() {
    let running = Test::new()
        .user_settings(group(
            "Stop",
            None,
            json!([{"command": "echo $$ > pids; exec sleep 30", "timeout": 30}]),
        ))
        .block_signal(libc::SIGTERM)
        .block_signal(libc::SIGINT)
        .block_signal(libc::SIGHUP)
        .reap("pids")
        .event("Stop")
        .spawn();
    let pids = running.project().join("pids");
    wait_for_line(&pids, Duration::from_secs(20));
    let sent = Instant::now();
    running.signal(libc::SIGTERM);
    let out = running.wait();
    let after = sent.elapsed();
    assert_eq!(out.status(), 143, "{}", out.stdout());
    let json = out.json();
    assert_eq!(json["interrupted"], true, "{json}");
    assert_eq!(out.outcomes(), ["interrupted"]);
    // Promptly: the handler is stopped at once (SIGTERM, SIGKILL a second later at worst), far
    // from its 30-second timeout.
    assert!(after < Duration::from_secs(6), "{after:?}");
    let pids = read_pids(&out.project().join("pids"));
    assert!(wait_gone(&pids, VANISH).is_empty(), "{pids:?}");
}

/// Work a handler leaves in the background with its output still on the handler's pipes: the
/// dispatcher stops reading 100 ms after the handler exits and says so in the message; the
/// next write to those pipes then kills that work with SIGPIPE. The same work with its output
/// redirected lives on (docs/hooks.md, "Background work").
#[test]
fn a_background_writer_dies_of_sigpipe_after_the_leftover_wait_unless_redirected() {
    let command = [
        "(sleep 1; echo late; echo survived > unredirected) &",
        "echo $! > pids",
        "(sleep 1; echo late; echo survived > redirected) >/dev/null 2>&1 &",
        "echo $! >> pids",
        "echo started",
    ]
    .join("\n");
    let out = Test::new()
        .user_settings(group("Stop", None, json!([{"command": command}])))
        .reap("pids")
        .event("Stop")
        .run();
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "proceed", "{handler}");
    assert_eq!(handler["stdout"], "started\n");
    let message = handler["message"].as_str().unwrap_or_default();
    for needle in [
        "100 ms",
        "left that process running",
        "SIGPIPE",
        ">/dev/null 2>&1 &",
    ] {
        assert!(message.contains(needle), "{needle:?} in {message}");
    }
    let pids = read_pids(&out.project().join("pids"));
    wait_for_line(&out.project().join("redirected"), Duration::from_secs(20));
    assert!(
        wait_gone(&pids, Duration::from_secs(20)).is_empty(),
        "both background processes end: {pids:?}"
    );
    assert!(
        !out.project_has("unredirected"),
        "the writer whose output was the handler's pipe died on its late write"
    );
}

/// A script without `#!` started through `argv` cannot be executed (ENOEXEC, as for any
/// `execve`); the message says what to do about it.
#[test]
fn a_script_without_a_shebang_run_through_argv_says_what_to_do() {
    let test = Test::new().project_file("hook.sh", "echo hi\n");
    let script = test.project().join("hook.sh");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = test
        .user_settings(group("Stop", None, json!([{"argv": ["./hook.sh"]}])))
        .event("Stop")
        .run();
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "spawn_error", "{handler}");
    let message = handler["message"].as_str().unwrap();
    assert!(message.contains("Exec format error"), "{message}");
    assert!(message.contains("add a #! line"), "{message}");
    assert!(message.contains("interpreter"), "{message}");
}

/// A handler whose exit the dispatcher can never collect, made with ptrace: a tracer outside the
/// handler's group attaches to it and stops itself, so the handler, once killed, stays a zombie
/// only the stopped tracer may reap, exactly as a process stuck in uninterruptible sleep stays.
/// The dispatch still ends within timeout + KILL_GRACE + KILL_SETTLE (1.5 s), with outcome
/// `timeout` and a message saying the handler could not be killed.
const TRACED: &str = r#"
import ctypes, os, signal, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
handler = os.getpid()
libc.prctl(0x59616d61, ctypes.c_ulong(-1).value, 0, 0, 0)  # PR_SET_PTRACER_ANY, where Yama asks
ready_r, ready_w = os.pipe()
if os.fork() == 0:
    os.setsid()
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if libc.ptrace(0x4206, handler, None, None) != 0:  # PTRACE_SEIZE
        os.write(ready_w, b"n")
        os._exit(1)
    with open("tracer", "w") as f:
        f.write(f"{os.getpid()}\n")
    os.write(ready_w, b"y")
    os.kill(os.getpid(), signal.SIGSTOP)
    os._exit(0)
os.read(ready_r, 1)
time.sleep(60)
"#;

#[test]
fn a_handler_that_cannot_be_killed_is_given_up_on_within_its_bound() {
    if !require(
        "python3",
        runs("python3", &["-c", "import ctypes"]),
        "the unkillable handler is simulated with ptrace from python3",
    ) {
        return;
    }
    // The interpreter itself, not a wrapper script that finds it (pyenv's shims take a while).
    let python = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let test = Test::new().project_file("traced.py", TRACED);
    // Long enough for python to start and the tracer to attach on a loaded machine.
    let timeout = 4.0;
    let out = test
        .user_settings(group(
            "Stop",
            None,
            json!([{"argv": [python, "traced.py"], "timeout": timeout}]),
        ))
        .reap("tracer")
        .event("Stop")
        .run();
    // Written by the tracer once attached, and only then.
    assert!(
        out.project_has("tracer"),
        "the tracer did not attach: {}",
        out.stdout()
    );
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "timeout", "{handler}");
    let message = handler["message"].as_str().unwrap();
    assert!(message.contains("could not be killed"), "{message}");
    // The timeout, SIGKILL 1 s later, given up 0.5 s after that: timeout + 1.5 s, with room for
    // a loaded machine; the harness itself would fail the test at 45 s.
    let duration = handler["duration_ms"].as_f64().unwrap();
    let bound = timeout * 1000.0 + 1500.0;
    assert!(
        (bound - 100.0..bound + 2000.0).contains(&duration),
        "{duration} ms: {handler}"
    );
}

/// A process that left the handler's group, stopped (SIGSTOP) and holding the handler's output:
/// neither the group's end nor the output's end ever comes from it, and the dispatch still ends
/// within timeout + 1.5 s.
#[test]
fn a_stopped_process_outside_the_group_holding_the_output_does_not_hold_the_dispatch() {
    let command =
        "echo $$ > pids; setsid sh -c 'echo $$ > holder; kill -STOP $$; sleep 30' & exec sleep 30";
    let out = Test::new()
        .user_settings(group(
            "Stop",
            None,
            json!([{"command": command, "timeout": 1}]),
        ))
        .reap("pids")
        .reap("holder")
        .event("Stop")
        .run();
    let handler = out.handler(0);
    assert_eq!(handler["outcome"], "timeout", "{handler}");
    let duration = handler["duration_ms"].as_f64().unwrap();
    assert!(duration < 1000.0 + 1500.0 + 1000.0, "{duration} ms");
    let holder = read_pids(&out.project().join("holder"))[0];
    assert!(
        Path::new(&format!("/proc/{holder}")).exists(),
        "the holder outside the group is left alone"
    );
}

/// A NUL byte in a handler's `command` or `argv` (settings are JSON too) cannot become an
/// argument: that handler is a `spawn_error` saying so, and the chain goes on.
#[test]
fn a_nul_byte_in_a_handler_is_a_spawn_error_and_the_chain_goes_on() {
    let out = Test::new()
        .user_settings(group(
            "Stop",
            None,
            json!([
                {"command": "echo a\u{0}b"},
                {"argv": ["echo", "a\u{0}b"]},
                {"command": "echo after"},
            ]),
        ))
        .event("Stop")
        .run();
    assert_eq!(out.status(), 0, "{}", out.stdout());
    assert_eq!(out.outcomes(), ["spawn_error", "spawn_error", "proceed"]);
    for i in 0..2 {
        let message = out.handler(i)["message"].as_str().unwrap().to_string();
        assert!(message.contains("NUL byte"), "{message}");
    }
    assert_eq!(out.stdouts()[2], "after");
}
