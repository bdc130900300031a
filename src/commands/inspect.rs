//! The settings as people inspect them (`list`, `validate`, `test --dry-run`): every layer and
//! what became of it, and every entry in file order, the invalid ones included, with the warnings
//! that concern it.
//!
//! It reads the layers with the same [`layers::Reader`] and [`settings::parse`] as a dispatch,
//! for all events at once, and adds what only people need: the raw entries that the parser
//! skipped, so that `list` can show them and say why.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::dispatch::payload::Payload;
use crate::dispatch::{self, Options};
use crate::settings::events::EventKind;
use crate::settings::layers::{self, LayerKind, LayerPath};
use crate::settings::managed;
use crate::settings::sandbox;
use crate::settings::short_json;
use crate::settings::{self, Events, Group, Handler};

/// What became of one layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerState {
    /// No file there: skipped silently.
    Missing,
    /// The same file as an earlier layer: read once, at its first position.
    Repeated,
    /// Unreadable, not a regular file, or too large: a warning, and nothing from it.
    Unusable,
    /// Read and parsed; its entries may still have problems.
    Read,
}

impl LayerState {
    pub fn name(self) -> &'static str {
        match self {
            LayerState::Missing => "missing",
            LayerState::Repeated => "repeated",
            LayerState::Unusable => "unusable",
            LayerState::Read => "read",
        }
    }
}

/// One settings file and what it contributes.
pub struct LayerView {
    pub kind: LayerKind,
    pub path: PathBuf,
    pub state: LayerState,
    /// The valid groups, as a dispatch reads them.
    pub groups: Vec<Group>,
    /// The warnings about this file, each starting with the file's name.
    pub warnings: Vec<String>,
    /// The file's text, when it was read and is UTF-8.
    pub text: Option<String>,
}

impl LayerView {
    /// The file's name as warnings print it.
    pub fn file(&self) -> String {
        self.path.display().to_string()
    }

    /// The messages of this file's warnings about `path` itself or one of its fields (such as
    /// `path.timeout`), without the file and path in front.
    pub fn messages_for(&self, path: &str) -> Vec<String> {
        let file = self.file();
        self.warnings
            .iter()
            .filter_map(|w| {
                let rest = w.strip_prefix(&file)?.strip_prefix(": ")?;
                let (at, message) = rest.split_once(": ")?;
                let field = at.strip_prefix(path)?;
                let own_field = field.is_empty()
                    || (field.starts_with('.') && !field[1..].starts_with("hooks["));
                own_field.then(|| {
                    if field.is_empty() {
                        message.to_string()
                    } else {
                        format!("{}: {message}", &field[1..])
                    }
                })
            })
            .collect()
    }
}

/// Every layer of one project, as `run` would find them.
pub struct Inspection {
    pub root: PathBuf,
    pub layers: Vec<LayerView>,
    /// Warnings that concern no single file, such as a missing home directory.
    pub notes: Vec<String>,
    /// The trust of each layer inside the project that has hooks (contract §13), in layer
    /// order.
    pub trust: Vec<crate::trust::Assessment>,
    /// The managed file, when it sets `managedHooksOnly` (contract §17): no other layer runs.
    pub managed_only: Option<PathBuf>,
}

impl Inspection {
    /// The trust of the first layer inside the project that it keeps from running.
    pub fn held_back(&self) -> Option<&crate::trust::Assessment> {
        self.trust.iter().find(|a| !a.state.admits())
    }

    /// The trust of the layer of `kind`, when it keeps that layer from running.
    pub fn held_back_layer(&self, kind: LayerKind) -> Option<&crate::trust::Assessment> {
        self.trust
            .iter()
            .find(|a| a.layer == kind && !a.state.admits())
    }
}

/// The project root when there is no payload: `--project-dir`, else the current directory, found
/// by the same rule as a dispatch so that `list` and `run` never disagree.
pub fn root_without_payload(options: &Options) -> PathBuf {
    match Payload::parse(b"{}".to_vec(), Some("SessionStart")) {
        Ok(payload) => dispatch::project_root(&payload, options),
        Err(_) => crate::environment::start_dir(),
    }
}

