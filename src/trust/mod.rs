//! Project trust (contract §13): a cloned repository runs no code until the person has trusted
//! exactly its hooks.
//!
//! [`digest`] computes what is trusted, [`store`] keeps what was trusted, and this module
//! decides, for one layer inside the project, whether it may contribute: [`assess`] gives its
//! state, and [`Gate`] applies it to the layers of one dispatch. User, data, `--settings` and
//! inline layers are always trusted; only the layers inside the project (levelcode's project
//! layer, and the agents' own project files when they are turned on, contract §12) are ever
//! held back, each by its own digest. [`status`] is a project's state as the `trust` command
//! and `serve`'s trust requests report it.

pub mod digest;
mod gate;
pub mod memo;
pub mod reviewed;
pub mod seal;
pub mod status;
pub mod store;
pub mod words;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Serialize;

use crate::settings::layers::LayerKind;
use crate::settings::{self, Events, Group};

pub use digest::Digest;
pub use gate::Gate;
use seal::Seal;

/// The variable that trusts the project layer for one run: `1`, or one digest.
pub const ENV: &str = crate::environment::TRUST_PROJECT_HOOKS;

/// The variables by which a process tells that it was started from inside an agent's tool
/// calls (or by a hook): `LEVELCODE_AGENT`, which levelcode sets in its own environment for the
/// commands it runs to inherit, and `CLAUDECODE`, which Claude Code sets in its shells. A
/// `trust` started with either on records nothing: only a person can trust a project's hooks.
pub const AGENT_ENV: [&str; 2] = crate::environment::AGENT;

/// The agent variable that was on when this process started, if any (the process's own
/// environment; handlers get `LEVELCODE_AGENT` in theirs only).
pub fn started_by_agent() -> Option<&'static str> {
    crate::environment::started_by_agent()
}

/// Why trust is not recorded from inside the agent's tool calls, when `var` is on.
pub fn agent_refusal(var: &str, root: &Path) -> String {
    format!(
        "{var} is set, so this was started from inside the agent's tool calls or a hook, and only \
         a person can trust a project's hooks: nothing was recorded. Review and trust them in \
         your own terminal with: levelcode-hooks trust --project-dir {}",
        shell_words::quote(&root.to_string_lossy())
    )
}

/// The user- or data-layer setting that trusts every project.
pub const TRUST_ALL: &str = "trustAllProjectHooks";

/// Where a project stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Trusted(By),
    /// Never trusted.
    Untrusted,
    /// Trusted once, with other hooks or scripts, or at another path.
    Changed,
    /// The person said no; stays so across edits until `trust` or `trust --revoke`.
    Denied,
    /// The project layer has no handler: nothing to trust.
    NoHooks,
}

/// What trusts a project.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// The digest recorded in the store.
    Store,
    /// `LEVELCODE_TRUST_PROJECT_HOOKS`.
    Environment,
    /// `trustAllProjectHooks` in the user or data layer.
    Setting,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Trusted(_) => "trusted",
            State::Untrusted => "untrusted",
            State::Changed => "changed",
            State::Denied => "denied",
            State::NoHooks => "no_hooks",
        }
    }

    /// Returns true if and only if the project layer may run.
    pub fn admits(self) -> bool {
        matches!(self, State::Trusted(_) | State::NoHooks)
    }

    /// The exit status of `trust --status`.
    pub fn exit_code(self) -> u8 {
        match self {
            State::Trusted(_) | State::NoHooks => 0,
            State::Untrusted => 3,
            State::Changed => 4,
            State::Denied => 5,
        }
    }
}

impl By {
    pub fn name(self) -> &'static str {
        match self {
            By::Store => "store",
            By::Environment => ENV,
            By::Setting => TRUST_ALL,
        }
    }
}

