//! The managed layer (contract §17): the organisation's hooks, from a file only the system's
//! administrator can write, run first on every dispatch, need no trust, and cannot be turned off
//! by anything a person, a settings file or a project controls.
//!
//! The file is at a fixed system path ([`system_path`]). `LEVELCODE_MANAGED_SETTINGS` names
//! another file, for trying a policy before it is deployed and for test suites, but only while
//! nothing is at the system path: once an administrator has placed a file, the variable is
//! ignored with a warning, so it can neither move the layer nor escape it (docs/organisations.md
//! has the reasoning). A file at either place is used only when it is a regular file owned by
//! root (or, for the variable's file, by the user running the dispatcher) and writable by no one
//! else; any other is refused with a warning and the dispatch goes on as if it were absent.
//!
//! With the file absent, a dispatch pays one `open` that fails, nothing more.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use crate::environment;
use crate::settings::events::EventKind;
use crate::settings::layers::{LayerKind, MAX_SETTINGS_BYTES};
use crate::settings::{self, Events, Group};

/// The key that keeps every other layer out.
pub const ONLY_KEY: &str = "managedHooksOnly";

/// The variable that names the managed file while none is at the system path.
pub const OVERRIDE_VAR: &str = environment::MANAGED_SETTINGS_VAR;

/// The managed file's place on this system.
pub fn system_path() -> PathBuf {
    #[cfg(target_os = "macos")]
    {
        PathBuf::from("/Library/Application Support/levelcode/managed-settings.json")
    }
    #[cfg(windows)]
    {
        let base = environment::program_data()
            .map_or_else(|| PathBuf::from(r"C:\ProgramData"), Path::to_path_buf);
        base.join("levelcode").join("managed-settings.json")
    }
    #[cfg(not(any(target_os = "macos", windows)))]
    {
        PathBuf::from("/etc/levelcode/managed-settings.json")
    }
}

/// What was found where the managed file may be.
#[derive(Debug)]
pub enum Found {
    /// No file at the system path, and none named by the variable.
    Absent,
    /// A file that may not be used: the warning says why; the dispatch goes on without it.
    Refused(PathBuf, String),
    /// The file's contents, and what it was when opened.
    Read(PathBuf, Vec<u8>, std::fs::Metadata),
}

/// Looks for the managed file: the system path, else the variable's file while nothing is at
/// the system path. Warnings (the variable ignored) go to `warnings`.
pub fn find(warnings: &mut Vec<String>) -> Found {
    find_at(&system_path(), environment::managed_settings(), warnings)
}

/// The files whose appearance or change changes what [`find`] finds: the system path, and the
/// variable's file when it is set. What a client that keeps answers watches (docs/serve.md).
pub fn candidates() -> Vec<PathBuf> {
    let mut paths = vec![system_path()];
    paths.extend(environment::managed_settings().map(Path::to_path_buf));
    paths
}

/// [`find`] with the system path and the variable's value given.
pub fn find_at(system: &Path, named: Option<&Path>, warnings: &mut Vec<String>) -> Found {
    let found = open_checked(system, false);
    match (&found, named) {
        (Found::Absent, Some(named)) => open_checked(named, true),
        (Found::Absent, None) => Found::Absent,
        (_, Some(named)) => {
            warnings.push(format!(
                "{OVERRIDE_VAR}={} is ignored: the administrator's managed file {} is in place, and nothing else can stand in for it",
                named.display(),
                system.display()
            ));
            found
        }
        (_, None) => found,
    }
}