/// Reads every layer of `options` for the project at `root`.
pub fn inspect(options: &Options, root: PathBuf) -> Inspection {
    let mut notes = Vec::new();
    let paths = dispatch::layer_paths(&root, options, &mut notes);
    let mut reader = layers::Reader::default();
    let (managed, managed_only, http_policy) = managed_layer(&mut notes);
    // The file that sandboxes the project's handlers (contract §20): the managed one, else the
    // first user or data layer that says so.
    let mut sandbox_by = managed
        .as_ref()
        .filter(|m| {
            let text = m.text.as_deref().unwrap_or_default();
            sandbox::projects_sandboxed(text.as_bytes(), &m.path, &mut notes)
        })
        .map(|m| m.path.clone());
    let mut layers: Vec<LayerView> = managed.into_iter().collect();
    // An agent's own files are layers only when the user or data layer turns them on
    // (contract §12); otherwise they are not read, nor shown.
    let mut switches = Vec::new();
    for layer in &paths {
        if layer.kind.switch().is_some_and(|s| !switches.contains(&s)) {
            continue;
        }
        let view = read_layer(&mut reader, layer);
        if let (LayerKind::User | LayerKind::Data, Some(text)) = (layer.kind, &view.text) {
            layers::switches_in(text.as_bytes(), &layer.path, &mut switches, &mut notes);
            if sandbox_by.is_none()
                && sandbox::projects_sandboxed(text.as_bytes(), &layer.path, &mut notes)
            {
                sandbox_by = Some(layer.path.clone());
            }
        }
        let mut view = view;
        if let (Some(by), Some(_)) = (&sandbox_by, layer.kind.project_file()) {
            sandbox::floor_groups(&mut view.groups, by, &mut view.warnings);
        }
        layers.push(view);
    }
    let trust = assess_trust(&root, &layers, &mut notes);
    // The http handlers the managed layer keeps from being sent (contract §19), as a dispatch
    // says of each.
    for layer in &layers {
        for group in &layer.groups {
            for handler in &group.handlers {
                if let Some(why) = http_policy.refuses(&handler.action) {
                    notes.push(format!("{}: {}: {why}", layer.file(), handler.path(group)));
                }
            }
        }
    }
    if let Some(file) = &managed_only {
        let held: usize = layers
            .iter()
            .filter(|l| l.kind != LayerKind::Managed)
            .flat_map(|l| l.groups.iter().filter(|g| g.enabled))
            .map(|g| g.handlers.iter().filter(|h| h.enabled).count())
            .sum();
        notes.push(format!(
            "{}: {} is set, so no other layer contributes: {held} handler(s) of theirs do not run",
            file.display(),
            crate::settings::managed::ONLY_KEY
        ));
    }
    Inspection {
        root,
        layers,
        notes,
        trust,
        managed_only,
    }
}

/// The managed layer as a dispatch finds it (contract §17), its file again when it sets
/// `managedHooksOnly`, and what it allows http handlers. Nothing at all when no file is there.
fn managed_layer(
    notes: &mut Vec<String>,
) -> (Option<LayerView>, Option<PathBuf>, managed::HttpPolicy) {
    use crate::settings::managed::Found;
    let (path, loaded) = match managed::find(notes) {
        Found::Absent => return (None, None, managed::HttpPolicy::default()),
        Found::Refused(path, warning) => (path, layers::Loaded::Unusable(warning)),
        Found::Read(path, bytes, meta) => (path, layers::Loaded::Contents(bytes, meta)),
    };
    let mut only = None;
    let mut http = managed::HttpPolicy::default();
    if let layers::Loaded::Contents(bytes, _) = &loaded {
        let mut warnings = Vec::new();
        if managed::only_in(&path, bytes, &mut warnings) {
            only = Some(path.clone());
        }
        http = managed::HttpPolicy::read(&path, bytes, &mut warnings);
        notes.extend(warnings);
    }
    let layer = LayerPath {
        kind: LayerKind::Managed,
        path,
    };
    (Some(view_of(&layer, loaded)), only, http)
}

