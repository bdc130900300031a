//! The compliance log of team runs (contract §9), black-box: the real binary on a temporary HOME
//! and data dir, never the real ones.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A temporary HOME, data dir (`LEVELCODE_DIR`), project, and an empty settings file.
struct Sandbox {
    dirs: crate::common::Sandbox,
}

impl Sandbox {
    fn new() -> Sandbox {
        let sandbox = Sandbox {
            dirs: crate::common::Sandbox::new(),
        };
        fs::write(sandbox.settings(), "{}").expect("settings");
        sandbox
    }

    fn data(&self) -> PathBuf {
        self.dirs.root().join("data")
    }

    fn settings(&self) -> PathBuf {
        self.dirs.root().join("settings.json")
    }

    fn log_dir(&self, team: &str) -> PathBuf {
        self.data().join("swarm").join(team).join("compliance")
    }

    fn log(&self, team: &str) -> PathBuf {
        self.log_dir(team).join("events.jsonl")
    }

    fn lines(&self, team: &str) -> Vec<String> {
        fs::read_to_string(self.log(team))
            .expect("log")
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn command(&self) -> Command {
        // Only a `--settings` layer: nothing here is about project trust.
        let mut command = self.dirs.command();
        command
            .env_remove(crate::common::TRUST)
            .env("LEVELCODE_DIR", self.data());
        command
    }

    /// `levelcode-hooks run --settings <empty> [args]` with `payload` on stdin.
    fn run(&self, args: &[&str], payload: &Value) -> Dispatch {
        self.run_with(self.command(), args, payload)
    }

    fn run_with(&self, mut command: Command, args: &[&str], payload: &Value) -> Dispatch {
        command
            .arg("run")
            .arg("--settings")
            .arg(self.settings())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = command.spawn().expect("spawned");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(payload.to_string().as_bytes())
            .expect("payload written");
        drop(stdin);
        let output = child.wait_with_output().expect("finished");
        let elapsed = started.elapsed();
        let json: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON object ({e}): {}\nstderr: {}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )
        });
        Dispatch {
            status: output.status.code(),
            json,
            elapsed,
        }
    }

    /// `levelcode-hooks compliance <args>`.
    fn compliance(&self, args: &[&str]) -> Output {
        self.command()
            .arg("compliance")
            .args(args)
            .output()
            .expect("ran")
    }

    /// Every path under the sandbox, to prove that nothing was written.
    fn tree(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            for entry in fs::read_dir(dir).expect("listing").flatten() {
                let path = entry.path();
                out.push(path.clone());
                if path.is_dir() {
                    walk(&path, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(self.dirs.root(), &mut out);
        out.sort();
        out
    }
}

struct Dispatch {
    status: Option<i32>,
    json: Value,
    elapsed: Duration,
}

impl Dispatch {
    fn warnings(&self) -> Vec<String> {
        self.json["warnings"]
            .as_array()
            .expect("warnings array")
            .iter()
            .map(|w| w.as_str().expect("a string").to_string())
            .collect()
    }

    fn assert_proceeds(&self) {
        assert_eq!(self.status, Some(0), "{}", self.json);
        assert_eq!(self.json["decision"], "proceed", "{}", self.json);
    }
}

fn post_tool_use(n: usize) -> Value {
    json!({
        "event": "PostToolUse",
        "tool_name": "write_file",
        "tool_call_id": format!("toolu_{n}"),
        "agent_id": "agent-1",
        "tool_input": { "path": format!("src/f{n}.ts"), "content": "export {}\n" },
        "tool_result": [{ "type": "json", "value": { "file": format!("src/f{n}.ts") } }],
    })
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn post_tool_use_in_a_team_appends_a_signed_line() {
    let sandbox = Sandbox::new();
    for n in 0..3 {
        let out = sandbox.run(&["--team", "alpha"], &post_tool_use(n));
        out.assert_proceeds();
        assert!(out.warnings().is_empty(), "{:?}", out.warnings());
    }
    let lines = sandbox.lines("alpha");
    assert_eq!(lines.len(), 3);
    let first: Value = serde_json::from_str(&lines[0]).expect("JSON line");
    let keys: Vec<&str> = first
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "traceId",
            "timestamp",
            "eventType",
            "agentId",
            "payload",
            "signature",
            "seq",
            "prev",
            "kid",
            "sig"
        ]
    );
    assert_eq!(first["traceId"], "toolu_0");
    assert_eq!(first["eventType"], "tool-call");
    assert_eq!(first["payload"]["tool"], "write_file");
    assert_eq!(first["payload"]["args"]["path"], "src/f0.ts");
    assert_eq!(first["payload"]["result"], "success");
    assert_eq!(first["seq"], 0);
    assert_eq!(first["prev"], "0".repeat(64));

    let dir = sandbox.log_dir("alpha");
    for name in ["events.head", "signing.key", "signing.pub"] {
        assert!(dir.join(name).is_file(), "{name}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = fs::metadata(dir.join("signing.key"))
            .expect("key")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let verify = sandbox.compliance(&["verify", "--team", "alpha"]);
    assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));
    let show = sandbox.compliance(&["show", "--team", "alpha"]);
    assert_eq!(show.status.code(), Some(0));
    let table = stdout(&show);
    assert!(
        table.contains("write_file") && table.contains("toolu_2"),
        "{table}"
    );
}

#[test]
fn a_failed_tool_call_is_recorded_as_failure() {
    let sandbox = Sandbox::new();
    let mut payload = post_tool_use(0);
    payload["tool_result"] =
        json!([{ "type": "json", "value": { "errorMessage": "no such file" } }]);
    sandbox
        .run(&["--team", "alpha"], &payload)
        .assert_proceeds();
    let line: Value = serde_json::from_str(&sandbox.lines("alpha")[0]).expect("JSON line");
    assert_eq!(line["payload"]["result"], "failure");
}

#[test]
fn the_team_comes_from_the_flag_then_the_payload_then_the_environment() {
    let sandbox = Sandbox::new();
    let mut payload = post_tool_use(0);
    payload["team"] = json!("from-payload");
    sandbox
        .run(&["--team", "from-flag"], &payload)
        .assert_proceeds();
    sandbox.run(&[], &payload).assert_proceeds();
    let mut command = sandbox.command();
    command.env("LEVELCODE_TEAM", "from-env");
    sandbox
        .run_with(command, &[], &post_tool_use(1))
        .assert_proceeds();
    for team in ["from-flag", "from-payload", "from-env"] {
        assert_eq!(sandbox.lines(team).len(), 1, "{team}");
    }
}

#[test]
fn without_a_team_or_on_other_events_nothing_is_written() {
    let sandbox = Sandbox::new();
    let before = sandbox.tree();
    sandbox.run(&[], &post_tool_use(0)).assert_proceeds();
    for event in ["PreToolUse", "SessionStart", "Stop"] {
        let mut payload = post_tool_use(0);
        payload["event"] = json!(event);
        sandbox
            .run(&["--team", "alpha"], &payload)
            .assert_proceeds();
    }
    assert_eq!(sandbox.tree(), before);
}

#[test]
fn a_bad_team_name_writes_nothing_anywhere_and_warns() {
    let sandbox = Sandbox::new();
    let before = sandbox.tree();
    let long = "x".repeat(51);
    for team in ["../x", "", long.as_str(), "a/b", ".."] {
        let out = sandbox.run(&["--team", team], &post_tool_use(0));
        out.assert_proceeds();
        let warnings = out.warnings();
        assert_eq!(warnings.len(), 1, "{team:?}: {warnings:?}");
        assert!(warnings[0].contains("team"), "{}", warnings[0]);
        // The same names from the payload and the environment.
        let mut payload = post_tool_use(0);
        payload["team"] = json!(team);
        let out = sandbox.run(&[], &payload);
        out.assert_proceeds();
        assert_eq!(out.warnings().len(), 1, "{team:?}: {:?}", out.warnings());
        let mut command = sandbox.command();
        command.env("LEVELCODE_TEAM", team);
        let out = sandbox.run_with(command, &[], &post_tool_use(0));
        out.assert_proceeds();
    }
    assert_eq!(sandbox.tree(), before);
}

#[test]
fn an_unwritable_log_dir_warns_and_the_dispatch_still_proceeds() {
    let sandbox = Sandbox::new();
    // A regular file where the log's folder should be: no write can succeed, even as root.
    let blocked = sandbox.log_dir("alpha");
    fs::create_dir_all(blocked.parent().expect("parent")).expect("dirs");
    fs::write(&blocked, "not a folder").expect("file");
    let out = sandbox.run(&["--team", "alpha"], &post_tool_use(0));
    out.assert_proceeds();
    let warnings = out.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("compliance"), "{}", warnings[0]);
    assert!(out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);
}

