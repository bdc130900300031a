//! The environment switches the dispatcher obeys (contract §6), and the variables that say where
//! its files are, read in one place, and each read once: a process's environment changes only by
//! its own hand (the variables it exports for handlers are none of these), and `serve` would
//! otherwise search it for every switch on every request.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The variables whose values change what the dispatcher answers for an event: where the layers
/// are (`HOME`, `LEVELCODE_DIR`, `NEXT_PUBLIC_CB_ENVIRONMENT`, the managed file's
/// `LEVELCODE_MANAGED_SETTINGS` and, on Windows, `ProgramData`), the switches (`LEVELCODE_HOOKS`,
/// `LEVELCODE_HOOKS_NO_PROJECT`, `LEVELCODE_HOOKS_DEPTH`, `LEVELCODE_TRUST_PROJECT_HOOKS`), what a
/// dispatch records (`LEVELCODE_HOOKS_LOG`, `LEVELCODE_TEAM`). Besides these, only the one a
/// shell reads to find a program changes an answer: the runner looks a handler's program up on
/// the path as the handler's shell would.
///
/// A client that keeps answers, in memory or on disk, keys them on every one of these: the
/// TypeScript client's `ENV_KEYS` (`packages/levelcode-hooks/src/process.ts`) lists them, and
/// `tests/client_agreement.rs` fails when the two differ, or when this file reads a variable
/// that is in neither this list nor [`NO_ANSWER_VARS`].
pub const ANSWER_VARS: [&str; 11] = [
    "HOME",
    "LEVELCODE_DIR",
    "NEXT_PUBLIC_CB_ENVIRONMENT",
    "LEVELCODE_MANAGED_SETTINGS",
    "ProgramData",
    "LEVELCODE_HOOKS",
    "LEVELCODE_HOOKS_NO_PROJECT",
    "LEVELCODE_HOOKS_DEPTH",
    "LEVELCODE_TRUST_PROJECT_HOOKS",
    "LEVELCODE_HOOKS_LOG",
    "LEVELCODE_TEAM",
];

/// The variables read here that change no event's answer: [`AGENT`], which only `trust` reads
/// (a command, or a `trust` request of `serve`; handlers get `LEVELCODE_AGENT` whatever the
/// dispatcher's own), the OpenTelemetry export's (contract §18), which say where the spans of
/// a dispatch that ran handlers go and what they hold: a dispatch that runs none exports nothing;
/// `PYTHONSAFEPATH`, which only a handler that runs reads; `TMPDIR`, which only a sandboxed
/// handler's policy reads; `PAGER`, `trust`'s alone; and `LEVELCODE_HOOKS_TEST_MORE_THREADS`, a
/// debug build's switch for how background supervisors start ([`test_more_threads`]).
///
/// `SSL_CERT_FILE` and `SSL_CERT_DIR` say which certificates an `https://` request trusts (an
/// http handler's or the export's, `crate::http`): they change whether such a request is made,
/// not which handlers a dispatch runs, and a dispatch that runs an http handler is never one a
/// client answers from memory. The variables an http handler's `allowedEnvVars` name are read
/// by [`handler_variable`], for that handler's headers only.
pub const NO_ANSWER_VARS: [&str; 26] = [
    "LEVELCODE_AGENT",
    "CLAUDECODE",
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
    "OTEL_EXPORTER_OTLP_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
    "TRACEPARENT",
    "LEVELCODE_HOOKS_OTEL_CONTENT",
    "PYTHONSAFEPATH",
    "TMPDIR",
    "PAGER",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "LEVELCODE_HOOKS_TEST_MORE_THREADS",
];

/// The variable naming the execution log file (`dispatch/exec_log.rs`).
pub const EXEC_LOG: &str = "LEVELCODE_HOOKS_LOG";

/// The variable that trusts a project's hooks for one run (`trust/`).
pub const TRUST_PROJECT_HOOKS: &str = "LEVELCODE_TRUST_PROJECT_HOOKS";

/// The variables that say a process descends from the agent's tool calls or a hook (`trust/`):
/// levelcode's own, which the dispatcher also sets for every handler, and Claude Code's.
pub const AGENT: [&str; 2] = ["LEVELCODE_AGENT", "CLAUDECODE"];

