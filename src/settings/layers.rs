//! Which settings files are read, in which order, and reading them without ever blocking or
//! failing (contract §3).

use std::path::{Path, PathBuf};

use crate::settings::events::EventKind;
use crate::settings::protocol::{OwnFile, Protocol};

/// Settings files larger than this are skipped with a warning.
pub const MAX_SETTINGS_BYTES: u64 = 16 << 20;

/// Where a layer comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerKind {
    /// The organisation's managed settings file (contract §17), before every other layer.
    Managed,
    /// `$HOME/.config/levelcode/settings.json`.
    User,
    /// `$LEVELCODE_DIR/settings.json` or `$HOME/.levelcode/settings.json`.
    Data,
    /// `<project root>/.levelcode/settings.json`.
    Project,
    /// A file named with `--settings`.
    Cli,
    /// The hooks of a `serve` request's `options.hooks` (contract §14).
    Inline,
    /// One of another agent's own settings files ([`OwnLayers::files`], by position), read
    /// when the user or data layer turns them on (contract §12), such as `claude-project`.
    Agent(Protocol, u8),
}

impl LayerKind {
    pub fn name(self) -> &'static str {
        match self {
            LayerKind::Managed => "managed",
            LayerKind::User => "user",
            LayerKind::Data => "data",
            LayerKind::Project => "project",
            LayerKind::Cli => "cli",
            LayerKind::Inline => "inline",
            LayerKind::Agent(..) => self.own_file().map_or("agent", |f| f.layer),
        }
    }

    /// The agent's file this layer is, for an agent's layer.
    fn own_file(self) -> Option<&'static OwnFile> {
        match self {
            LayerKind::Agent(protocol, i) => protocol.facts().own_layers?.files.get(usize::from(i)),
            _ => None,
        }
    }

    /// The protocol its handlers speak unless they say otherwise: the agent's, for an agent's
    /// own file; levelcode's for every other layer.
    pub fn protocol(self) -> Protocol {
        match self {
            LayerKind::Agent(protocol, _) => protocol,
            _ => Protocol::LEVELCODE,
        }
    }

    /// A handler's timeout when it gives none, in seconds, under `event`, when it is not
    /// levelcode's: the agent's own default in its files.
    pub fn default_timeout(self, event: EventKind) -> Option<f64> {
        match self {
            LayerKind::Agent(protocol, _) => protocol
                .facts()
                .own_layers
                .map(|own| (own.default_timeout)(event)),
            _ => None,
        }
    }

    /// The setting of the user or data layer without which this layer is not read, for an
    /// agent's layer (contract §12).
    pub fn switch(self) -> Option<&'static str> {
        match self {
            LayerKind::Agent(protocol, _) => protocol.facts().own_layers.map(|o| o.switch),
            _ => None,
        }
    }

    /// Returns true if and only if a top-level `"sandbox"` in the layer's file is its handlers'
    /// (contract §20): in levelcode's own files. An agent's own file (Claude Code's) has a
    /// `sandbox` of its own meaning, which is not read; `sandbox` inside its `hooks` is.
    pub fn reads_layer_sandbox(self) -> bool {
        !matches!(self, LayerKind::Agent(..))
    }

    /// Where the layer's file is relative to the project root, for a layer inside the project:
    /// such a layer runs only once trusted (contract §13).
    pub fn project_file(self) -> Option<&'static str> {
        match self {
            LayerKind::Project => Some(PROJECT_FILE),
            LayerKind::Agent(..) => self.own_file().filter(|f| !f.in_home).map(|f| f.path),
            _ => None,
        }
    }

    /// The project's folder of hook scripts that the trust of a layer inside the project
    /// covers whole: `.levelcode/hooks`, or the agent's own.
    pub fn hooks_folder(self) -> Option<&'static str> {
        match self {
            LayerKind::Project => Some(PROJECT_HOOKS_FOLDER),
            LayerKind::Agent(protocol, _) if self.project_file().is_some() => {
                protocol.facts().own_layers.map(|o| o.hooks_folder)
            }
            _ => None,
        }
    }
}

/// The project layer's file, relative to the project root.
pub const PROJECT_FILE: &str = ".levelcode/settings.json";
/// The project's hooks folder, relative to the root: every regular file under it is covered by
/// the project layer's trust.
pub const PROJECT_HOOKS_FOLDER: &str = ".levelcode/hooks";