/// The trust of each layer inside the project, as a dispatch would judge it, with the digest.
fn assess_trust(
    root: &Path,
    layers: &[LayerView],
    notes: &mut Vec<String>,
) -> Vec<crate::trust::Assessment> {
    let mut trust_all = false;
    for layer in layers {
        if !matches!(layer.kind, LayerKind::User | LayerKind::Data) {
            continue;
        }
        match layer
            .text
            .as_deref()
            .map(|t| crate::trust::trust_all_in(t.as_bytes()))
        {
            Some(Ok(Some(on))) => trust_all |= on,
            Some(Err(problem)) => notes.push(format!("{}: {problem}", layer.file())),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for layer in layers
        .iter()
        .filter(|l| l.kind.project_file().is_some() && l.state == LayerState::Read)
    {
        let assessment = crate::trust::assess(
            root,
            layer.kind,
            layer.text.as_deref().unwrap_or_default().as_bytes(),
            trust_all,
            true,
        );
        for warning in &assessment.warnings {
            if !notes.contains(warning) {
                notes.push(warning.clone());
            }
        }
        if assessment.state != crate::trust::State::NoHooks {
            out.push(assessment);
        }
    }
    out
}

fn read_layer(reader: &mut layers::Reader, layer: &LayerPath) -> LayerView {
    view_of(layer, reader.read(&layer.path))
}

fn view_of(layer: &LayerPath, loaded: layers::Loaded) -> LayerView {
    let mut view = LayerView {
        kind: layer.kind,
        path: layer.path.clone(),
        state: LayerState::Read,
        groups: Vec::new(),
        warnings: Vec::new(),
        text: None,
    };
    match loaded {
        layers::Loaded::Missing => view.state = LayerState::Missing,
        layers::Loaded::Repeated => view.state = LayerState::Repeated,
        layers::Loaded::Unusable(warning) => {
            view.state = LayerState::Unusable;
            view.warnings.push(warning);
        }
        layers::Loaded::Contents(bytes, _) => {
            let source = settings::Source {
                layer: layer.kind,
                file: layer.path.clone().into_boxed_path(),
            };
            settings::parse(
                source,
                &bytes,
                Events::All,
                &mut view.groups,
                &mut view.warnings,
            );
            view.text = String::from_utf8(bytes).ok();
            let file = view.file();
            // A dispatch compiles a tool event's matchers only when that event fires; people
            // want to hear about a bad one before then.
            for group in &view.groups {
                if group
                    .match_subject(EventKind::of(&group.event), Some(""))
                    .is_none()
                {
                    continue;
                }
                if let Err(e) = group.compiled_matcher() {
                    view.warnings.push(format!(
                        "{file}: {}.matcher: invalid regular expression ({}); group skipped",
                        group.path(),
                        e.lines().last().unwrap_or("invalid").trim()
                    ));
                }
            }
        }
    }
    view
}

/// One entry of a layer, in file order: a handler (valid or not), or a group or event that is
/// invalid as a whole.
pub struct Entry<'a> {
    pub layer: &'a LayerView,
    pub event: String,
    /// Where it is written, such as `hooks.PreToolUse[0].hooks[1]`.
    pub path: String,
    /// The group's matcher as written, when it is a string.
    pub matcher: Option<String>,
    /// The parsed group, when the group is valid.
    pub group: Option<&'a Group>,
    /// The parsed handler, when the handler is valid.
    pub handler: Option<&'a Handler>,
    /// The handler's label, or a short description of an invalid entry.
    pub label: String,
    /// Why the entry never runs, when it is invalid.
    pub invalid: Option<String>,
    /// The other warnings about the entry.
    pub warnings: Vec<String>,
}

impl Entry<'_> {
    /// Returns true if and only if both the handler and its group are enabled.
    pub fn enabled(&self) -> bool {
        self.group.is_some_and(|g| g.enabled) && self.handler.is_some_and(|h| h.enabled)
    }
}

/// Every entry of every layer, in the order a dispatch considers them.
pub fn entries(inspection: &Inspection) -> Vec<Entry<'_>> {
    let mut out = Vec::new();
    for layer in &inspection.layers {
        if let Some(text) = &layer.text {
            layer_entries(layer, text, &mut out);
        }
    }
    out
}

