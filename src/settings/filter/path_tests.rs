use std::os::unix::fs::symlink;
use std::path::Path;

use proptest::prelude::*;

use super::*;

fn folder(pattern: &str, folder: &str) -> bool {
    PathPattern::parse(pattern)
        .unwrap()
        .matches(folder, Path::new("/proj"), None, Reach::Folder)
}

#[test]
fn a_folder_matches_when_the_pattern_could_match_inside_it() {
    // The project root holds everything a pattern under it names.
    for pattern in ["secrets/**", "src/*.rs", "*.env", "a/**/b", "build/", "x"] {
        assert!(folder(pattern, "."), "{pattern}");
        assert!(folder(pattern, "/"), "{pattern}");
    }
    assert!(folder("secrets/**", "secrets"));
    assert!(folder("secrets/**", "secrets/deep/er"));
    assert!(folder("secrets/**", "./docs/../secrets"));
    assert!(!folder("secrets/**", "docs"));
    assert!(!folder("secrets/**", "secretsx"));
    assert!(folder("src/*.rs", "src"));
    assert!(!folder("src/*.rs", "src/deep"));
    assert!(!folder("src/*.rs", "lib"));
    // Unanchored: any folder may hold one.
    assert!(folder("*.env", "config/deep"));
    // `**` in the middle reaches any depth, and what follows it still has to fit.
    assert!(folder("a/**/b", "a/x/y"));
    assert!(folder("a/**/b/c", "a/b"));
    assert!(!folder("a/**/b", "c"));
    assert!(folder("a/*/c", "a/b"));
    assert!(!folder("a/*/c", "a/b/d"));
    // A folder inside one the pattern matches.
    assert!(folder("build/", "build/x"));
    assert!(folder("src", "lib/src/deep"));
    // Outside the base, never.
    assert!(!folder("secrets/**", "/elsewhere"));
    assert!(folder("//etc/**", "/etc"));
    assert!(!folder("//etc/**", "."));
    // A class that holds a `/` cannot be followed by segments: it could.
    assert!(folder("a[/]b", "c"));
}

/// Pattern segments and path names small enough that patterns and paths meet often.
fn pattern() -> impl Strategy<Value = String> {
    let segment = prop::sample::select(vec!["a", "b", "*", "**", "?", "[ab]", "*.rs", "b*"]);
    (
        prop::sample::select(vec!["", "/", "./", "**/"]),
        prop::collection::vec(segment, 1..4),
        any::<bool>(),
    )
        .prop_map(|(lead, segments, dir)| {
            format!("{lead}{}{}", segments.join("/"), if dir { "/" } else { "" })
        })
}

fn path() -> impl Strategy<Value = Vec<&'static str>> {
    prop::collection::vec(
        prop::sample::select(vec!["a", "b", "c.rs", "ab", "ba"]),
        1..6,
    )
}

proptest! {
    /// Whatever a pattern matches as a file, it matches as reachable from every folder the file
    /// is in: a search of a folder never filters out a rule that matches a file inside it.
    #[test]
    fn every_folder_of_a_matching_file_matches(spec in pattern(), parts in path()) {
        let pattern = PathPattern::parse(&spec).unwrap();
        let root = Path::new("/proj");
        let file = parts.join("/");
        if pattern.matches(&file, root, None, Reach::File) {
            for depth in 0..parts.len() {
                let folder = if depth == 0 { ".".to_string() } else { parts[..depth].join("/") };
                prop_assert!(
                    pattern.matches(&folder, root, None, Reach::Folder),
                    "{spec:?} matches {file:?} but not its folder {folder:?}"
                );
            }
        }
    }
}

#[test]
fn a_path_through_a_link_is_tested_where_the_link_leads() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    std::fs::create_dir_all(root.join("src/generated")).unwrap();
    std::fs::write(root.join("src/generated/a.ts"), "").unwrap();
    symlink("src/generated", root.join("gen")).unwrap();
    symlink("src/generated/later.ts", root.join("dangling")).unwrap();
    let generated = PathPattern::parse("src/generated/**").unwrap();
    let file = |pattern: &PathPattern, given: &str, root: &Path| {
        pattern.matches(given, root, None, Reach::File)
    };
    assert!(file(&generated, "gen/a.ts", &root));
    assert!(file(&generated, "gen/new/deeper.ts", &root));
    assert!(file(
        &generated,
        &format!("{}/gen/a.ts", root.display()),
        &root
    ));
    // A link to what does not exist yet: writing through it creates its target.
    assert!(file(&generated, "dangling", &root));
    assert!(file(
        &PathPattern::parse("src/*.ts").unwrap(),
        "gen/../x.ts",
        &root
    ));
    assert!(!file(&generated, "src/x.ts", &root));
    assert!(generated.matches("gen", &root, None, Reach::Folder));
    // A root reached through a link of its own: both sides are resolved alike.
    let alias = dir.path().join("alias");
    symlink(&root, &alias).unwrap();
    assert!(file(&generated, "gen/a.ts", &alias));
    assert!(file(
        &generated,
        &format!("{}/src/generated/a.ts", root.display()),
        &alias
    ));
    assert!(!file(&generated, "src/a.ts", &alias));
}