/// The first of [`AGENT`] that was on (`1`, `true`, `on`) when the process started, if any.
/// Read once; the `LEVELCODE_AGENT` a dispatch gives its handlers goes into their own
/// environment only, never the process's.
pub fn started_by_agent() -> Option<&'static str> {
    static STARTED_BY: OnceLock<Option<&'static str>> = OnceLock::new();
    *STARTED_BY.get_or_init(|| {
        AGENT
            .into_iter()
            .find(|name| std::env::var(name).is_ok_and(|v| is_on(&v)))
    })
}

/// The variable that keeps Python 3.11 and later from putting the current folder (for `-c`
/// and `-m`) or a script's folder first on `sys.path`. The dispatch sets it to `1` for the
/// handlers of every layer outside the project, unless it was set when the process started.
pub const PYTHON_SAFE_PATH: &str = "PYTHONSAFEPATH";

/// Returns true if and only if [`PYTHON_SAFE_PATH`] was set when the process started, to
/// anything, nothing included: handlers then get it as it was.
pub fn python_safe_path_set() -> bool {
    static SET: OnceLock<bool> = OnceLock::new();
    *SET.get_or_init(|| std::env::var_os(PYTHON_SAFE_PATH).is_some())
}

/// Returns true if and only if a debug build is told to take the way of a process that runs
/// more than one thread (`LEVELCODE_HOOKS_TEST_MORE_THREADS`, the tests' switch): each
/// background supervisor started by `exec`. A release build never reads it.
pub fn test_more_threads() -> bool {
    cfg!(debug_assertions) && std::env::var_os("LEVELCODE_HOOKS_TEST_MORE_THREADS").is_some()
}

/// A dispatcher started at this depth or deeper runs nothing.
pub const MAX_DEPTH: u32 = 4;

/// Returns true if and only if `LEVELCODE_HOOKS` turns hooks off (`0`, `false`, `off`, any case).
pub fn hooks_disabled() -> bool {
    static DISABLED: OnceLock<bool> = OnceLock::new();
    *DISABLED.get_or_init(|| {
        std::env::var("LEVELCODE_HOOKS").is_ok_and(|v| {
            let v = v.trim();
            v == "0" || v.eq_ignore_ascii_case("false") || v.eq_ignore_ascii_case("off")
        })
    })
}

/// Returns true if and only if `LEVELCODE_HOOKS_NO_PROJECT` is `1`, `true` or `on` (any case).
pub fn no_project() -> bool {
    static NO_PROJECT: OnceLock<bool> = OnceLock::new();
    *NO_PROJECT.get_or_init(|| std::env::var("LEVELCODE_HOOKS_NO_PROJECT").is_ok_and(|v| is_on(&v)))
}

pub fn is_on(value: &str) -> bool {
    let v = value.trim();
    v == "1" || v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("on")
}

/// The dispatcher's own nesting depth: `LEVELCODE_HOOKS_DEPTH` as it was when the dispatcher
/// started, 0 when unset or not a number. Read once; handlers get one more, in their own
/// environment (see `runner::Invocation`).
pub fn depth() -> u32 {
    static DEPTH: OnceLock<u32> = OnceLock::new();
    *DEPTH.get_or_init(|| {
        std::env::var("LEVELCODE_HOOKS_DEPTH")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    })
}

/// The directory the dispatcher was started in, which stays its current directory (handlers are
/// started in theirs without moving the process). Relative paths (`--settings`, `--project-dir`,
/// a relative `cwd`) resolve against it.
pub fn start_dir() -> PathBuf {
    static START: OnceLock<PathBuf> = OnceLock::new();
    START
        .get_or_init(|| std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")))
        .clone()
}

/// `PAGER`, when set and not empty: what `trust` shows the scripts' text in on a terminal.
pub fn pager() -> Option<String> {
    std::env::var("PAGER").ok().filter(|p| !p.trim().is_empty())
}

/// The home directory: `HOME` when set and not empty, else the account's.
pub fn home() -> Option<&'static Path> {
    static HOME: OnceLock<Option<PathBuf>> = OnceLock::new();
    HOME.get_or_init(|| match std::env::var_os("HOME") {
        Some(h) if !h.is_empty() => Some(PathBuf::from(h)),
        _ => dirs::home_dir(),
    })
    .as_deref()
}

