//! What a handler runs with besides its stdin (contract §6): its current directory and the
//! variables of its one run.

use std::path::{Path, PathBuf};

use crate::dispatch::payload::Payload;
use crate::dispatch::protocol::RunFile;
use crate::environment;
use crate::settings::layers::LayerKind;
use crate::settings::protocol::Protocol;

/// The handlers' current directory: the project root, or when it does not exist, ours.
pub(super) fn handler_dir(root: &Path, warnings: &mut Vec<String>) -> PathBuf {
    if root.is_dir() {
        return root.to_path_buf();
    }
    let here = environment::start_dir();
    warnings.push(format!(
        "project directory {} does not exist; handlers run in {} instead",
        root.display(),
        here.display()
    ));
    here
}

/// The variables a handler of `layer` gets, and those it must not inherit: the project root,
/// also by each protocol's own name for it; the file a protocol gives this run, and none a
/// protocol gave an earlier run; the tool's name only on tool events; Python's safe path
/// outside the project. They reach that one run only (its own environment list,
/// `runner::Invocation`), so no value of one run or request reaches another.
pub(super) fn handler_env(
    payload: &Payload,
    root: &Path,
    run_file: Option<&RunFile>,
    layer: LayerKind,
) -> (Vec<(&'static str, String)>, Vec<&'static str>) {
    let root_text = root.to_string_lossy();
    let mut env = Vec::with_capacity(8);
    env.push(("LEVELCODE_PROJECT_DIR", root_text.to_string()));
    env.push(("LEVELCODE_HOOK_EVENT", payload.event.clone()));
    for protocol in Protocol::all() {
        if let Some(variable) = protocol.rules().root_variable() {
            env.push((variable, root_text.to_string()));
        }
    }
    env.push((
        "LEVELCODE_HOOKS_DEPTH",
        (environment::depth() + 1).to_string(),
    ));
    // A handler is code the agent's work runs, never a person at a terminal: a `trust` it
    // starts records nothing (docs/trust.md), even under a client that left the variable out of
    // this dispatcher's own environment.
    env.push((crate::trust::AGENT_ENV[0], "1".to_string()));
    // A person's or an organisation's handler runs in the project root, where `python3 -c` and
    // `python3 -m` would import the repository's `json.py` before the standard library's: the
    // repository needs neither hooks nor trust for that. The project's own handlers are its
    // code, trusted as such, and keep Python's default (docs/trust.md).
    if layer.project_file().is_none() && !environment::python_safe_path_set() {
        env.push((environment::PYTHON_SAFE_PATH, "1".to_string()));
    }
    let mut remove = Vec::new();
    match &payload.tool_name {
        Some(tool) => env.push(("LEVELCODE_TOOL_NAME", tool.clone())),
        None => remove.push("LEVELCODE_TOOL_NAME"),
    }
    if let Some(file) = run_file {
        env.push((file.variable, file.path.display().to_string()));
    }
    for protocol in Protocol::all() {
        for variable in protocol.rules().given_before() {
            if run_file.is_none_or(|file| file.variable != *variable) {
                remove.push(*variable);
            }
        }
    }
    (env, remove)
}
