//! The typed fast path: an event's groups read straight into structs that borrow the file's
//! strings, when they hold nothing to warn about. Anything unusual falls back to [`super::checked`].
//!
//! The file is read by the hand-written [`crate::settings::json`] reader first, which passes over the other
//! events and keys at a few instructions a byte; whatever it cannot vouch for is read by
//! `serde_json` into the same structs, as before it existed, so the two always agree.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::OnceLock;
use std::time::Duration;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::checked::clamp_secs;
use super::*;
use crate::settings::json::{Read, Reader, Unsure};
use crate::settings::matcher;
use crate::settings::sandbox::{self, Sandbox, Word};

/// The `hooks` object's events in file order, those `events` wants read into groups when
/// they hold nothing to warn about, else kept as written; `None` when the file has no `hooks`
/// (or `"hooks": null`); and the text of the file's own `"sandbox"` when its layer reads one.
/// [`Unsure`] when the file is not a plain object whose keys have no escapes, with at most one
/// `hooks` that is an object or `null` (and at most one `sandbox`): then `serde_json` reads it,
/// and words what is wrong. Events not wanted are checked and passed over, not listed.
#[allow(clippy::type_complexity)]
pub(super) fn hooks_of<'a>(
    text: &'a str,
    source: &Arc<Source>,
    events: Events<'_>,
) -> Read<(
    Option<Vec<(Cow<'a, str>, super::Reading<'a>)>>,
    Option<&'a str>,
)> {
    let mut reader = Reader::new(text);
    let mut hooks = None;
    let mut seen = false;
    let mut layer_sandbox = None;
    let own_sandbox = source.layer.reads_layer_sandbox();
    reader.object(|reader, key| {
        let key = key.plain().ok_or(Unsure)?;
        if key == sandbox::KEY && own_sandbox {
            if layer_sandbox.is_some() {
                return Err(Unsure);
            }
            layer_sandbox = Some(reader.value()?);
            return Ok(());
        }
        if key != "hooks" {
            return reader.skip();
        }
        if std::mem::replace(&mut seen, true) {
            // A second `hooks` is an error of `serde_json`'s to report.
            return Err(Unsure);
        }
        if reader.null()? {
            return Ok(());
        }
        let mut read = Vec::new();
        reader.object(|reader, event| {
            let name = event.plain().ok_or(Unsure)?;
            let Some(tool) = events.wants(name) else {
                return reader.skip();
            };
            // Read where it stands; when it cannot be, its text is passed over and kept.
            let start = reader.position();
            let outcome = read_groups(reader, source, name, tool);
            let text = match outcome {
                Ok(Some(groups)) => {
                    read.push((Cow::Borrowed(name), super::Reading::Clean(groups)));
                    return Ok(());
                }
                Ok(None) => super::Reading::Unclean,
                Err(Unsure) => super::Reading::Unsure,
            };
            reader.set_position(start);
            read.push((Cow::Borrowed(name), text(reader.value()?)));
            Ok(())
        })?;
        hooks = Some(read);
        Ok(())
    })?;
    reader.end()?;
    // `"sandbox": null` says nothing, as `serde_json` reads it.
    Ok((hooks, layer_sandbox.filter(|raw| *raw != "null")))
}

/// A group with only the keys the dispatcher reads; any other key fails the fast read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CleanGroup<'a> {
    #[serde(borrow, default)]
    matcher: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "objects_only")]
    hooks: Vec<CleanHandler<'a>>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(borrow, default)]
    protocol: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default, rename = "if")]
    filter: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    sandbox: Option<Word<'a>>,
}
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CleanHandler<'a> {
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
    #[serde(borrow, default, rename = "if")]
    filter: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    args: Option<Vec<std::borrow::Cow<'a, str>>>,
    #[serde(borrow, default)]
    shell: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default, rename = "onFailure")]
    on_failure: Option<std::borrow::Cow<'a, str>>,
    /// `async` and Claude Code's `asyncRewake`, which implies it (contract §21); anything but a
    /// boolean goes the general way, which warns.
    #[serde(default, rename = "async")]
    run_async: Option<bool>,
    #[serde(default, rename = "asyncRewake")]
    async_rewake: Option<bool>,
    #[serde(borrow, default)]
    sandbox: Option<Word<'a>>,
    /// Claude Code's fields that a dispatch passes over without a word (`validate` says what
    /// each would have done), taken here only with the kind of value Claude Code writes there:
    /// anything else goes the general way, which also passes it over.
    #[serde(borrow, default, rename = "statusMessage")]
    _status_message: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, rename = "once")]
    _once: Option<bool>,
}

