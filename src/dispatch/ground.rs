//! What a dispatch finds before it reads any settings: where the project is, the managed layer,
//! and which files the other layers are, each with the warnings finding them gave.

use std::path::{Path, PathBuf};

use crate::dispatch::payload::Payload;
use crate::dispatch::Options;
use crate::environment;
use crate::settings::layers::{self, LayerPath};
use crate::settings::managed;
use crate::settings::Events;

/// The project root: `--project-dir`, else the payload's `cwd`, else the current directory,
/// made absolute.
pub fn project_root(payload: &Payload, options: &Options) -> PathBuf {
    let cwd = environment::start_dir();
    let chosen = options
        .project_dir
        .clone()
        .or_else(|| payload.cwd.as_ref().map(PathBuf::from));
    match chosen {
        Some(dir) if dir.is_absolute() => tidy(dir),
        Some(dir) => tidy(cwd.join(dir)),
        None => cwd,
    }
}

/// `dir` without `.` and `..` components (`--project-dir .` is the current directory itself,
/// not `…/app/.`), as Claude Code normalizes paths: lexically, so what people are shown and what
/// handlers are given names the project plainly. A path with no `/.` in it is left as it is.
fn tidy(dir: PathBuf) -> PathBuf {
    let bytes = dir.as_os_str().as_encoded_bytes();
    let dotted = crate::bytes::find(bytes, b"/.").is_some()
        || (cfg!(windows) && crate::bytes::find(bytes, b"\\.").is_some())
        || bytes.starts_with(b".");
    if dotted {
        crate::fs::normalize(&dir)
    } else {
        dir
    }
}

/// The layers to read: the `--settings` files, or the three standard ones.
pub fn layer_paths(root: &Path, options: &Options, warnings: &mut Vec<String>) -> Vec<LayerPath> {
    if options.settings.is_empty() {
        let include_project = !(options.no_project || environment::no_project());
        layers::standard(root, include_project, warnings)
    } else {
        layers::from_cli(&options.settings)
    }
}

/// What a dispatch finds before it reads any settings: the project root, the managed layer's
/// groups for the event, and the other layers' paths (none when hooks are off or the dispatch
/// is too deep), each with the warnings finding it gave. `serve` finds it once per request, as
/// it prepares the request, and the dispatch uses it as found.
pub struct Ground {
    pub root: PathBuf,
    pub managed: managed::Managed,
    pub(super) managed_warnings: Vec<String>,
    /// The other layers, unless [`stopped`] says no handler runs.
    pub(super) layers: Option<(Vec<LayerPath>, Vec<String>)>,
}

impl Ground {
    pub fn find(payload: &Payload, options: &Options) -> Ground {
        let root = project_root(payload, options);
        let mut managed_warnings = Vec::new();
        // The managed layer runs first and whatever else is switched off (contract §17).
        let managed = managed::Managed::load(Events::Only(&payload.event), &mut managed_warnings);
        let layers = stopped().is_none().then(|| {
            let mut warnings = Vec::new();
            (layer_paths(&root, options, &mut warnings), warnings)
        });
        Ground {
            root,
            managed,
            managed_warnings,
            layers,
        }
    }

    /// Returns true if and only if a managed file is there, usable or refused.
    pub fn managed_present(&self) -> bool {
        self.managed.path.is_some() || !self.managed_warnings.is_empty()
    }

    /// The other layers' paths; none when no handler but the managed layer's runs.
    pub fn paths(&self) -> &[LayerPath] {
        self.layers.as_ref().map_or(&[], |(paths, _)| paths)
    }
}

/// Why no handler but the managed layer's runs, when that is so: hooks are off, or the
/// dispatcher was started by hooks too deep.
pub(super) fn stopped() -> Option<String> {
    if environment::hooks_disabled() {
        Some("hooks are turned off (LEVELCODE_HOOKS is off): no handler ran".to_string())
    } else if environment::depth() >= environment::MAX_DEPTH {
        Some(format!(
            "LEVELCODE_HOOKS_DEPTH is {}: hooks started by hooks {} levels deep; no handler ran, to stop a loop",
            environment::depth(),
            environment::MAX_DEPTH
        ))
    } else {
        None
    }
}