/// The system's temporary folder, which a sandboxed handler may write in (contract §20):
/// `TMPDIR` when set to an absolute path, else `/tmp` (the temporary folder of std's
/// `temp_dir` on Windows).
pub fn temp_dir() -> &'static Path {
    static TEMP: OnceLock<PathBuf> = OnceLock::new();
    TEMP.get_or_init(|| match std::env::var_os("TMPDIR") {
        Some(dir) if Path::new(&dir).is_absolute() => PathBuf::from(dir),
        _ if cfg!(unix) => PathBuf::from("/tmp"),
        _ => std::env::temp_dir(),
    })
}

/// The data directory: `LEVELCODE_DIR` when set and not empty, else `$HOME/.levelcode`.
pub fn data_dir() -> Option<&'static Path> {
    static DATA: OnceLock<Option<PathBuf>> = OnceLock::new();
    DATA.get_or_init(|| match std::env::var_os("LEVELCODE_DIR") {
        Some(d) if !d.is_empty() => Some(PathBuf::from(d)),
        _ => home().map(|h| h.join(".levelcode")),
    })
    .as_deref()
}

/// The user layer's folder name under `~/.config`: `levelcode`, or `levelcode-<env>` for a
/// `NEXT_PUBLIC_CB_ENVIRONMENT` other than `prod`.
pub fn config_dir_name() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| match std::env::var("NEXT_PUBLIC_CB_ENVIRONMENT") {
        Ok(env) if !env.is_empty() && env != "prod" => format!("levelcode-{env}"),
        _ => "levelcode".to_string(),
    })
}

/// The execution log file [`EXEC_LOG`] names, when set and not empty.
pub fn exec_log() -> Option<&'static Path> {
    static LOG: OnceLock<Option<PathBuf>> = OnceLock::new();
    LOG.get_or_init(|| {
        std::env::var_os(EXEC_LOG)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
    .as_deref()
}

/// [`TRUST_PROJECT_HOOKS`] as it is set, unread: `trust` says what it means.
pub fn trust_project_hooks() -> Option<&'static OsStr> {
    static VALUE: OnceLock<Option<OsString>> = OnceLock::new();
    VALUE
        .get_or_init(|| std::env::var_os(TRUST_PROJECT_HOOKS))
        .as_deref()
}

/// The team for the compliance log from the environment, when set.
pub fn team() -> Option<String> {
    static TEAM: OnceLock<Option<String>> = OnceLock::new();
    TEAM.get_or_init(|| std::env::var("LEVELCODE_TEAM").ok())
        .clone()
}

/// `%ProgramData%`, where Windows keeps the managed settings file.
#[cfg(windows)]
pub fn program_data() -> Option<&'static Path> {
    static DATA: OnceLock<Option<PathBuf>> = OnceLock::new();
    DATA.get_or_init(|| {
        std::env::var_os("ProgramData")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
    })
    .as_deref()
}

/// The variable that names the managed settings file while none is at the system path
/// (contract §17; see `settings::managed`).
pub const MANAGED_SETTINGS_VAR: &str = "LEVELCODE_MANAGED_SETTINGS";

/// `LEVELCODE_MANAGED_SETTINGS`, when set and non-empty, made absolute against the start
/// directory.
pub fn managed_settings() -> Option<&'static Path> {
    static NAMED: OnceLock<Option<PathBuf>> = OnceLock::new();
    NAMED
        .get_or_init(|| {
            let value = std::env::var_os(MANAGED_SETTINGS_VAR).filter(|v| !v.is_empty())?;
            let path = PathBuf::from(value);
            Some(if path.is_relative() {
                start_dir().join(path)
            } else {
                path
            })
        })
        .as_deref()
}

