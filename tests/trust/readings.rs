//! Trust's named files as every shell reads them, within a bound on the work (docs/trust.md,
//! "How a command is split"): a word that bash and `/bin/sh` read differently names a file in
//! each reading, and every one is hashed and shown; a command too long to review is refused at
//! once, and the other layers' handlers run.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::hostile::{an_edit_never_runs_untrusted, command, marking_script};
use super::{stdouts, World};
use crate::common::write;

/// Finding 6: `sh $'g.sh'` runs `g.sh` in bash, and in dash (`/bin/sh` on Debian and Ubuntu),
/// which has no `$'…'`, the file `$g.sh`. The review hashed and showed only `g.sh`.
#[test]
fn a_word_bash_and_sh_read_differently_is_covered_in_every_reading() {
    let dash = ["/usr/bin/dash", "/bin/dash"]
        .into_iter()
        .find(|p| std::path::Path::new(p).is_file());
    if !crate::common::require("dash", dash.is_some(), "dash reads $'…' as $ and a quote") {
        return;
    }
    // What dash really runs: the file named `$g.sh`.
    let dir = tempfile::tempdir().unwrap();
    marking_script(dir.path(), "$g.sh", "dollar-ran");
    marking_script(dir.path(), "g.sh", "plain-ran");
    let status = Command::new(dash.unwrap())
        .arg("-c")
        .arg("dash $'g.sh'")
        .current_dir(dir.path())
        .env("LEVELCODE_PROJECT_DIR", dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    assert!(dir.path().join("dollar-ran").exists());
    assert!(!dir.path().join("plain-ran").exists());

    // The handler runs through /bin/sh; an edit of `$g.sh` is an edit of the hooks.
    let world = World::new();
    let hooks = command("sh $'g.sh'");
    marking_script(&world.project(), "g.sh", "plain-ran");
    an_edit_never_runs_untrusted(&world, &hooks, "$g.sh");
    // An edit of `g.sh`, bash's reading, is one too.
    let (code, stdout, stderr) = world.trust(&["--yes"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    marking_script(&world.project(), "g.sh", "plain-ram");
    assert_eq!(world.run()["project_trust"]["state"], "changed");

    // The review shows both files and says why.
    let (_, stdout, _) = world.trust(&["--yes"]);
    assert!(stdout.contains("$g.sh  sha256:"), "{stdout}");
    assert!(stdout.contains("g.sh  sha256:"), "{stdout}");
    assert!(
        stdout.contains("read differently")
            && stdout.contains(
                r#"hooks.Stop[0].hooks[0]: "$'g.sh'" is "$g.sh" to /bin/sh and "g.sh" to bash"#
            ),
        "{stdout}"
    );
    let (_, status) = world.status();
    assert_eq!(
        status["readings"],
        json!([r#"hooks.Stop[0].hooks[0]: "$'g.sh'" is "$g.sh" to /bin/sh and "g.sh" to bash"#])
    );
    assert_eq!(status["fallback"], json!([]), "both readings are known");
}

/// Bash's braces make two words of one, the first the script it runs; `/bin/sh` (dash) runs the
/// word itself, braces and all. Every reading is covered.
#[test]
fn a_brace_expansion_covers_each_word_bash_makes() {
    let world = World::new();
    marking_script(&world.project(), "tools/h.sh", "h-ran");
    an_edit_never_runs_untrusted(
        &world,
        &command("bash -c 'sh tools/{g,h}.sh'"),
        "tools/g.sh",
    );
    let (_, status) = world.status();
    let scripts = status["scripts"].to_string();
    assert!(scripts.contains("tools/h.sh"), "{status}");
    an_edit_never_runs_untrusted(
        &World::new(),
        &command("sh tools/{g,h}.sh"),
        "tools/{g,h}.sh",
    );
}

/// Finding 7: one 2 MiB absolute word made the digest quadratic; the dispatch was still running
/// at 15 s, with the managed and user guards waiting behind it. Now the text read for named
/// files is bounded: such hooks are refused at once, and the user's handlers run.
#[test]
fn a_two_mebibyte_word_is_refused_at_once_and_the_other_layers_run() {
    let world = World::new();
    let project = world.project();
    let word = format!("/{}", "a/".repeat(1 << 20));
    world.settings(&project, &command(&format!("sh {word}")));
    write(
        &world.home().join(".config/levelcode/settings.json"),
        command("echo user").to_string(),
    );
    let started = Instant::now();
    let out = world.run();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "the dispatch took {took:?}");
    assert_eq!(
        stdouts(&out),
        ["user"],
        "{}",
        &out.to_string()[..400.min(out.to_string().len())]
    );
    assert_eq!(out["project_trust"]["state"], "untrusted");
    let warning = out["warnings"].to_string();
    assert!(
        warning.contains("cannot be trusted") && warning.contains("256 KiB"),
        "{}",
        &warning[..warning.len().min(600)]
    );

    let started = Instant::now();
    let (code, _, stderr) = world.trust(&["--yes"]);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(code, 1);
    assert!(
        stderr.contains("more than 256 KiB") && stderr.contains("hooks.Stop[0].hooks[0]"),
        "{}",
        &stderr[..stderr.len().min(600)]
    );
    assert!(
        std::fs::metadata(world.store()).is_err(),
        "nothing recorded"
    );
}

/// Under the bound, a word longer than any path the system opens names no file, and costs no
/// more than reading it.
#[test]
fn a_word_too_long_to_be_a_path_is_read_quickly_and_names_nothing() {
    let world = World::new();
    let project = world.project();
    let word = format!("/{}", "a/".repeat(100 << 10));
    world.settings(&project, &command(&format!("true {word}; sh tools/g.sh")));
    marking_script(&project, "tools/g.sh", "ran");
    let started = Instant::now();
    let (code, stdout, stderr) = world.trust(&["--yes"]);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(code, 0, "{}{stderr}", &stdout[..stdout.len().min(600)]);
    assert!(
        stdout.contains("tools/g.sh  sha256:"),
        "{}",
        &stdout[..stdout.len().min(600)]
    );
}