/// `"project_trust"` of a dispatch whose project layer was held back.
#[derive(Clone, Debug, Serialize)]
pub struct ProjectTrust {
    /// The layer held back: `project`, or an agent's project file such as `claude-project`.
    pub layer: &'static str,
    pub state: &'static str,
    pub digest: Option<String>,
    pub path: String,
    pub handlers: usize,
}

/// What `LEVELCODE_TRUST_PROJECT_HOOKS` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptIn {
    None,
    All,
    Digest(String),
    /// A value that is neither; ignored, with this warning.
    Invalid(String),
}

/// The variable, read once.
pub fn opt_in() -> &'static OptIn {
    static OPT_IN: OnceLock<OptIn> = OnceLock::new();
    OPT_IN.get_or_init(|| opt_in_from(crate::environment::trust_project_hooks()))
}

fn opt_in_from(value: Option<&std::ffi::OsStr>) -> OptIn {
    let Some(value) = value else {
        return OptIn::None;
    };
    let text = value.to_string_lossy();
    let text = text.trim();
    if text.is_empty()
        || text == "0"
        || text.eq_ignore_ascii_case("false")
        || text.eq_ignore_ascii_case("off")
    {
        OptIn::None
    } else if crate::environment::is_on(text) {
        OptIn::All
    } else if digest::is_digest(text) {
        OptIn::Digest(text.to_string())
    } else {
        OptIn::Invalid(format!(
            "{ENV}={text:?} is neither 1 nor a digest sha256:<64 hex digits>; ignored"
        ))
    }
}

/// Whether a user or data layer's `bytes` set `trustAllProjectHooks`: `Ok(None)` when they do
/// not mention it (found without parsing in the usual case), an error when it is not a boolean.
pub fn trust_all_in(bytes: &[u8]) -> Result<Option<bool>, String> {
    if crate::bytes::find(bytes, TRUST_ALL.as_bytes()).is_none() {
        return Ok(None);
    }
    #[derive(serde::Deserialize)]
    struct Top {
        #[serde(rename = "trustAllProjectHooks", default)]
        trust_all: Option<serde_json::Value>,
    }
    match serde_json::from_slice::<Top>(bytes) {
        Ok(Top { trust_all: None }) => Ok(None),
        Ok(Top {
            trust_all: Some(serde_json::Value::Bool(b)),
        }) => Ok(Some(b)),
        Ok(Top {
            trust_all: Some(serde_json::Value::Null),
        }) => Ok(None),
        Ok(Top {
            trust_all: Some(other),
        }) => Err(format!(
            "{TRUST_ALL} must be true or false, not {}; ignored",
            crate::settings::short_json(&other)
        )),
        // Invalid JSON is the settings reader's to report.
        Err(_) => Ok(None),
    }
}

/// The project layer's file for `root`.
pub fn settings_file(root: &Path) -> PathBuf {
    layer_file(root, LayerKind::Project)
}

/// The file of `layer`, a layer inside the project, for `root`.
pub fn layer_file(root: &Path, layer: LayerKind) -> PathBuf {
    crate::settings::layers::under(root, layer.project_file().unwrap_or_default())
}

/// The layers inside a project that need trust, in the order they are read: levelcode's project
/// layer, then each agent's project files whose switch is among `switches` (contract §12).
pub fn guarded_layers(switches: &[&str]) -> Vec<LayerKind> {
    std::iter::once(LayerKind::Project)
        .chain(
            crate::settings::layers::agent_layers()
                .map(|(kind, _)| kind)
                .filter(|kind| kind.project_file().is_some())
                .filter(|kind| kind.switch().is_some_and(|s| switches.contains(&s))),
        )
        .collect()
}

/// The store's key for `layer` of the project whose canonical root is `root`: the root itself
/// for levelcode's project layer, `<root>//<file>` for another (no canonical path holds `//`).
pub fn store_key(root: &str, layer: LayerKind) -> String {
    match layer {
        LayerKind::Project => root.to_string(),
        other => format!("{root}//{}", other.project_file().unwrap_or_default()),
    }
}

