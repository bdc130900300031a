//! The `hooks` key of one settings file (contract §4): groups and handlers, checked entry by
//! entry so that one bad entry never costs its valid siblings.

use std::cell::OnceCell;
use std::fmt;
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::layers::LayerKind;
use crate::matcher::{self, Matcher};
use crate::payload::{short_json, EventKind};
use crate::protocol::{claude, Protocol};

pub const DEFAULT_TIMEOUT_SECS: f64 = 10.0;
pub const MAX_TIMEOUT_SECS: f64 = 600.0;

/// What a handler runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Program {
    /// `command`: run by `/bin/sh -c` (`cmd.exe /d /s /c` on Windows).
    Shell(String),
    /// `argv`: run directly, `argv[0]` looked up on `PATH`.
    Argv(Vec<String>),
}

/// Where a group was written.
#[derive(Debug)]
pub struct Source {
    pub layer: LayerKind,
    pub file: Box<Path>,
}

/// One `{matcher, hooks}` entry under an event.
#[derive(Debug)]
pub struct Group {
    pub source: Rc<Source>,
    pub event: String,
    /// Position under the event, for `hooks.<Event>[i]`.
    pub index: usize,
    pub matcher: Option<String>,
    pub enabled: bool,
    /// The group's own `"protocol"`, when it has one; its handlers' default.
    pub protocol: Option<Protocol>,
    pub handlers: Vec<Handler>,
    /// The matcher, compiled the first time a tool event needs it.
    compiled: OnceCell<Result<Matcher, String>>,
    /// Whether the matcher parses as a regex, asked at most once.
    parses: OnceCell<bool>,
}

/// One entry of a group's `hooks` array.
#[derive(Debug)]
pub struct Handler {
    /// Position in the group's `hooks`, for `hooks.<Event>[i].hooks[j]`.
    pub index: usize,
    pub program: Program,
    pub timeout: Duration,
    pub enabled: bool,
    pub name: Option<String>,
    /// The handler's protocol: its own `"protocol"`, else its group's, else levelcode's.
    pub protocol: Protocol,
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

    /// Returns true if and only if the group's matcher is also tested against Claude Code's
    /// names (contract §12): its protocol is `claude`, or all of its handlers' are.
    pub fn speaks_claude(&self) -> bool {
        self.protocol == Some(Protocol::Claude)
            || (!self.handlers.is_empty()
                && self.handlers.iter().all(|h| h.protocol == Protocol::Claude))
    }

