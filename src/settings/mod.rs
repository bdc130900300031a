//! The settings model (contract §3, §4, §5, §16, §17): which files are read as layers and in
//! what order (`layers`, `managed`), the `hooks` key of one settings file (this file, `fast`,
//! `checked`, read by the JSON reader of `json`), the events (`events`), the protocols as
//! settings name them (`protocol`), the matchers (`matcher`) and the `if` filter's rules
//! (`filter`). Nothing here runs a handler or knows of trust: the pipeline (`dispatch`) and
//! trust (`trust`) read it.
//!
//! The `hooks` key is checked entry by entry so that one bad entry never costs its valid
//! siblings.

use std::borrow::Cow;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::sync::OnceLock;
use std::time::Duration;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::settings::events::{EventKind, Subject};
use crate::settings::filter::Filter;
use crate::settings::layers::LayerKind;
use crate::settings::protocol::Protocol;
use matcher::Matcher;

pub const DEFAULT_TIMEOUT_SECS: f64 = 10.0;
pub const MAX_TIMEOUT_SECS: f64 = 600.0;
/// The timeout of a background handler (`"async": true`) that gives none (contract §21).
pub const BACKGROUND_TIMEOUT_SECS: f64 = 600.0;

mod checked;
pub mod events;
mod fast;
pub mod filter;
pub mod json;
pub mod kind;
pub mod layers;
pub mod managed;
pub mod matcher;
pub mod protocol;
pub mod sandbox;

pub use crate::runner::Program;
pub use checked::{clamp_timeout, ALLOW_PLAIN_HTTP};
use checked::{parse_event, Location};
use fast::clean_event;
pub use kind::{Action, HttpHook, Kind};

/// Where a group was written.
#[derive(Debug)]
pub struct Source {
    pub layer: LayerKind,
    pub file: Box<Path>,
}

/// One `{matcher, hooks}` entry under an event.
#[derive(Debug)]
pub struct Group {
    pub source: Arc<Source>,
    pub event: String,
    /// Position under the event, for `hooks.<Event>[i]`.
    pub index: usize,
    pub matcher: Option<String>,
    pub enabled: bool,
    /// The group's own `"protocol"`, when it has one; its handlers' default.
    pub protocol: Option<Protocol>,
    /// The group's `"if"` (contract §16): each of its handlers runs only for the calls it
    /// matches, and only for those its own `"if"` matches too.
    pub filter: Option<Filter>,
    pub handlers: Vec<Handler>,
    /// The matcher, compiled the first time a tool event needs it.
    compiled: OnceLock<Result<Matcher, String>>,
    /// Whether the matcher parses as a regex, asked at most once.
    parses: OnceLock<bool>,
}

/// One entry of a group's `hooks` array.
#[derive(Debug)]
pub struct Handler {
    /// Position in the group's `hooks`, for `hooks.<Event>[i].hooks[j]`.
    pub index: usize,
    /// What it does when it runs.
    pub action: Action,
    pub timeout: Duration,
    pub enabled: bool,
    pub name: Option<String>,
    /// The handler's protocol: its own `"protocol"`, else its group's, else levelcode's.
    pub protocol: Protocol,
    /// What the handler's own failure means (contract §16).
    pub on_failure: OnFailure,
    /// The handler's `"if"` (contract §16).
    pub filter: Option<Filter>,
    /// `"async": true` (or Claude Code's `asyncRewake`): started once the chain is decided and
    /// not waited for (contract §21).
    pub background: bool,
    /// The handler's sandbox (contract §20): its own, else its group's, else its layer's.
    pub sandbox: sandbox::Sandbox,
}

/// What a handler's own failure (it could not start, timed out, died by a signal, exited with a
/// code other than 0 and 2) means: `"onFailure"` (contract §16).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnFailure {
    /// Fail open, as §6 says: the tool call proceeds.
    #[default]
    Proceed,
    /// On an event that can block, the failure blocks; on others it changes nothing.
    Block,
}

impl Group {
    /// The entry's path as warnings print it, e.g. `hooks.PreToolUse[1]`.
    pub fn path(&self) -> String {
        format!("hooks.{}[{}]", self.event, self.index)
    }

    /// Returns true if and only if the group's regex matcher certainly cannot match `tool`,
    /// judged without compiling it (see [`matcher::anchors_rule_out`]). Once compiled, the
    /// matcher itself answers.
    pub fn ruled_out(&self, tool: &str) -> bool {
        if self.compiled.get().is_some() {
            return false;
        }
        let Some(pattern) = self.matcher.as_deref() else {
            return false;
        };
        matcher::anchors_rule_out(pattern, tool)
            && *self.parses.get_or_init(|| matcher::parses(pattern))
    }