/// The project root of a store key.
pub fn key_root(key: &str) -> &str {
    key.split_once("//").map_or(key, |(root, _)| root)
}

/// Everything known about the trust of one layer inside a project.
#[derive(Clone, Debug)]
pub struct Assessment {
    /// The layer: levelcode's project layer, or an agent's project file.
    pub layer: LayerKind,
    pub state: State,
    /// The layer's file.
    pub path: PathBuf,
    /// The handlers that run when the project is trusted (enabled, in enabled groups, every
    /// event).
    pub handlers: usize,
    /// The digest: computed unless the project is trusted by an opt-in and `full` was not asked.
    pub digest: Option<Digest>,
    /// Why the hooks cannot be trusted at all, when they cannot.
    pub untrustable: Option<String>,
    /// Another root at which the same hooks were trusted, when that makes them `changed`.
    pub trusted_at: Option<String>,
    /// The digest the store recorded for this layer, when it is not the one computed now: what
    /// the review compares with ([`reviewed`]).
    pub trusted_digest: Option<String>,
    /// Warnings: the store, the variable.
    pub warnings: Vec<String>,
    /// Files whose change can change this assessment, besides the settings layers: the store
    /// and every path the handlers name inside the project.
    pub watched: Vec<PathBuf>,
}

impl Assessment {
    /// The `project_trust` member of a dispatch that held the layer back.
    pub fn report(&self) -> ProjectTrust {
        ProjectTrust {
            layer: self.layer.name(),
            state: self.state.name(),
            digest: self.digest.as_ref().map(|d| d.digest.clone()),
            path: self.path.display().to_string(),
            handlers: self.handlers,
        }
    }

    /// The warning of a dispatch that held the layer back.
    pub fn warning(&self) -> String {
        let depth = self
            .layer
            .project_file()
            .map_or(2, |f| f.split('/').count());
        let root = self.path.ancestors().nth(depth).unwrap_or(Path::new("."));
        let command = format!(
            "levelcode-hooks trust --project-dir {}",
            shell_words::quote(&root.to_string_lossy())
        );
        let why = match (self.state, &self.trusted_at, &self.untrustable) {
            (_, _, Some(reason)) => format!("cannot be trusted: {reason}"),
            (State::Denied, _, _) => "were denied".to_string(),
            (State::Changed, Some(other), _) => {
                format!("were trusted at {other}, not at this path")
            }
            (State::Changed, None, _) => "changed since they were trusted".to_string(),
            _ => "are not trusted".to_string(),
        };
        let whose = match self.layer {
            LayerKind::Project => String::new(),
            other => format!(" (layer {})", other.name()),
        };
        format!(
            "{}: the project's hooks{whose} {why}; {} handler(s) skipped. Review and trust them with: {command}",
            self.path.display(),
            self.handlers
        )
    }
}

/// Where `layer` of `root`'s project stands, given its file's `bytes` and whether the user or
/// data layer trusts every project. `full` computes the digest even when an opt-in trusts the
/// project (for `trust --status`); a dispatch does not need it then.
pub fn assess(
    root: &Path,
    layer: LayerKind,
    bytes: &[u8],
    trust_all: bool,
    full: bool,
) -> Assessment {
    assess_read(root, layer, bytes, None, trust_all, full)
}