/// A value read only from a JSON object. serde's derive also reads a struct from an array of
/// its fields in order (`["write_file", [...]]` as a group), which the general path rightly
/// refuses with a warning; the fast path must not take it either.
struct ObjectOnly<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjectOnly<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Object<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        deserializer
            .deserialize_map(Object(PhantomData))
            .map(ObjectOnly)
    }
}

/// A group's `hooks`, each handler read only from an object (see [`ObjectOnly`]).
fn objects_only<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<CleanHandler<'de>>, D::Error> {
    let handlers = Vec::<ObjectOnly<CleanHandler<'de>>>::deserialize(deserializer)?;
    Ok(handlers.into_iter().map(|h| h.0).collect())
}

/// An event's groups when they have the shape nearly every settings file has, with nothing to
/// warn about; `None` sends the event through the general path below, which reports each
/// problem. Reading straight into these structs, borrowing the file's strings, costs a fraction
/// of building a JSON tree of it (ordered maps, a copy of every string) and then walking that.
pub(super) fn clean_event(
    source: &Arc<Source>,
    event: &str,
    raw: &str,
    tool: Option<&str>,
) -> Option<Vec<Group>> {
    read_event(source, event, raw, tool)
        .unwrap_or_else(|Unsure| serde_event(source, event, raw, tool))
}

/// [`clean_event`] by the [`crate::settings::json`] reader: [`Unsure`] for anything but groups of exactly the
/// fields of [`CleanGroup`] and [`CleanHandler`], each at most once, with the kinds of value
/// `serde_json` takes for them, which are then judged by the same [`clean_group`].
fn read_event(
    source: &Arc<Source>,
    event: &str,
    raw: &str,
    tool: Option<&str>,
) -> Read<Option<Vec<Group>>> {
    let mut reader = Reader::new(raw);
    let groups = read_groups(&mut reader, source, event, tool)?;
    reader.end()?;
    Ok(groups)
}

/// [`read_event`] of the array that comes next in `reader`.
fn read_groups(
    reader: &mut Reader<'_>,
    source: &Arc<Source>,
    event: &str,
    tool: Option<&str>,
) -> Read<Option<Vec<Group>>> {
    let mut groups = Vec::new();
    let mut index = 0;
    let mut clean = true;
    // One list of handlers for every group: each group's are taken out of it as it is judged.
    let mut entry = CleanGroup {
        matcher: None,
        hooks: Vec::new(),
        enabled: None,
        protocol: None,
        filter: None,
        sandbox: None,
    };
    reader
        .array(|reader| {
            read_group(reader, &mut entry)?;
            match clean_group(source, event, index, &mut entry, tool) {
                Some(Some(group)) => groups.push(group),
                Some(None) => {}
                None => {
                    // Something to warn about: the general path reads the event.
                    clean = false;
                    return Err(Unsure);
                }
            }
            index += 1;
            Ok(())
        })
        .or_else(|unsure| if clean { Err(unsure) } else { Ok(()) })?;
    Ok(clean.then_some(groups))
}

/// Which fields of a group or handler were read: a second one is `serde_json`'s to refuse. One
/// flag per name of the object's field list ([`GROUP_FIELDS`], [`HANDLER_FIELDS`]), so the flags
/// grow with the list.
struct Seen<const N: usize>([bool; N]);

/// The flags of a group's fields and of a handler's.
type GroupSeen = Seen<{ GROUP_FIELDS.len() }>;
type HandlerSeen = Seen<{ HANDLER_FIELDS.len() }>;

impl<const N: usize> Seen<N> {
    fn new() -> Seen<N> {
        Seen([false; N])
    }

    /// `field`, the first time it is read; [`Unsure`] for a name that is no field (`None`), or
    /// a field read before.
    fn first<F: Copy + Into<usize>>(&mut self, field: Option<F>) -> Read<F> {
        let field = field.ok_or(Unsure)?;
        if std::mem::replace(&mut self.0[field.into()], true) {
            return Err(Unsure);
        }
        Ok(field)
    }