    /// The protocol the group's matcher follows ([`Protocol::of_group`]): which names it is
    /// tested against besides the tool's own (contract §12).
    pub fn matcher_protocol(&self) -> Protocol {
        Protocol::of_group(self.protocol, self.handlers.iter().map(|h| h.protocol))
    }

    /// What the matcher is tested against for an event of `kind` about `tool`: the tool's name
    /// and its names in the group's protocol ([`Protocol::match_subject`]). `None` when the
    /// matcher is not consulted.
    pub fn match_subject<'t>(
        &self,
        kind: EventKind,
        tool: Option<&'t str>,
    ) -> Option<(&'t str, &'static [&'static str])> {
        self.matcher_protocol().match_subject(kind, tool)
    }

    /// Returns whether the group applies to an event of `kind` about `tool` (contract §5 and
    /// §12), or the regex error of its matcher.
    pub fn applies(&self, kind: EventKind, tool: Option<&str>) -> Result<bool, &str> {
        let Some((subject, others)) = self.match_subject(kind, tool) else {
            return Ok(true);
        };
        if self.ruled_out(subject) && others.iter().all(|n| self.ruled_out(n)) {
            return Ok(false);
        }
        match self.compiled_matcher() {
            Ok(m) => Ok(m.matches(subject) || others.iter().any(|n| m.matches(n))),
            Err(e) => Err(e),
        }
    }

    /// The compiled matcher, or the regex error; compiled once per group, on first use.
    pub fn compiled_matcher(&self) -> &Result<Matcher, String> {
        self.compiled
            .get_or_init(|| Matcher::compile(self.matcher.as_deref()))
    }
}

/// A handler's action as its settings write it: the fields `list`, `trust` and `serve` show.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written<'a> {
    pub command: Option<&'a str>,
    pub argv: Option<&'a [String]>,
    /// The exec form's arguments (with `command` the program).
    pub args: Option<&'a [String]>,
    /// The `"shell"` that runs `command`, when it is not the default.
    pub shell: Option<&'static str>,
    /// An http handler's `url`, `headers` (as written, before variables are filled in) and
    /// `allowedEnvVars` (contract §19).
    pub url: Option<&'a str>,
    pub headers: Option<&'a [(String, String)]>,
    pub allowed_env_vars: Option<&'a [String]>,
}

/// The value of `"shell"` that runs a `command` by PowerShell.
pub const POWERSHELL: &str = "powershell";
/// The value of `"shell"` that runs a `command` by `/bin/sh`, as without one.
pub const BASH: &str = "bash";

