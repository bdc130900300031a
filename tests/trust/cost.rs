//! Trust that costs the same in every state (docs/trust.md, "What a dispatch hashes"): the opt-in
//! hashes nothing, a digest that must be shown is remembered by the identities of what it covers
//! and never hides an edit, and a project trusted right after an edit is sealed by a later
//! dispatch once its files have settled.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::{stdouts, World};
use crate::common::write;

/// Files settle (their change time at least two seconds old) before they are remembered.
fn settle() {
    std::thread::sleep(Duration::from_millis(2200));
}

/// Stop hooks that run a script of the hooks folder and one elsewhere in the project.
fn two_scripts(world: &World) {
    let project = world.project();
    // The data directory, as `trust` or a data layer leaves it: the memo goes there.
    std::fs::create_dir_all(world.home().join(".levelcode")).unwrap();
    world.settings(
        &project,
        &json!({"hooks": {"Stop": [{"hooks": [
            {"command": "sh .levelcode/hooks/first.sh"},
            {"command": "sh tools/named.sh"}
        ]}]}}),
    );
    world.script(&project, ".levelcode/hooks/first.sh", "echo first");
    world.script(&project, ".levelcode/hooks/lib.sh", "echo lib");
    world.script(&project, "tools/named.sh", "echo named");
}

/// Writes `contents` (of the same length as before) over `path` and puts its modification time
/// back, as `cp -p` and `tar` do: only the change time shows the edit.
fn edit_keeping_size_and_mtime(path: &Path, contents: &str) {
    let before = std::fs::metadata(path).unwrap();
    assert_eq!(before.len(), contents.len() as u64, "the same size");
    std::fs::write(path, contents).unwrap();
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(before.modified().unwrap())
        .unwrap();
    let after = std::fs::metadata(path).unwrap();
    assert_eq!(after.modified().unwrap(), before.modified().unwrap());
    assert_eq!(after.len(), before.len());
}

fn memo(world: &World) -> Option<Value> {
    let text = std::fs::read_to_string(world.home().join(".levelcode/trust-digests.json")).ok()?;
    Some(serde_json::from_str(&text).unwrap())
}

