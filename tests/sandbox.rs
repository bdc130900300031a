//! Sandboxed handlers (contract §20), black-box: how `"sandbox"` is read, shown and trusted.
//! The attacks it refuses, each first shown succeeding without it, are in `sandbox/attacks.rs`.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::common::{write, Sandbox, TRUST};

/// A HOME, a project and a temporary folder of their own that outlive one command. The test's
/// directory is under the system's temporary folder, so the dispatcher is given `<test>/tmp` as
/// its `TMPDIR`: the policy's temporary folder is then that alone, not the HOME beside it.
pub struct Place {
    _sandbox: Sandbox,
    root: PathBuf,
    env: Vec<(String, Option<String>)>,
    /// The dispatcher runs as on a kernel without Landlock (see [`Place::without_landlock`]).
    no_landlock: bool,
}

/// What one command gave.
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// stdout as one JSON object.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim_end())
            .unwrap_or_else(|e| panic!("{e}: {:?}; stderr: {}", self.stdout, self.stderr))
    }
}

impl Place {
    pub fn new() -> Place {
        let sandbox = Sandbox::new();
        let root = sandbox.root().to_path_buf();
        std::fs::create_dir_all(root.join("tmp")).unwrap();
        Place {
            _sandbox: sandbox,
            root,
            env: Vec::new(),
            no_landlock: false,
        }
    }

    /// The dispatcher started under a seccomp filter that answers every Landlock system call
    /// with ENOSYS, as a kernel built without Landlock does (and as some container runtimes'
    /// filters make it look): the honest way to meet such a kernel on this one.
    pub fn without_landlock(mut self) -> Place {
        self.no_landlock = true;
        self
    }

    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    pub fn root(&self) -> &std::path::Path {
        &self.root
    }