impl<'a> Written<'a> {
    /// What `action` is, as its settings write it.
    pub fn of_action(action: &'a Action) -> Written<'a> {
        match action {
            Action::Process(program) => Written::of(program),
            Action::Http(hook) => Written {
                url: Some(&hook.url),
                headers: Some(&hook.headers),
                allowed_env_vars: Some(&hook.allowed_env_vars),
                ..Written::default()
            },
        }
    }

    pub fn of(program: &'a Program) -> Written<'a> {
        match program {
            Program::Shell(command) => Written {
                command: Some(command),
                ..Written::default()
            },
            Program::PowerShell(command) => Written {
                command: Some(command),
                shell: Some(POWERSHELL),
                ..Written::default()
            },
            Program::Argv(argv) => Written {
                argv: Some(argv),
                ..Written::default()
            },
            Program::Exec { program, args } => Written {
                command: Some(program),
                args: Some(args),
                ..Written::default()
            },
        }
    }

    /// Every string of it, as people should see each before it runs.
    pub fn texts(&self) -> impl Iterator<Item = &'a str> {
        self.command
            .into_iter()
            .chain(self.argv.into_iter().flatten().map(String::as_str))
            .chain(self.args.into_iter().flatten().map(String::as_str))
            .chain(self.url)
            .chain(
                self.headers
                    .into_iter()
                    .flatten()
                    .flat_map(|(n, v)| [n.as_str(), v.as_str()]),
            )
            .chain(
                self.allowed_env_vars
                    .into_iter()
                    .flatten()
                    .map(String::as_str),
            )
    }

    /// Its fields as JSON members, in the order settings write them: `command`, `args`, `argv`,
    /// `shell`, `url`, `headers`, `allowedEnvVars`, each only when present.
    pub fn json_members(&self) -> serde_json::Map<String, Value> {
        let mut out = serde_json::Map::new();
        if let Some(command) = self.command {
            out.insert("command".into(), Value::from(command));
        }
        if let Some(args) = self.args {
            out.insert("args".into(), Value::from(args.to_vec()));
        }
        if let Some(argv) = self.argv {
            out.insert("argv".into(), Value::from(argv.to_vec()));
        }
        if let Some(shell) = self.shell {
            out.insert("shell".into(), Value::from(shell));
        }
        if let Some(url) = self.url {
            out.insert("url".into(), Value::from(url));
        }
        if let Some(headers) = self.headers {
            let object: serde_json::Map<String, Value> = headers
                .iter()
                .map(|(n, v)| (n.clone(), Value::from(v.as_str())))
                .collect();
            out.insert("headers".into(), Value::Object(object));
        }
        if let Some(vars) = self.allowed_env_vars {
            out.insert("allowedEnvVars".into(), Value::from(vars.to_vec()));
        }
        out
    }
}

/// The subjects (tool names, or the values of the event's matcher member) for which a group of
/// `groups` may apply to an event of `kind`, when that can be told without the subject: every
/// other subject is certain to run no handler. `None` when it cannot be told: a group that runs
/// whatever the subject, a matcher that is a regular expression, a matcher in error. Sorted, each
/// once. This is what lets a client answer a tool it has not asked about yet (docs/serve.md,
/// `no_match_except`), so it must never leave out a subject that a group applies to: `groups`
/// are those of every layer that may run, the managed layer's included.
pub fn subjects_that_may_match<'g>(
    groups: impl IntoIterator<Item = &'g Group>,
    kind: EventKind,
) -> Option<Vec<String>> {
    let mut subjects = std::collections::BTreeSet::new();
    for group in groups
        .into_iter()
        .filter(|g| g.enabled && g.handlers.iter().any(|h| h.enabled))
    {
        if kind.subject() == Subject::Nothing {
            // The matcher is not consulted, but for a protocol's own fixed subject.
            match group.applies(kind, None) {
                Ok(false) => continue,
                _ => return None,
            }
        }
        let Ok(Matcher::Names(names)) = group.compiled_matcher() else {
            return None;
        };
        subjects.extend(names.iter().cloned());
        if kind.subject() == Subject::Tool {
            // A tool the protocol names otherwise applies by one of those names too.
            for (tool, _) in group.matcher_protocol().facts().named_tools {
                if group.applies(kind, Some(tool)) == Ok(true) {
                    subjects.insert((*tool).to_string());
                }
            }
        }
    }
    Some(subjects.into_iter().collect())
}

impl Handler {
    /// The entry's path as warnings print it, e.g. `hooks.PreToolUse[1].hooks[0]`.
    pub fn path(&self, group: &Group) -> String {
        format!("{}.hooks[{}]", group.path(), self.index)
    }

    /// The handler's name, else its action as people read it ([`Action::text`]).
    pub fn label(&self) -> String {
        match &self.name {
            Some(name) => name.clone(),
            None => self.action.text(),
        }
    }
}

/// Which events of a file to read: a dispatch needs one, `list` and `validate` need all.
#[derive(Clone, Copy)]
pub enum Events<'a> {
    Only(&'a str),
    /// One event's groups that can apply to one tool: a group with nothing to warn about that
    /// the dispatch would certainly pass over (disabled, or its matcher rules the tool out) is
    /// left out unbuilt. For a dispatch that prints no trace of the groups it passes over.
    OnlyFor(&'a str, &'a str),
    All,
}

/// Reads the groups of one settings file into `groups`, and its problems into `warnings`.
pub fn parse(
    source: Source,
    bytes: &[u8],
    events: Events<'_>,
    groups: &mut Vec<Group>,
    warnings: &mut Vec<String>,
) {
    parse_with(source, bytes, events, groups, warnings, true);
}