    /// What the matcher is tested against for an event of `kind` about `tool`: the tool's name
    /// and, for a group speaking Claude Code's protocol, its Claude Code names; on
    /// `SessionStart`, `startup` for such a group. `None` when the matcher is not consulted.
    pub fn match_subject<'t>(
        &self,
        kind: EventKind,
        tool: Option<&'t str>,
    ) -> Option<(&'t str, &'static [&'static str])> {
        let claude = self.speaks_claude();
        match (kind.is_tool_event(), tool) {
            (true, Some(tool)) if claude => Some((tool, claude::tool_names(tool))),
            (true, Some(tool)) => Some((tool, &[])),
            _ if claude && kind == EventKind::SessionStart => Some((claude::SESSION_SOURCE, &[])),
            _ => None,
        }
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

impl Handler {
    /// The handler's name, else its command, else its argv joined as a shell would quote it.
    pub fn label(&self) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        match &self.program {
            Program::Shell(command) => command.clone(),
            Program::Argv(argv) => shell_words::join(argv),
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
    let hooks = match top_level_hooks(text) {
        Ok(Some(hooks)) => hooks,
        Ok(None) => return,
        Err(problem) => {
            warnings.push(format!(
                "{}: {problem}; layer skipped",
                source.file.display()
            ));
            return;
        }
    };
    let source = Rc::new(source);
    for (event, raw) in hooks {
        let tool = match events {
            Events::All => None,
            Events::Only(wanted) | Events::OnlyFor(wanted, _) if event != wanted => continue,
            Events::Only(_) => None,
            Events::OnlyFor(_, tool) => Some(tool),
        };
        if let Some(clean) = clean_event(&source, &event, raw.get(), tool) {
            groups.extend(clean);
            continue;
        }
        let value: Value = match serde_json::from_str(raw.get()) {
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
        };
        parse_event(&source, &event, value, groups, &mut at);
    }
}

/// A group with only the keys the dispatcher reads; any other key fails the fast read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CleanGroup<'a> {
    #[serde(borrow, default)]
    matcher: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    hooks: Vec<CleanHandler<'a>>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(borrow, default)]
    protocol: Option<std::borrow::Cow<'a, str>>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CleanHandler<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    command: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    argv: Option<Vec<std::borrow::Cow<'a, str>>>,
    #[serde(default)]
    timeout: Option<f64>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(borrow, default)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    protocol: Option<std::borrow::Cow<'a, str>>,
}

/// An event's groups when they have the shape nearly every settings file has, with nothing to
/// warn about; `None` sends the event through the general path below, which reports each
/// problem. Reading straight into these structs, borrowing the file's strings, costs a fraction
/// of building a JSON tree of it (ordered maps, a copy of every string) and then walking that.
fn clean_event(
    source: &Rc<Source>,
    event: &str,
    raw: &str,
    tool: Option<&str>,
) -> Option<Vec<Group>> {
    /// Reads the groups one at a time, so that a group left unbuilt leaves no memory behind;
    /// the first one with something to warn about stops the read.
    struct Groups<'s> {
        source: &'s Rc<Source>,
        event: &'s str,
        tool: Option<&'s str>,
    }

    impl<'de> serde::de::Visitor<'de> for Groups<'_> {
        type Value = Vec<Group>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an array of groups")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Vec<Group>, A::Error> {
            let mut groups = Vec::new();
            let mut index = 0;
            while let Some(entry) = seq.next_element::<CleanGroup<'de>>()? {
                match clean_group(self.source, self.event, index, entry, self.tool) {
                    Some(Some(group)) => groups.push(group),
                    Some(None) => {}
                    None => return Err(serde::de::Error::custom("not the usual shape")),
                }
                index += 1;
            }
            Ok(groups)
        }
    }

    let mut de = serde_json::Deserializer::from_str(raw);
    let groups = de
        .deserialize_seq(Groups {
            source,
            event,
            tool,
        })
        .ok()?;
    de.end().ok()?;
    Some(groups)
}

/// One group read by [`clean_event`]: `None` when it has something to warn about, `Some(None)`
/// when it is left unbuilt (the dispatch for `tool` would pass over it).
fn clean_group(
    source: &Rc<Source>,
    event: &str,
    index: usize,
    entry: CleanGroup<'_>,
    tool: Option<&str>,
) -> Option<Option<Group>> {
    if entry.hooks.is_empty() {
        return None;
    }
    let enabled = entry.enabled.unwrap_or(true);
    let protocol = match entry.protocol.as_deref() {
        None => None,
        Some(name) => Some(Protocol::parse(name)?),
    };
    let mut protocols = Vec::with_capacity(entry.hooks.len());
    for handler in &entry.hooks {
        protocols.push(match handler.protocol.as_deref() {
            None => protocol.unwrap_or_default(),
            Some(name) => Protocol::parse(name)?,
        });
    }
    let speaks_claude =
        protocol == Some(Protocol::Claude) || protocols.iter().all(|p| *p == Protocol::Claude);
    // Every handler is checked, so an event with something to warn about still goes the
    // general way; only the building is saved for a group the dispatch would pass over.
    let build = tool.is_none_or(|tool| {
        enabled
            && (may_apply(entry.matcher.as_deref(), tool)
                || (speaks_claude
                    && claude::tool_names(tool)
                        .iter()
                        .any(|name| may_apply(entry.matcher.as_deref(), name))))
    });
    let mut handlers = Vec::with_capacity(if build { entry.hooks.len() } else { 0 });
    for (h, handler) in entry.hooks.into_iter().enumerate() {
        if handler.kind.as_deref().is_some_and(|k| k != "command") {
            return None;
        }
        let program = match (handler.command, handler.argv) {
            (Some(c), None) if !c.trim().is_empty() => {
                build.then(|| Program::Shell(c.into_owned()))
            }
            (None, Some(argv)) if argv.first().is_some_and(|p| !p.is_empty()) => build.then(|| {
                Program::Argv(argv.into_iter().map(std::borrow::Cow::into_owned).collect())
            }),
            _ => return None,
        };
        let secs = match handler.timeout.map(clamp_secs) {
            None => DEFAULT_TIMEOUT_SECS,
            Some((secs, None)) => secs,
            Some((_, Some(_))) => return None,
        };
        if handler.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
            return None;
        }
        let Some(program) = program else {
            continue;
        };
        handlers.push(Handler {
            index: h,
            program,
            timeout: Duration::from_secs_f64(secs),
            enabled: handler.enabled.unwrap_or(true),
            name: handler.name.map(std::borrow::Cow::into_owned),
            protocol: protocols[h],
        });
    }
    if !build {
        return Some(None);
    }
    Some(Some(Group {
        source: Rc::clone(source),
        event: event.to_string(),
        index,
        matcher: entry.matcher.map(std::borrow::Cow::into_owned),
        enabled,
        protocol,
        handlers,
        compiled: OnceCell::new(),
        parses: OnceCell::new(),
    }))
}