    fn has(&self, at: usize) -> bool {
        self.0[at]
    }
}

/// The fields of a group the reader reads.
#[derive(Clone, Copy)]
enum GroupField {
    Matcher,
    Hooks,
    Enabled,
    Protocol,
    If,
    Sandbox,
}

impl GroupField {
    /// The field a key names. (A `match`, which compiles to a few comparisons; the names are
    /// those of [`GROUP_FIELDS`], which a test checks.)
    fn of(key: &str) -> Option<GroupField> {
        Some(match key {
            "matcher" => GroupField::Matcher,
            "hooks" => GroupField::Hooks,
            "enabled" => GroupField::Enabled,
            "protocol" => GroupField::Protocol,
            "if" => GroupField::If,
            "sandbox" => GroupField::Sandbox,
            _ => return None,
        })
    }
}

impl From<GroupField> for usize {
    fn from(field: GroupField) -> usize {
        field as usize
    }
}

const GROUP_FIELDS: [(&str, GroupField); 6] = [
    ("matcher", GroupField::Matcher),
    ("hooks", GroupField::Hooks),
    ("enabled", GroupField::Enabled),
    ("protocol", GroupField::Protocol),
    ("if", GroupField::If),
    ("sandbox", GroupField::Sandbox),
];

/// The fields of a handler the reader reads: those every handler has
/// ([`crate::settings::kind::COMMON_FIELDS`]) and those of the kinds it reads, `command` alone
/// today ([`crate::settings::kind::KINDS`]); a handler with any other field, or of another kind,
/// goes the general way.
#[derive(Clone, Copy)]
enum HandlerField {
    Type,
    Command,
    Argv,
    Timeout,
    Enabled,
    Name,
    Protocol,
    If,
    Args,
    Shell,
    OnFailure,
    Sandbox,
    StatusMessage,
    Async,
    AsyncRewake,
    Once,
}

impl HandlerField {
    /// The field a key names, as [`GroupField::of`] (the names of [`HANDLER_FIELDS`]).
    fn of(key: &str) -> Option<HandlerField> {
        Some(match key {
            "type" => HandlerField::Type,
            "command" => HandlerField::Command,
            "argv" => HandlerField::Argv,
            "timeout" => HandlerField::Timeout,
            "enabled" => HandlerField::Enabled,
            "name" => HandlerField::Name,
            "protocol" => HandlerField::Protocol,
            "if" => HandlerField::If,
            "args" => HandlerField::Args,
            "shell" => HandlerField::Shell,
            "onFailure" => HandlerField::OnFailure,
            "statusMessage" => HandlerField::StatusMessage,
            "async" => HandlerField::Async,
            "asyncRewake" => HandlerField::AsyncRewake,
            "once" => HandlerField::Once,
            "sandbox" => HandlerField::Sandbox,
            _ => return None,
        })
    }
}

impl From<HandlerField> for usize {
    fn from(field: HandlerField) -> usize {
        field as usize
    }
}

const HANDLER_FIELDS: [(&str, HandlerField); 16] = [
    ("type", HandlerField::Type),
    ("command", HandlerField::Command),
    ("argv", HandlerField::Argv),
    ("timeout", HandlerField::Timeout),
    ("enabled", HandlerField::Enabled),
    ("name", HandlerField::Name),
    ("protocol", HandlerField::Protocol),
    ("if", HandlerField::If),
    ("args", HandlerField::Args),
    ("shell", HandlerField::Shell),
    ("onFailure", HandlerField::OnFailure),
    ("sandbox", HandlerField::Sandbox),
    ("statusMessage", HandlerField::StatusMessage),
    ("async", HandlerField::Async),
    ("asyncRewake", HandlerField::AsyncRewake),
    ("once", HandlerField::Once),
];

/// A string or `null`, as `Option<Cow<str>>` takes it.
fn optional_text<'a>(reader: &mut Reader<'a>) -> Read<Option<Cow<'a, str>>> {
    if reader.peek() == Some(b'"') {
        return reader.string()?.decoded().map(Some);
    }
    match reader.null()? {
        true => Ok(None),
        false => Err(Unsure),
    }
}

