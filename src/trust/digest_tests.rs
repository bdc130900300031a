//! The digest's own tests: what it covers, and what it never reads.

use super::*;

use crate::settings::{self, Events, Source};

fn groups(bytes: &[u8]) -> Vec<Group> {
    let mut groups = Vec::new();
    let mut warnings = Vec::new();
    let source = Source {
        layer: LayerKind::Project,
        file: Path::new("settings.json").into(),
    };
    settings::parse(source, bytes, Events::All, &mut groups, &mut warnings);
    groups
}

fn digest(root: &Path, settings: &str) -> Digest {
    compute(
        root,
        LayerKind::Project,
        settings.as_bytes(),
        &groups(settings.as_bytes()),
    )
    .unwrap()
}

const GUARD: &str = r#"{"hooks":{"PreToolUse":[{"matcher":"write_file","hooks":[{"command":"sh .levelcode/hooks/guard.sh"}]}]}}"#;

#[test]
fn canonical_json_sorts_keys_keeps_repeats_and_drops_space() {
    let a = canonical_hooks(br#"{"x":1, "hooks": {"b": [ {"z":1,"a":2} ], "a": true}}"#);
    assert_eq!(
        String::from_utf8(a.unwrap()).unwrap(),
        r#"{"a":true,"b":[{"a":2,"z":1}]}"#
    );
    let repeated = canonical_hooks(br#"{"hooks":{"Stop":[1],"Stop":[2]}}"#).unwrap();
    assert_eq!(repeated, br#"{"Stop":[1],"Stop":[2]}"#);
    let swapped = canonical_hooks(br#"{"hooks":{"Stop":[2],"Stop":[1]}}"#).unwrap();
    assert_ne!(
        repeated, swapped,
        "the order of repeated events is the order they run in"
    );
    assert_eq!(canonical_hooks(br#"{"a":1}"#).unwrap(), b"");
    // allowPlainHttp decides whether an http handler is sent: trusted with the hooks.
    let plain = canonical_hooks(br#"{"allowPlainHttp":true,"hooks":{"Stop":[]}}"#).unwrap();
    assert_eq!(plain, b"{\"Stop\":[]}\0allowPlainHttp=true");
    assert_ne!(
        plain,
        canonical_hooks(br#"{"hooks":{"Stop":[]}}"#).unwrap(),
        "turning it on is an edit"
    );
    assert_eq!(
        canonical_hooks(br#"{"hooks":{"on":true,"off":false,"none":null}}"#).unwrap(),
        br#"{"none":null,"off":false,"on":true}"#
    );
    assert_eq!(
        canonical_hooks(br#"{"hooks":{"s":"\u00e9\"\n"}}"#).unwrap(),
        "{\"s\":\"é\\\"\\n\"}".as_bytes()
    );
}

#[test]
fn the_digest_ignores_layout_and_follows_hooks_and_scripts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".levelcode/hooks")).unwrap();
    std::fs::write(root.join(".levelcode/hooks/guard.sh"), "exit 0\n").unwrap();
    let first = digest(root, GUARD);
    assert!(is_digest(&first.digest), "{}", first.digest);
    assert_eq!(first.scripts.len(), 1);
    assert_eq!(first.scripts[0].path, ".levelcode/hooks/guard.sh");

    let spaced = GUARD.replace(',', " ,\n ");
    assert_eq!(digest(root, &spaced).digest, first.digest);

    std::fs::write(root.join(".levelcode/hooks/guard.sh"), "exit 2\n").unwrap();
    let edited = digest(root, GUARD);
    assert_ne!(edited.digest, first.digest);
    assert_ne!(edited.content, first.content);

    let other = GUARD.replace("write_file", "str_replace");
    assert_ne!(digest(root, &other).digest, edited.digest);
}

#[test]
fn the_same_hooks_elsewhere_share_the_content_hash_only() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for dir in [a.path(), b.path()] {
        std::fs::create_dir_all(dir.join(".levelcode/hooks")).unwrap();
        std::fs::write(dir.join(".levelcode/hooks/guard.sh"), "exit 0\n").unwrap();
    }
    let (da, db) = (digest(a.path(), GUARD), digest(b.path(), GUARD));
    assert_ne!(da.digest, db.digest);
    assert_eq!(da.content, db.content);
}

#[test]
fn a_file_appearing_where_a_handler_points_changes_the_digest() {
    let dir = tempfile::tempdir().unwrap();
    let before = digest(dir.path(), GUARD);
    assert!(before.scripts.is_empty());
    assert_eq!(
        before.watched.len(),
        3,
        "the folder, sh and the script: {:?}",
        before.watched
    );
    std::fs::create_dir_all(dir.path().join(".levelcode/hooks")).unwrap();
    std::fs::write(dir.path().join(".levelcode/hooks/guard.sh"), "").unwrap();
    assert_ne!(digest(dir.path(), GUARD).digest, before.digest);
}

#[test]
fn nothing_outside_the_root_is_read() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("project");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(outer.path().join("secret.sh"), "x").unwrap();
    let outside = outer.path().join("secret.sh");
    let settings = format!(
        r#"{{"hooks":{{"Stop":[{{"hooks":[{{"argv":["sh","../secret.sh","{}"]}},{{"command":"sh ./../secret.sh"}}]}}]}}}}"#,
        outside.display()
    );
    let d = digest(&root, &settings);
    assert!(d.scripts.is_empty(), "{:?}", d.scripts);
    let root = root.canonicalize().unwrap();
    assert!(
        !d.watched.contains(&outside),
        "an absolute path outside the root is not looked at: {:?}",
        d.watched
    );

    // A symlink inside the project that leads out is not followed out.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&outside, root.join("link.sh")).unwrap();
        let d = digest(
            &root,
            r#"{"hooks":{"Stop":[{"hooks":[{"command":"sh link.sh"}]}]}}"#,
        );
        assert!(d.scripts.is_empty(), "{:?}", d.scripts);
    }
}

/// After a symlink, `..` leads to the parent of the link's target, for the handler as for
/// the digest: the file hashed is the file the handler runs.
#[cfg(unix)]
#[test]
fn dot_dot_after_a_symlink_is_resolved_as_the_handler_resolves_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
    std::fs::write(root.join("sub/x.sh"), "echo runs").unwrap();
    std::fs::write(root.join("x.sh"), "echo decoy").unwrap();
    std::os::unix::fs::symlink("sub/deeper", root.join("link")).unwrap();
    let settings = r#"{"hooks":{"Stop":[{"hooks":[{"command":"sh link/../x.sh"}]}]}}"#;
    let d = digest(&root, settings);
    let paths: Vec<&str> = d.scripts.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, ["sub/x.sh"]);
    let before = d.digest;
    std::fs::write(root.join("sub/x.sh"), "echo evil").unwrap();
    assert_ne!(digest(&root, settings).digest, before);

    // And a `..` that a link brings back inside is followed too.
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::os::unix::fs::symlink(root.join("a/b"), root.join("up")).unwrap();
    let settings = r#"{"hooks":{"Stop":[{"hooks":[{"command":"sh up/../../sub/x.sh"}]}]}}"#;
    let paths: Vec<String> = digest(&root, settings)
        .scripts
        .into_iter()
        .map(|s| s.path)
        .collect();
    assert_eq!(paths, ["sub/x.sh"]);
}

#[cfg(unix)]
#[test]
fn a_fifo_is_never_opened() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string and a mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let d = digest(
        dir.path(),
        r#"{"hooks":{"Stop":[{"hooks":[{"command":"sh pipe"}]}]}}"#,
    );
    assert!(d.scripts.is_empty());
}

#[test]
fn a_command_inside_a_command_has_its_script_hashed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("inner.sh"), "echo inner").unwrap();
    std::fs::write(root.join("deep.sh"), "echo deep").unwrap();
    let settings = r#"{"hooks":{"Stop":[{"hooks":[
        {"command":"sh -c 'sh inner.sh'"},
        {"argv":["bash","-lc","env X=1 sh -c \"./deep.sh --fast\""]}]}]}}"#;
    let paths: Vec<String> = digest(&root, settings)
        .scripts
        .into_iter()
        .map(|s| s.path)
        .collect();
    assert_eq!(paths, ["deep.sh", "inner.sh"]);
}