/// `relative`, a `/`-separated path, under `base`, in one allocation.
pub fn under(base: &Path, relative: &str) -> PathBuf {
    let mut path = PathBuf::with_capacity(base.as_os_str().len() + relative.len() + 1);
    path.push(base);
    if cfg!(unix) {
        path.push(relative);
    } else {
        for part in relative.split('/') {
            path.push(part);
        }
    }
    path
}

/// Every agent's layers, in the order of the protocol table and of each agent's files.
pub fn agent_layers() -> impl Iterator<Item = (LayerKind, &'static OwnFile)> {
    Protocol::all().flat_map(|protocol| {
        protocol
            .facts()
            .own_layers
            .into_iter()
            .flat_map(move |own| {
                own.files.iter().enumerate().map(move |(i, file)| {
                    (
                        LayerKind::Agent(protocol, u8::try_from(i).unwrap_or(u8::MAX)),
                        file,
                    )
                })
            })
    })
}

/// The agents' switches (`claudeCodeHooks`) that `bytes`, a user or data layer's file, turns
/// on, added to `on`; a switch that is not a boolean is a warning naming `file`.
pub fn switches_in(
    bytes: &[u8],
    file: &Path,
    on: &mut Vec<&'static str>,
    warnings: &mut Vec<String>,
) {
    for own in Protocol::all().filter_map(|p| p.facts().own_layers) {
        match boolean_setting(bytes, own.switch) {
            Ok(Some(true)) if !on.contains(&own.switch) => on.push(own.switch),
            Ok(_) => {}
            Err(problem) => warnings.push(format!("{}: {problem}", file.display())),
        }
    }
}

/// Returns false if `bytes`, a user or data layer's file, certainly names none of the settings
/// those layers hold about the others (`trustAllProjectHooks`, the agents' switches such as
/// `claudeCodeHooks`): all of them end in `Hooks`, which a settings file rarely holds, so one
/// search spares the others on nearly every dispatch.
pub fn may_name_personal_settings(bytes: &[u8]) -> bool {
    crate::bytes::find(bytes, b"Hooks\"").is_some()
}

/// A top-level boolean setting of a settings file's `bytes`: `Ok(None)` when the file does not
/// mention it (found without parsing in the usual case), an error when it is not a boolean.
pub fn boolean_setting(bytes: &[u8], key: &str) -> Result<Option<bool>, String> {
    if crate::bytes::find(bytes, key.as_bytes()).is_none() {
        return Ok(None);
    }
    let Ok(serde_json::Value::Object(mut top)) = serde_json::from_slice(bytes) else {
        // Invalid JSON is the settings reader's to report.
        return Ok(None);
    };
    match top.remove(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Bool(b)) => Ok(Some(b)),
        Some(other) => Err(format!(
            "{key} must be true or false, not {}; ignored",
            crate::settings::short_json(&other)
        )),
    }
}

/// One settings file to consider.
#[derive(Clone, Debug)]
pub struct LayerPath {
    pub kind: LayerKind,
    pub path: PathBuf,
}

/// `$LEVELCODE_DIR` when set and non-empty, else `$HOME/.levelcode` (read once, in
/// `crate::environment`).
pub fn data_dir() -> Option<PathBuf> {
    crate::environment::data_dir().map(Path::to_path_buf)
}

/// The standard layers in order: user, data, the agents' files under the home directory, then
/// project and the agents' files in the project. Warns when no home directory can be found.
/// The agents' layers are listed whether or not they are turned on: the reader skips them
/// unless the user or data layer read before them turns them on (contract §12).
pub fn standard(
    project_root: &Path,
    include_project: bool,
    warnings: &mut Vec<String>,
) -> Vec<LayerPath> {
    // A process's environment changes only by its own hand, so the user and data layers'
    // paths are worked out once: `serve` asks for them on every request.
    type Fixed = (Option<PathBuf>, Option<PathBuf>, Vec<LayerPath>);
    static FIXED: std::sync::OnceLock<Fixed> = std::sync::OnceLock::new();
    let (user, data, agents) = FIXED.get_or_init(|| {
        let home = crate::environment::home();
        let user = home.map(|home| {
            let name = crate::environment::config_dir_name();
            let mut path = PathBuf::with_capacity(home.as_os_str().len() + name.len() + 23);
            path.push(home);
            path.push(".config");
            path.push(name);
            path.push("settings.json");
            path
        });
        // The agents' files under the home directory, after the user and data layers.
        let mut agents = Vec::new();
        if let Some(home) = home {
            for (kind, file) in agent_layers().filter(|(_, f)| f.in_home) {
                agents.push(LayerPath {
                    kind,
                    path: under(home, file.path),
                });
            }
        }
        (
            user,
            data_dir().map(|dir| dir.join("settings.json")),
            agents,
        )
    });
    let mut layers = Vec::with_capacity(6);
    match user {
        Some(path) => layers.push(LayerPath {
            kind: LayerKind::User,
            path: path.clone(),
        }),
        None => warnings.push(
            "no home directory (HOME is unset): the user layer is skipped; set HOME to use it"
                .into(),
        ),
    }
    if let Some(path) = data {
        layers.push(LayerPath {
            kind: LayerKind::Data,
            path: path.clone(),
        });
    }
    layers.extend(agents.iter().cloned());
    if include_project {
        layers.push(LayerPath {
            kind: LayerKind::Project,
            path: under(project_root, PROJECT_FILE),
        });
        for (kind, file) in agent_layers().filter(|(_, f)| !f.in_home) {
            layers.push(LayerPath {
                kind,
                path: under(project_root, file.path),
            });
        }
    }
    layers
}