#[test]
fn a_log_that_is_a_folder_warns_and_the_dispatch_still_proceeds() {
    let sandbox = Sandbox::new();
    fs::create_dir_all(sandbox.log("alpha")).expect("a folder in the log's place");
    let out = sandbox.run(&["--team", "alpha"], &post_tool_use(0));
    out.assert_proceeds();
    let warnings = out.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("events.jsonl"), "{}", warnings[0]);
}

#[test]
fn a_lock_that_never_frees_costs_a_bounded_wait_and_a_warning() {
    let sandbox = Sandbox::new();
    sandbox
        .run(&["--team", "alpha"], &post_tool_use(0))
        .assert_proceeds();
    let holder = fs::File::open(sandbox.log("alpha")).expect("log");
    holder.lock().expect("locked");
    let out = sandbox.run(&["--team", "alpha"], &post_tool_use(1));
    out.assert_proceeds();
    let warnings = out.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("locked"), "{}", warnings[0]);
    assert!(out.elapsed < Duration::from_secs(6), "{:?}", out.elapsed);
    drop(holder);
    assert_eq!(sandbox.lines("alpha").len(), 1);
}

#[test]
fn eight_concurrent_dispatchers_make_one_unbroken_chain() {
    const WRITERS: usize = 8;
    const EACH: usize = 200;
    let sandbox = Sandbox::new();
    thread::scope(|scope| {
        for writer in 0..WRITERS {
            let sandbox = &sandbox;
            scope.spawn(move || {
                for n in 0..EACH {
                    let out = sandbox.run(&["--team", "swarm"], &post_tool_use(writer * EACH + n));
                    out.assert_proceeds();
                    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
                }
            });
        }
    });
    let lines = sandbox.lines("swarm");
    assert_eq!(lines.len(), WRITERS * EACH);
    let verify = sandbox.compliance(&["verify", "--team", "swarm", "--strict", "--json"]);
    let report: Value = serde_json::from_slice(&verify.stdout).expect("JSON report");
    assert_eq!(verify.status.code(), Some(0), "{report}");
    assert_eq!(report["ok"], true);
    assert_eq!(report["signed"], WRITERS * EACH);
    assert_eq!(report["last_seq"], WRITERS * EACH - 1);
    assert_eq!(report["head_seq"], WRITERS * EACH - 1);
    // Every call is there exactly once.
    let mut ids: Vec<String> = lines
        .iter()
        .map(|l| {
            let line: Value = serde_json::from_str(l).expect("JSON line");
            line["traceId"].as_str().expect("traceId").to_string()
        })
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), WRITERS * EACH);
}

