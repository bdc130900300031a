//! Each layer's groups, read in layer order through the gate (contract §3, §12, §13): an agent's
//! own file only when the user or data layer turned it on, a layer inside the project only when
//! it is trusted.

use crate::dispatch::output::Trace;
use crate::settings::layers::{self, LayerPath};
use crate::settings::{self, sandbox, Events, Group};
use crate::trust::Gate;

/// Reads every layer's groups for `events`, in layer order, reading a file reached twice once.
pub fn load_groups(
    paths: &[LayerPath],
    events: Events<'_>,
    warnings: &mut Vec<String>,
    trace: &Trace,
    gate: &mut Gate,
) -> Vec<Group> {
    let mut reader = layers::Reader::default();
    load_groups_from(paths, events, warnings, trace, gate, |layer| {
        reader.read_layer(layer)
    })
}

/// [`load_groups`] with each layer read by `read`, which `serve` wraps to remember what was read.
/// A layer's contents go through `gate` first: a project layer that is not trusted contributes
/// nothing (contract §13).
pub fn load_groups_from(
    paths: &[LayerPath],
    events: Events<'_>,
    warnings: &mut Vec<String>,
    trace: &Trace,
    gate: &mut Gate,
    mut read: impl FnMut(&LayerPath) -> layers::Loaded,
) -> Vec<Group> {
    let mut groups = Vec::new();
    for layer in paths {
        let before = groups.len();
        if !gate.opens(layer.kind) {
            // An agent's own file, which no user or data layer turned on (contract §12): not
            // even looked at.
            if trace.enabled() {
                trace.line(format_args!(
                    "{} layer: {} (off: no user or data layer sets \"{}\": true)",
                    layer.kind.name(),
                    layer.path.display(),
                    layer.kind.switch().unwrap_or_default()
                ));
            }
            continue;
        }
        match read(layer) {
            layers::Loaded::Missing => {
                trace.line(format_args!(
                    "{} layer: {} (not there)",
                    layer.kind.name(),
                    layer.path.display()
                ));
                continue;
            }
            layers::Loaded::Repeated => {
                trace.line(format_args!(
                    "{} layer: {} (same file as an earlier layer, read once)",
                    layer.kind.name(),
                    layer.path.display()
                ));
                continue;
            }
            layers::Loaded::Unusable(warning) => warnings.push(warning),
            layers::Loaded::Contents(bytes, read)
                if !gate.admit(layer, &bytes, &read, warnings) =>
            {
                trace.line(format_args!(
                    "{} layer: {} (not trusted: skipped)",
                    layer.kind.name(),
                    layer.path.display()
                ));
                continue;
            }
            layers::Loaded::Contents(bytes, _) => {
                let source = settings::Source {
                    layer: layer.kind,
                    file: layer.path.clone().into_boxed_path(),
                };
                settings::parse(source, &bytes, events, &mut groups, warnings);
                // A user or data layer that sandboxes the project's handlers (contract §20):
                // the groups keep it, so `serve`'s cache of them does too.
                if let (Some(by), Some(_)) = (gate.sandboxes_projects(), layer.kind.project_file())
                {
                    let by = by.to_path_buf();
                    sandbox::floor_groups(&mut groups[before..], &by, warnings);
                }
            }
        }
        if trace.enabled() {
            trace.line(format_args!(
                "{} layer: {} ({} group(s){})",
                layer.kind.name(),
                layer.path.display(),
                groups.len() - before,
                match events {
                    Events::Only(event) => format!(" for {event}"),
                    Events::OnlyFor(event, tool) =>
                        format!(" for {event} that can apply to {tool}"),
                    Events::All => String::new(),
                }
            ));
        }
    }
    groups
}
