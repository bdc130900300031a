//! One project's trust as `trust` and `serve`'s trust requests ask for it: the layers inside the
//! project and what the user and data layers say of them read, the state as JSON, and a digest
//! recorded.

use std::io::Read as _;
use std::path::Path;

use serde_json::json;

use super::seal::Seal;
use super::store::{self, Entry};
use super::Digest;
use super::{Assessment, State};
use crate::settings::layers::{self, LayerKind, Loaded};
use crate::settings::Written;

/// The bytes of `layer`'s file in the project at `root` (empty when there is none), and a
/// warning when it is unusable.
pub fn read_layer(root: &Path, layer: LayerKind) -> (Vec<u8>, Option<String>) {
    match layers::Reader::default().read(&super::layer_file(root, layer)) {
        Loaded::Contents(bytes, _) => (bytes, None),
        Loaded::Unusable(warning) => (Vec::new(), Some(warning)),
        Loaded::Missing | Loaded::Repeated => (Vec::new(), None),
    }
}

/// What the user and data layers say of a project's trust: whether they set
/// `trustAllProjectHooks`, and the agents' switches they turn on (contract §12), with warnings.
pub struct Personal {
    pub trust_all: bool,
    pub switches: Vec<&'static str>,
    pub warnings: Vec<String>,
}

/// The user and data layers' [`Personal`] settings.
pub fn personal() -> Personal {
    let mut out = Personal {
        trust_all: false,
        switches: Vec::new(),
        warnings: Vec::new(),
    };
    let mut reader = layers::Reader::default();
    for layer in layers::standard(Path::new("."), false, &mut Vec::new()) {
        if !matches!(layer.kind, LayerKind::User | LayerKind::Data) {
            continue;
        }
        if let Loaded::Contents(bytes, _) = reader.read(&layer.path) {
            match super::trust_all_in(&bytes) {
                Ok(Some(value)) => out.trust_all |= value,
                Ok(None) => {}
                Err(problem) => out
                    .warnings
                    .push(format!("{}: {problem}", layer.path.display())),
            }
            layers::switches_in(&bytes, &layer.path, &mut out.switches, &mut out.warnings);
        }
    }
    out
}

/// One layer inside the project as `trust` and `serve`'s trust requests see it: its file's
/// bytes and its assessment.
pub struct Layer {
    pub bytes: Vec<u8>,
    pub assessment: Assessment,
}

/// Every layer inside the project at `root` that needs trust ([`super::guarded_layers`]),
/// assessed in full, with the warnings reading them gave added to `warnings`.
pub fn assess_all(root: &Path, personal: &Personal, warnings: &mut Vec<String>) -> Vec<Layer> {
    super::guarded_layers(&personal.switches)
        .into_iter()
        .map(|kind| {
            let (bytes, problem) = read_layer(root, kind);
            let assessment = super::assess(root, kind, &bytes, personal.trust_all, true);
            warnings.extend(problem);
            for warning in &assessment.warnings {
                if !warnings.contains(warning) {
                    warnings.push(warning.clone());
                }
            }
            Layer { bytes, assessment }
        })
        .collect()
}

/// The state of a project as a whole, from its layers' (in layer order): the first that keeps
/// a layer from running, else trusted when one is, else no hooks.
pub fn overall(layers: &[Layer]) -> Option<&Layer> {
    layers
        .iter()
        .find(|l| !l.assessment.state.admits())
        .or_else(|| layers.iter().find(|l| l.assessment.state != State::NoHooks))
}

/// The state as `--status --json` and `serve`'s `trust_status` give it: at the top level the
/// layer that decides the project's state ([`overall`]; levelcode's project layer when none
/// has hooks), and in `layers` each layer inside the project that has hooks, in layer order.
pub fn status_json(root: &Path, layers: &[Layer], warnings: &[String]) -> serde_json::Value {
    let mut top = match overall(layers).or(layers.first()) {
        Some(layer) => layer_json(root, &layer.assessment, &layer.bytes, warnings),
        None => {
            json!({ "project_dir": root.display().to_string(), "state": State::NoHooks.name() })
        }
    };
    top["layers"] = layers
        .iter()
        .filter(|l| l.assessment.state != State::NoHooks)
        .map(|l| {
            let mut one = layer_json(root, &l.assessment, &l.bytes, &[]);
            if let Some(object) = one.as_object_mut() {
                object.remove("project_dir");
                object.remove("warnings");
            }
            one
        })
        .collect();
    top
}