/// An array of strings or `null`, as `Option<Vec<Cow<str>>>` takes it.
fn optional_strings<'a>(reader: &mut Reader<'a>) -> Read<Option<Vec<Cow<'a, str>>>> {
    if reader.null()? {
        return Ok(None);
    }
    let mut strings = Vec::new();
    reader.array(|reader| {
        strings.push(reader.string()?.decoded()?);
        Ok(())
    })?;
    Ok(Some(strings))
}

/// A `sandbox` that is a boolean, a string or `null`; an object goes the general way.
fn optional_word<'a>(reader: &mut Reader<'a>) -> Read<Option<Word<'a>>> {
    if reader.peek() == Some(b'"') {
        return Ok(Some(Word::Text(reader.string()?.decoded()?)));
    }
    Ok(reader.null_or_bool()?.map(Word::Bool))
}

/// A group object with only [`CleanGroup`]'s fields, read into `entry`, whose `hooks` are
/// empty.
fn read_group<'a>(reader: &mut Reader<'a>, entry: &mut CleanGroup<'a>) -> Read<()> {
    let mut seen = GroupSeen::new();
    let (mut matcher, mut enabled, mut protocol, mut filter) = (None, None, None, None);
    let mut sandbox = None;
    entry.hooks.clear();
    reader.object(|reader, key| {
        match seen.first(GroupField::of(key.plain().ok_or(Unsure)?))? {
            GroupField::Matcher => matcher = optional_text(reader)?,
            GroupField::Hooks => reader.array(|reader| {
                entry.hooks.push(read_handler(reader)?);
                Ok(())
            })?,
            GroupField::Enabled => enabled = reader.null_or_bool()?,
            GroupField::Protocol => protocol = optional_text(reader)?,
            GroupField::If => filter = optional_text(reader)?,
            GroupField::Sandbox => sandbox = optional_word(reader)?,
        }
        Ok(())
    })?;
    if !seen.has(GroupField::Hooks as usize) {
        // No `hooks`: `serde_json` says so.
        return Err(Unsure);
    }
    entry.matcher = matcher;
    entry.enabled = enabled;
    entry.protocol = protocol;
    entry.filter = filter;
    entry.sandbox = sandbox;
    Ok(())
}

/// A handler object with only [`CleanHandler`]'s fields.
fn read_handler<'a>(reader: &mut Reader<'a>) -> Read<CleanHandler<'a>> {
    let mut seen = HandlerSeen::new();
    let mut handler = CleanHandler {
        kind: None,
        command: None,
        argv: None,
        timeout: None,
        enabled: None,
        name: None,
        protocol: None,
        filter: None,
        args: None,
        shell: None,
        on_failure: None,
        sandbox: None,
        _status_message: None,
        run_async: None,
        async_rewake: None,
        _once: None,
    };
    reader.object(|reader, key| {
        match seen.first(HandlerField::of(key.plain().ok_or(Unsure)?))? {
            HandlerField::Type => handler.kind = optional_text(reader)?,
            HandlerField::Command => handler.command = optional_text(reader)?,
            HandlerField::Argv => handler.argv = optional_strings(reader)?,
            HandlerField::Timeout => {
                if !reader.null()? {
                    handler.timeout = Some(seconds(reader.number()?)?);
                }
            }
            HandlerField::Enabled => handler.enabled = reader.null_or_bool()?,
            HandlerField::Name => handler.name = optional_text(reader)?,
            HandlerField::Protocol => handler.protocol = optional_text(reader)?,
            HandlerField::If => handler.filter = optional_text(reader)?,
            HandlerField::Args => handler.args = optional_strings(reader)?,
            HandlerField::Shell => handler.shell = optional_text(reader)?,
            HandlerField::OnFailure => handler.on_failure = optional_text(reader)?,
            HandlerField::Sandbox => handler.sandbox = optional_word(reader)?,
            HandlerField::StatusMessage => handler._status_message = optional_text(reader)?,
            HandlerField::Async => handler.run_async = reader.null_or_bool()?,
            HandlerField::AsyncRewake => handler.async_rewake = reader.null_or_bool()?,
            HandlerField::Once => handler._once = reader.null_or_bool()?,
        }
        Ok(())
    })?;
    Ok(handler)
}

