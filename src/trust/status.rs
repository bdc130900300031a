//! One project's trust as `trust` and `serve`'s trust requests ask for it: the project layer
//! and the opt-in of the user and data layers read, the state as JSON, and a digest recorded.

use std::io::Read as _;
use std::path::Path;

use serde_json::json;

use super::seal::Seal;
use super::store::{self, Entry};
use super::Digest;
use super::{Assessment, State};
use crate::dispatch::layers::{self, Loaded};
use crate::dispatch::settings::{Action, Program};

/// The project layer's bytes (empty when there is none), and a warning when it is unusable.
pub fn read_project_layer(root: &Path) -> (Vec<u8>, Option<String>) {
    match layers::Reader::default().read(&super::settings_file(root)) {
        Loaded::Contents(bytes, _) => (bytes, None),
        Loaded::Unusable(warning) => (Vec::new(), Some(warning)),
        Loaded::Missing | Loaded::Repeated => (Vec::new(), None),
    }
}

/// Whether the user or data layer sets `trustAllProjectHooks`, with warnings about it.
pub fn trust_all_from_layers() -> (bool, Vec<String>) {
    let mut warnings = Vec::new();
    let mut on = false;
    let mut reader = layers::Reader::default();
    for layer in layers::standard(Path::new("."), false, &mut Vec::new()) {
        if let Loaded::Contents(bytes, _) = reader.read(&layer.path) {
            match super::trust_all_in(&bytes) {
                Ok(Some(value)) => on |= value,
                Ok(None) => {}
                Err(problem) => warnings.push(format!("{}: {problem}", layer.path.display())),
            }
        }
    }
    (on, warnings)
}

/// The state as `--status --json` and `serve`'s `trust_status` give it.
///
/// `bytes` are the project layer's, from which the digest was computed: `hooks` lists each of
/// its handlers (every event, disabled ones too) with what it runs, for a client to show.
pub fn status_json(
    root: &Path,
    assessment: &Assessment,
    bytes: &[u8],
    warnings: &[String],
) -> serde_json::Value {
    let digest = assessment.digest.as_ref();
    let mut hooks = Vec::new();
    for group in super::all_groups(&assessment.path, bytes) {
        for handler in &group.handlers {
            let (command, argv) = match &handler.action {
                Action::Process(Program::Shell(c)) => (Some(c.clone()), None),
                Action::Process(Program::Argv(a)) => (None, Some(a.clone())),
            };
            hooks.push(json!({
                "event": group.event,
                "path": format!("{}.hooks[{}]", group.path(), handler.index),
                "matcher": group.matcher,
                "command": command,
                "argv": argv,
                "enabled": group.enabled && handler.enabled,
            }));
        }
    }
    json!({
        "project_dir": root.display().to_string(),
        "state": assessment.state.name(),
        "trusted_by": match assessment.state {
            State::Trusted(by) => Some(by.name()),
            _ => None,
        },
        "digest": digest.map(|d| d.digest.clone()),
        "path": assessment.path.display().to_string(),
        "handlers": assessment.handlers,
        "hooks": hooks,
        "scripts": digest.map_or_else(Vec::new, |d| d.scripts.iter().map(|s| json!({"path": s.path, "hash": s.hash, "in_hooks_folder": s.in_folder})).collect()),
        "fallback": digest.map_or_else(Vec::new, |d| d.fallback.clone()),
        "trusted_at": assessment.trusted_at,
        "untrustable": assessment.untrustable,
        "warnings": warnings,
    })
}

/// Records the assessed digest as trusted in the store at `store_path`.
pub fn record(store_path: &Path, assessment: &Assessment) -> Result<store::Updated, String> {
    let Some(digest) = &assessment.digest else {
        return Err("no digest to record".into());
    };
    let key = root_key(&digest.root)?;
    let entry = Entry::Trusted {
        digest: digest.digest.clone(),
        content: Some(digest.content.clone()),
        at: Some(crate::fs::now_ms()),
        seal: seal(assessment, digest),
    };
    store::update(store_path, |s| {
        s.projects.insert(key, entry);
    })
}

/// The seal of what `digest` hashed, when the files are settled and still the ones hashed: the
/// identities are taken, the digest computed again from the files, and the identities taken
/// again; any difference, and there is no seal (a dispatch then hashes, as always).
fn seal(assessment: &Assessment, digest: &Digest) -> Option<Seal> {
    let settings = super::settings_file(&digest.root);
    let before = Seal::take(&settings, &digest.watched, assessment.handlers)?;
    let mut bytes = Vec::new();
    crate::fs::open_regular(&settings, std::fs::OpenOptions::new().read(true))
        .ok()?
        .read_to_end(&mut bytes)
        .ok()?;
    let groups = super::all_groups(&settings, &bytes);
    let again = super::digest::compute(&digest.root, &bytes, &groups).ok()?;
    let after = Seal::take(&settings, &again.watched, assessment.handlers)?;
    (again.digest == digest.digest && before == after).then_some(before)
}

pub fn root_key(root: &Path) -> Result<String, String> {
    root.to_str().map(str::to_string).ok_or_else(|| {
        format!(
            "the project root {} is not a UTF-8 path; the trust store cannot record it (use {}=1 instead)",
            root.display(),
            super::ENV
        )
    })
}