/// One layer's state. `bytes` are the layer's, from which the digest was computed: `hooks`
/// lists each of its handlers (every event, disabled ones too) with what it runs, for a client
/// to show.
fn layer_json(
    root: &Path,
    assessment: &Assessment,
    bytes: &[u8],
    warnings: &[String],
) -> serde_json::Value {
    let digest = assessment.digest.as_ref();
    let mut hooks = Vec::new();
    for group in super::all_groups(assessment.layer, &assessment.path, bytes) {
        for handler in &group.handlers {
            let written = Written::of_action(&handler.action);
            let mut entry = json!({
                "event": group.event,
                "path": format!("{}.hooks[{}]", group.path(), handler.index),
                "matcher": group.matcher,
                "command": written.command,
                "argv": written.argv,
                "enabled": group.enabled && handler.enabled,
            });
            if let Some(args) = written.args {
                entry["args"] = json!(args);
            }
            if let Some(shell) = written.shell {
                entry["shell"] = json!(shell);
            }
            if handler.background {
                entry["async"] = json!(true);
            }
            if let Some(policy) = &handler.sandbox.policy {
                entry["sandbox"] = policy.json();
            }
            // An http handler's request (contract §19): what it posts to, and with what.
            for (field, value) in written.json_members() {
                if matches!(field.as_str(), "url" | "headers" | "allowedEnvVars") {
                    entry[field] = value;
                }
            }
            hooks.push(entry);
        }
    }
    json!({
        "project_dir": root.display().to_string(),
        "layer": assessment.layer.name(),
        "state": assessment.state.name(),
        "trusted_by": match assessment.state {
            State::Trusted(by) => Some(by.name()),
            _ => None,
        },
        "digest": digest.map(|d| d.digest.clone()),
        "path": assessment.path.display().to_string(),
        "handlers": assessment.handlers,
        "hooks": hooks,
        "scripts": digest.map_or_else(Vec::new, |d| d.scripts.iter().map(|s| json!({"path": s.path, "hash": s.hash, "in_hooks_folder": s.in_folder, "via": s.via})).collect()),
        "fallback": digest.map_or_else(Vec::new, |d| d.fallback.clone()),
        "readings": digest.map_or_else(Vec::new, |d| d.readings.clone()),
        "trusted_at": assessment.trusted_at,
        "untrustable": assessment.untrustable,
        "warnings": warnings,
    })
}

/// Records the assessed digest as trusted in the store at `store_path`.
/// Records `layer` as trusted, with what was reviewed kept beside the store for the next
/// review ([`super::reviewed`]; a failure to keep it is a warning, not an error).
pub fn record(
    store_path: &Path,
    layer: &Layer,
    warnings: &mut Vec<String>,
) -> Result<store::Updated, String> {
    let assessment = &layer.assessment;
    let Some(digest) = &assessment.digest else {
        return Err("no digest to record".into());
    };
    let root = root_key(&digest.root)?;
    let key = super::store_key(&root, assessment.layer);
    let entry = Entry::Trusted {
        digest: digest.digest.clone(),
        content: Some(digest.content.clone()),
        at: Some(crate::fs::now_ms()),
        seal: seal(assessment, digest),
    };
    let updated = store::update(store_path, |s| {
        // Trusting any layer of a denied project lifts the denial: a person said yes.
        if matches!(s.projects.get(&root), Some(Entry::Denied { .. })) {
            s.projects.remove(&root);
        }
        s.projects.insert(key, entry);
    })?;
    let reviewed = super::reviewed::Reviewed::of(&layer.bytes, digest);
    if let Err(why) = super::reviewed::save(store_path, &digest.digest, &reviewed) {
        warnings.push(format!(
            "what was reviewed was not kept, so the next review cannot show what changed: {why}"
        ));
    }
    Ok(updated)
}

/// The seal of what `digest` hashed, when the files are settled and still the ones hashed: the
/// identities are taken, the digest computed again from the files, and the identities taken
/// again; any difference, and there is no seal (a dispatch then hashes, as always).
fn seal(assessment: &Assessment, digest: &Digest) -> Option<Seal> {
    let layer = assessment.layer;
    let settings = super::layer_file(&digest.root, layer);
    let before = Seal::take(&settings, &digest.watched, assessment.handlers)?;
    let mut bytes = Vec::new();
    crate::fs::open_regular(&settings, std::fs::OpenOptions::new().read(true))
        .ok()?
        .read_to_end(&mut bytes)
        .ok()?;
    let groups = super::all_groups(layer, &settings, &bytes);
    let again = super::digest::compute(&digest.root, layer, &bytes, &groups).ok()?;
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
