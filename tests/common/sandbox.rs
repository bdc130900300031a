//! The sandbox every black-box test runs the binary in: a temporary directory holding `home/`
//! (the child's `HOME`) and `project/` (its current directory, so a payload without `cwd` uses
//! it as the project root), and the one list of variables the child never inherits from the
//! machine running the tests.
//!
//! `tests/tests.rs` reaches it through `common`; the soak, a test binary of its own, includes
//! this file alone.

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

/// The binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_levelcode-hooks"))
}

/// Variables removed from every child's environment unless a test sets them, so the machine
/// running the tests cannot change their outcome (and a developer's own execution log,
/// `LEVELCODE_HOOKS_LOG`, never gets the tests' dispatches): every variable the dispatcher reads
/// (`src/environment.rs`; `tests/architecture.rs` checks that none is missing), those it gives
/// handlers (a handler must see what the dispatcher set, not what it inherited), and the color
/// switches.
pub const CLEARED: [&str; 45] = [
    // The switches and paths of src/environment.rs (HOME is set, not cleared).
    "LEVELCODE_AGENT",
    "CLAUDECODE",
    "LEVELCODE_DIR",
    "LEVELCODE_HOOKS",
    "LEVELCODE_HOOKS_NO_PROJECT",
    "LEVELCODE_HOOKS_DEPTH",
    "LEVELCODE_HOOKS_LOG",
    "LEVELCODE_TEAM",
    "LEVELCODE_TRUST_PROJECT_HOOKS",
    "NEXT_PUBLIC_CB_ENVIRONMENT",
    "LEVELCODE_MANAGED_SETTINGS",
    "LEVELCODE_HOOKS_TEST_MORE_THREADS",
    "ProgramData",
    // The temporary folder a sandboxed handler may write in: a test that sandboxes one gives
    // its own.
    "TMPDIR",
    // OpenTelemetry export (src/environment.rs's `otel`).
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
    "TRACEPARENT",
    "TRACESTATE",
    "OTEL_EXPORTER_OTLP_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
    "LEVELCODE_HOOKS_OTEL_CONTENT",
    // The certificates an https:// request trusts (src/environment.rs's `ssl_cert_paths`).
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    // What handlers are given.
    "LEVELCODE_HOOK_EVENT",
    "LEVELCODE_TOOL_NAME",
    "LEVELCODE_PROJECT_DIR",
    "CLAUDE_PROJECT_DIR",
    "CLAUDE_ENV_FILE",
    "PYTHONSAFEPATH",
    // The pager `trust` offers the scripts' text in.
    "PAGER",
    // Colors for people (anstream).
    "NO_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
];

/// The variable that trusts a project's hooks for one run; set to `1` in every child unless a
/// test removes it.
pub const TRUST: &str = "LEVELCODE_TRUST_PROJECT_HOOKS";

/// The binary, run in `dir` with `home` as `HOME`, none of [`CLEARED`] inherited, and a
/// project's hooks trusted for the run ([`TRUST`]): project hooks run only once trusted
/// (contract §13), and tests about something else trust them. Tests about trust remove it.
pub fn command(home: &Path, dir: &Path) -> Command {
    let mut command = Command::new(bin());
    for key in CLEARED {
        command.env_remove(key);
    }
    command.current_dir(dir).env("HOME", home).env(TRUST, "1");
    command
}

/// One test's temporary directory, removed when dropped.
pub struct Sandbox {
    _dir: TempDir,
    root: PathBuf,
}

impl Default for Sandbox {
    fn default() -> Sandbox {
        Sandbox::new()
    }
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::Builder::new()
            .prefix("levelcode-hooks-test-")
            .tempdir()
            .unwrap();
        // The canonical path, so it compares equal to what the child's getcwd reports.
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::create_dir_all(root.join("project")).unwrap();
        Sandbox { _dir: dir, root }
    }

    /// The test's own directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The child's `HOME`.
    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    /// The project root, the child's current directory.
    pub fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    /// [`command`] on this sandbox's home and project.
    pub fn command(&self) -> Command {
        command(&self.home(), &self.project())
    }
}