/// The OpenTelemetry variables the export obeys (contract §18), as set; `None` when neither
/// endpoint variable is set and non-empty, so a dispatch without export reads no other.
#[derive(Debug, Default)]
pub struct OtelVars {
    pub endpoint: Option<String>,
    pub traces_endpoint: Option<String>,
    pub protocol: Option<String>,
    pub traces_protocol: Option<String>,
    pub headers: Option<String>,
    pub traces_headers: Option<String>,
    pub timeout: Option<String>,
    pub traces_timeout: Option<String>,
    pub service_name: Option<String>,
    pub resource_attributes: Option<String>,
    pub sdk_disabled: Option<String>,
    pub traces_exporter: Option<String>,
    /// The caller's W3C trace context.
    pub traceparent: Option<String>,
    pub certificate: Option<String>,
    pub traces_certificate: Option<String>,
    pub compression: Option<String>,
    pub traces_compression: Option<String>,
    /// `LEVELCODE_HOOKS_OTEL_CONTENT`: payloads and output go into the spans too.
    pub content: bool,
}

fn otel_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Returns true if and only if an endpoint variable is set: the only ones a dispatch reads
/// before a handler runs.
pub fn otel_requested() -> bool {
    static REQUESTED: OnceLock<bool> = OnceLock::new();
    *REQUESTED.get_or_init(|| {
        otel_var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
            || otel_var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
    })
}

/// The OpenTelemetry variables, read once, when a handler of an exported dispatch starts (or
/// before the first `serve` request); see [`OtelVars`].
pub fn otel() -> Option<&'static OtelVars> {
    static OTEL: OnceLock<Option<OtelVars>> = OnceLock::new();
    OTEL.get_or_init(|| {
        if !otel_requested() {
            return None;
        }
        let var = otel_var;
        Some(OtelVars {
            endpoint: var("OTEL_EXPORTER_OTLP_ENDPOINT"),
            traces_endpoint: var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            protocol: var("OTEL_EXPORTER_OTLP_PROTOCOL"),
            traces_protocol: var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
            headers: var("OTEL_EXPORTER_OTLP_HEADERS"),
            traces_headers: var("OTEL_EXPORTER_OTLP_TRACES_HEADERS"),
            timeout: var("OTEL_EXPORTER_OTLP_TIMEOUT"),
            traces_timeout: var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"),
            service_name: var("OTEL_SERVICE_NAME"),
            resource_attributes: var("OTEL_RESOURCE_ATTRIBUTES"),
            sdk_disabled: var("OTEL_SDK_DISABLED"),
            traces_exporter: var("OTEL_TRACES_EXPORTER"),
            certificate: var("OTEL_EXPORTER_OTLP_CERTIFICATE"),
            traces_certificate: var("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE"),
            compression: var("OTEL_EXPORTER_OTLP_COMPRESSION"),
            traces_compression: var("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"),
            traceparent: var("TRACEPARENT"),
            content: std::env::var("LEVELCODE_HOOKS_OTEL_CONTENT").is_ok_and(|v| is_on(&v)),
        })
    })
    .as_ref()
}

/// `SSL_CERT_FILE` and `SSL_CERT_DIR`, when set and not empty: the certificates an `https://`
/// request trusts instead of the system's bundle (`crate::http`), as OpenSSL reads them. Read
/// once, at the first `https://` request.
pub fn ssl_cert_paths() -> (Option<&'static Path>, Option<&'static Path>) {
    static PATHS: OnceLock<(Option<PathBuf>, Option<PathBuf>)> = OnceLock::new();
    let (file, dir) = PATHS.get_or_init(|| {
        let path = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        (path("SSL_CERT_FILE"), path("SSL_CERT_DIR"))
    });
    (file.as_deref(), dir.as_deref())
}

/// The value of the variable `name`, which an http handler's `allowedEnvVars` lists, for its
/// headers (contract §19); `None` when it is not set or not Unicode. Read when the handler runs,
/// never for a name its settings do not list.
pub fn handler_variable(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn on_values() {
        for v in ["1", "true", "ON", " on "] {
            assert!(super::is_on(v), "{v}");
        }
        for v in ["0", "", "yes", "off"] {
            assert!(!super::is_on(v), "{v}");
        }
    }
}