/// Opens and checks one candidate. `own_ok`: a file owned by the user running the dispatcher is
/// accepted too (the variable's file; the variable only counts where no administrator placed
/// one).
fn open_checked(path: &Path, own_ok: bool) -> Found {
    let refuse = |why: String| Found::Refused(path.to_path_buf(), why);
    let file = match crate::fs::open_nonblocking(path, std::fs::OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Found::Absent,
        Err(e) if e.raw_os_error() == Some(20) => return Found::Absent, // ENOTDIR
        Err(e) => {
            return refuse(format!(
                "{}: cannot open the managed settings file: {e}; managed hooks not run",
                path.display()
            ))
        }
    };
    let meta = match file.metadata() {
        Ok(meta) => meta,
        Err(e) => {
            return refuse(format!(
                "{}: cannot stat the managed settings file: {e}; managed hooks not run",
                path.display()
            ))
        }
    };
    if !meta.is_file() {
        return refuse(format!(
            "{}: is not a regular file; managed hooks not run",
            path.display()
        ));
    }
    if let Some(problem) = ownership_problem(&meta, own_ok) {
        return refuse(format!(
            "{}: refused: {problem}; a managed settings file must be owned by root and writable by no one else (chown root {0}; chmod 644 {0}); managed hooks not run",
            path.display()
        ));
    }
    if meta.len() > MAX_SETTINGS_BYTES {
        return refuse(format!(
            "{}: is {} bytes, over the {} MiB limit for a settings file; managed hooks not run",
            path.display(),
            meta.len(),
            MAX_SETTINGS_BYTES >> 20
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0) + 1);
    match file.take(MAX_SETTINGS_BYTES + 1).read_to_end(&mut bytes) {
        Ok(_) => Found::Read(path.to_path_buf(), bytes, meta),
        Err(e) => refuse(format!(
            "{}: cannot read the managed settings file: {e}; managed hooks not run",
            path.display()
        )),
    }
}

/// Why a file's owner or mode disqualifies it, if they do.
#[cfg(unix)]
fn ownership_problem(meta: &std::fs::Metadata, own_ok: bool) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let owner = meta.uid();
    if owner != 0 && !(own_ok && owner == me) {
        return Some(format!("it is owned by uid {owner}, not root"));
    }
    let mode = meta.mode();
    if mode & 0o022 != 0 {
        let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
            (true, true) => "its group and others",
            (true, false) => "its group",
            _ => "others",
        };
        return Some(format!(
            "it is writable by {who} (mode {:o})",
            mode & 0o7777
        ));
    }
    None
}

/// On Windows the file's protection is its folder's access list, which the installer sets
/// (docs/organisations.md); the file is read as it is.
#[cfg(not(unix))]
fn ownership_problem(_meta: &std::fs::Metadata, _own_ok: bool) -> Option<String> {
    None
}

/// Whether the managed file's `bytes` set `managedHooksOnly`: a value that is not a boolean is
/// a warning and counts as not set.
pub fn only_in(path: &Path, bytes: &[u8], warnings: &mut Vec<String>) -> bool {
    if crate::bytes::find(bytes, ONLY_KEY.as_bytes()).is_none() {
        return false;
    }
    #[derive(serde::Deserialize)]
    struct Top {
        #[serde(rename = "managedHooksOnly", default)]
        only: Option<serde_json::Value>,
    }
    match serde_json::from_slice::<Top>(bytes) {
        Ok(Top {
            only: Some(serde_json::Value::Bool(on)),
        }) => on,
        Ok(Top {
            only: None | Some(serde_json::Value::Null),
        }) => false,
        Ok(Top { only: Some(other) }) => {
            warnings.push(format!(
                "{}: {ONLY_KEY} must be true or false, not {}; ignored, so the other layers still run",
                path.display(),
                crate::settings::short_json(&other)
            ));
            false
        }
        // Invalid JSON is the settings reader's to report.
        Err(_) => false,
    }
}

/// The keys by which the managed layer restricts http handlers (contract §19).
pub const URLS_KEY: &str = "allowedHttpHookUrls";
pub const ENV_VARS_KEY: &str = "httpHookAllowedEnvVars";

/// What the managed layer allows http handlers, of every layer, its own included (contract §19):
/// the URLs they may post to (`allowedHttpHookUrls`, patterns in which `*` matches any run of
/// characters) and the variables their headers may name (`httpHookAllowedEnvVars`). A list
/// that is not set allows everything; one that cannot be read allows nothing.
#[derive(Clone, Debug, Default)]
pub struct HttpPolicy {
    /// The managed file, for the warnings.
    pub file: Option<PathBuf>,
    pub urls: Option<Vec<String>>,
    pub env_vars: Option<Vec<String>>,
}

impl HttpPolicy {
    /// The policy the managed file's `bytes` set; problems go to `warnings`.
    pub fn read(path: &Path, bytes: &[u8], warnings: &mut Vec<String>) -> HttpPolicy {
        let mut policy = HttpPolicy {
            file: Some(path.to_path_buf()),
            ..HttpPolicy::default()
        };
        let named = |key: &str| crate::bytes::find(bytes, key.as_bytes()).is_some();
        if !named(URLS_KEY) && !named(ENV_VARS_KEY) {
            return policy;
        }
        let Ok(serde_json::Value::Object(mut top)) = serde_json::from_slice(bytes) else {
            // Invalid JSON is the settings reader's to report.
            return policy;
        };
        let mut list = |key: &str| -> Option<Vec<String>> {
            match top.remove(key)? {
                serde_json::Value::Null => None,
                serde_json::Value::Array(items)
                    if items.iter().all(serde_json::Value::is_string) =>
                {
                    Some(
                        items
                            .into_iter()
                            .filter_map(|i| i.as_str().map(str::to_string))
                            .collect(),
                    )
                }
                other => {
                    warnings.push(format!(
                        "{}: {key} must be an array of strings, not {}; until it is one, no http handler runs",
                        path.display(),
                        crate::settings::short_json(&other)
                    ));
                    Some(Vec::new())
                }
            }
        };
        policy.urls = list(URLS_KEY);
        policy.env_vars = list(ENV_VARS_KEY);
        policy
    }

