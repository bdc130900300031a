//! What the hooks folder holds besides its own files and folders (docs/trust.md): a link that
//! stays inside the project is followed, and what it leads to is covered and shown; anything
//! else (a link out of the project or to nothing, a FIFO, a socket, a device) keeps the
//! project from being trusted until it is gone, with a message naming it.

use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::{json, Value};

use super::World;
use crate::common::write;

fn on_stop(command: &str) -> Value {
    json!({"hooks": {"Stop": [{"hooks": [{"command": command}]}]}})
}

/// A script that leaves `marker` in the project when it runs.
fn marking(marker: &str) -> String {
    format!("touch \"$LEVELCODE_PROJECT_DIR/{marker}\"\n")
}

#[test]
fn a_linked_folder_in_the_hooks_folder_is_covered_and_shown() {
    let world = World::new();
    let project = world.project();
    world.settings(&project, &on_stop("sh .levelcode/hooks/g.sh"));
    write(
        &project.join(".levelcode/hooks/g.sh"),
        ". \"$LEVELCODE_PROJECT_DIR/.levelcode/hooks/lib/util.sh\"\n",
    );
    write(&project.join("vendor/lib/util.sh"), marking("good-ran"));
    symlink("../../vendor/lib", project.join(".levelcode/hooks/lib")).unwrap();

    let (code, stdout, stderr) = world.trust(&["--yes"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (_, status) = world.status();
    world.run();
    assert!(project.join("good-ran").exists(), "the trusted file runs");

    // The same length, so that only the contents differ.
    write(&project.join("vendor/lib/util.sh"), marking("evil-ran"));
    let out = world.run();
    assert!(
        !project.join("evil-ran").exists(),
        "the edited file behind the link ran without a new trust: {out}"
    );
    assert_eq!(out["project_trust"]["state"], "changed", "{out}");

    // The review showed the file the folder's link leads to, under the folder, with its hash.
    assert!(
        stdout.contains(".levelcode/hooks/lib/util.sh -> vendor/lib/util.sh  sha256:"),
        "{stdout}"
    );
    let shown: Vec<&Value> = status["scripts"].as_array().unwrap().iter().collect();
    assert!(
        shown.iter().any(|s| s["path"] == "vendor/lib/util.sh"
            && s["via"] == ".levelcode/hooks/lib/util.sh"
            && s["in_hooks_folder"] == true),
        "{status}"
    );
}

#[test]
fn a_link_in_the_hooks_folder_to_the_handlers_stdin_cannot_be_trusted() {
    let world = World::new();
    let project = world.project();
    world.settings(&project, &on_stop("sh .levelcode/hooks/guard.sh"));
    std::fs::create_dir_all(project.join(".levelcode/hooks")).unwrap();
    symlink("/proc/self/fd/0", project.join(".levelcode/hooks/guard.sh")).unwrap();
    // A payload carrying text the agent read: the handler's shell reads it as its script.
    let payload = br#"{"event":"Stop","note":"$(touch pwned)"}"#;

    let (code, stdout, stderr) = world.trust(&["--yes"]);
    let (_, out, _) = world.exec(&["run"], &project, payload);
    assert!(
        !project.join("pwned").exists(),
        "the payload ran as the guard's script: {stdout}{out}"
    );
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stderr.contains(".levelcode/hooks/guard.sh")
            && stderr.contains("/proc/self/fd/0")
            && stderr.contains("cannot be trusted"),
        "{stderr}"
    );
    assert!(
        std::fs::metadata(world.store()).is_err(),
        "nothing recorded"
    );
    let (code, status) = world.status();
    assert_eq!(code, 3, "{status}");
    assert!(
        status["untrustable"]
            .as_str()
            .is_some_and(|why| why.contains(".levelcode/hooks/guard.sh")),
        "{status}"
    );

    // What the review could not show really runs: trusted for one run by the opt-in, the
    // handler's shell runs the payload.
    let world = world.env(crate::common::TRUST, "1");
    world.exec(&["run"], &project, payload);
    assert!(project.join("pwned").exists());
    std::fs::remove_file(project.join("pwned")).unwrap();

    // Once it is gone, the project can be trusted again.
    std::fs::remove_file(project.join(".levelcode/hooks/guard.sh")).unwrap();
    write(&project.join(".levelcode/hooks/guard.sh"), "exit 0\n");
    let world = World {
        env: Vec::new(),
        ..world
    };
    assert_eq!(world.trust(&["--yes"]).0, 0);
}

/// The message `trust --yes` refuses the project with when its hooks folder holds `entry`,
/// made by `make` in the project.
fn refusal(entry: &str, make: impl FnOnce(&Path)) -> String {
    let world = World::new();
    let project = world.project();
    world.settings(&project, &on_stop("sh .levelcode/hooks/g.sh"));
    write(&project.join(".levelcode/hooks/g.sh"), "exit 0\n");
    make(&project);
    let (code, stdout, stderr) = world.trust(&["--yes"]);
    assert_eq!(code, 1, "{entry}: {stdout}{stderr}");
    assert!(stderr.contains(entry), "{entry}: {stderr}");
    assert!(
        std::fs::metadata(world.store()).is_err(),
        "nothing recorded"
    );
    let out = world.run();
    assert_eq!(out["project_trust"]["state"], "untrusted", "{out}");
    assert!(
        out["warnings"][0]
            .as_str()
            .is_some_and(|w| w.contains("cannot be trusted") && w.contains(entry)),
        "{out}"
    );
    stderr
}

#[test]
fn what_the_hooks_folder_cannot_cover_keeps_the_project_from_being_trusted() {
    let hooks = |p: &Path| p.join(".levelcode/hooks");
    let why = refusal(".levelcode/hooks/out.sh", |p| {
        write(&p.join("../outside.sh"), "exit 0\n");
        symlink("../../../outside.sh", hooks(p).join("out.sh")).unwrap();
    });
    assert!(why.contains("out of the project"), "{why}");
    let why = refusal(".levelcode/hooks/gone.sh", |p| {
        symlink("never-made.sh", hooks(p).join("gone.sh")).unwrap();
    });
    assert!(why.contains("leads to nothing"), "{why}");
    let why = refusal(".levelcode/hooks/null", |p| {
        symlink("/dev/null", hooks(p).join("null")).unwrap();
    });
    assert!(why.contains("/dev/null"), "{why}");
    let why = refusal(".levelcode/hooks/fifo", |p| {
        let made = std::process::Command::new("mkfifo")
            .arg(hooks(p).join("fifo"))
            .status()
            .unwrap();
        assert!(made.success());
    });
    assert!(why.contains("FIFO"), "{why}");
    let why = refusal(".levelcode/hooks/lib/sock", |p| {
        std::fs::create_dir_all(hooks(p).join("lib")).unwrap();
        let socket = std::os::unix::net::UnixListener::bind(hooks(p).join("lib/sock")).unwrap();
        // The listener may close: the socket file stays.
        drop(socket);
    });
    assert!(why.contains("socket"), "{why}");
    // The folder itself as a link out of the project.
    let why = refusal(".levelcode/hooks", |p| {
        std::fs::remove_dir_all(hooks(p)).unwrap();
        std::fs::create_dir_all(p.join("../elsewhere")).unwrap();
        write(&p.join("../elsewhere/g.sh"), "exit 0\n");
        symlink("../../elsewhere", hooks(p)).unwrap();
    });
    assert!(why.contains("out of the project"), "{why}");
}

#[test]
fn links_that_stay_inside_are_followed_once_even_in_a_circle() {
    let world = World::new();
    let project = world.project();
    world.settings(&project, &on_stop("sh .levelcode/hooks/g.sh"));
    write(&project.join(".levelcode/hooks/g.sh"), "exit 0\n");
    write(&project.join("tools/check.sh"), "exit 0\n");
    let hooks = project.join(".levelcode/hooks");
    symlink("../../tools/check.sh", hooks.join("check.sh")).unwrap();
    symlink(".", hooks.join("again")).unwrap();
    symlink("..", hooks.join("up")).unwrap();
    let (code, stdout, stderr) = world.trust(&["--yes"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains(".levelcode/hooks/check.sh -> tools/check.sh  sha256:"),
        "{stdout}"
    );
    // `up` leads to .levelcode/, whose settings file is then covered as a file of the folder.
    assert!(
        stdout.contains(".levelcode/hooks/up/settings.json -> .levelcode/settings.json"),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches(".levelcode/hooks/g.sh  sha256:").count(),
        1,
        "{stdout}"
    );
    world.run();
    write(&project.join("tools/check.sh"), "exit 1\n");
    assert_eq!(world.run()["project_trust"]["state"], "changed");
}