/// A number as `serde_json` reads it into an `f64`: a plain integer of up to fifteen digits is
/// converted exactly as it converts one, and anything else is given to it.
fn seconds(number: &str) -> Read<f64> {
    if number.len() <= 15 && number.bytes().all(|b| b.is_ascii_digit()) {
        #[allow(clippy::cast_precision_loss)] // fifteen digits are exact in an f64
        return number.parse::<u64>().map(|n| n as f64).map_err(|_| Unsure);
    }
    serde_json::from_str(number).map_err(|_| Unsure)
}

/// [`clean_event`] by `serde_json`, for what the [`crate::settings::json`] reader leaves to it.
pub(super) fn serde_event(
    source: &Arc<Source>,
    event: &str,
    raw: &str,
    tool: Option<&str>,
) -> Option<Vec<Group>> {
    /// Reads the groups one at a time, so that a group left unbuilt leaves no memory behind;
    /// the first one with something to warn about stops the read.
    struct Groups<'s> {
        source: &'s Arc<Source>,
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
            while let Some(ObjectOnly(mut entry)) =
                seq.next_element::<ObjectOnly<CleanGroup<'de>>>()?
            {
                match clean_group(self.source, self.event, index, &mut entry, self.tool) {
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
pub(super) fn clean_group(
    source: &Arc<Source>,
    event: &str,
    index: usize,
    entry: &mut CleanGroup<'_>,
    tool: Option<&str>,
) -> Option<Option<Group>> {
    if entry.hooks.is_empty() {
        return None;
    }
    let enabled = entry.enabled.unwrap_or(true);
    let group_sandbox = match entry.sandbox.take() {
        None => None,
        Some(word) => sandbox::from_word(word)?,
    };
    let protocol = match entry.protocol.as_deref() {
        None => None,
        Some(name) => Some(Protocol::parse(name)?),
    };
    // In an agent's own file its handlers speak its protocol, with its default timeout.
    let layer_protocol = source.layer.protocol();
    let default_secs = source
        .layer
        .default_timeout(EventKind::of(event))
        .unwrap_or(DEFAULT_TIMEOUT_SECS);
    // A handler's own protocol, else the group's, else the layer's; `None` for a value that
    // names none, which the general path warns about.
    let protocol_of = |handler: &CleanHandler<'_>| match handler.protocol.as_deref() {
        None => Some(protocol.unwrap_or(layer_protocol)),
        Some(name) => Protocol::parse(name),
    };
    // Only a group where some protocol other than levelcode's is named (or is its layer's)
    // can have a matcher tested against other names: the others need not ask the table.
    let mut foreign = protocol.unwrap_or(layer_protocol) != Protocol::LEVELCODE;
    for handler in &entry.hooks {
        foreign |= !protocol_of(handler)?.is_levelcode();
    }
    let other_names = |tool: &str| -> &'static [&'static str] {
        if !foreign {
            return &[];
        }
        Protocol::of_group(protocol, entry.hooks.iter().filter_map(protocol_of)).tool_names(tool)
    };
    // Every handler is checked, so an event with something to warn about still goes the
    // general way; only the building is saved for a group the dispatch would pass over.
    let build = tool.is_none_or(|tool| {
        enabled
            && (may_apply(entry.matcher.as_deref(), tool)
                || other_names(tool)
                    .iter()
                    .any(|name| may_apply(entry.matcher.as_deref(), name)))
    });
    let mut handlers = Vec::with_capacity(if build { entry.hooks.len() } else { 0 });
    for (h, handler) in entry.hooks.drain(..).enumerate() {
        let handler_protocol = protocol_of(&handler)?;
        // Only the kinds this reader reads; any other, or a `type` that names none, goes the
        // general way, which warns.
        match handler
            .kind
            .as_deref()
            .map_or(Some(Kind::DEFAULT), Kind::parse)?
        {
            Kind::Command => {}
            Kind::Http | Kind::Prompt | Kind::Agent => return None,
        }
        let program = clean_program(
            handler.command,
            handler.argv,
            handler.args,
            handler.shell,
            build,
        )?;
        let on_failure = match handler.on_failure.as_deref() {
            None | Some("proceed") => OnFailure::Proceed,
            Some("block") => OnFailure::Block,
            Some(_) => return None,
        };
        let background = handler.run_async == Some(true) || handler.async_rewake == Some(true);
        let secs = match handler.timeout.map(clamp_secs) {
            None if background => BACKGROUND_TIMEOUT_SECS,
            None => default_secs,
            Some((secs, None)) => secs,
            Some((_, Some(_))) => return None,
        };
        if handler.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
            return None;
        }
        let own_sandbox = match handler.sandbox {
            None => None,
            Some(word) => sandbox::from_word(word)?,
        };
        let Some(program) = program else {
            continue;
        };
        handlers.push(Handler {
            index: h,
            action: Action::Process(program),
            timeout: Duration::from_secs_f64(secs),
            enabled: handler.enabled.unwrap_or(true),
            name: handler.name.map(std::borrow::Cow::into_owned),
            protocol: handler_protocol,
            on_failure,
            filter: handler.filter.map(Filter::new),
            background,
            sandbox: Sandbox::resolve(own_sandbox, group_sandbox.clone()),
        });
    }
    if !build {
        return Some(None);
    }
    Some(Some(Group {
        source: Arc::clone(source),
        event: event.to_string(),
        index,
        matcher: entry.matcher.take().map(std::borrow::Cow::into_owned),
        enabled,
        protocol,
        filter: entry.filter.take().map(Filter::new),
        handlers,
        compiled: OnceLock::new(),
        parses: OnceLock::new(),
    }))
}