/// [`assess`] of `bytes` read from an open file whose metadata, taken once they were read, is
/// `read` (a dispatch). It hashes only what the answer needs: a seal that holds for that file
/// admits the project without the digest; an opt-in (`=1`, `trustAllProjectHooks`) admits it
/// without reading its other events or hashing anything; and a digest that must be shown or
/// compared (untrusted, changed, denied, `=sha256:…`) is taken from the [`memo`] while every
/// file it covers is unchanged. A project trusted through the store but not sealed (trusted
/// right after an edit) gets its seal here once its files have settled.
pub fn assess_read(
    root: &Path,
    layer: LayerKind,
    bytes: &[u8],
    read: Option<&std::fs::Metadata>,
    trust_all: bool,
    full: bool,
) -> Assessment {
    let read = read.filter(|_| !full);
    if let (false, Some(read)) = (trust_all, read) {
        if let Some(sealed) = sealed(root, layer, read) {
            return sealed;
        }
    }
    let path = layer_file(root, layer);
    let file = layer.project_file().unwrap_or_default();
    let opt_in = opt_in();
    let admitted_by_opt_in = *opt_in == OptIn::All || trust_all;
    let key = crate::fs::canonical(root)
        .ok()
        .and_then(|r| r.to_str().map(str::to_string));
    // What the layer holds: from the memo when its files are unchanged, else read and counted;
    // not at all when an opt-in admits it (unless the store denies it, below).
    let recalled = match (read, &key, admitted_by_opt_in) {
        (Some(read), Some(key), false) => memo::recall(key, file, read),
        _ => None,
    };
    let mut groups = None;
    let handlers = match (&recalled, read.is_some() && admitted_by_opt_in) {
        (Some(recalled), _) => recalled.seal.handlers,
        (None, true) => 0,
        (None, false) => {
            let all = all_groups(layer, &path, bytes);
            let count = count_handlers(&all);
            groups = Some(all);
            count
        }
    };
    let mut assessment = Assessment {
        layer,
        state: State::NoHooks,
        path,
        handlers,
        digest: None,
        untrustable: None,
        trusted_at: None,
        trusted_digest: None,
        warnings: Vec::new(),
        watched: Vec::new(),
    };
    if handlers == 0 && groups.is_some() {
        return assessment;
    }
    if let OptIn::Invalid(warning) = opt_in {
        assessment.warnings.push(warning.clone());
    }
    let store_path = store::path();
    let layer_key = key.as_deref().map(|k| store_key(k, layer));
    // Only this project's entries: a store may name hundreds of projects.
    let roots: Vec<&str> = key.iter().chain(&layer_key).map(String::as_str).collect();
    let (store, notes) = match &store_path {
        Some(path) => store::load_for(path, &roots),
        // Without a store nothing can be denied either: an opt-in needs none.
        None if admitted_by_opt_in => (store::Store::default(), Vec::new()),
        None => (
            store::Store::default(),
            vec!["no data directory (neither LEVELCODE_DIR nor HOME is set): no project can be trusted".into()],
        ),
    };
    assessment.warnings.extend(notes);
    assessment.watched.extend(store_path.iter().cloned());
    let entry = layer_key.as_ref().and_then(|k| store.projects.get(k));
    // A project denied is denied whole: every layer of it.
    let denied = [entry, key.as_ref().and_then(|k| store.projects.get(k))]
        .iter()
        .any(|e| matches!(e, Some(store::Entry::Denied { .. })));
    let by_opt_in = if denied {
        None
    } else if *opt_in == OptIn::All {
        Some(By::Environment)
    } else if trust_all {
        Some(By::Setting)
    } else {
        None
    };
    if let (Some(by), false) = (by_opt_in, full) {
        // Whatever the hooks are, they run: nothing to count or hash.
        assessment.state = State::Trusted(by);
        return assessment;
    }
    let groups = match groups {
        Some(groups) => groups,
        None if recalled.is_some() => Vec::new(),
        None => {
            // An opt-in that a denial overrides: the layer is read after all.
            let all = all_groups(layer, &assessment.path, bytes);
            assessment.handlers = count_handlers(&all);
            if assessment.handlers == 0 {
                assessment.state = State::NoHooks;
                return assessment;
            }
            all
        }
    };
    let started = std::time::SystemTime::now();
    let computed = recalled.is_none();
    let digest = match &recalled {
        Some(recalled) => Digest {
            digest: recalled.digest.clone(),
            content: recalled.content.clone(),
            root: PathBuf::from(key.as_deref().unwrap_or_default()),
            scripts: Vec::new(),
            watched: recalled.seal.paths().skip(1).collect(),
            fallback: Vec::new(),
            readings: Vec::new(),
        },
        None => match digest::compute(root, layer, bytes, &groups) {
            Ok(digest) => digest,
            Err(reason) => {
                assessment.state = match (by_opt_in, denied) {
                    (Some(by), _) => State::Trusted(by),
                    (None, true) => State::Denied,
                    (None, false) => State::Untrusted,
                };
                assessment.untrustable = Some(reason);
                return assessment;
            }
        },
    };
    assessment.watched.extend(digest.watched.iter().cloned());
    if key.is_none() {
        assessment.untrustable = Some(format!(
            "the project root {} is not a UTF-8 path the trust store can record",
            digest.root.display()
        ));
    }
    let recorded = match entry {
        Some(store::Entry::Trusted { digest: d, .. }) => Some(d.as_str()),
        _ => None,
    };
    assessment.state = if denied {
        State::Denied
    } else if let Some(by) = by_opt_in {
        State::Trusted(by)
    } else if recorded == Some(digest.digest.as_str()) && assessment.untrustable.is_none() {
        State::Trusted(By::Store)
    } else if *opt_in == OptIn::Digest(digest.digest.clone()) {
        State::Trusted(By::Environment)
    } else if let Some(recorded) = recorded {
        assessment.trusted_digest = Some(recorded.to_string());
        State::Changed
    } else if let Some(other) = layer_key.as_deref().and_then(|k| {
        // The whole store, now that the project is not trusted here: the same hooks may be
        // trusted at another path (a moved checkout).
        let (whole, _) = store::load(store_path.as_deref()?);
        whole
            .trusted_elsewhere(&digest.content, k)
            .map(str::to_string)
    }) {
        assessment.trusted_at = Some(key_root(&other).to_string());
        State::Changed
    } else {
        State::Untrusted
    };
    if let OptIn::Digest(wanted) = opt_in {
        if !assessment.state.admits() && *wanted != digest.digest {
            assessment.warnings.push(format!(
                "{ENV} names {wanted}, but the project's hooks have the digest {}; not trusted",
                digest.digest
            ));
        }
    }
    if let (true, Some(read), Some(key)) = (computed, read, &key) {
        keep(
            &assessment,
            &digest,
            key,
            read,
            started,
            store_path.as_deref(),
            entry,
        );
    }
    assessment.digest = Some(digest);
    assessment
}