fn layer_entries<'a>(layer: &'a LayerView, text: &str, out: &mut Vec<Entry<'a>>) {
    let Some(events) = raw_hooks(text) else {
        return;
    };
    let mut parsed = layer.groups.iter().peekable();
    for (event, value) in events {
        let event_path = format!("hooks.{event}");
        let Value::Array(groups) = value else {
            let why = first_or(layer.messages_for(&event_path), "not an array of groups");
            out.push(invalid_entry(layer, &event, event_path, None, &value, why));
            continue;
        };
        for (index, raw_group) in groups.iter().enumerate() {
            let group_path = format!("{event_path}[{index}]");
            let matcher = raw_group
                .get("matcher")
                .and_then(Value::as_str)
                .map(String::from);
            let group = parsed
                .next_if(|g| g.event == event && g.index == index)
                .filter(|_| raw_group.is_object());
            let Some(group) = group else {
                let why = first_or(layer.messages_for(&group_path), "invalid group");
                out.push(invalid_entry(
                    layer, &event, group_path, matcher, raw_group, why,
                ));
                continue;
            };
            let mut group_notes = layer.messages_for(&group_path);
            group_notes.extend(names_of_no_tool(group));
            let matcher_problem = group_notes
                .iter()
                .find(|m| m.starts_with("matcher: invalid regular expression"))
                .cloned();
            let raw_handlers = match raw_group.get("hooks") {
                Some(Value::Array(items)) => items.as_slice(),
                _ => &[],
            };
            let mut handlers = group.handlers.iter().peekable();
            for (h, raw_handler) in raw_handlers.iter().enumerate() {
                let path = format!("{group_path}.hooks[{h}]");
                let mut warnings = if h == 0 {
                    group_notes.clone()
                } else {
                    Vec::new()
                };
                let messages = layer.messages_for(&path);
                let Some(handler) = handlers.next_if(|x| x.index == h) else {
                    let why = first_or(messages, "invalid handler");
                    let mut entry =
                        invalid_entry(layer, &event, path, matcher.clone(), raw_handler, why);
                    entry.group = Some(group);
                    entry.warnings = warnings;
                    out.push(entry);
                    continue;
                };
                warnings.extend(messages);
                if let Some(problem) = &matcher_problem {
                    warnings.retain(|w| w != problem);
                }
                let label = handler.label();
                let hidden = crate::settings::Written::of_action(&handler.action)
                    .texts()
                    .any(crate::commands::visible::needs_warning);
                if hidden || crate::commands::visible::needs_warning(&label) {
                    warnings.push(crate::commands::visible::warning(&path));
                }
                out.push(Entry {
                    layer,
                    event: event.clone(),
                    path,
                    matcher: matcher.clone(),
                    group: Some(group),
                    handler: Some(handler),
                    label: crate::commands::visible::escape(&label).into_owned(),
                    invalid: matcher_problem.clone(),
                    warnings,
                });
            }
        }
    }
}

/// What `list` and `test` say of a tool event's exact-name matcher naming no tool, which a
/// dispatch passes over without a word (docs/hooks.md, "Matchers"): one note a name, as
/// `validate` words it.
fn names_of_no_tool(group: &Group) -> Vec<String> {
    let Some(matcher) = group.matcher.as_deref() else {
        return Vec::new();
    };
    if !EventKind::of(&group.event).is_tool_event() || !settings::matcher::is_name_list(matcher) {
        return Vec::new();
    }
    let protocol = group.matcher_protocol();
    matcher
        .split('|')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .filter_map(|name| crate::commands::tools::name_problem(name, protocol))
        .map(|problem| format!("matcher: {problem}"))
        .collect()
}

fn first_or(messages: Vec<String>, fallback: &str) -> String {
    messages
        .into_iter()
        .next()
        .unwrap_or_else(|| fallback.to_string())
}

fn invalid_entry<'a>(
    layer: &'a LayerView,
    event: &str,
    path: String,
    matcher: Option<String>,
    raw: &Value,
    why: String,
) -> Entry<'a> {
    let mut warnings = layer.messages_for(&path);
    warnings.retain(|w| *w != why);
    Entry {
        layer,
        event: event.to_string(),
        path,
        matcher,
        group: None,
        handler: None,
        label: describe_raw(raw),
        invalid: Some(why),
        warnings,
    }
}