/// The `--settings` files in order, made absolute so results name them unambiguously.
pub fn from_cli(files: &[PathBuf]) -> Vec<LayerPath> {
    let cwd = Some(crate::environment::start_dir());
    files
        .iter()
        .map(|path| LayerPath {
            kind: LayerKind::Cli,
            path: match &cwd {
                Some(cwd) if path.is_relative() => cwd.join(path),
                _ => path.clone(),
            },
        })
        .collect()
}

/// What reading one layer gave.
pub enum Loaded {
    /// No file there: skipped silently.
    Missing,
    /// The same file as an earlier layer: read once, at its first position.
    Repeated,
    /// The bytes read, and the metadata of the open file they were read from, taken once they
    /// were read: what the trust seal compares, not the path looked at again.
    Contents(Vec<u8>, std::fs::Metadata),
    /// A warning naming the file; the layer contributes nothing.
    Unusable(String),
}

/// Reads layer files, remembering which files were already read.
#[derive(Default)]
pub struct Reader {
    seen: Vec<(u64, u64)>,
}

impl Reader {
    /// Reads the file at `path`; its metadata in [`Loaded::Contents`] is taken once it was read.
    pub fn read(&mut self, path: &Path) -> Loaded {
        self.read_file(path, true)
    }

    /// Reads one layer of a dispatch. Only a project's layers' metadata is looked at (by the
    /// trust seal), so only their files' is taken again once they were read; the others carry
    /// what it was before.
    pub fn read_layer(&mut self, layer: &LayerPath) -> Loaded {
        self.read_file(&layer.path, layer.kind.project_file().is_some())
    }

    fn read_file(&mut self, path: &Path, identity_after: bool) -> Loaded {
        let file = match crate::fs::open_nonblocking(path, std::fs::OpenOptions::new().read(true)) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Loaded::Missing,
            Err(e) if e.raw_os_error() == Some(20) => return Loaded::Missing, // ENOTDIR
            Err(e) => {
                return Loaded::Unusable(format!(
                    "{}: cannot open: {e}; fix its permissions or remove it",
                    path.display()
                ))
            }
        };
        let meta = match file.metadata() {
            Ok(meta) => meta,
            Err(e) => return Loaded::Unusable(format!("{}: cannot stat: {e}", path.display())),
        };
        if !meta.is_file() {
            let what = if meta.is_dir() {
                "a directory"
            } else {
                "not a regular file"
            };
            return Loaded::Unusable(format!(
                "{}: is {what}, not a settings file; layer skipped",
                path.display()
            ));
        }
        if let Some(id) = file_id(&meta) {
            if self.seen.contains(&id) {
                return Loaded::Repeated;
            }
            self.seen.push(id);
        }
        if meta.len() > MAX_SETTINGS_BYTES {
            return Loaded::Unusable(format!(
                "{}: is {} bytes, over the {} MiB limit for a settings file; layer skipped",
                path.display(),
                meta.len(),
                MAX_SETTINGS_BYTES >> 20
            ));
        }
        let mut file = file;
        match crate::fs::read_expected(&mut file, meta.len(), MAX_SETTINGS_BYTES) {
            Ok(contents) => Loaded::Contents(
                contents,
                // A write while it was read moves the change time, and this shows it.
                if identity_after {
                    file.metadata().unwrap_or(meta)
                } else {
                    meta
                },
            ),
            Err(e) => Loaded::Unusable(format!(
                "{}: cannot read: {e}; layer skipped",
                path.display()
            )),
        }
    }
}

#[cfg(unix)]
fn file_id(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(windows)]
fn file_id(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}