/// Returns true unless a group with `matcher` certainly passes over `tool`, judged as the
/// dispatch judges it: a list of names without it, or a regex its anchors rule out.
fn may_apply(matcher: Option<&str>, tool: &str) -> bool {
    match matcher {
        None => true,
        Some(m) if matcher::is_name_list(m) => {
            // A list with no name at all (`""`, `" | "`) matches every tool.
            let mut names = m
                .split('|')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .peekable();
            names.peek().is_none() || names.any(|n| n == tool)
        }
        Some(m) => !matcher::ruled_out(m, tool),
    }
}

/// Where problems are reported: the file, and the warnings list.
struct Location<'a> {
    file: &'a Path,
    warnings: &'a mut Vec<String>,
}

impl Location<'_> {
    fn warn(&mut self, path: EntryPath<'_>, message: impl fmt::Display) {
        self.warnings
            .push(format!("{}: {path}: {message}", self.file.display()));
    }
}

/// An entry's path such as `hooks.PreToolUse[1].hooks[0].timeout`, written out only when a
/// warning needs it: formatting it for every entry would cost more than parsing the file.
#[derive(Clone, Copy)]
struct EntryPath<'a> {
    event: &'a str,
    group: Option<usize>,
    handler: Option<usize>,
    key: Option<&'static str>,
}

impl<'a> EntryPath<'a> {
    fn event(event: &'a str) -> EntryPath<'a> {
        EntryPath {
            event,
            group: None,
            handler: None,
            key: None,
        }
    }

    fn group(self, index: usize) -> EntryPath<'a> {
        EntryPath {
            group: Some(index),
            ..self
        }
    }

    fn handler(self, index: usize) -> EntryPath<'a> {
        EntryPath {
            handler: Some(index),
            ..self
        }
    }

    fn key(self, key: &'static str) -> EntryPath<'a> {
        EntryPath {
            key: Some(key),
            ..self
        }
    }
}

impl fmt::Display for EntryPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hooks.{}", self.event)?;
        if let Some(group) = self.group {
            write!(f, "[{group}]")?;
        }
        if let Some(handler) = self.handler {
            write!(f, ".hooks[{handler}]")?;
        }
        if let Some(key) = self.key {
            write!(f, ".{key}")?;
        }
        Ok(())
    }
}

/// The `hooks` object's entries in file order, without parsing their values; `None` when the
/// file has no `hooks` (or `"hooks": null`).
fn top_level_hooks(text: &str) -> Result<Option<Vec<(String, &RawValue)>>, String> {
    /// One pass over the file: `hooks` is split into its events as it is read.
    #[derive(Deserialize)]
    struct Top<'a> {
        #[serde(borrow, default)]
        hooks: Option<Hooks<'a>>,
    }
    let first = text.trim_start().chars().next();
    if first != Some('{') {
        return Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) => "the top level is not a JSON object".to_string(),
            Err(e) => format!("invalid JSON: {e}"),
        });
    }
    let top: Top<'_> = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    match top.hooks {
        None | Some(Hooks::Null) => Ok(None),
        Some(Hooks::Events(events)) => Ok(Some(events)),
        Some(Hooks::Not(what)) => Err(format!("\"hooks\" must be an object of events, not {what}")),
    }
}

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

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn parse_event(
    source: &Rc<Source>,
    event: &str,
    value: Value,
    groups: &mut Vec<Group>,
    at: &mut Location<'_>,
) {
    let path = EntryPath::event(event);
    let Value::Array(entries) = value else {
        at.warn(
            path,
            format!(
                "must be an array of groups like [{{\"matcher\":\"write_file\",\"hooks\":[{{\"command\":\"...\"}}]}}], not {}; event skipped",
                describe(&value)
            ),
        );
        return;
    };
    for (index, entry) in entries.into_iter().enumerate() {
        if let Some(group) = parse_group(source, event, index, entry, path.group(index), at) {
            groups.push(group);
        }
    }
}