/// A short description of a raw entry: its name, command or argv when it has one.
fn describe_raw(raw: &Value) -> String {
    let field = |key: &str| raw.get(key).and_then(Value::as_str).map(String::from);
    if let Some(name) = field("name").or_else(|| field("command")) {
        return name;
    }
    if let Some(Value::Array(argv)) = raw.get("argv") {
        if let Some(words) = argv
            .iter()
            .map(|w| w.as_str().map(String::from))
            .collect::<Option<Vec<_>>>()
        {
            return shell_words::join(words);
        }
    }
    short_json(raw)
}

/// The entries of the `hooks` object in file order, duplicate event names included; `None` when
/// the file has no usable `hooks` object (the parser has already said why).
pub fn raw_hooks(text: &str) -> Option<Vec<(String, Value)>> {
    #[derive(Deserialize)]
    struct Top {
        #[serde(default)]
        hooks: Option<RawEntries>,
    }
    let top: Top = serde_json::from_str(text).ok()?;
    top.hooks.map(|entries| entries.0)
}

/// An object's entries in order, keeping repeated keys.
pub struct RawEntries(pub Vec<(String, Value)>);

impl<'de> Deserialize<'de> for RawEntries {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct EntriesVisitor;
        impl<'de> Visitor<'de> for EntriesVisitor {
            type Value = RawEntries;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEntries, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, Value>()? {
                    entries.push(entry);
                }
                Ok(RawEntries(entries))
            }
        }
        de.deserialize_map(EntriesVisitor)
    }
}

/// A timeout as people write it: `10s`, `2.5s`.
pub fn seconds(secs: f64) -> String {
    format!("{secs}s")
}

/// The file name relative to `root` when it is inside, for shorter tables.
pub fn short_path(path: &Path, root: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(text: &str) -> LayerView {
        let mut view = LayerView {
            kind: LayerKind::Cli,
            path: PathBuf::from("s.json"),
            state: LayerState::Read,
            groups: Vec::new(),
            warnings: Vec::new(),
            text: Some(text.to_string()),
        };
        let source = settings::Source {
            layer: LayerKind::Cli,
            file: Path::new("s.json").into(),
        };
        settings::parse(
            source,
            text.as_bytes(),
            Events::All,
            &mut view.groups,
            &mut view.warnings,
        );
        view
    }

    #[test]
    fn invalid_entries_keep_their_place_and_reason() {
        let layer = view(
            r#"{"hooks":{
                "Stop":[{"command":"direct"},{"hooks":[{"argv":["a"],"command":"b"},{"command":"ok","timeout":0}]}],
                "PreToolUse":{"oops":1}}}"#,
        );
        let mut out = Vec::new();
        layer_entries(&layer, layer.text.as_deref().unwrap(), &mut out);
        let rows: Vec<(&str, bool)> = out
            .iter()
            .map(|e| (e.path.as_str(), e.invalid.is_some()))
            .collect();
        assert_eq!(
            rows,
            [
                ("hooks.Stop[0]", true),
                ("hooks.Stop[1].hooks[0]", true),
                ("hooks.Stop[1].hooks[1]", false),
                ("hooks.PreToolUse", true),
            ]
        );
        assert_eq!(out[0].label, "direct");
        assert!(out[1]
            .invalid
            .as_deref()
            .unwrap()
            .contains("both command and argv"));
        assert!(out[2].warnings[0].starts_with("timeout: "));
    }

    #[test]
    fn repeated_event_names_are_all_walked() {
        let layer = view(
            r#"{"hooks":{"Stop":[{"hooks":[{"command":"a"}]}],"Stop":[{"hooks":[{"command":"b"}]}]}}"#,
        );
        let mut out = Vec::new();
        layer_entries(&layer, layer.text.as_deref().unwrap(), &mut out);
        let labels: Vec<&str> = out.iter().map(|e| e.label.as_str()).collect();
        assert_eq!(labels, ["a", "b"]);
        assert!(out.iter().all(|e| e.invalid.is_none()));
    }
}
