//! The trust store's own tests: what a read keeps, what it refuses, and what writers never lose.

use super::*;

const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

fn trusted(digest: &str) -> Entry {
    Entry::Trusted {
        digest: digest.into(),
        content: Some(D2.into()),
        at: Some(5),
        seal: Some(Seal {
            handlers: 2,
            files: vec![(
                "/p/.levelcode/settings.json".into(),
                "100644:2:1:9:1.0:1.0".into(),
            )],
        }),
    }
}

#[test]
fn a_store_round_trips_with_mode_0600() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data").join(FILE);
    update(&path, |s| {
        s.projects.insert("/p".into(), trusted(D1));
        s.projects.insert("/q".into(), Entry::Denied { at: None });
    })
    .unwrap();
    let (store, notes) = load(&path);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(store.projects["/p"], trusted(D1));
    assert_eq!(store.projects["/q"], Entry::Denied { at: None });
    assert_eq!(store.trusted_elsewhere(D2, "/x"), Some("/p"));
    assert_eq!(store.trusted_elsewhere(D2, "/p"), None);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn a_missing_store_is_empty_and_silent() {
    let dir = tempfile::tempdir().unwrap();
    let (store, notes) = load(&dir.path().join(FILE));
    assert!(store.projects.is_empty());
    assert!(notes.is_empty());
}

#[test]
fn a_corrupt_store_is_a_warning_and_trusts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE);
    for text in [
        "{not json",
        "[]",
        r#"{"projects":{}}"#,
        r#"{"version":9,"projects":{}}"#,
        r#"{"version":1,"projects":[]}"#,
    ] {
        fs::write(&path, text).unwrap();
        let (store, notes) = load(&path);
        assert!(store.projects.is_empty(), "{text}");
        assert_eq!(notes.len(), 1, "{text}: {notes:?}");
        assert!(
            notes[0].contains(&path.display().to_string()),
            "{}",
            notes[0]
        );
    }
    fs::write(
        &path,
        format!(r#"{{"version":1,"projects":{{"/a":{{"digest":"sha256:zz"}},"/b":{{"digest":"{D1}"}}}}}}"#),
    )
    .unwrap();
    let (store, notes) = load(&path);
    assert_eq!(store.projects.len(), 1);
    assert!(notes[0].contains("\"/a\""), "{notes:?}");

    fs::remove_file(&path).unwrap();
    fs::create_dir(&path).unwrap();
    let (store, notes) = load(&path);
    assert!(store.projects.is_empty());
    assert!(notes[0].contains("not a regular file"), "{notes:?}");
}