/// The handlers that run when the layer is trusted: enabled, in enabled groups.
fn count_handlers(groups: &[Group]) -> usize {
    groups
        .iter()
        .filter(|g| g.enabled)
        .map(|g| g.handlers.iter().filter(|h| h.enabled).count())
        .sum()
}

/// Keeps a digest a dispatch just computed, so that the next ones do not compute it again while
/// its files are unchanged: as the store's seal when the store trusts exactly it and holds no
/// seal that still applies, else in the [`memo`]. Only files that had settled before the digest
/// was `started` are kept, and only when the layer's file among them is the one `read`.
fn keep(
    assessment: &Assessment,
    digest: &Digest,
    key: &str,
    read: &std::fs::Metadata,
    started: std::time::SystemTime,
    store_path: Option<&Path>,
    entry: Option<&store::Entry>,
) {
    let Some(seal) = Seal::take_settled_by(
        &assessment.path,
        &digest.watched,
        assessment.handlers,
        started,
    ) else {
        return;
    };
    if !seal.holds(read) {
        return;
    }
    if let (State::Trusted(By::Store), Some(store_path)) = (assessment.state, store_path) {
        if matches!(entry, Some(store::Entry::Trusted { .. })) {
            let layer_key = store_key(key, assessment.layer);
            let sealed =
                store::seal_if_trusted(store_path, &layer_key, &digest.digest, seal.clone());
            if sealed.is_ok() {
                return;
            }
        }
    }
    memo::remember(
        key,
        assessment.layer.project_file().unwrap_or_default(),
        &memo::Recalled {
            digest: digest.digest.clone(),
            content: digest.content.clone(),
            seal,
        },
    );
}