fn parse_group(
    source: &Rc<Source>,
    event: &str,
    index: usize,
    entry: Value,
    path: EntryPath<'_>,
    at: &mut Location<'_>,
) -> Option<Group> {
    let Value::Object(mut fields) = entry else {
        at.warn(
            path,
            format!(
                "a group must be an object {{\"matcher\":...,\"hooks\":[...]}}, not {}; skipped",
                describe(&entry)
            ),
        );
        return None;
    };
    let looks_like_handler = ["command", "argv", "type"]
        .iter()
        .any(|k| fields.contains_key(*k));
    let hooks = match fields.remove("hooks") {
        None | Some(Value::Null) if looks_like_handler => {
            at.warn(
                path,
                "a handler written directly under the event; wrap it in a group: {\"hooks\":[{\"command\":...}]}; skipped",
            );
            return None;
        }
        None | Some(Value::Null) => {
            at.warn(path, "no \"hooks\" array of handlers; group skipped");
            return None;
        }
        Some(Value::Array(hooks)) if hooks.is_empty() => {
            at.warn(
                path.key("hooks"),
                "is empty; add a handler like {\"command\":\"...\"}; group skipped",
            );
            return None;
        }
        Some(Value::Array(hooks)) => hooks,
        Some(other) => {
            at.warn(
                path.key("hooks"),
                format!(
                    "must be an array of handlers, not {}; group skipped",
                    describe(&other)
                ),
            );
            return None;
        }
    };
    let matcher = match fields.remove("matcher") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) => Some(m),
        Some(other) => {
            at.warn(
                path.key("matcher"),
                format!(
                    "must be a string such as \"write_file|str_replace\", not {}; group skipped",
                    describe(&other)
                ),
            );
            return None;
        }
    };
    let enabled = parse_enabled(fields.get("enabled"), path.key("enabled"), at);
    let protocol = match fields.get("protocol") {
        None | Some(Value::Null) => None,
        Some(value) => Some(parse_protocol(value, path.key("protocol"), "group", at)?),
    };
    let mut handlers = Vec::with_capacity(hooks.len());
    for (h, value) in hooks.into_iter().enumerate() {
        if let Some(handler) = parse_handler(h, value, protocol, path.handler(h), at) {
            handlers.push(handler);
        }
    }
    Some(Group {
        source: Rc::clone(source),
        event: event.to_string(),
        index,
        matcher,
        enabled,
        protocol,
        handlers,
        compiled: OnceCell::new(),
        parses: OnceCell::new(),
    })
}

fn parse_enabled(value: Option<&Value>, path: EntryPath<'_>, at: &mut Location<'_>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            at.warn(
                path,
                format!(
                    "must be true or false, not {}; treated as true",
                    short_json(other)
                ),
            );
            true
        }
    }
}

/// A `"protocol"` value; `None` (after a warning) when it names no protocol, since running a
/// handler in a protocol it does not speak would misread its answers.
fn parse_protocol(
    value: &Value,
    path: EntryPath<'_>,
    what: &str,
    at: &mut Location<'_>,
) -> Option<Protocol> {
    if let Some(protocol) = value.as_str().and_then(Protocol::parse) {
        return Some(protocol);
    }
    at.warn(
        path,
        format!(
            "{} is not a protocol (use \"claude\" for Claude Code hook scripts, or \"levelcode\"); {what} skipped",
            short_json(value)
        ),
    );
    None
}

