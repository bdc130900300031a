//! `make static`'s check of `benches/hot-symbols.txt` (benches/static-build.sh): the linker's
//! word on each listed function the build does not have is counted, shown as one line, and a
//! list of which more than a quarter is gone fails the build. A stand-in for cargo prints what
//! the linker would have said, so the check is tested without a release build.

use std::path::Path;
use std::process::Command;

/// Runs the script with a stand-in cargo that says `missing` listed names are not found, and
/// returns its exit status and stderr.
fn build_with_missing(missing: usize) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let cargo = dir.path().join("cargo");
    // The linker's lines as rustc shows them: one warning, the first name on its first line.
    let mut linker = String::new();
    for i in 0..missing {
        let head = if i == 0 {
            "warning: linker stderr: "
        } else {
            "         "
        };
        linker.push_str(&format!(
            "{head}rust-lld: symbol ordering file: no such symbol: gone_{i}\n"
        ));
    }
    if missing > 0 {
        linker.push_str(
            "         \n  |\n  = note: requested on the command line with `-W linker-messages`\n\n",
        );
    }
    let script = format!(
        "#!/bin/sh\ncat >&2 <<'END'\n   Compiling levelcode-hooks v0.1.0\nwarning: a real warning of the code\n\n\
         {linker}warning: `levelcode-hooks` (bin \"levelcode-hooks\") generated 2 warnings\n    Finished `release` profile\nEND\n"
    );
    std::fs::write(&cargo, script).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(root.join("benches/static-build.sh"))
        .arg("x86_64-unknown-linux-gnu")
        .env("CARGO", &cargo)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn listed() -> usize {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/hot-symbols.txt"),
    )
    .unwrap();
    text.lines().filter(|l| !l.starts_with('#')).count()
}

#[test]
fn a_few_names_gone_are_counted_in_one_line_and_the_build_goes_on() {
    let (status, stderr) = build_with_missing(9);
    assert_eq!(status, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("static: 9 of the {} functions", listed())),
        "{stderr}"
    );
    assert!(!stderr.contains("no such symbol"), "{stderr}");
    // What the linker did not say is shown as cargo said it.
    assert!(stderr.contains("a real warning of the code"), "{stderr}");
    assert!(stderr.contains("Finished"), "{stderr}");
}

#[test]
fn a_list_more_than_a_quarter_gone_fails_the_build() {
    let (status, stderr) = build_with_missing(listed() / 4 + 1);
    assert_eq!(status, 1, "{stderr}");
    assert!(stderr.contains("more than a quarter"), "{stderr}");
    assert!(stderr.contains("benches/hot-symbols.sh"), "{stderr}");
}

#[test]
fn a_list_the_build_has_whole_says_nothing() {
    let (status, stderr) = build_with_missing(0);
    assert_eq!(status, 0, "{stderr}");
    assert!(!stderr.contains("static:"), "{stderr}");
    assert!(stderr.contains("a real warning of the code"), "{stderr}");
}