    pub fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    pub fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }

    pub fn env(mut self, key: &str, value: impl Into<String>) -> Place {
        self.env.push((key.into(), Some(value.into())));
        self
    }

    /// Runs without the opt-in that trusts the project's hooks.
    pub fn untrusted(mut self) -> Place {
        self.env.push((TRUST.into(), None));
        self
    }

    pub fn project_settings(&self, settings: &Value) {
        write(
            &self.project().join(".levelcode/settings.json"),
            settings.to_string(),
        );
    }

    pub fn user_settings(&self, settings: &Value) {
        write(
            &self.home().join(".config/levelcode/settings.json"),
            settings.to_string(),
        );
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = crate::common::command(&self.home(), &self.project());
        command
            .env("TMPDIR", self.tmp())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in &self.env {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        if self.no_landlock {
            hide_landlock(&mut command);
        }
        command
    }

    /// `args` with `stdin`.
    pub fn exec(&self, args: &[&str], stdin: &[u8]) -> Ran {
        let mut child = self.command(args).spawn().unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        let out = child.wait_with_output().unwrap();
        Ran {
            code: out.status.code().expect("the dispatcher exits"),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// A dispatch of `payload`: its output.
    pub fn dispatch(&self, payload: &Value) -> Value {
        self.exec(&["run"], payload.to_string().as_bytes()).json()
    }
}

mod attacks;
mod project;

/// Returns true when this kernel can enforce the default policy, which the tests of what a
/// sandbox refuses need; otherwise the test fails, unless `LEVELCODE_HOOKS_TEST_SKIP` names
/// `landlock` (then it returns early).
pub fn landlock() -> bool {
    static CHECKED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let enforced = *CHECKED.get_or_init(|| {
        let ran = Place::new().exec(&["sandbox", "--check", "--json"], b"");
        ran.json()["default_policy"]["enforced"] == json!(true)
    });
    crate::common::require(
        "landlock",
        enforced,
        "a kernel with Landlock ABI 6 and seccomp, which sandbox --check reports",
    )
}

/// Makes `command` start under a seccomp filter that answers Landlock's three system calls with
/// ENOSYS.
fn hide_landlock(command: &mut Command) {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter};
    use std::os::unix::process::CommandExt;
    let calls = [
        libc::SYS_landlock_create_ruleset,
        libc::SYS_landlock_add_rule,
        libc::SYS_landlock_restrict_self,
    ];
    let program: BpfProgram = SeccompFilter::new(
        calls.into_iter().map(|call| (call, Vec::new())).collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        std::env::consts::ARCH.try_into().unwrap(),
    )
    .unwrap()
    .try_into()
    .unwrap();
    // SAFETY: installing the filter is two system calls (prctl, seccomp) on a program built
    // before the fork, which the child only reads: async-signal-safe, nothing allocated unless
    // it fails.
    unsafe {
        command
            .pre_exec(move || seccompiler::apply_filter(&program).map_err(std::io::Error::other));
    }
}

/// Settings with one `Stop` group holding `handler`.
pub fn stop(handler: Value) -> Value {
    json!({"hooks": {"Stop": [{"hooks": [handler]}]}})
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn list_shows_each_handlers_sandbox_and_where_it_was_said() {
    let place = Place::new();
    place.project_settings(&json!({
        "sandbox": true,
        "hooks": {"Stop": [
            {"hooks": [{"command": "from-file"}, {"command": "own-off", "sandbox": false}]},
            {"sandbox": {"write": ["build"], "network": true},
             "hooks": [{"command": "from-group"}, {"command": "own", "sandbox": "best-effort"}]}
        ]}
    }));
    let listed = place.exec(&["list", "--json"], b"").json();
    let handlers = listed["handlers"].as_array().unwrap();
    let sandboxes: Vec<&Value> = handlers.iter().map(|h| &h["sandbox"]).collect();
    assert_eq!(
        sandboxes,
        [
            &json!({"write": [], "network": false, "best_effort": false, "from": "layer"}),
            &Value::Null,
            &json!({"write": ["build"], "network": true, "best_effort": false, "from": "group"}),
            &json!({"write": [], "network": false, "best_effort": true, "from": "handler"}),
        ]
    );
    let text = place.exec(&["list"], b"").stdout;
    assert!(
        text.contains(
            "sandbox: writes only in the project, the temporary folder and /dev/null; no network"
        ),
        "{text}"
    );
    assert!(
        text.contains("/dev/null and build; network allowed"),
        "{text}"
    );
    assert!(text.contains("(from its group)"), "{text}");
    assert!(text.contains("best effort"), "{text}");
    assert_eq!(text.matches("    sandbox: ").count(), 3, "{text}");

    let dry = place
        .exec(&["test", "--event", "Stop", "--dry-run"], b"")
        .stdout;
    assert_eq!(dry.matches("sandbox: writes only").count(), 3, "{dry}");
}

#[test]
fn validate_reads_every_sandbox_key_and_names_a_bad_one() {
    let place = Place::new();
    place.project_settings(&json!({
        "sandbox": {"write": ["~/.cache"]},
        "hooks": {"Stop": [{"sandbox": true, "hooks": [{"command": "true", "sandbox": {"network": true}}]}]}
    }));
    let good = place.exec(&["validate", "--json"], b"").json();
    let kinds: Vec<&str> = good["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert!(!kinds.contains(&"unknown_key"), "{good}");

    place.project_settings(&stop(
        json!({"command": "true", "sandbox": {"netwrok": true}}),
    ));
    let bad = place.exec(&["validate", "--json"], b"").json();
    let text = bad.to_string();
    assert!(
        text.contains("has no key \\\"netwrok\\\"") && text.contains("handler skipped"),
        "{text}"
    );
    // A dispatch skips that handler, with the same warning: it never runs unconfined.
    let out = place.dispatch(&json!({"event": "Stop"}));
    assert_eq!(out["handlers"], json!([]), "{out}");
    assert!(
        strings(&out["warnings"])
            .iter()
            .any(|w| w.contains("hooks.Stop[0].hooks[0].sandbox: has no key")),
        "{out}"
    );
}

/// The policy is part of what a person trusts (contract §13, §20): the review shows it, and a
/// project that loosens it, on a handler or for the whole file, is `changed` until trusted again.
#[test]
fn a_project_that_loosens_its_sandbox_needs_trust_again() {
    let place = Place::new().untrusted();
    place.project_settings(&stop(json!({"command": "echo ran", "sandbox": true})));
    let review = place.exec(&["trust", "--yes"], b"");
    assert_eq!(review.code, 0, "{}", review.stderr);
    assert!(
        review
            .stdout
            .contains("sandbox: writes only in the project"),
        "{}",
        review.stdout
    );
    let status = |place: &Place| place.exec(&["trust", "--status", "--json"], b"").json();
    assert_eq!(status(&place)["state"], "trusted");
    assert_eq!(
        status(&place)["hooks"][0]["sandbox"],
        json!({"write": [], "network": false, "best_effort": false})
    );

    for loosened in [
        stop(json!({"command": "echo ran", "sandbox": {"network": true}})),
        stop(json!({"command": "echo ran", "sandbox": false})),
        stop(json!({"command": "echo ran"})),
    ] {
        place.project_settings(&loosened);
        assert_eq!(status(&place)["state"], "changed", "{loosened}");
        let out = place.dispatch(&json!({"event": "Stop"}));
        assert_eq!(out["handlers"], json!([]), "{loosened}: {out}");
        assert_eq!(out["project_trust"]["state"], "changed", "{out}");
    }

    // The file's own `"sandbox"`, outside `hooks`, is trusted too.
    let hooks = stop(json!({"command": "echo ran"}))["hooks"].clone();
    place.project_settings(&json!({"sandbox": true, "hooks": hooks}));
    assert_eq!(place.exec(&["trust", "--yes"], b"").code, 0);
    assert_eq!(status(&place)["state"], "trusted");
    for loosened in [
        json!({"sandbox": {"write": ["~"]}, "hooks": hooks}),
        json!({"sandbox": false, "hooks": hooks}),
        json!({"hooks": hooks}),
    ] {
        place.project_settings(&loosened);
        assert_eq!(status(&place)["state"], "changed", "{loosened}");
    }
}

/// A policy this system cannot enforce does not run the handler (contract §20): outcome
/// `error` naming what is missing, or a block under `"onFailure": "block"`. Met here through a
/// temporary folder that holds the home directory, which no sandbox can grant.
#[test]
fn a_sandbox_that_cannot_be_had_fails_closed() {
    let place = Place::new().env("TMPDIR", "/");
    let handler = json!({"command": "echo ran > ran.txt", "sandbox": true, "name": "guard"});
    place.project_settings(&stop(handler.clone()));
    let out = place.dispatch(&json!({"event": "Stop"}));
    let entry = &out["handlers"][0];
    assert_eq!(entry["outcome"], "error", "{out}");
    let message = entry["message"].as_str().unwrap();
    assert!(
        message.starts_with("not run: its sandbox cannot be enforced here: the temporary folder / holds the home directory"),
        "{message}"
    );
    assert!(!place.project().join("ran.txt").exists());

    let mut guard = handler.clone();
    guard["onFailure"] = json!("block");
    place.project_settings(&json!({"hooks": {"PreToolUse": [{"hooks": [guard]}]}}));
    let blocked = place.exec(
        &["run"],
        br#"{"event":"PreToolUse","tool_name":"write_file","tool_input":{}}"#,
    );
    assert_eq!(blocked.code, 2, "{}", blocked.stdout);
    let reason = blocked.json()["reason"].as_str().unwrap().to_string();
    assert!(
        reason.contains("the guard guard failed") && reason.contains("sandbox"),
        "{reason}"
    );
    assert!(!place.project().join("ran.txt").exists());

    // Best effort runs it without the temporary folder, and says so.
    place.project_settings(&stop(
        json!({"command": "echo ran > ran.txt", "sandbox": "best-effort"}),
    ));
    let out = place.dispatch(&json!({"event": "Stop"}));
    let entry = &out["handlers"][0];
    assert_eq!(entry["outcome"], "proceed", "{out}");
    assert!(
        entry["message"]
            .as_str()
            .unwrap()
            .contains("left out: the temporary folder /"),
        "{out}"
    );
    assert!(place.project().join("ran.txt").exists());
}

/// On a kernel without Landlock the default policy is refused, by name; best effort runs the
/// handler with what is left (the seccomp filter) and names the rest; `sandbox --check` and
/// `validate` say so before anything runs.
#[test]
fn a_kernel_without_landlock_runs_no_sandboxed_handler() {
    let place = Place::new().without_landlock();
    let check = place.exec(&["sandbox", "--check"], b"");
    assert_eq!(check.code, 1, "{}", check.stdout);
    assert!(check.stdout.contains("no Landlock"), "{}", check.stdout);
    assert!(check.stdout.contains("MISSING"), "{}", check.stdout);

    place.project_settings(&stop(
        json!({"command": "echo ran > ran.txt", "sandbox": true}),
    ));
    let out = place.dispatch(&json!({"event": "Stop"}));
    let entry = &out["handlers"][0];
    assert_eq!(entry["outcome"], "error", "{out}");
    let message = entry["message"].as_str().unwrap();
    assert!(message.contains("this kernel has no Landlock"), "{message}");
    assert!(
        message.contains("writes outside the allowed paths (needs Landlock ABI 1)"),
        "{message}"
    );
    assert!(!place.project().join("ran.txt").exists());
    let validated = place.exec(&["validate", "--json"], b"").json();
    assert!(
        validated.to_string().contains("sandbox_not_enforceable"),
        "{validated}"
    );

    place.project_settings(&stop(json!({
        "command": "echo ran > ran.txt; python3 -c 'import socket; socket.socket()' 2>&1 | tail -1",
        "sandbox": "best-effort"
    })));
    let out = place.dispatch(&json!({"event": "Stop"}));
    let entry = &out["handlers"][0];
    assert_eq!(entry["outcome"], "proceed", "{out}");
    let message = entry["message"].as_str().unwrap();
    assert!(
        message.contains("left out: writes outside the allowed paths"),
        "{message}"
    );
    assert!(place.project().join("ran.txt").exists());
    assert!(
        entry["stdout"]
            .as_str()
            .unwrap()
            .contains("Operation not permitted"),
        "the seccomp filter is still applied: {out}"
    );
}

/// `validate` names a path a policy may write that is not there; `-v` prints each sandboxed
/// handler's policy.
/// A background handler whose sandbox this kernel cannot enforce is not started either: its
/// entry is `error` at once, nothing runs later, and under `"onFailure": "block"` it blocks the
/// call, as the same guard in the foreground would (contract §20 before §21's "cannot block").
#[test]
fn a_background_handler_whose_sandbox_cannot_be_had_starts_nothing() {
    let place = Place::new().without_landlock();
    let pre_tool_use = |handler: &Value| json!({"hooks": {"PreToolUse": [{"matcher": "write_file", "hooks": [handler]}]}});
    let call = json!({
        "event": "PreToolUse",
        "session_id": "s1",
        "tool_name": "write_file",
        "tool_input": {"path": "a.txt", "content": "x"}
    });
    let handler = json!({"command": "echo ran > ran.txt", "sandbox": true, "async": true});
    place.project_settings(&pre_tool_use(&handler));
    let out = place.dispatch(&call);
    assert_eq!(out["handlers"][0]["outcome"], "error", "{out}");
    assert_eq!(out["decision"], "proceed", "{out}");
    let mut guard = handler;
    guard["onFailure"] = json!("block");
    place.project_settings(&pre_tool_use(&guard));
    let out = place.dispatch(&call);
    assert_eq!(out["handlers"][0]["outcome"], "block", "{out}");
    assert_eq!(out["decision"], "block", "{out}");
    // Nothing was started in the background that could write it later: the next dispatch of
    // the session has nothing handed on, and the file is not there.
    place.project_settings(&json!({}));
    let next = place.dispatch(&json!({"event": "Stop", "session_id": "s1"}));
    assert!(next.get("background").is_none(), "{next}");
    assert!(!place.project().join("ran.txt").exists());
}

#[test]
fn validate_names_a_missing_path_and_the_trace_names_the_policy() {
    let place = Place::new();
    place.project_settings(&stop(json!({
        "command": "true",
        "sandbox": {"write": ["build", "~/.cache/tool"]}
    })));
    let validated = place.exec(&["validate", "--json"], b"").json();
    let missing: Vec<String> = validated["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "sandbox_path_missing")
        .map(|p| p["message"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(missing.len(), 2, "{validated}");
    assert!(
        missing[0].starts_with("write[0]: ")
            && missing[0].contains("/project/build does not exist"),
        "{missing:?}"
    );
    std::fs::create_dir_all(place.project().join("build")).unwrap();
    std::fs::create_dir_all(place.home().join(".cache/tool")).unwrap();
    let validated = place.exec(&["validate", "--json"], b"").json();
    assert!(
        !validated.to_string().contains("sandbox_path_missing"),
        "{validated}"
    );

    let traced = place.exec(&["run", "-v"], br#"{"event":"Stop"}"#);
    assert!(
        traced.stderr.contains("true: sandbox: writes only in the project, the temporary folder, /dev/null, build and ~/.cache/tool; no network"),
        "{}",
        traced.stderr
    );
}