fn parse_handler(
    index: usize,
    value: Value,
    group_protocol: Option<Protocol>,
    path: EntryPath<'_>,
    at: &mut Location<'_>,
) -> Option<Handler> {
    let Value::Object(mut fields) = value else {
        at.warn(
            path,
            format!(
                "a handler must be an object like {{\"command\":\"...\"}}, not {}; skipped",
                describe(&value)
            ),
        );
        return None;
    };
    match fields.get("type") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if t == "command" => {}
        Some(other) => {
            at.warn(
                path.key("type"),
                format!(
                    "{} is not a handler type this version runs (only \"command\"); handler skipped",
                    short_json(other)
                ),
            );
            return None;
        }
    }
    let command = fields.remove("command").filter(|v| !v.is_null());
    let argv = fields.remove("argv").filter(|v| !v.is_null());
    let program = match (command, argv) {
        (Some(_), Some(_)) => {
            at.warn(
                path,
                "both command and argv given; keep one; handler skipped",
            );
            return None;
        }
        (None, None) => {
            at.warn(
                path,
                "neither command nor argv given; add \"command\":\"...\" or \"argv\":[...]; handler skipped",
            );
            return None;
        }
        (Some(Value::String(c)), None) if !c.trim().is_empty() => Program::Shell(c),
        (Some(other), None) => {
            at.warn(
                path.key("command"),
                format!(
                    "must be a non-empty string, not {}; handler skipped",
                    short_json(&other)
                ),
            );
            return None;
        }
        (None, Some(Value::Array(items)))
            if !items.is_empty()
                && items.iter().all(Value::is_string)
                && items[0].as_str().is_some_and(|s| !s.is_empty()) =>
        {
            Program::Argv(
                items
                    .into_iter()
                    .filter_map(|v| match v {
                        Value::String(s) => Some(s),
                        _ => None,
                    })
                    .collect(),
            )
        }
        (None, Some(other)) => {
            at.warn(
                path.key("argv"),
                format!(
                    "must be a non-empty array of strings, program first, not {}; handler skipped",
                    short_json(&other)
                ),
            );
            return None;
        }
    };
    let (secs, problem) = clamp_timeout(fields.get("timeout"));
    if let Some(problem) = problem {
        at.warn(path.key("timeout"), problem);
    }
    let enabled = parse_enabled(fields.get("enabled"), path.key("enabled"), at);
    let name = match fields.remove("name") {
        None | Some(Value::Null) => None,
        Some(Value::String(n)) if !n.trim().is_empty() => Some(n),
        Some(other) => {
            at.warn(
                path.key("name"),
                format!(
                    "must be a non-empty string, not {}; ignored",
                    short_json(&other)
                ),
            );
            None
        }
    };
    let protocol = match fields.get("protocol") {
        None | Some(Value::Null) => group_protocol.unwrap_or_default(),
        Some(value) => parse_protocol(value, path.key("protocol"), "handler", at)?,
    };
    Some(Handler {
        index,
        program,
        timeout: Duration::from_secs_f64(secs),
        enabled,
        name,
        protocol,
    })
}

/// The timeout in seconds for a handler's `timeout` value, and the warning to give, if any
/// (contract §4): missing or null is 10; not a number or ≤ 0 is 10 with a warning; over 600 is
/// 600 with a warning, which from 1000 on also says that the unit is seconds.
pub fn clamp_timeout(value: Option<&Value>) -> (f64, Option<String>) {
    let secs = match value {
        None | Some(Value::Null) => return (DEFAULT_TIMEOUT_SECS, None),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(other) => {
            return (
                DEFAULT_TIMEOUT_SECS,
                Some(format!(
                    "must be a number of seconds, not {}; using 10",
                    short_json(other)
                )),
            )
        }
    };
    clamp_secs(secs)
}

