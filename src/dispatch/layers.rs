//! Which settings files are read, in which order, and reading them without ever blocking or
//! failing (contract §3).

use std::path::{Path, PathBuf};

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
        }
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

/// The standard layers in order. Warns when no home directory can be found.
pub fn standard(
    project_root: &Path,
    include_project: bool,
    warnings: &mut Vec<String>,
) -> Vec<LayerPath> {
    // A process's environment changes only by its own hand, so the user and data layers'
    // paths are worked out once: `serve` asks for them on every request.
    static FIXED: std::sync::OnceLock<(Option<PathBuf>, Option<PathBuf>)> =
        std::sync::OnceLock::new();
    let (user, data) = FIXED.get_or_init(|| {
        let user = crate::environment::home().map(|home| {
            home.join(".config")
                .join(crate::environment::config_dir_name())
                .join("settings.json")
        });
        (user, data_dir().map(|dir| dir.join("settings.json")))
    });
    let mut layers = Vec::with_capacity(3);
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
    if include_project {
        layers.push(LayerPath {
            kind: LayerKind::Project,
            path: project_root.join(".levelcode").join("settings.json"),
        });
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

    /// Reads one layer of a dispatch. Only the project layer's metadata is looked at (by the
    /// trust seal), so only its file's is taken again once it was read; the others carry what
    /// it was before.
    pub fn read_layer(&mut self, layer: &LayerPath) -> Loaded {
        self.read_file(&layer.path, layer.kind == LayerKind::Project)
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