#[test]
fn too_many_named_paths_cannot_be_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let argv: Vec<String> = (0..=MAX_NAMED_PATHS).map(|i| format!("f{i}")).collect();
    let settings = serde_json::json!({"hooks":{"Stop":[{"hooks":[{"argv": argv}]}]}}).to_string();
    let err = compute(
        dir.path(),
        LayerKind::Project,
        settings.as_bytes(),
        &groups(settings.as_bytes()),
    )
    .unwrap_err();
    assert!(err.contains("cannot be trusted"), "{err}");
}

/// A project that loosens its sandbox (contract §20), on a handler, a group or the whole file,
/// has another digest; a file that never names one keeps the digest it had.
#[test]
fn the_sandbox_is_part_of_what_is_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let with = |top: &str, handler: &str| {
        format!(r#"{{{top}"hooks":{{"Stop":[{{"hooks":[{{"command":"true"{handler}}}]}}]}}}}"#)
    };
    let plain = digest(root, &with("", "")).digest;
    let digests = [
        digest(root, &with("", r#","sandbox":true"#)).digest,
        digest(root, &with("", r#","sandbox":{"network":true}"#)).digest,
        digest(root, &with(r#""sandbox":true,"#, "")).digest,
        digest(root, &with(r#""sandbox":{"write":["~"]},"#, "")).digest,
    ];
    for (i, d) in digests.iter().enumerate() {
        assert_ne!(*d, plain, "{i}");
        for (j, e) in digests.iter().enumerate().skip(i + 1) {
            assert_ne!(d, e, "{i} and {j}");
        }
    }
    assert_eq!(
        canonical_top(with("", "").as_bytes(), true).unwrap(),
        canonical_hooks(with("", "").as_bytes()).unwrap(),
        "no key, no change"
    );
}