/// The digests the memo holds for the world's project.
fn remembered(world: &World) -> Vec<String> {
    let root = world.project().canonicalize().unwrap();
    memo(world)
        .map(|m| {
            m["entries"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["root"] == root.to_str().unwrap())
                .map(|e| e["digest"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The digest an untrusted dispatch shows, checked against what `trust --status` computes.
fn shown(world: &World) -> String {
    let out = world.run();
    assert_eq!(out["project_trust"]["state"], "untrusted", "{out}");
    let digest = out["project_trust"]["digest"].as_str().unwrap().to_string();
    let warning = out["warnings"].to_string();
    assert!(warning.contains("2 handler(s) skipped"), "{out}");
    let (_, status) = world.status();
    assert_eq!(
        status["digest"],
        digest.as_str(),
        "the digest shown is the project's"
    );
    digest
}

#[test]
fn the_remembered_digest_never_hides_an_edit() {
    let world = World::new();
    two_scripts(&world);
    let project = world.project();
    settle();
    let first = shown(&world);
    assert_eq!(
        remembered(&world),
        std::slice::from_ref(&first),
        "a settled project's digest is remembered"
    );
    assert_eq!(shown(&world), first, "and shown again from the memo");

    // A named script outside the hooks folder, then a file of the folder no command names.
    let mut last = first;
    for (path, contents) in [
        ("tools/named.sh", "#!/bin/sh\necho NAMED\n"),
        (".levelcode/hooks/lib.sh", "#!/bin/sh\necho LIB\n"),
    ] {
        edit_keeping_size_and_mtime(&project.join(path), contents);
        let now = shown(&world);
        assert_ne!(now, last, "an edit of {path} changes the digest shown");
        settle();
        assert_eq!(shown(&world), now);
        assert_eq!(
            remembered(&world),
            std::slice::from_ref(&now),
            "one entry per project"
        );
        last = now;
    }

    // The settings file itself, and a file appearing in the hooks folder.
    world.settings(
        &project,
        &json!({"hooks": {"Stop": [{"hooks": [
            {"command": "sh .levelcode/hooks/first.sh"},
            {"command": "sh tools/other.sh"}
        ]}]}}),
    );
    let now = shown(&world);
    assert_ne!(now, last);
    settle();
    assert_eq!(shown(&world), now);
    world.script(&project, ".levelcode/hooks/new.sh", "echo new");
    assert_ne!(shown(&world), now, "a new file of the hooks folder");
}

#[test]
fn a_memo_of_other_files_is_not_taken_for_these() {
    // The memo is the data directory's, keyed by the canonical root: a second checkout of the
    // same hooks has its own digest, and a memo written by hand that names this project with
    // identities that do not hold changes nothing.
    let world = World::new();
    two_scripts(&world);
    settle();
    let first = shown(&world);
    let path = world.home().join(".levelcode/trust-digests.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let fake = format!("sha256:{}", "0".repeat(64));
    let mut memo: Value = serde_json::from_str(&text).unwrap();
    memo["entries"][0]["digest"] = json!(fake);
    memo["entries"][0]["files"][0][1] = json!("100644:1:1:1:1.0:1.0");
    write(&path, memo.to_string());
    assert_eq!(shown(&world), first);
    write(&path, "{not json");
    assert_eq!(
        shown(&world),
        first,
        "a memo that cannot be read is no memo"
    );
}

#[test]
fn the_opt_in_hashes_nothing() {
    let world = World::new().env("LEVELCODE_TRUST_PROJECT_HOOKS", "1");
    two_scripts(&world);
    let project = world.project();
    // More files in the hooks folder than a digest may cover: hooks that could not be trusted
    // through the store, and whose digest cannot even be computed.
    for i in 0..1001 {
        write(&project.join(format!(".levelcode/hooks/many/{i}")), "");
    }
    settle();
    let out = world.run();
    assert_eq!(stdouts(&out), ["first", "named"], "{out}");
    assert!(out.get("project_trust").is_none(), "{out}");
    assert!(
        memo(&world).is_none(),
        "no digest was computed, so none was remembered"
    );
    #[cfg(unix)]
    if not_root() {
        // A named script that cannot be read does not matter either.
        use std::os::unix::fs::PermissionsExt as _;
        let named = project.join("tools/named.sh");
        std::fs::set_permissions(&named, std::fs::Permissions::from_mode(0o111)).unwrap();
        let out = world.run();
        assert_eq!(stdouts(&out).len(), 2, "{out}");
        std::fs::set_permissions(&named, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Whether this process can be refused a read by a file's mode (root never is).
#[cfg(unix)]
fn not_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1).map(|e| e != "0"))
            .unwrap_or(false)
    })
}

#[test]
fn a_pinned_digest_is_remembered_and_follows_edits() {
    let world = World::new();
    two_scripts(&world);
    settle();
    let (_, status) = world.status();
    let digest = status["digest"].as_str().unwrap().to_string();
    let world = world.env("LEVELCODE_TRUST_PROJECT_HOOKS", digest.clone());
    assert_eq!(stdouts(&world.run()), ["first", "named"]);
    assert_eq!(remembered(&world), std::slice::from_ref(&digest));
    assert_eq!(stdouts(&world.run()), ["first", "named"]);
    edit_keeping_size_and_mtime(
        &world.project().join("tools/named.sh"),
        "#!/bin/sh\necho NAMED\n",
    );
    let out = world.run();
    assert!(out["handlers"].as_array().unwrap().is_empty(), "{out}");
    assert_eq!(out["project_trust"]["state"], "untrusted", "{out}");
    assert_ne!(out["project_trust"]["digest"], digest.as_str());
}

fn seal_of(world: &World) -> Option<Value> {
    let store: Value =
        serde_json::from_str(&std::fs::read_to_string(world.store()).unwrap()).unwrap();
    let entry = &store["projects"][world.project().canonicalize().unwrap().to_str().unwrap()];
    assert!(entry["digest"].is_string(), "{store}");
    entry.get("seal").cloned()
}

#[test]
fn a_project_trusted_right_after_an_edit_is_sealed_once_it_settles() {
    let world = World::new();
    two_scripts(&world);
    assert_eq!(world.trust(&["--yes"]).0, 0);
    assert_eq!(seal_of(&world), None, "files just written are not sealed");
    assert_eq!(stdouts(&world.run()), ["first", "named"]);
    assert_eq!(
        seal_of(&world),
        None,
        "nor by a dispatch before they settle"
    );
    settle();
    assert_eq!(stdouts(&world.run()), ["first", "named"]);
    let seal = seal_of(&world).expect("a later dispatch seals them");
    assert_eq!(seal["handlers"], 2, "{seal}");
    assert_eq!(stdouts(&world.run()), ["first", "named"]);

    // The seal taken by a dispatch holds no more than one taken by `trust`.
    let project = world.project();
    edit_keeping_size_and_mtime(&project.join("tools/named.sh"), "#!/bin/sh\necho EVIL!\n");
    let out = world.run();
    assert_eq!(out["project_trust"]["state"], "changed", "{out}");
    assert!(out["handlers"].as_array().unwrap().is_empty(), "{out}");
}

#[test]
fn a_dispatch_never_creates_the_data_directory() {
    let world = World::new();
    two_scripts(&world);
    std::fs::remove_dir(world.home().join(".levelcode")).unwrap();
    settle();
    let out = world.run();
    assert_eq!(out["project_trust"]["state"], "untrusted", "{out}");
    assert!(
        !world.home().join(".levelcode").exists(),
        "the data layer's folder is not created by a dispatch"
    );
}
