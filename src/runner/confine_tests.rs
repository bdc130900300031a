//! The confinement on this kernel: what a confined process can and cannot do, whichever way it
//! was started, and that only it is confined: never the dispatcher that prepared it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::linux::prepare_on;
use super::*;
use crate::runner::{Ending, Finished, Invocation, Program};

/// A folder holding `inside/`, which the rules let be written, and `outside/`, which they do
/// not.
struct Dirs {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Dirs {
    fn new() -> Dirs {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("inside")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        Dirs { _dir: dir, root }
    }

    fn inside(&self) -> PathBuf {
        self.root.join("inside")
    }

    fn outside(&self) -> PathBuf {
        self.root.join("outside")
    }

    fn rules(&self) -> Rules {
        Rules {
            write: vec![self.inside(), PathBuf::from("/dev/null")],
            network: false,
            best_effort: false,
        }
    }
}

/// Runs `script` in `dir`, confined by `prepared`, started by `run`.
fn run_in(
    run: fn(&Invocation<'_>) -> Finished,
    dir: &Path,
    script: &str,
    prepared: &Prepared,
) -> Finished {
    let program = Program::Shell(script.into());
    run(&Invocation {
        program: &program,
        dir,
        input: b"",
        timeout: Duration::from_secs(20),
        env: &[],
        unset: &[],
        confine: Some(prepared),
        spawned: &|_| {},
    })
}

fn needs_landlock() -> bool {
    let support = support();
    assert!(
        support.landlock.is_some_and(|abi| abi >= 6) && support.seccomp,
        "these tests need Landlock ABI 6 and seccomp: {support:?}"
    );
    true
}

/// Both ways of starting a handler (the clone spawner and std's fallback) confine it alike.
#[test]
fn a_confined_handler_writes_only_beneath_its_paths_however_it_was_started() {
    assert!(needs_landlock());
    let dirs = Dirs::new();
    let prepared = prepare(&dirs.rules()).unwrap();
    for (way, run) in [
        (
            "clone",
            crate::runner::run as fn(&Invocation<'_>) -> Finished,
        ),
        ("std", super::super::os::run_by_std),
    ] {
        let script = format!(
            "echo in > inside/{way}; echo out > outside/{way}; echo x > /dev/null && echo null-ok"
        );
        let finished = run_in(run, &dirs.root, &script, &prepared);
        assert!(
            matches!(finished.ending, Ending::Exited(0)),
            "{way}: {finished:?}"
        );
        assert!(dirs.inside().join(way).exists(), "{way}");
        assert!(!dirs.outside().join(way).exists(), "{way} wrote outside");
        assert!(
            finished.stderr.text().contains("Permission denied"),
            "{way}: {finished:?}"
        );
        assert_eq!(finished.stdout.text(), "null-ok\n", "{way}");
        // A socket of any family is refused (seccomp), a pair of connected ones is not.
        let sockets = run_in(
            run,
            &dirs.root,
            "python3 -c 'import socket; socket.socketpair(); print(\"pair\"); socket.socket(socket.AF_UNIX)' 2>&1 | tail -1",
            &prepared,
        );
        let text = sockets.stdout.text();
        assert!(text.contains("Operation not permitted"), "{way}: {text}");
    }
}

/// The ruleset's descriptor stays in the dispatcher: the handler cannot add rules to it, nor
/// hand it on.
#[test]
fn the_ruleset_is_not_inherited() {
    assert!(needs_landlock());
    let dirs = Dirs::new();
    let prepared = prepare(&dirs.rules()).unwrap();
    let finished = run_in(
        crate::runner::run,
        &dirs.root,
        "ls -l /proc/$$/fd",
        &prepared,
    );
    let fds = finished.stdout.text();
    assert!(fds.contains("pipe:"), "{fds}");
    assert!(!fds.contains("landlock"), "{fds}");
}

/// Running a confined handler leaves the dispatcher's own thread as it was: were `apply` ever
/// called in the parent, this thread could no longer write outside the rules, nor open a socket.
#[test]
fn the_dispatcher_itself_is_never_confined() {
    assert!(needs_landlock());
    let dirs = Dirs::new();
    let prepared = prepare(&dirs.rules()).unwrap();
    for run in [
        crate::runner::run as fn(&Invocation<'_>) -> Finished,
        super::super::os::run_by_std,
    ] {
        let finished = run_in(run, &dirs.root, "true", &prepared);
        assert!(matches!(finished.ending, Ending::Exited(0)), "{finished:?}");
        std::fs::write(dirs.outside().join("parent"), "still free").unwrap();
        std::net::UdpSocket::bind("127.0.0.1:0").expect("the dispatcher still opens sockets");
        let mut no_new_privs = 0;
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        for line in status.lines() {
            if let Some(v) = line.strip_prefix("NoNewPrivs:") {
                no_new_privs = v.trim().parse().unwrap();
            }
        }
        assert_eq!(no_new_privs, 0, "{status}");
    }
}

/// `apply` confines the thread that calls it, for good, and no other: here a thread that ends
/// once it has looked.
#[test]
fn applied_in_a_thread_it_confines_that_thread_alone() {
    assert!(needs_landlock());
    let dirs = Dirs::new();
    let prepared = prepare(&dirs.rules()).unwrap();
    let steps = prepared.steps();
    let (inside, outside) = (dirs.inside(), dirs.outside());
    let seen = std::thread::spawn(move || {
        // SAFETY: this thread exists only to be confined and ends right after; `steps` point
        // into `prepared`, which outlives it (the thread is joined below).
        let applied = unsafe { apply(steps) };
        let inside = std::fs::write(inside.join("t"), "x").is_ok();
        let outside = std::fs::write(outside.join("t"), "x").map_err(|e| e.kind());
        let socket = std::net::UdpSocket::bind("127.0.0.1:0")
            .map(drop)
            .map_err(|e| e.kind());
        (applied, inside, outside, socket)
    })
    .join()
    .unwrap();
    assert_eq!(
        seen,
        (
            true,
            true,
            Err(std::io::ErrorKind::PermissionDenied),
            Err(std::io::ErrorKind::PermissionDenied)
        )
    );
    std::fs::write(dirs.outside().join("main"), "x").expect("this thread is not confined");
    drop(prepared);
}

/// On a kernel that reports less than this one has (ABI 3: no TCP rules, no scoping), a strict
/// policy is refused, naming each missing part, and best effort builds what that kernel would
/// enforce and names the rest.
#[test]
fn an_older_kernel_gets_only_what_it_has() {
    assert!(needs_landlock());
    let dirs = Dirs::new();
    let older = Support {
        linux: true,
        landlock: Some(3),
        seccomp: true,
    };
    let why = prepare_on(&dirs.rules(), older).err().unwrap();
    assert!(
        why.contains("TCP connections and listening (needs Landlock ABI 4)"),
        "{why}"
    );
    let best = Rules {
        best_effort: true,
        ..dirs.rules()
    };
    let prepared = prepare_on(&best, older).unwrap();
    assert_eq!(
        prepared.left_out,
        [
            Part::Devices,
            Part::Tcp,
            Part::Signals,
            Part::AbstractSockets
        ]
    );
    // What ABI 3 has is still enforced: writes, and (by seccomp) sockets.
    let finished = run_in(
        crate::runner::run,
        &dirs.root,
        "echo x > outside/old; python3 -c 'import socket; socket.socket()' 2>&1 | tail -1",
        &prepared,
    );
    assert!(!dirs.outside().join("old").exists());
    assert!(
        finished.stdout.text().contains("Operation not permitted"),
        "{finished:?}"
    );
}