/// [`clamp_timeout`] for a number.
fn clamp_secs(secs: f64) -> (f64, Option<String>) {
    if secs.is_nan() || secs <= 0.0 {
        return (
            DEFAULT_TIMEOUT_SECS,
            Some(format!(
                "{secs} is not a positive number of seconds; using 10"
            )),
        );
    }
    if secs > MAX_TIMEOUT_SECS {
        let unit = if secs >= 1000.0 {
            " (the unit is seconds, not milliseconds)"
        } else {
            ""
        };
        return (
            MAX_TIMEOUT_SECS,
            Some(format!(
                "{secs} seconds is over the 600-second maximum{unit}; using 600"
            )),
        );
    }
    (secs, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn timeout_rules() {
        assert_eq!(clamp_timeout(None), (10.0, None));
        assert_eq!(clamp_timeout(Some(&Value::Null)), (10.0, None));
        assert_eq!(clamp_timeout(Some(&json!(2.5))), (2.5, None));
        assert_eq!(clamp_timeout(Some(&json!(600))), (600.0, None));
        let (secs, warning) = clamp_timeout(Some(&json!(0)));
        assert_eq!(secs, 10.0);
        assert!(warning.unwrap().contains("positive"));
        let (secs, warning) = clamp_timeout(Some(&json!(-1)));
        assert_eq!(secs, 10.0);
        assert!(warning.is_some());
        let (secs, warning) = clamp_timeout(Some(&json!("5")));
        assert_eq!(secs, 10.0);
        assert!(warning.unwrap().contains("number of seconds"));
        let (secs, warning) = clamp_timeout(Some(&json!(601)));
        assert_eq!(secs, 600.0);
        assert!(!warning.unwrap().contains("milliseconds"));
        let (secs, warning) = clamp_timeout(Some(&json!(1000)));
        assert_eq!(secs, 600.0);
        assert!(warning.unwrap().contains("unit is seconds"));
    }

    fn parse_text(text: &str) -> (Vec<Group>, Vec<String>) {
        let mut groups = Vec::new();
        let mut warnings = Vec::new();
        let source = Source {
            layer: LayerKind::Cli,
            file: Path::new("s.json").into(),
        };
        parse(
            source,
            text.as_bytes(),
            Events::All,
            &mut groups,
            &mut warnings,
        );
        (groups, warnings)
    }

    /// An event's array read by the general path only, as if the fast read did not exist.
    fn general(source: &Rc<Source>, raw: &str) -> (Vec<Group>, Vec<String>) {
        let mut groups = Vec::new();
        let mut warnings = Vec::new();
        match serde_json::from_str::<Value>(raw) {
            Ok(value) => {
                let mut at = Location {
                    file: Path::new("s.json"),
                    warnings: &mut warnings,
                };
                parse_event(source, "Stop", value, &mut groups, &mut at);
            }
            Err(e) => warnings.push(e.to_string()),
        }
        (groups, warnings)
    }

    fn handler_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let key = prop::sample::select(vec![
            "type", "command", "argv", "timeout", "enabled", "name", "note",
        ]);
        let value = prop::sample::select(vec![
            "null",
            "true",
            "false",
            "\"\"",
            "\" \"",
            "\"echo hi\"",
            "\"command\"",
            "\"e\\u0063ho \\\"x\\\"\"",
            "0",
            "-1",
            "5",
            "2.5",
            "700",
            "1e3",
            "[]",
            "[\"sh\"]",
            "[\"\", \"b\"]",
            "[\"a\", 1]",
            "{}",
        ]);
        let program = prop::sample::select(vec![
            "\"command\":\"echo hi\"",
            "\"command\":\"e\\u0063ho \\\"x\\\"\"",
            "\"argv\":[\"sh\",\"-c\",\"true\"]",
            "\"argv\":[\"prog\"]",
            "\"command\":null,\"argv\":[\"p\"]",
        ]);
        // Mostly the usual shape, a program and a few valid keys, with now and then one
        // key of any value.
        let usual = (
            program,
            prop::collection::vec((key.clone(), value.clone()), 0..2),
            prop::sample::subsequence(
                vec![
                    "\"type\":\"command\"",
                    "\"timeout\":5",
                    "\"timeout\":null",
                    "\"enabled\":false",
                    "\"name\":\"n\"",
                ],
                0..3,
            ),
        )
            .prop_map(|(program, odd, valid)| {
                let mut fields: Vec<String> = vec![program.to_string()];
                fields.extend(valid.iter().map(|v| v.to_string()));
                fields.extend(odd.iter().map(|(k, v)| format!("\"{k}\":{v}")));
                format!("{{{}}}", fields.join(","))
            });
        let any = prop::collection::vec((key, value), 0..5).prop_map(|fields| {
            let fields: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            format!("{{{}}}", fields.join(","))
        });
        prop_oneof![3 => usual, 1 => any]
    }

    fn event_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let hooks = prop_oneof![
            8 => prop::collection::vec(handler_text(), 0..4).prop_map(|h| format!("[{}]", h.join(","))),
            1 => prop::sample::select(vec!["null", "{}", "\"x\""]).prop_map(String::from),
        ];
        let group = (
            prop::option::of(prop::sample::select(vec![
                "null",
                "\"write_file\"",
                "\"^a\"",
                "1",
            ])),
            prop::option::weighted(0.95, hooks),
            prop::option::of(prop::sample::select(vec![
                "null", "false", "true", "\"no\"",
            ])),
            prop::bool::weighted(0.1),
        )
            .prop_map(|(matcher, hooks, enabled, extra)| {
                let mut fields = Vec::new();
                if let Some(m) = matcher {
                    fields.push(format!("\"matcher\":{m}"));
                }
                if let Some(h) = hooks {
                    fields.push(format!("\"hooks\":{h}"));
                }
                if let Some(e) = enabled {
                    fields.push(format!("\"enabled\":{e}"));
                }
                if extra {
                    fields.push("\"comment\":\"x\"".into());
                }
                format!("{{{}}}", fields.join(","))
            });
        prop::collection::vec(group, 0..4).prop_map(|g| format!("[{}]", g.join(",")))
    }

    proptest::proptest! {
        // Most generated events have something to warn about; enough cases that a few dozen
        // take the fast read.
        #![proptest_config(proptest::test_runner::Config::with_cases(2000))]

        /// Whenever the fast read takes an event, the general path reads the same groups from
        /// it and has nothing to warn about.
        #[test]
        fn the_fast_read_agrees_with_the_general_path(raw in event_text()) {
            let source = Rc::new(Source { layer: LayerKind::Project, file: Path::new("s.json").into() });
            if let Some(fast) = clean_event(&source, "Stop", &raw, None) {
                let (general, warnings) = general(&source, &raw);
                proptest::prop_assert!(warnings.is_empty(), "{}: {:?}", raw, warnings);
                proptest::prop_assert_eq!(format!("{fast:?}"), format!("{general:?}"), "{}", raw);
            }
        }
    }

    /// Events of groups with nothing to warn about, their matchers and switches of every kind.
    fn clean_event_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let group = (
            prop::option::of(prop::sample::select(vec![
                "\"write_file\"",
                "\"^a\"",
                "\"write_file|str_replace\"",
                "\"^read_\"",
                "\"files?$\"",
                "\"\"",
                "\"*\"",
                "\" | \"",
                "\"(\"",
                "\"^x(\"",
                "\"x\"",
                "\"^(read|write)_files?$\"",
                "\"^write_file$\"",
                "null",
            ])),
            prop::option::of(prop::sample::select(vec!["true", "false", "null"])),
            prop::sample::select(vec![
                r#"[{"command":"echo hi"}]"#,
                r#"[{"argv":["true"]},{"command":"x","enabled":false}]"#,
            ]),
        )
            .prop_map(|(matcher, enabled, hooks)| {
                let mut fields = vec![format!("\"hooks\":{hooks}")];
                if let Some(m) = matcher {
                    fields.push(format!("\"matcher\":{m}"));
                }
                if let Some(e) = enabled {
                    fields.push(format!("\"enabled\":{e}"));
                }
                format!("{{{}}}", fields.join(","))
            });
        prop::collection::vec(group, 1..6).prop_map(|g| format!("[{}]", g.join(",")))
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(2000))]

        /// Read for one tool, an event keeps every group the dispatch would use for that tool,
        /// in order, and builds no group it does not read without it.
        #[test]
        fn the_read_for_one_tool_keeps_what_the_dispatch_uses(
            raw in clean_event_text(),
            tool in proptest::sample::select(vec!["write_file", "read_files", "x"]),
        ) {
            let source = Rc::new(Source { layer: LayerKind::Project, file: Path::new("s.json").into() });
            let all = clean_event(&source, "PreToolUse", &raw, None);
            let for_tool = clean_event(&source, "PreToolUse", &raw, Some(tool));
            proptest::prop_assert_eq!(all.is_some(), for_tool.is_some());
            let (Some(all), Some(for_tool)) = (all, for_tool) else {
                return Err(proptest::test_runner::TestCaseError::fail(format!("not read fast: {raw}")));
            };
            let kept: Vec<usize> = for_tool.iter().map(|g| g.index).collect();
            let mut from_all = all.iter().filter(|g| kept.contains(&g.index));
            for group in &for_tool {
                let same = from_all.next().map(|g| format!("{g:?}"));
                proptest::prop_assert_eq!(same, Some(format!("{group:?}")));
            }
            for group in &all {
                let used = group.enabled
                    && !group.ruled_out(tool)
                    && group.compiled_matcher().as_ref().map_or(true, |m| m.matches(tool));
                proptest::prop_assert!(!used || kept.contains(&group.index), "{} lost group {}", raw, group.index);
            }
        }
    }

    #[test]
    fn the_fast_read_takes_the_usual_shape() {
        let source = Rc::new(Source {
            layer: LayerKind::Project,
            file: Path::new("s.json").into(),
        });
        let raw = r#"[{"matcher":"write_file","hooks":[{"type":"command","command":"./x.sh","timeout":5,"name":"x"},{"argv":["a","b"],"enabled":false}]},{"hooks":[{"command":"e\u0063ho"}],"enabled":null}]"#;
        let fast = clean_event(&source, "Stop", raw, None).expect("the usual shape is read fast");
        assert_eq!(
            format!("{fast:?}"),
            format!("{:?}", general(&source, raw).0)
        );
        assert_eq!(fast[1].handlers[0].program, Program::Shell("echo".into()));
        for unusual in [
            r#"[{"hooks":[{"command":"a","extra":1}]}]"#,
            r#"[{"hooks":[{"command":"a","command":"b"}]}]"#,
            r#"[{"hooks":[{"command":"a","timeout":0}]}]"#,
            r#"[{"hooks":[]}]"#,
        ] {
            assert!(
                clean_event(&source, "Stop", unusual, None).is_none(),
                "{unusual}"
            );
        }
    }

    #[test]
    fn one_bad_handler_keeps_its_siblings() {
        let (groups, warnings) = parse_text(
            r#"{"hooks":{"Stop":[{"hooks":[{"command":"a","argv":["b"]},{"command":"c"}]}]}}"#,
        );
        assert_eq!(groups[0].handlers.len(), 1);
        assert_eq!(groups[0].handlers[0].index, 1);
        assert_eq!(
            warnings,
            ["s.json: hooks.Stop[0].hooks[0]: both command and argv given; keep one; handler skipped"]
        );
    }

    #[test]
    fn handler_directly_under_event_is_named() {
        let (groups, warnings) = parse_text(r#"{"hooks":{"Stop":[{"command":"x"}]}}"#);
        assert!(groups.is_empty());
        assert!(warnings[0].contains("hooks.Stop[0]: a handler written directly under the event"));
    }

    #[test]
    fn hooks_not_object_skips_layer() {
        for (hooks, what) in [
            ("[1, {\"a\": [2]}]", "an array"),
            ("\"x\"", "a string"),
            ("\"\\u0078\"", "a string"),
            ("true", "a boolean"),
            ("-1", "a number"),
            ("1.5", "a number"),
        ] {
            let (_, warnings) = parse_text(&format!(r#"{{"hooks":{hooks},"theme":"dark"}}"#));
            assert_eq!(
                warnings,
                [format!(
                    "s.json: \"hooks\" must be an object of events, not {what}; layer skipped"
                )]
            );
        }
        for nothing in [
            r#"{"hooks":null}"#,
            r#"{"theme":"dark"}"#,
            r#"{"hooks":{}}"#,
        ] {
            let (groups, warnings) = parse_text(nothing);
            assert!(
                groups.is_empty() && warnings.is_empty(),
                "{nothing}: {warnings:?}"
            );
        }
        let (_, warnings) = parse_text(r#"{"hooks":{"Stop":[}}"#);
        assert!(
            warnings[0].starts_with("s.json: invalid JSON: "),
            "{warnings:?}"
        );
        let (_, warnings) = parse_text("[]");
        assert!(warnings[0].contains("not a JSON object"));
    }
}