    /// Why the policy keeps `action` from running, when it does: the rule and the file.
    pub fn refuses(&self, action: &settings::Action) -> Option<String> {
        let hook = match action {
            settings::Action::Process(_) => return None,
            settings::Action::Http(hook) => hook,
        };
        let file = self.file.as_deref()?.display();
        if let Some(urls) = &self.urls {
            if !urls
                .iter()
                .any(|pattern| wildcard_match(pattern, &hook.url))
            {
                return Some(format!(
                    "{:?} is not a URL the managed layer's {URLS_KEY} allows ({file}); the handler did not run",
                    hook.url
                ));
            }
        }
        if let Some(vars) = &self.env_vars {
            if let Some(var) = hook.allowed_env_vars.iter().find(|v| !vars.contains(v)) {
                return Some(format!(
                    "its allowedEnvVars names {var}, which the managed layer's {ENV_VARS_KEY} does not allow ({file}); the handler did not run"
                ));
            }
        }
        None
    }
}

/// Returns true if and only if `text` matches `pattern`, in which `*` matches any run of
/// characters (none included) and every other character itself.
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// The managed layer of one dispatch.
#[derive(Default)]
pub struct Managed {
    /// The file read, when one was.
    pub path: Option<PathBuf>,
    /// Its groups for the dispatched event.
    pub groups: Vec<Group>,
    /// `managedHooksOnly`.
    pub only: bool,
    /// `sandboxProjectHooks` (contract §20): every project handler runs in at least the default
    /// sandbox.
    pub sandbox_projects: bool,
    /// What it allows http handlers.
    pub http: HttpPolicy,
}

impl Managed {
    /// Reads the managed layer's groups for `events`; problems go to `warnings`.
    pub fn load(events: Events<'_>, warnings: &mut Vec<String>) -> Managed {
        match find(warnings) {
            Found::Absent => Managed::default(),
            Found::Refused(_, warning) => {
                warnings.push(warning);
                Managed::default()
            }
            Found::Read(path, bytes, _) => {
                let mut groups = Vec::new();
                let source = settings::Source {
                    layer: LayerKind::Managed,
                    file: path.clone().into_boxed_path(),
                };
                settings::parse(source, &bytes, events, &mut groups, warnings);
                let only = only_in(&path, &bytes, warnings);
                let sandbox_projects =
                    crate::settings::sandbox::projects_sandboxed(&bytes, &path, warnings);
                let http = HttpPolicy::read(&path, &bytes, warnings);
                Managed {
                    path: Some(path),
                    groups,
                    only,
                    sandbox_projects,
                    http,
                }
            }
        }
    }

    /// The managed file, when it sets `sandboxProjectHooks`.
    pub fn sandboxes_projects(&self) -> Option<&Path> {
        self.path.as_deref().filter(|_| self.sandbox_projects)
    }

    /// The warning of a dispatch in which `why` (the kill switch, the depth guard) stopped every
    /// other layer: `plain` as it is when there is no managed hook, else saying that the
    /// managed layer's hooks still run.
    pub fn stopped_warning(&self, plain: String) -> String {
        match &self.path {
            Some(path) if self.groups.iter().any(|g| g.enabled) => format!(
                "{}; only the managed layer's hooks ({}) run, and nothing turns those off",
                plain.trim_end_matches(": no handler ran"),
                path.display()
            ),
            _ => plain,
        }
    }

