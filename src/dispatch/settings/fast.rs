//! The typed fast path: an event's groups read straight into structs that borrow the file's
//! strings, when they hold nothing to warn about. Anything unusual falls back to [`super::checked`].

use std::fmt;
use std::sync::Arc;
use std::sync::OnceLock;
use std::time::Duration;

use serde::Deserialize;

use super::checked::clamp_secs;
use super::*;
use crate::dispatch::matcher;

/// A group with only the keys the dispatcher reads; any other key fails the fast read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CleanGroup<'a> {
    #[serde(borrow, default)]
    matcher: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    hooks: Vec<CleanHandler<'a>>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(borrow, default)]
    protocol: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default, rename = "if")]
    filter: Option<std::borrow::Cow<'a, str>>,
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
pub(super) fn clean_group(
    source: &Arc<Source>,
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
    // In an agent's own file its handlers speak its protocol, with its default timeout.
    let layer_protocol = source.layer.protocol();
    let default_secs = source
        .layer
        .default_timeout()
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
        Protocol::of_group(protocol, entry.hooks.iter().filter_map(protocol_of))
            .rules()
            .tool_names(tool)
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
    for (h, handler) in entry.hooks.into_iter().enumerate() {
        let handler_protocol = protocol_of(&handler)?;
        if handler.kind.as_deref().is_some_and(|k| k != "command") {
            return None;
        }
        let program = match (handler.command, handler.argv) {
            (Some(c), None) if !c.trim().is_empty() => {
                build.then(|| Action::Process(Program::Shell(c.into_owned())))
            }
            (None, Some(argv)) if argv.first().is_some_and(|p| !p.is_empty()) => build.then(|| {
                Action::Process(Program::Argv(
                    argv.into_iter().map(std::borrow::Cow::into_owned).collect(),
                ))
            }),
            _ => return None,
        };
        let secs = match handler.timeout.map(clamp_secs) {
            None => default_secs,
            Some((secs, None)) => secs,
            Some((_, Some(_))) => return None,
        };
        if handler.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
            return None;
        }
        let Some(action) = program else {
            continue;
        };
        handlers.push(Handler {
            index: h,
            action,
            timeout: Duration::from_secs_f64(secs),
            enabled: handler.enabled.unwrap_or(true),
            name: handler.name.map(std::borrow::Cow::into_owned),
            protocol: handler_protocol,
            on_failure: OnFailure::Proceed,
            filter: handler.filter.map(Filter::new),
        });
    }
    if !build {
        return Some(None);
    }
    Some(Some(Group {
        source: Arc::clone(source),
        event: event.to_string(),
        index,
        matcher: entry.matcher.map(std::borrow::Cow::into_owned),
        enabled,
        protocol,
        filter: entry.filter.map(Filter::new),
        handlers,
        compiled: OnceLock::new(),
        parses: OnceLock::new(),
    }))
}

/// Returns true unless a group with `matcher` certainly passes over `tool`, judged as the
/// dispatch judges it: a list of names without it, or a regex its anchors rule out.
pub(super) fn may_apply(matcher: Option<&str>, tool: &str) -> bool {
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