/// A project trusted through the store whose seal still holds: admitted without parsing every
/// event or hashing a script (see [`seal`]). `None` whenever anything else could decide: an
/// opt-in, a problem to warn about, a denial, no seal, or a seal that no longer holds.
fn sealed(root: &Path, layer: LayerKind, read: &std::fs::Metadata) -> Option<Assessment> {
    if *opt_in() != OptIn::None {
        return None;
    }
    let store_path = store::path()?;
    let key = crate::fs::canonical(root).ok()?;
    let key = key.to_str()?;
    let layer_key = store_key(key, layer);
    let (store, notes) = store::load_for(&store_path, &[key, &layer_key]);
    if !notes.is_empty() {
        return None;
    }
    if matches!(store.projects.get(key), Some(store::Entry::Denied { .. })) {
        return None;
    }
    let Some(store::Entry::Trusted {
        seal: Some(seal), ..
    }) = store.projects.get(&layer_key)
    else {
        return None;
    };
    let path = layer_file(root, layer);
    if !seal.holds(read) {
        return None;
    }
    let mut watched = vec![store_path];
    watched.extend(seal.paths().skip(1));
    Some(Assessment {
        layer,
        state: State::Trusted(By::Store),
        path,
        handlers: seal.handlers,
        digest: None,
        untrustable: None,
        trusted_at: None,
        trusted_digest: None,
        warnings: Vec::new(),
        watched,
    })
}

/// Every group of every event of `layer`, whose file at `path` holds `bytes`.
pub fn all_groups(layer: LayerKind, path: &Path, bytes: &[u8]) -> Vec<Group> {
    let mut groups = Vec::new();
    let mut ignored = Vec::new();
    let source = settings::Source {
        layer,
        file: path.to_path_buf().into_boxed_path(),
    };
    settings::parse(source, bytes, Events::All, &mut groups, &mut ignored);
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn the_variable_reads_as_documented() {
        assert_eq!(opt_in_from(None), OptIn::None);
        for off in ["", "0", "false", "OFF"] {
            assert_eq!(opt_in_from(Some(OsStr::new(off))), OptIn::None, "{off}");
        }
        for on in ["1", "true", "on"] {
            assert_eq!(opt_in_from(Some(OsStr::new(on))), OptIn::All, "{on}");
        }
        let digest = format!("sha256:{}", "ab".repeat(32));
        assert_eq!(
            opt_in_from(Some(OsStr::new(&digest))),
            OptIn::Digest(digest.clone())
        );
        assert!(matches!(
            opt_in_from(Some(OsStr::new("sha256:abc"))),
            OptIn::Invalid(w) if w.contains(ENV)
        ));
    }

    #[test]
    fn trust_all_is_read_only_when_mentioned_and_only_as_a_boolean() {
        assert_eq!(trust_all_in(br#"{"hooks":{}}"#), Ok(None));
        assert_eq!(
            trust_all_in(br#"{"trustAllProjectHooks":true}"#),
            Ok(Some(true))
        );
        assert_eq!(
            trust_all_in(br#"{"trustAllProjectHooks":false}"#),
            Ok(Some(false))
        );
        assert_eq!(
            trust_all_in(br#"{"hooks":{"Stop":[]},"note":"trustAllProjectHooks"}"#),
            Ok(None)
        );
        assert!(trust_all_in(br#"{"trustAllProjectHooks":"yes"}"#)
            .unwrap_err()
            .contains("true or false"));
    }

    #[test]
    fn exit_codes_are_the_contracts() {
        assert_eq!(State::Trusted(By::Store).exit_code(), 0);
        assert_eq!(State::Untrusted.exit_code(), 3);
        assert_eq!(State::Changed.exit_code(), 4);
        assert_eq!(State::Denied.exit_code(), 5);
    }
}