    /// The warning of a dispatch whose other layers `managedHooksOnly` kept out: which of their
    /// handlers would have run, by layer and file. `None` when none would have.
    pub fn held_back_warning(
        &self,
        others: &[Group],
        kind: EventKind,
        tool: Option<&str>,
    ) -> Option<String> {
        let path = self.path.as_ref()?;
        let mut by_file: Vec<(LayerKind, &Path, usize)> = Vec::new();
        for group in others {
            if !group.enabled || group.applies(kind, tool) != Ok(true) {
                continue;
            }
            let count = group.handlers.iter().filter(|h| h.enabled).count();
            if count == 0 {
                continue;
            }
            let file: &Path = &group.source.file;
            match by_file.iter_mut().find(|(_, f, _)| *f == file) {
                Some(entry) => entry.2 += count,
                None => by_file.push((group.source.layer, file, count)),
            }
        }
        if by_file.is_empty() {
            return None;
        }
        let total: usize = by_file.iter().map(|(_, _, n)| n).sum();
        let what: Vec<String> = by_file
            .iter()
            .map(|(layer, file, n)| {
                format!("{n} of the {} layer ({})", layer.name(), file.display())
            })
            .collect();
        Some(format!(
            "{}: {ONLY_KEY} is set, so {total} handler(s) of other layers did not run: {}",
            path.display(),
            what.join(", ")
        ))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn place(dir: &Path, name: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, br#"{"hooks":{}}"#).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn the_variable_counts_only_while_nothing_is_at_the_system_path() {
        let dir = tempfile::tempdir().unwrap();
        let named = place(dir.path(), "named.json", 0o644);
        let absent = dir.path().join("absent.json");
        let mut warnings = Vec::new();
        assert!(matches!(
            find_at(&absent, Some(&named), &mut warnings),
            Found::Read(p, _, _) if p == named
        ));
        assert!(warnings.is_empty(), "{warnings:?}");

        let system = place(dir.path(), "system.json", 0o644);
        let found = find_at(&system, Some(&named), &mut warnings);
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            assert!(matches!(found, Found::Read(p, _, _) if p == system));
        } else {
            // Not owned by root: refused, and the variable still cannot stand in for it.
            assert!(matches!(found, Found::Refused(p, _) if p == system));
        }
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("is ignored"), "{warnings:?}");
    }

    #[test]
    fn a_file_others_can_write_is_refused_even_by_the_variable() {
        let dir = tempfile::tempdir().unwrap();
        let absent = dir.path().join("absent.json");
        for (mode, who) in [
            (0o664, "its group"),
            (0o646, "others"),
            (0o666, "group and others"),
        ] {
            let named = place(dir.path(), &format!("m{mode:o}.json"), mode);
            let found = find_at(&absent, Some(&named), &mut Vec::new());
            match found {
                Found::Refused(_, why) => assert!(why.contains(who), "{why}"),
                other => panic!("mode {mode:o} was not refused: {other:?}"),
            }
        }
    }

    #[test]
    fn url_patterns_match_any_run_of_characters_at_each_star() {
        for (pattern, text, matches) in [
            (
                "https://policy.example.com/*",
                "https://policy.example.com/hooks",
                true,
            ),
            (
                "https://policy.example.com/*",
                "https://policy.example.com.evil/x",
                false,
            ),
            ("https://*.example.com/*", "https://a.b.example.com/x", true),
            (
                "https://*.example.com/*",
                "https://example.org/?.example.com/",
                true,
            ),
            ("https://exact/", "https://exact/", true),
            ("https://exact/", "https://exact/more", false),
            ("*", "anything", true),
            ("a*b*a", "aba", true),
            ("a*a", "a", false),
        ] {
            assert_eq!(wildcard_match(pattern, text), matches, "{pattern} {text}");
        }
    }

    #[test]
    fn the_http_policy_refuses_by_url_and_by_variable_and_a_bad_list_allows_nothing() {
        let p = Path::new("m.json");
        let hook = |url: &str, vars: &[&str]| {
            settings::Action::Http(settings::HttpHook {
                url: url.into(),
                headers: Vec::new(),
                allowed_env_vars: vars.iter().map(|v| v.to_string()).collect(),
                plain_allowed: false,
            })
        };
        let mut w = Vec::new();
        let policy = HttpPolicy::read(
            p,
            br#"{"allowedHttpHookUrls":["https://ok.example/*"],"httpHookAllowedEnvVars":["TOKEN"]}"#,
            &mut w,
        );
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(
            policy.refuses(&hook("https://ok.example/a", &["TOKEN"])),
            None
        );
        let why = policy
            .refuses(&hook("https://other.example/a", &[]))
            .unwrap();
        assert!(why.contains(URLS_KEY) && why.contains("m.json"), "{why}");
        let why = policy
            .refuses(&hook("https://ok.example/a", &["HOME"]))
            .unwrap();
        assert!(why.contains(ENV_VARS_KEY) && why.contains("HOME"), "{why}");
        let bad = HttpPolicy::read(
            p,
            br#"{"allowedHttpHookUrls":"https://ok.example/*"}"#,
            &mut w,
        );
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(bad.refuses(&hook("https://ok.example/a", &[])).is_some());
        let none = HttpPolicy::read(p, br#"{"hooks":{}}"#, &mut w);
        assert_eq!(none.refuses(&hook("http://anything/", &["X"])), None);
    }

    #[test]
    fn managed_hooks_only_reads_as_documented() {
        let p = Path::new("m.json");
        let mut w = Vec::new();
        assert!(only_in(p, br#"{"managedHooksOnly":true}"#, &mut w));
        assert!(!only_in(p, br#"{"managedHooksOnly":false}"#, &mut w));
        assert!(!only_in(p, br#"{"hooks":{}}"#, &mut w));
        assert!(w.is_empty());
        assert!(!only_in(p, br#"{"managedHooksOnly":"yes"}"#, &mut w));
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("must be true or false"), "{w:?}");
    }
}