/// [`parse`], by the hand-written reader first when `hand_written` (always, but in the tests
/// that hold its answers to `serde_json`'s alone).
fn parse_with(
    source: Source,
    bytes: &[u8],
    events: Events<'_>,
    groups: &mut Vec<Group>,
    warnings: &mut Vec<String>,
    hand_written: bool,
) {
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            warnings.push(format!(
                "{}: not UTF-8 (invalid byte at offset {}); layer skipped, save it as UTF-8",
                source.file.display(),
                e.valid_up_to()
            ));
            return;
        }
    };
    let source = Arc::new(source);
    let own_sandbox = source.layer.reads_layer_sandbox();
    // The hand-written reader takes the usual file; `serde_json` whatever it leaves.
    let fast = if hand_written {
        fast::hooks_of(text, &source, events)
    } else {
        Err(crate::settings::json::Unsure)
    };
    let hooks = match fast {
        Ok(top) => Ok(top),
        Err(crate::settings::json::Unsure) => {
            top_level_hooks(text, own_sandbox).map(|(hooks, layer_sandbox)| {
                let hooks = hooks.map(|hooks| {
                    let unread = hooks
                        .into_iter()
                        .map(|(event, raw)| (event, Reading::Unread(raw)));
                    unread.collect()
                });
                (hooks, layer_sandbox)
            })
        }
    };
    let first = groups.len();
    let (hooks, layer_sandbox) = match hooks {
        Ok((Some(hooks), layer_sandbox)) => (hooks, layer_sandbox),
        Ok((None, _)) => return,
        Err(problem) => {
            warnings.push(format!(
                "{}: {problem}; layer skipped: none of its hooks run until it is fixed (levelcode-hooks validate checks it)",
                source.file.display()
            ));
            return;
        }
    };
    for (event, read) in hooks {
        let Some(tool) = events.wants(&event) else {
            continue;
        };
        let (raw, clean) = match read {
            Reading::Clean(clean) => ("", Some(clean)),
            Reading::Unread(raw) if hand_written => (raw, clean_event(&source, &event, raw, tool)),
            Reading::Unread(raw) | Reading::Unsure(raw) => {
                (raw, fast::serde_event(&source, &event, raw, tool))
            }
            Reading::Unclean(raw) => (raw, None),
        };
        if let Some(clean) = clean {
            groups.extend(clean);
            continue;
        }
        let value: Value = match serde_json::from_str(raw) {
            Ok(value) => value,
            Err(e) => {
                warnings.push(format!(
                    "{}: hooks.{event}: {e}; skipped",
                    source.file.display()
                ));
                continue;
            }
        };
        let mut at = Location {
            file: &source.file,
            warnings,
            plain_http: OnceLock::new(),
            text,
        };
        parse_event(&source, &event, value, groups, &mut at);
    }
    if let Some(raw) = layer_sandbox {
        layer_sandbox_over(&source, raw, groups, first, warnings);
    }
}

/// The top-level `"sandbox"` of a layer's file (contract §20), written as `raw`, given to each
/// handler of `groups[first..]` (this file's) that neither it nor its group gave one. A value
/// this cannot read leaves the file's handlers out, rather than run them with more rights than
/// it meant.
fn layer_sandbox_over(
    source: &Source,
    raw: &str,
    groups: &mut Vec<Group>,
    first: usize,
    warnings: &mut Vec<String>,
) {
    let value = serde_json::from_str(raw).unwrap_or(Value::Null);
    match sandbox::parse(&value) {
        Ok(None) => {}
        Ok(Some(policy)) => {
            for handler in groups[first..]
                .iter_mut()
                .flat_map(|g| g.handlers.iter_mut())
            {
                handler.sandbox.or_layer(&policy);
            }
        }
        Err(problem) => {
            warnings.push(format!(
                "{}: {}: {problem}; every handler of this file is skipped",
                source.file.display(),
                sandbox::KEY
            ));
            groups.truncate(first);
        }
    }
}