#[test]
fn a_read_for_some_roots_keeps_theirs_and_still_checks_the_whole_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE);
    let text = format!(
        r#"{{"version":1,"projects":{{"/a":{{"digest":"sha256:zz"}},"/b":{{"digest":"{D1}"}},"/b//.levelcode/settings.local.json":{{"digest":"{D2}"}},"/c":{{"denied":true}},"/d":[1,{{"x":"y"}}]}}}}"#
    );
    fs::write(&path, &text).unwrap();
    let (whole, notes) = load(&path);
    assert_eq!(whole.projects.len(), 3);
    assert_eq!(notes.len(), 2, "{notes:?}");
    // Only the roots asked for, and no word of another project's entry that makes no sense.
    let (some, notes) = load_for(&path, &["/b", "/b//.levelcode/settings.local.json", "/z"]);
    assert_eq!(notes, Vec::<String>::new());
    assert_eq!(
        some.projects.keys().collect::<Vec<_>>(),
        ["/b", "/b//.levelcode/settings.local.json"]
    );
    assert_eq!(some.projects["/b"], whole.projects["/b"]);
    let (mine, notes) = load_for(&path, &["/a"]);
    assert!(mine.projects.is_empty());
    assert!(notes[0].contains("\"/a\""), "{notes:?}");
    // A store that is not JSON anywhere, past the entries asked for too, trusts nothing.
    for broken in [
        format!("{}x", &text),
        text.replace(r#"[1,{"x":"y"}]"#, r#"[1,{"x":}]"#),
        text.replace(r#""version":1,"#, r#""version":1,"version":1,"#),
        r#"{"version":1,"projects":[{"/b":{}}]}"#.to_string(),
    ] {
        fs::write(&path, &broken).unwrap();
        let (none, notes) = load_for(&path, &["/b"]);
        assert!(none.projects.is_empty(), "{broken}");
        assert_eq!(notes.len(), 1, "{broken}: {notes:?}");
        let (whole, _) = load(&path);
        assert!(whole.projects.is_empty(), "{broken}");
    }
}

#[test]
fn members_of_another_kind_are_passed_over_and_entries_read_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE);
    fs::write(
        &path,
        format!(
            r#"{{"extra":[1,{{"a":null}}],"version":1,"projects":{{
            "/a":{{"digest":"{D1}","at":"soon","content":7,"seal":{{"handlers":"2","files":[]}}}},
            "/b":{{"digest":"{D1}","seal":{{"handlers":1,"files":[["/b/s","x","y"]]}}}},
            "/c":{{"denied":true,"at":3,"digest":5}},
            "/d":[],
            "/e":{{"digest":"{D2}","seal":{{"format":2,"handlers":1,"files":[["/e/\u00e9","i"]]}}}},
            "/f":{{"digest":"{D2}","seal":{{"handlers":1,"files":[["/f/s","i"]]}}}}}}}}"#
        ),
    )
    .unwrap();
    let (store, notes) = load(&path);
    let plain = |digest: &str| Entry::Trusted {
        digest: digest.into(),
        content: None,
        at: None,
        seal: None,
    };
    assert_eq!(store.projects["/a"], plain(D1));
    assert_eq!(
        store.projects["/b"],
        plain(D1),
        "a pair of three is no seal"
    );
    assert_eq!(store.projects["/c"], Entry::Denied { at: Some(3) });
    assert!(!store.projects.contains_key("/d"));
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("\"/d\""), "{notes:?}");
    let Entry::Trusted {
        seal: Some(seal), ..
    } = &store.projects["/e"]
    else {
        panic!("{:?}", store.projects["/e"]);
    };
    assert_eq!(seal.files, [("/e/\u{e9}".to_string(), "i".to_string())]);
    assert_eq!(
        store.projects["/f"],
        plain(D2),
        "a seal of an older format is no seal"
    );
    for text in [r#"{"version":"1"}"#, r#"{"version":1,"projects":5}"#] {
        fs::write(&path, text).unwrap();
        let (store, notes) = load(&path);
        assert!(
            store.projects.is_empty() && notes.len() == 1,
            "{text}: {notes:?}"
        );
    }
}

#[test]
fn a_corrupt_store_is_set_aside_by_the_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE);
    fs::write(&path, "{garbage").unwrap();
    let updated = update(&path, |s| {
        s.projects.insert("/p".into(), trusted(D1));
    })
    .unwrap();
    let aside = updated.set_aside.expect("set aside");
    assert_eq!(fs::read_to_string(aside).unwrap(), "{garbage");
    assert_eq!(load(&path).0.projects.len(), 1);
}

#[test]
fn a_crash_midway_leaves_the_old_store_and_the_next_write_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE);
    update(&path, |s| {
        s.projects.insert("/p".into(), trusted(D1));
    })
    .unwrap();
    // What a writer killed after creating its temporary file leaves behind.
    fs::write(with_suffix(&path, ".tmp"), "{\"version\":1,\"proj").unwrap();
    assert_eq!(load(&path).0.projects["/p"], trusted(D1));
    update(&path, |s| {
        s.projects.insert("/q".into(), trusted(D2));
    })
    .unwrap();
    let (store, notes) = load(&path);
    assert!(notes.is_empty());
    assert_eq!(store.projects.len(), 2);
    assert!(!with_suffix(&path, ".tmp").exists());
}

#[test]
fn concurrent_writers_keep_every_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE);
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let path = path.clone();
            std::thread::spawn(move || {
                for j in 0..5 {
                    update(&path, |s| {
                        s.projects.insert(format!("/p{i}-{j}"), trusted(D1));
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let (store, notes) = load(&path);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(store.projects.len(), 40);
}
