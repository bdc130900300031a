//! Trust against a hostile repository (docs/trust.md): each way round §13's promise that a
//! review found, as a repository's author would try it, and the bugs that the suite once let
//! pass.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{json, Value};

use super::{stdouts, World};
use crate::common::write;

/// Files settle (their change time at least two seconds old) before they are sealed.
fn settle() {
    std::thread::sleep(Duration::from_millis(2200));
}

/// A script at `path` in `project` that leaves `marker` in the project when it runs.
pub(super) fn marking_script(project: &Path, path: &str, marker: &str) {
    let file = project.join(path);
    write(
        &file,
        format!("#!/bin/sh\ntouch \"$LEVELCODE_PROJECT_DIR/{marker}\"\n"),
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Trusts the world's project with `hooks` and its script at `script`, checks that the trusted
/// script runs, then edits it and checks that the edited script does not run before a new
/// trust, and that the project reads as `changed`.
pub(super) fn an_edit_never_runs_untrusted(world: &World, hooks: &Value, script: &str) {
    let project = world.project();
    world.settings(&project, hooks);
    marking_script(&project, script, "good-ran");
    let (code, stdout, stderr) = world.trust(&["--yes"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let out = world.run();
    assert!(
        project.join("good-ran").exists(),
        "the trusted script runs: {hooks} {out}"
    );
    // The same length, so that only the contents differ.
    marking_script(&project, script, "evil-ran");
    let out = world.run();
    assert!(
        !project.join("evil-ran").exists(),
        "the edited script ran without a new trust: {hooks} {out}"
    );
    assert_eq!(out["project_trust"]["state"], "changed", "{hooks} {out}");
}

pub(super) fn command(command: &str) -> Value {
    json!({"hooks": {"Stop": [{"hooks": [{"command": command}]}]}})
}

fn argv(argv: &[&str]) -> Value {
    json!({"hooks": {"Stop": [{"hooks": [{"argv": argv}]}]}})
}

#[test]
fn a_redirection_glued_to_the_script_name_does_not_hide_it() {
    for hooks in [
        command("sh tools/g.sh>/dev/null"),
        command("sh tools/g.sh>>log"),
        command("sh tools/g.sh 2>/dev/null>/dev/null"),
    ] {
        an_edit_never_runs_untrusted(&World::new(), &hooks, "tools/g.sh");
    }
}

#[test]
fn an_input_redirection_names_the_script_it_feeds() {
    for hooks in [
        command("sh<tools/g.sh"),
        command("sh 0<tools/g.sh"),
        command("sh <>tools/g.sh"),
        command("exec<tools/g.sh;sh"),
    ] {
        an_edit_never_runs_untrusted(&World::new(), &hooks, "tools/g.sh");
    }
}

#[test]
fn an_argv_element_with_operators_is_split_again() {
    for hooks in [
        argv(&["sh", "-c", "./tools/g.sh;true"]),
        argv(&["sh", "-c", "./tools/g.sh&&true"]),
    ] {
        an_edit_never_runs_untrusted(&World::new(), &hooks, "tools/g.sh");
    }
}

#[test]
fn an_unbalanced_quote_on_a_later_line_falls_back_and_says_so() {
    let world = World::new();
    let hooks = command("sh './tools/g.sh'\necho '");
    an_edit_never_runs_untrusted(&world, &hooks, "tools/g.sh");
    let (_, stdout, _) = world.trust(&["--yes"]);
    assert!(
        stdout.contains("Could not split the command of hooks.Stop[0].hooks[0]"),
        "{stdout}"
    );
    let (_, status) = world.status();
    assert_eq!(status["fallback"], json!(["hooks.Stop[0].hooks[0]"]));
}

#[test]
fn proc_self_cwd_is_the_project_root() {
    an_edit_never_runs_untrusted(
        &World::new(),
        &command("sh /proc/self/cwd/tools/g.sh"),
        "tools/g.sh",
    );
}

#[test]
fn an_absolute_path_through_a_symlinked_root_is_covered() {
    let world = World::new();
    let link = world.root.join("link");
    std::os::unix::fs::symlink(world.project(), &link).unwrap();
    let hooks = command(&format!("sh {}/tools/g.sh", link.display()));
    an_edit_never_runs_untrusted(&world, &hooks, "tools/g.sh");
}

#[test]
fn a_file_name_starting_with_a_dash_is_covered() {
    an_edit_never_runs_untrusted(&World::new(), &command("sh -- -g.sh"), "-g.sh");
}

#[test]
fn every_file_of_the_hooks_folder_is_covered_however_it_is_named() {
    let world = World::new();
    let project = world.project();
    // The hook names its script through a variable no digest can follow.
    world.settings(&project, &command("s=g; sh .levelcode/hooks/$s.sh"));
    marking_script(&project, ".levelcode/hooks/g.sh", "good-ran");
    write(&project.join(".levelcode/hooks/lib/util.sh"), "x=1\n");
    let (code, stdout, _) = world.trust(&["--yes"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("Files in .levelcode/hooks/ (every one is covered, named or not):"),
        "{stdout}"
    );
    for file in [
        ".levelcode/hooks/g.sh  sha256:",
        ".levelcode/hooks/lib/util.sh  sha256:",
    ] {
        assert!(stdout.contains(file), "{file}: {stdout}");
    }
    world.run();
    assert!(project.join("good-ran").exists());
    marking_script(&project, ".levelcode/hooks/g.sh", "evil-ran");
    let out = world.run();
    assert!(!project.join("evil-ran").exists(), "{out}");
    assert_eq!(out["project_trust"]["state"], "changed", "{out}");

    // A file added to the folder, nested or not, is an edit too.
    assert_eq!(world.trust(&["--yes"]).0, 0);
    write(&project.join(".levelcode/hooks/lib/new.sh"), "");
    assert_eq!(world.run()["project_trust"]["state"], "changed");

    // Files levelcode writes beside the folder are not.
    assert_eq!(world.trust(&["--yes"]).0, 0);
    write(&project.join(".levelcode/datasets.json"), "{}");
    assert!(world.run().get("project_trust").is_none());
}

#[test]
fn a_hooks_folder_past_its_bounds_cannot_be_trusted_and_says_what_is_too_large() {
    let world = World::new();
    let project = world.project();
    world.settings(&project, &command("sh .levelcode/hooks/g.sh"));
    let folder = project.join(".levelcode/hooks");
    std::fs::create_dir_all(&folder).unwrap();
    for i in 0..1001 {
        std::fs::write(folder.join(format!("{i}.txt")), "").unwrap();
    }
    let (code, _, stderr) = world.trust(&["--yes"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("holds more than 1000 files"), "{stderr}");
    assert!(
        std::fs::metadata(world.store()).is_err(),
        "nothing recorded"
    );

    std::fs::remove_dir_all(&folder).unwrap();
    std::fs::create_dir_all(&folder).unwrap();
    let big = std::fs::File::create(folder.join("big.bin")).unwrap();
    big.set_len(17 << 20).unwrap();
    let (code, _, stderr) = world.trust(&["--yes"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("add up to more than 16 MiB"), "{stderr}");
    assert!(stderr.contains("big.bin"), "{stderr}");
}

/// A settings path that a local writer flips between the trusted file and another one: the
/// seal is checked against the file that was read, so the other one's hooks never run.
#[test]
fn a_settings_symlink_flipped_while_it_is_read_never_runs_the_other_file() {
    let world = World::new();
    let project = world.project();
    let dir = project.join(".levelcode");
    write(&dir.join("good.json"), command("true").to_string());
    write(
        &dir.join("evil.json"),
        command("touch \"$LEVELCODE_PROJECT_DIR/evil-ran\"").to_string(),
    );
    let settings = dir.join("settings.json");
    std::os::unix::fs::symlink("good.json", &settings).unwrap();
    settle();
    assert_eq!(world.trust(&["--yes"]).0, 0);
    let store = std::fs::read_to_string(world.store()).unwrap();
    assert!(store.contains("\"seal\""), "{store}");

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flipper = {
        let stop = std::sync::Arc::clone(&stop);
        let (dir, settings) = (dir.clone(), settings.clone());
        std::thread::spawn(move || {
            let tmp = dir.join("flip.tmp");
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for target in ["evil.json", "good.json"] {
                    let _ = std::fs::remove_file(&tmp);
                    std::os::unix::fs::symlink(target, &tmp).unwrap();
                    std::fs::rename(&tmp, &settings).unwrap();
                }
            }
        })
    };
    for _ in 0..60 {
        world.run();
        if project.join("evil-ran").exists() {
            break;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    flipper.join().unwrap();
    assert!(
        !project.join("evil-ran").exists(),
        "the untrusted file's hooks ran"
    );
}

/// `serve` keeps no trust once the project's root symlink leads to another checkout, even
/// one whose settings file is a symlink to the trusted one's.
#[test]
fn serve_notices_the_project_root_symlink_moving_to_another_checkout() {
    let world = World::new();
    let (a, b) = (world.root.join("a"), world.root.join("b"));
    for checkout in [&a, &b] {
        std::fs::create_dir_all(checkout.join(".levelcode")).unwrap();
    }
    write(
        &a.join(".levelcode/settings.json"),
        command("sh tools/g.sh").to_string(),
    );
    marking_script(&a, "tools/g.sh", "good-ran");
    std::os::unix::fs::symlink(
        a.join(".levelcode/settings.json"),
        b.join(".levelcode/settings.json"),
    )
    .unwrap();
    marking_script(&b, "tools/g.sh", "evil-ran");
    let current = world.root.join("current");
    std::os::unix::fs::symlink(&a, &current).unwrap();
    settle();
    assert_eq!(world.trust_in(&["--yes"], &current).0, 0);

    let mut server = world.serve(&[], &world.root.join("serve.log"));
    let stop = json!({"event": "Stop", "options": {"project_dir": current}});
    server.ask(&stop);
    assert!(a.join("good-ran").exists());
    settle();
    server.ask(&stop);

    let tmp = world.root.join("current.tmp");
    std::os::unix::fs::symlink(&b, &tmp).unwrap();
    std::fs::rename(&tmp, &current).unwrap();
    let out = server.ask(&stop);
    assert!(!b.join("evil-ran").exists(), "{out}");
    assert_ne!(out["project_trust"]["state"], Value::Null, "{out}");
    // `run` says the same.
    let out = world.run_in(&current);
    assert!(!b.join("evil-ran").exists(), "{out}");
}

/// A same-size edit with its modification time put back, as `cp -p` and `tar` do: the change
/// time still moved, and the seal sees it.
#[test]
fn an_edit_with_its_modification_time_put_back_is_seen() {
    let world = World::new();
    let project = world.project();
    world.settings(&project, &command("sh tools/g.sh"));
    // The marks go to a folder of their own, so that the root's entries, which the seal holds
    // for the words that name nothing (`sh`), stay as they were.
    std::fs::create_dir_all(project.join("marks")).unwrap();
    marking_script(&project, "tools/g.sh", "marks/good-ran");
    settle();
    assert_eq!(world.trust(&["--yes"]).0, 0);
    let store = std::fs::read_to_string(world.store()).unwrap();
    assert!(store.contains("\"seal\""), "{store}");
    world.run();
    assert!(project.join("marks/good-ran").exists());
    let script = project.join("tools/g.sh");
    let modified = std::fs::metadata(&script).unwrap().modified().unwrap();
    marking_script(&project, "tools/g.sh", "marks/evil-ran");
    std::fs::File::options()
        .write(true)
        .open(&script)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    let out = world.run();
    assert!(!project.join("marks/evil-ran").exists(), "{out}");
    assert_eq!(out["project_trust"]["state"], "changed", "{out}");
}

/// `"enabled": false` is part of what was trusted: enabling the handler is an edit.
#[test]
fn enabling_a_disabled_handler_is_an_edit() {
    let world = World::new();
    let project = world.project();
    let hooks = |enabled: bool| {
        json!({"hooks": {"Stop": [{"hooks": [
            {"command": "echo on"},
            {"command": "echo off", "enabled": enabled}
        ]}]}})
    };
    world.settings(&project, &hooks(false));
    assert_eq!(world.trust(&["--yes"]).0, 0);
    assert_eq!(stdouts(&world.run()), ["on"]);
    world.settings(&project, &hooks(true));
    let out = world.run();
    assert_eq!(out["project_trust"]["state"], "changed", "{out}");
    assert!(stdouts(&out).is_empty(), "{out}");
}

/// The store is replaced by renaming a temporary file that was synced to disk first: without
/// the sync, a crash can leave an empty store in place of every project's entry.
#[test]
fn the_store_is_synced_before_it_is_renamed_into_place() {
    if !crate::common::require(
        "strace",
        crate::common::runs("strace", &["-f", "-o", "/dev/null", "true"]),
        "to watch the system calls that write the trust store",
    ) {
        return;
    }
    let world = World::new();
    world.settings(&world.project(), &command("true"));
    let trace = world.root.join("strace.log");
    // The sandbox's command, run under strace with the sandbox's environment.
    let project = world.project().display().to_string();
    let sandboxed = world.command(
        &["trust", "--yes", "--project-dir", &project],
        &world.project(),
    );
    let mut strace = std::process::Command::new("strace");
    strace
        .arg("-f")
        .arg("-o")
        .arg(&trace)
        .args([
            "-e",
            "trace=openat,fsync,fdatasync,rename,renameat,renameat2",
        ])
        .arg(sandboxed.get_program())
        .args(sandboxed.get_args())
        .current_dir(world.project())
        .stdin(std::process::Stdio::null());
    for (key, value) in sandboxed.get_envs() {
        match value {
            Some(value) => strace.env(key, value),
            None => strace.env_remove(key),
        };
    }
    let out = strace.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let log = std::fs::read_to_string(&trace).unwrap();
    // The descriptor the temporary file was opened as, synced before any rename of it.
    let opened = log
        .lines()
        .find(|l| l.contains("trusted-hooks.json.tmp") && l.contains("openat"))
        .unwrap_or_else(|| panic!("no open of the temporary file: {log}"));
    let fd = opened.rsplit("= ").next().unwrap().trim().to_string();
    let after_open: Vec<&str> = log.lines().skip_while(|l| *l != opened).skip(1).collect();
    let synced = after_open
        .iter()
        .position(|l| {
            (l.contains("fsync(") || l.contains("fdatasync(")) && l.contains(&format!("({fd})"))
        })
        .unwrap_or_else(|| panic!("the temporary file (fd {fd}) is never synced: {log}"));
    let renamed = after_open
        .iter()
        .position(|l| l.contains("rename") && l.contains("trusted-hooks.json.tmp"))
        .unwrap_or_else(|| panic!("no rename: {log}"));
    assert!(synced < renamed, "synced after the rename: {log}");
}

/// Thousands of long, distinct words that all name one script: the seal they would need does
/// not fit, so the project is trusted without one, and the store stays small.
#[test]
fn a_seal_too_large_for_the_store_is_not_recorded() {
    let world = World::new();
    let project = world.project();
    marking_script(&project, "tools/g.sh", "good-ran");
    // Distinct as paths, not only as text (`a/./b` is `a/b`).
    let long = "d".repeat(120);
    let mut argv = vec!["sh".to_string()];
    argv.extend((0..3000).map(|i| {
        std::fs::create_dir(project.join(format!("{long}{i}"))).unwrap();
        format!("./{long}{i}/../tools/g.sh")
    }));
    world.settings(
        &project,
        &json!({"hooks": {"Stop": [{"hooks": [{"argv": argv}]}]}}),
    );
    settle();
    let (code, stdout, stderr) = world.trust(&["--yes"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let store = std::fs::read_to_string(world.store()).unwrap();
    assert!(
        store.len() < 16384,
        "{} bytes: {}",
        store.len(),
        &store[..2000]
    );
    assert!(!store.contains("\"seal\""), "{}", &store[..3000]);
    world.run();
    assert!(project.join("good-ran").exists());
}

/// `trust` refuses a project whose entry would not fit in the store, and loses no other
/// project's entry and no denial.
#[test]
fn trust_refuses_an_entry_that_would_not_fit_and_loses_nothing() {
    let world = World::new();
    let denied = world.root.join("denied");
    world.settings(&denied, &command("true"));
    assert_eq!(world.trust_in(&["--deny"], &denied).0, 0);
    // A store just under its bound, written compactly, with the denial in it.
    let digest = format!("sha256:{}", "1".repeat(64));
    let mut projects = serde_json::Map::new();
    projects.insert(
        denied.display().to_string(),
        json!({"denied": true, "at": 1}),
    );
    let mut i = 0;
    let mut size = 0;
    while size < (16 << 20) - 4096 {
        let entry = json!({"digest": digest, "at": 1});
        size += entry.to_string().len() + 24;
        projects.insert(format!("/elsewhere/{i:08}"), entry);
        i += 1;
    }
    let text = json!({"version": 1, "projects": projects}).to_string();
    assert!(text.len() < 16 << 20);
    write(&world.store(), &text);
    world.settings(&world.project(), &command("true"));
    let (code, stdout, stderr) = world.trust(&["--yes"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stderr.contains("would be over 16 MiB"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(world.store()).unwrap(),
        text,
        "the store is as it was"
    );
    assert_eq!(
        world.trust_in(&["--status"], &denied).0,
        5,
        "the denial is kept"
    );
}

/// What a person is shown is what runs: control characters and bidirectional overrides are
/// shown escaped, with a warning, in the review, `list`, `validate` and `test`.
#[test]
fn invisible_characters_are_shown_escaped_with_a_warning() {
    let world = World::new();
    let hidden = "touch X; echo hidden|cat\r\x1b[2K      command: sh .levelcode/hooks/fmt.sh";
    let bidi = "echo \u{202e}hs.lve";
    world.settings(
        &world.project(),
        &json!({"hooks": {"Stop": [{"hooks": [{"command": hidden}, {"argv": ["sh", bidi]}]}]}}),
    );
    let (_, review, stderr) = world.trust(&["--yes"]);
    for shown in [&review, &stderr] {
        assert!(
            !shown.contains('\x1b') && !shown.contains('\r'),
            "{shown:?}"
        );
        assert!(!shown.contains('\u{202e}'), "{shown:?}");
    }
    assert!(review.contains("\\r\\x1b[2K"), "{review}");
    assert!(review.contains("\\u202ehs.lve"), "{review}");
    assert!(
        stderr.contains("invisible") || review.contains("invisible"),
        "{review}{stderr}"
    );
    // `test` itself prints the dispatch's JSON, with the same escapes as JSON ones.
    let (_, stdout, _) = world.exec(&["test", "--event", "Stop"], &world.project(), b"");
    assert!(!stdout.contains('\u{202e}'), "{stdout:?}");
    assert!(stdout.contains("\\u202ehs.lve"), "{stdout}");
    let out: Value = serde_json::from_str(stdout.trim_end()).unwrap();
    assert_eq!(out["handlers"][1]["label"], format!("sh '{bidi}'"));
    for args in [
        &["list"][..],
        &["validate"][..],
        &["test", "--event", "Stop", "--dry-run"][..],
    ] {
        let (_, stdout, stderr) = world.exec(args, &world.project(), b"");
        let both = format!("{stdout}{stderr}");
        assert!(
            !both.contains('\x1b') && !both.contains('\u{202e}'),
            "{args:?}: {both:?}"
        );
        assert!(both.contains("|cat\\r\\x1b[2K"), "{args:?}: {both}");
        assert!(both.contains("\\u202ehs.lve"), "{args:?}: {both}");
    }
}

/// A `trust` started from inside the agent's tool calls records nothing, even with `--yes`.
#[test]
fn the_agent_cannot_trust_on_its_persons_behalf() {
    let world = World::new().env("LEVELCODE_AGENT", "1");
    world.settings(&world.project(), &command("true"));
    for args in [&["--yes"][..], &[][..]] {
        let (code, stdout, stderr) = world.trust(args);
        assert_eq!(code, 1, "{stdout}{stderr}");
        assert!(stderr.contains("LEVELCODE_AGENT"), "{stderr}");
        assert!(std::fs::metadata(world.store()).is_err());
    }
    let (_, status) = world.status();
    let digest = status["digest"].as_str().unwrap().to_string();
    let (code, _, stderr) = world.trust(&["--digest", &digest]);
    assert_eq!(code, 1, "{stderr}");
    // Taking trust away needs no person.
    assert_eq!(world.trust(&["--deny"]).0, 0);
    let mut server = world.serve(&[], &world.root.join("serve.log"));
    let answer = server.ask(&json!({"op": "trust", "digest": digest}));
    assert!(
        answer["error"]
            .as_str()
            .unwrap_or("")
            .contains("LEVELCODE_AGENT"),
        "{answer}"
    );
}

// ---------------------------------------------------------------------------------------------
// The property: whatever shell the command is written in, an edit of the script it runs never
// runs before a new trust.

/// How a word can name `tools/s<n>.sh`.
fn script_word(n: usize) -> impl Strategy<Value = String> {
    let path = format!("tools/s{n}.sh");
    prop_oneof![
        Just(path.clone()),
        Just(format!("./{path}")),
        Just(format!("'{path}'")),
        Just(format!("\"{path}\"")),
        Just(format!("\"$LEVELCODE_PROJECT_DIR\"/{path}")),
        Just(format!("${{LEVELCODE_PROJECT_DIR}}/{path}")),
        Just(format!("/proc/self/cwd/{path}")),
        Just(path.replace('/', "/\\")),
        Just(format!("tools/'s{n}'.sh")),
        Just(format!("./tools/../{path}")),
    ]
}

/// A command that runs the script named by `word`.
fn runner(word: String) -> impl Strategy<Value = String> {
    prop_oneof![
        Just(format!("sh {word}")),
        Just(format!("sh<{word}")),
        Just(format!("sh < {word}")),
        Just(format!("sh 0<{word}")),
        Just(format!("sh -- {word}")),
        Just(format!(". {word}")),
        Just(format!("sh -c 'sh {}'", word.replace('\'', "\""))),
    ]
}

fn redirection() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just(""),
        Just(">/dev/null"),
        Just(" >/dev/null"),
        Just(" 2>&1"),
        Just(">>/dev/null 2>/dev/null"),
        Just(" 2>/dev/null"),
    ]
}

fn before() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just(""),
        Just("true; "),
        Just("true && "),
        Just("false || "),
        Just(": # a comment\n"),
        Just("echo 'a;b' >/dev/null\n"),
        Just("(true);"),
    ]
}

fn after() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just(""),
        Just("; true"),
        Just(" # trailing"),
        Just("\necho '"),
        Just(" && true"),
        Just(" | cat >/dev/null"),
    ]
}

fn hook_command() -> impl Strategy<Value = (usize, String)> {
    (0..3usize).prop_flat_map(|n| {
        (
            script_word(n).prop_flat_map(runner),
            redirection(),
            before(),
            after(),
        )
            .prop_map(move |(run, redirect, before, after)| {
                (n, format!("{before}{run}{redirect}{after}"))
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn an_edited_script_never_runs_before_a_new_trust((n, hook) in hook_command()) {
        let world = World::new();
        for i in 0..3 {
            marking_script(&world.project(), &format!("tools/s{i}.sh"), &format!("ok{i}"));
        }
        an_edit_never_runs_untrusted(&world, &command(&hook), &format!("tools/s{n}.sh"));
    }
}

/// A hook is code the agent's work runs: the dispatcher marks its environment, so a hook that
/// runs `trust --yes` records nothing, even when the dispatcher's own environment is unmarked.
#[test]
fn a_hook_cannot_trust_either() {
    let world = World::new();
    let project = world.project();
    world.settings(&project, &command("true"));
    let trusting = format!(
        "{} trust --yes --project-dir {}",
        crate::common::bin().display(),
        project.display()
    );
    write(
        &world.home().join(".config/levelcode/settings.json"),
        command(&trusting).to_string(),
    );
    let out = world.run();
    let stderr = out["handlers"][0]["stderr"].as_str().unwrap_or("");
    assert!(stderr.contains("LEVELCODE_AGENT"), "{out}");
    assert!(std::fs::metadata(world.store()).is_err(), "{out}");
    assert_eq!(world.status().0, 3, "still untrusted");
}

/// A `serve` started by its client without the variable still records its person's answers
/// after it has run handlers (whose environment carries the variable).
#[test]
fn serve_records_trust_after_running_handlers() {
    let world = World::new();
    let project = world.project();
    world.settings(&project, &command("echo project"));
    write(
        &world.home().join(".config/levelcode/settings.json"),
        command("echo user").to_string(),
    );
    let mut server = world.serve(&[], &world.root.join("serve.log"));
    let out = server.ask(&json!({"event": "Stop"}));
    assert_eq!(stdouts(&out), ["user"], "{out}");
    let status = server.ask(&json!({"op": "trust_status"}));
    let digest = status["project_trust"]["digest"].clone();
    let trusted = server.ask(&json!({"op": "trust", "digest": digest}));
    assert_eq!(trusted["project_trust"]["state"], "trusted", "{trusted}");
    assert_eq!(
        stdouts(&server.ask(&json!({"event": "Stop"}))),
        ["user", "project"]
    );
}