#[test]
fn verify_names_the_first_tampered_line() {
    let sandbox = Sandbox::new();
    for n in 0..4 {
        sandbox
            .run(&["--team", "alpha"], &post_tool_use(n))
            .assert_proceeds();
    }
    let log = sandbox.log("alpha");
    let original = fs::read_to_string(&log).expect("log");
    let lines: Vec<&str> = original.lines().collect();
    let rewrite = |lines: &[String]| fs::write(&log, lines.join("\n") + "\n").expect("written");

    // Edited.
    let mut edited: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    edited[1] = edited[1].replace("src/f1.ts", "src/evil.ts");
    rewrite(&edited);
    let out = sandbox.compliance(&["verify", "--team", "alpha"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("line 2 (seq 1): edited"),
        "{}",
        stdout(&out)
    );

    // Removed.
    let removed: Vec<String> = [lines[0], lines[2], lines[3]].map(str::to_string).to_vec();
    rewrite(&removed);
    let out = sandbox.compliance(&["verify", "--team", "alpha", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["first_bad"]["line"], 2);
    assert_eq!(report["first_bad"]["seq"], 1);
    assert_eq!(report["first_bad"]["kind"], "removed");

    // Cut off the end.
    rewrite(&lines[..2].iter().map(|l| l.to_string()).collect::<Vec<_>>());
    let out = sandbox.compliance(&["verify", "--team", "alpha"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("line 3 (seq 2): truncated"),
        "{}",
        stdout(&out)
    );

    // Unsigned lines from another writer pass unless --strict.
    let mut foreign: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    foreign.push(
        r#"{"traceId":"t","timestamp":1,"eventType":"decision","payload":{},"signature":"x"}"#
            .to_string(),
    );
    rewrite(&foreign);
    let out = sandbox.compliance(&["verify", "--team", "alpha"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("line 5: unsigned"),
        "{}",
        stdout(&out)
    );
    let out = sandbox.compliance(&["verify", "--team", "alpha", "--strict"]);
    assert_eq!(out.status.code(), Some(1));

    // The same file by path.
    let out = sandbox.compliance(&["verify", "--file", log.to_str().expect("UTF-8 path")]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn verify_without_a_log_or_with_a_bad_team_is_an_error() {
    let sandbox = Sandbox::new();
    let out = sandbox.compliance(&["verify", "--team", "nobody"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("events.jsonl"));
    let out = sandbox.compliance(&["verify", "--team", "../x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("team"));
    let out = sandbox.compliance(&["verify"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a usage error is a failure, never 2 (block)"
    );
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The chain checked from its definition (contract §9), with nothing of the dispatcher's own
/// code: `prev` is the SHA-256 of the previous line's bytes without the newline, `kid` the first
/// 16 hex digits of the SHA-256 of `signing.pub`, and `sig` an Ed25519 signature of the line as
/// written without its `,"sig":"…"` suffix. `compliance verify` shares the writer's code, so a
/// fault common to both would pass it; it cannot pass this.
#[test]
fn the_chain_checks_out_computed_independently() {
    use base64::Engine as _;
    use ed25519_dalek::Verifier as _;
    use sha2::Digest as _;

    let sandbox = Sandbox::new();
    for n in 0..4 {
        sandbox
            .run(&["--team", "alpha"], &post_tool_use(n))
            .assert_proceeds();
    }
    let public = fs::read_to_string(sandbox.log_dir("alpha").join("signing.pub")).expect("key");
    let public = base64::engine::general_purpose::STANDARD
        .decode(public.trim())
        .expect("base64 key");
    let public: [u8; 32] = public.as_slice().try_into().expect("a 32-byte key");
    let key = ed25519_dalek::VerifyingKey::from_bytes(&public).expect("a valid key");
    let kid = hex(&sha2::Sha256::digest(public))[..16].to_string();

    let bytes = fs::read(sandbox.log("alpha")).expect("log");
    assert!(bytes.ends_with(b"\n"), "every line ends in a newline");
    let lines: Vec<&[u8]> = bytes[..bytes.len() - 1].split(|b| *b == b'\n').collect();
    assert_eq!(lines.len(), 4);
    let mut prev = "0".repeat(64);
    for (seq, line) in lines.iter().enumerate() {
        let value: Value = serde_json::from_slice(line).expect("a JSON line");
        assert_eq!(value["seq"], seq, "{value}");
        assert_eq!(value["prev"], prev.as_str(), "line {seq}: prev");
        assert_eq!(value["kid"], kid.as_str(), "line {seq}: kid");
        let sig = value["sig"].as_str().expect("sig");
        let suffix = format!(",\"sig\":\"{sig}\"}}");
        let text = std::str::from_utf8(line).expect("UTF-8");
        let signed = format!(
            "{}}}",
            text.strip_suffix(&suffix)
                .unwrap_or_else(|| panic!("line {seq} ends with its sig: {text}"))
        );
        let sig = base64::engine::general_purpose::STANDARD
            .decode(sig)
            .expect("base64 sig");
        let sig: [u8; 64] = sig.as_slice().try_into().expect("a 64-byte signature");
        key.verify(
            signed.as_bytes(),
            &ed25519_dalek::Signature::from_bytes(&sig),
        )
        .unwrap_or_else(|e| panic!("line {seq}: the signature does not verify: {e}"));
        prev = hex(&sha2::Sha256::digest(line));
    }
}

#[test]
fn serve_compliance_op_records_a_call_the_client_describes() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.command();
    command
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawned");
    let lines = [
        json!({"id": 1, "op": "compliance", "team": "alpha", "trace_id": "tc-1", "agent_id": "agent-7",
               "tool": "write_file", "args": {"path": "a.ts", "n": 1.50, "s": "é\u{2028}"},
               "result": "failure", "timestamp": 1_700_000_000_000_u64}),
        json!({"id": 2, "op": "compliance", "team": "alpha", "trace_id": "tc-2", "tool": "x", "result": "maybe"}),
        json!({"id": 3, "op": "compliance", "team": "../x", "trace_id": "tc-3", "tool": "x", "result": "success"}),
        json!({"id": 4, "op": "compliance", "team": "alpha", "trace_id": "", "tool": "x", "result": "success"}),
        json!({"id": 5, "op": "compliance", "team": "alpha", "trace_id": "tc-5", "tool": "read_files", "result": "success"}),
    ];
    let mut stdin = child.stdin.take().expect("stdin");
    for line in &lines {
        writeln!(stdin, "{line}").expect("written");
    }
    drop(stdin);
    let output = child.wait_with_output().expect("finished");
    let mut answers: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("json"))
        .collect();
    assert_eq!(answers.len(), 5, "{answers:?}");
    // Requests run side by side (contract §14): answers come as each is done, tagged by id.
    answers.sort_by_key(|answer| answer["id"].as_u64());
    assert_eq!(
        answers[0]["compliance"]["log"],
        sandbox.log("alpha").to_str().unwrap()
    );
    assert!(
        answers[1]["error"].as_str().unwrap().contains("result"),
        "{}",
        answers[1]
    );
    assert!(
        answers[2]["error"].as_str().unwrap().contains("team name"),
        "{}",
        answers[2]
    );
    assert!(
        answers[3]["error"].as_str().unwrap().contains("trace_id"),
        "{}",
        answers[3]
    );
    assert!(answers[4].get("error").is_none(), "{}", answers[4]);

    // Recorded in the order the lines came, though requests run side by side (contract §14).
    let logged = sandbox.lines("alpha");
    assert_eq!(logged.len(), 2, "{logged:?}");
    let first: Value = serde_json::from_str(&logged[0]).unwrap();
    assert_eq!(first["traceId"], "tc-1");
    assert_eq!(first["agentId"], "agent-7");
    assert_eq!(first["timestamp"], 1_700_000_000_000_u64);
    assert_eq!(first["payload"]["result"], "failure");
    assert_eq!(first["payload"]["tool"], "write_file");
    // The args as sent, in JavaScript's JSON: 1.50 is 1.5.
    assert!(
        logged[0].contains(r#""args":{"path":"a.ts","n":1.5,"s":"é"#),
        "{}",
        logged[0]
    );
    let second: Value = serde_json::from_str(&logged[1]).unwrap();
    assert!(second.get("agentId").is_none(), "{second}");
    assert_eq!(second["payload"]["args"], Value::Null);
    let verify = sandbox.compliance(&["verify", "--team", "alpha"]);
    assert_eq!(verify.status.code(), Some(0), "{verify:?}");
}

/// levelcode's `logToolCall` through `@levelcode/hooks` records each call itself; a dispatch
/// told so writes no second line, whatever `--team` or `LEVELCODE_TEAM` say (one line per call,
/// as with the engine).
#[test]
fn a_caller_that_records_the_call_itself_gets_no_second_line() {
    let sandbox = Sandbox::new();
    sandbox
        .run(&["--team", "alpha"], &post_tool_use(0))
        .assert_proceeds();
    assert_eq!(
        sandbox.lines("alpha").len(),
        1,
        "the flag is what keeps it out"
    );
    sandbox
        .run(
            &["--team", "alpha", "--caller-records-compliance"],
            &post_tool_use(1),
        )
        .assert_proceeds();
    let mut with_env = sandbox.command();
    with_env.env("LEVELCODE_TEAM", "alpha");
    sandbox
        .run_with(
            with_env,
            &["--caller-records-compliance"],
            &post_tool_use(2),
        )
        .assert_proceeds();
    assert_eq!(sandbox.lines("alpha").len(), 1);

    // The same through serve, per request.
    let mut command = sandbox.command();
    command
        .arg("serve")
        .env("LEVELCODE_TEAM", "alpha")
        .arg("--settings")
        .arg(sandbox.settings())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawned");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut told = post_tool_use(3);
    told["id"] = json!(1);
    told["options"] = json!({"caller_records_compliance": true});
    let mut untold = post_tool_use(4);
    untold["id"] = json!(2);
    writeln!(stdin, "{told}").unwrap();
    writeln!(stdin, "{untold}").unwrap();
    drop(stdin);
    let output = child.wait_with_output().expect("finished");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).lines().count(),
        2,
        "{output:?}"
    );
    let logged = sandbox.lines("alpha");
    assert_eq!(logged.len(), 2, "only the request not told: {logged:?}");
    assert!(logged[1].contains("toolu_4"), "{}", logged[1]);
}