/// One event of a file, as the reading of its top level left it.
pub(super) enum Reading<'a> {
    /// Its groups, read by the fast path.
    Clean(Vec<Group>),
    /// Its text, not read yet.
    Unread(&'a str),
    /// Its text, which the hand-written reader left to `serde_json`.
    Unsure(&'a str),
    /// Its text, which has something to warn about: for the general path.
    Unclean(&'a str),
}

impl<'a> Events<'a> {
    /// `None` when `event` is not read; else the tool its groups are read for, if any.
    fn wants(self, event: &str) -> Option<Option<&'a str>> {
        match self {
            Events::All => Some(None),
            Events::Only(wanted) | Events::OnlyFor(wanted, _) if event != wanted => None,
            Events::Only(_) => Some(None),
            Events::OnlyFor(_, tool) => Some(Some(tool)),
        }
    }
}

/// The `hooks` object's entries in file order, without parsing their values; `None` when the
/// file has no `hooks` (or `"hooks": null`); and, when `own_sandbox`, the text of the top-level
/// `"sandbox"`. `serde_json`'s reading, for the files [`fast::hooks_of`] leaves to it.
#[allow(clippy::type_complexity)]
fn top_level_hooks(text: &str, own_sandbox: bool) -> Result<LayerTop<'_>, String> {
    /// One pass over the file: `hooks` is split into its events as it is read.
    #[derive(Deserialize)]
    struct Top<'a> {
        #[serde(borrow, default)]
        hooks: Option<Hooks<'a>>,
    }
    /// The same, with the layer's `"sandbox"`.
    #[derive(Deserialize)]
    struct WithSandbox<'a> {
        #[serde(borrow, default)]
        hooks: Option<Hooks<'a>>,
        #[serde(borrow, default)]
        sandbox: Option<&'a RawValue>,
    }
    let first = text.trim_start().chars().next();
    if first != Some('{') {
        return Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) => "the top level is not a JSON object".to_string(),
            Err(e) => invalid_json(text, &e),
        });
    }
    let invalid = |e: serde_json::Error| invalid_json(text, &e);
    let (hooks, sandbox) = if own_sandbox {
        let top: WithSandbox<'_> = serde_json::from_str(text).map_err(invalid)?;
        (top.hooks, top.sandbox.map(RawValue::get))
    } else {
        let top: Top<'_> = serde_json::from_str(text).map_err(invalid)?;
        (top.hooks, None)
    };
    match hooks {
        None | Some(Hooks::Null) => Ok((None, sandbox)),
        Some(Hooks::Events(events)) => Ok((
            Some(
                events
                    .into_iter()
                    .map(|(event, raw)| (Cow::Owned(event), raw.get()))
                    .collect(),
            ),
            sandbox,
        )),
        Some(Hooks::Not(what)) => Err(format!("\"hooks\" must be an object of events, not {what}")),
    }
}

/// `serde_json`'s error for `text`, with what it most likely hit when that is one of the slips
/// people make in a JSON file (a comment, a trailing comma, single quotes), since its own words
/// (`key must be a string`, `expected value`) do not say so.
pub fn invalid_json(text: &str, e: &serde_json::Error) -> String {
    match json_slip(text, e.line(), e.column()) {
        Some(slip) => format!("invalid JSON: {e}: {slip}"),
        None => format!("invalid JSON: {e}"),
    }
}

/// What is at `line` and `column` (1-based, in bytes, as `serde_json` counts) of `text`, when it
/// is a slip JSON does not allow.
fn json_slip(text: &str, line: usize, column: usize) -> Option<&'static str> {
    let start = if line <= 1 {
        0
    } else {
        text.match_indices('\n').nth(line - 2)?.0 + 1
    };
    let at = start + column.checked_sub(1)?;
    let bytes = text.as_bytes();
    let here = *bytes.get(at)?;
    let next = bytes.get(at + 1).copied();
    let before = bytes[..at]
        .iter()
        .rev()
        .find(|b| !b.is_ascii_whitespace())
        .copied();
    match (here, next, before) {
        (b'/', Some(b'/' | b'*'), _) | (b'#', _, _) => {
            Some("JSON allows no comments; remove the comment")
        }
        (b']' | b'}', _, Some(b',')) => {
            Some("JSON allows no trailing commas; remove the comma before this bracket")
        }
        (b'\'', _, _) => Some("JSON strings and keys take double quotes (\"), not single ones"),
        _ => None,
    }
}

/// A file's top level as far as it is read: its `hooks` events, each as it was read, and the
/// text of its own `"sandbox"`, when it has one.
type LayerTop<'a> = (Option<Vec<(Cow<'a, str>, &'a str)>>, Option<&'a str>);

/// The `hooks` value: its events, each kept as written, or what it is instead of an object.
enum Hooks<'a> {
    Null,
    Events(Vec<(String, &'a RawValue)>),
    Not(&'static str),
}

impl<'de: 'a, 'a> Deserialize<'de> for Hooks<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(HooksVisitor)
    }
}

struct HooksVisitor;

impl<'de> Visitor<'de> for HooksVisitor {
    type Value = Hooks<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut events = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, &'de RawValue>()? {
            events.push((key, value));
        }
        Ok(Hooks::Events(events))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Hooks::Null)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Hooks::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Hooks::Not("an array"))
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Hooks::Not("a string"))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Hooks::Not("a boolean"))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Hooks::Not("a number"))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Hooks::Not("a number"))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Hooks::Not("a number"))
    }
}

#[cfg(test)]
mod tests;

/// A JSON value as a message quotes it: whole when short, else its first 37 bytes and `...`.
pub fn short_json(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= 40 {
        return text;
    }
    let mut cut = 37;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &text[..cut])
}