/// What a handler runs, read as the general path reads its `command`, `argv`, `args` and
/// `shell` when that has nothing to warn about: `None` otherwise, `Some(None)` when it need not
/// be built.
fn clean_program(
    command: Option<Cow<'_, str>>,
    argv: Option<Vec<Cow<'_, str>>>,
    args: Option<Vec<Cow<'_, str>>>,
    shell: Option<Cow<'_, str>>,
    build: bool,
) -> Option<Option<Program>> {
    let owned = |strings: Vec<Cow<'_, str>>| strings.into_iter().map(Cow::into_owned).collect();
    let powershell = match shell.as_deref() {
        None | Some(BASH) => false,
        Some(POWERSHELL) => true,
        Some(_) => return None,
    };
    Some(match (command, argv, args) {
        (Some(c), None, None) if !c.trim().is_empty() => build.then(|| {
            if powershell {
                Program::PowerShell(c.into_owned())
            } else {
                Program::Shell(c.into_owned())
            }
        }),
        // `"powershell"` where no shell runs (with `args` or `argv`) is warned about.
        _ if powershell => return None,
        // With `args`, `command` is the program alone: spaces around it are warned about.
        (Some(c), None, Some(args)) if !c.trim().is_empty() && c.trim().len() == c.len() => build
            .then(|| Program::Exec {
                program: c.into_owned(),
                args: owned(args),
            }),
        (None, Some(argv), None) if argv.first().is_some_and(|p| !p.is_empty()) => {
            build.then(|| Program::Argv(owned(argv)))
        }
        _ => return None,
    })
}

/// Returns true unless a group with `matcher` certainly passes over `tool`, judged as the
/// dispatch judges it: a list of names without it, or a regex its anchors rule out.
pub(super) fn may_apply(matcher: Option<&str>, tool: &str) -> bool {
    let Some(m) = matcher else {
        return true;
    };
    // A list of names when every byte is an ASCII letter, digit, `_`, `-`, `|` or a space
    // ([`matcher::is_name_list`]), read as it is checked: the names are the bytes between
    // `|`s, less their spaces. A list with no name at all (`""`, `" | "`) matches every tool.
    let bytes = m.as_bytes();
    let (mut start, mut named, mut found) = (0, false, false);
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'|' {
            let name = bytes[start..i].trim_ascii();
            named |= !name.is_empty();
            found |= !name.is_empty() && name == tool.as_bytes();
            start = i + 1;
        } else if !(b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b' ') {
            return !matcher::ruled_out(m, tool);
        }
    }
    let name = bytes[start..].trim_ascii();
    named |= !name.is_empty();
    found |= !name.is_empty() && name == tool.as_bytes();
    found || !named
}

#[cfg(test)]
#[path = "fast_tests.rs"]
mod tests;
