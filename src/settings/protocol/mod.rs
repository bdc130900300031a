//! The protocols a handler can speak (contract §12), as settings know them: each one's name,
//! whose hooks speak it, the agent's tool names a matcher is also tested against, and the
//! agent's own settings files a person may read as layers. What a protocol does when a handler
//! runs (its payload, its reply) is the pipeline's half, `dispatch::protocol`, whose table has
//! one line for each line of [`TABLE`] here, in the same order ([`COUNT`] sizes both).

pub mod claude;

use std::fmt;

use serde::Serialize;

use crate::settings::events::{EventKind, Subject};

/// How many protocols there are: the length of [`TABLE`] and of the pipeline's table of rules.
pub const COUNT: usize = 2;

/// The table of protocols, one line each. The first is levelcode's own, every handler's
/// default.
static TABLE: [&Facts; COUNT] = [&LEVELCODE, &claude::FACTS];

/// levelcode's own protocol (contract §2, §6, §11).
static LEVELCODE: Facts = Facts {
    name: "levelcode",
    summary: "levelcode's payload and replies, with updatedInput, decision \"ask\", continue: false and systemMessage.",
    agent: "levelcode",
    agent_tools: &[],
    matcher_note: None,
    named_tools: &[],
    event_subject: |_| None,
    own_layers: None,
};

/// What settings know of one protocol.
pub struct Facts {
    /// The value of `"protocol"` that names it.
    pub name: &'static str,
    /// What it is, for the settings schema: its payload and replies.
    pub summary: &'static str,
    /// The agent whose hooks speak it, as people name it.
    pub agent: &'static str,
    /// The agent's own tool names, each with levelcode's name for the same tool if it has one,
    /// for `validate` to explain a matcher written with them.
    pub agent_tools: &'static [(&'static str, Option<&'static str>)],
    /// What it changes about a group's matcher, for the settings schema.
    pub matcher_note: Option<&'static str>,
    /// Every levelcode tool the protocol names otherwise, with its names for it: what a group's
    /// matcher is tested against besides the levelcode name.
    pub named_tools: &'static [(&'static str, &'static [&'static str])],
    /// What a group's matcher is tested against on an event of this kind that has no tool,
    /// when it is tested at all.
    pub event_subject: fn(EventKind) -> Option<&'static str>,
    /// The agent's own settings files, which a person may have read as layers of their own
    /// (contract §12).
    pub own_layers: Option<&'static OwnLayers>,
}

/// An agent's own settings files, read as layers when a person opts in (contract §12): only
/// their `hooks`, every handler speaking the agent's protocol unless it says otherwise.
pub struct OwnLayers {
    /// The key of the user or data layer that turns them on: `true` reads them.
    pub switch: &'static str,
    /// The files in the order they are read, each after levelcode's layers of its level.
    pub files: &'static [OwnFile],
    /// The project's folder of the agent's hook scripts, covered whole by the trust digest as
    /// levelcode's own hooks folder is.
    pub hooks_folder: &'static str,
    /// A handler's timeout when it gives none, in seconds, by the event its group is under: the
    /// agent's own default.
    pub default_timeout: fn(EventKind) -> f64,
}

/// One of an agent's settings files.
pub struct OwnFile {
    /// Its layer's name, as output and `list` show it.
    pub layer: &'static str,
    /// Under the person's home directory (`true`), or under the project root.
    pub in_home: bool,
    /// Its path, relative to the home directory or the project root, `/`-separated.
    pub path: &'static str,
}

/// One protocol of [`TABLE`], as settings name it and handlers carry it.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct Protocol(u8);

impl Protocol {
    /// levelcode's own protocol (contract §2, §6, §11), every handler's default.
    pub const LEVELCODE: Protocol = Protocol(0);

    /// Every protocol, in the table's order.
    pub fn all() -> impl Iterator<Item = Protocol> {
        (0..COUNT as u8).map(Protocol)
    }

    /// Its place in the table, for the pipeline's table of rules.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }

    /// The protocol a settings value names, if it names one.
    pub fn parse(name: &str) -> Option<Protocol> {
        Protocol::all().find(|p| p.name() == name)
    }

    /// The value of `"protocol"` that names it.
    pub fn name(self) -> &'static str {
        self.facts().name
    }

    /// Returns true if and only if this is levelcode's own protocol.
    pub fn is_levelcode(self) -> bool {
        self == Protocol::LEVELCODE
    }

    /// What settings know of it.
    pub fn facts(self) -> &'static Facts {
        TABLE[self.index()]
    }

    /// The protocol's own names for levelcode's `tool`, which a group's matcher is tested
    /// against besides `tool` itself.
    pub fn tool_names(self, tool: &str) -> &'static [&'static str] {
        self.facts()
            .named_tools
            .iter()
            .find(|(ours, _)| *ours == tool)
            .map_or(&[], |(_, theirs)| theirs)
    }

    /// The protocol a group's matcher follows (contract §12): the one the group names, when
    /// that is not levelcode's, else the one every handler speaks, else levelcode's.
    pub fn of_group(group: Option<Protocol>, handlers: impl Iterator<Item = Protocol>) -> Protocol {
        if let Some(protocol) = group.filter(|p| !p.is_levelcode()) {
            return protocol;
        }
        let mut handlers = handlers;
        match handlers.next() {
            Some(first) if handlers.all(|p| p == first) => first,
            _ => Protocol::LEVELCODE,
        }
    }

    /// What a matcher is tested against for an event of `kind` about `tool`: the tool's name
    /// and the protocol's names for it; on an event whose matcher is tested against a payload
    /// member, `tool` is that member's value (`dispatch::payload::Payload::subject`); on other
    /// events the protocol's subject. `None` when the matcher is not consulted.
    pub fn match_subject(
        self,
        kind: EventKind,
        tool: Option<&str>,
    ) -> Option<(&str, &'static [&'static str])> {
        match (kind.subject(), tool) {
            (Subject::Tool, Some(tool)) => Some((tool, self.tool_names(tool))),
            (Subject::Member(_), subject) => Some((subject.unwrap_or(""), &[][..])),
            _ => (self.facts().event_subject)(kind).map(|s| (s, &[][..])),
        }
    }

    /// The protocol of the agent that has a tool `name` ([`Facts::agent_tools`]), with
    /// levelcode's name for the same tool if it has one.
    pub fn agent_tool(name: &str) -> Option<(Protocol, Option<&'static str>)> {
        Protocol::all().find_map(|p| {
            p.facts()
                .agent_tools
                .iter()
                .find(|(theirs, _)| *theirs == name)
                .map(|(_, ours)| (p, *ours))
        })
    }

    /// The warning's hint for a `"protocol"` that names none: each protocol and whose it is.
    pub fn choices() -> String {
        let mut foreign: Vec<String> = Protocol::all()
            .filter(|p| !p.is_levelcode())
            .map(|p| format!("\"{}\" for {} hook scripts", p.name(), p.facts().agent))
            .collect();
        foreign.push(format!("or \"{}\"", Protocol::LEVELCODE.name()));
        foreign.join(", ")
    }
}

impl fmt::Debug for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Protocol {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_protocol_has_its_own_name_and_levelcode_comes_first() {
        let names: Vec<&str> = Protocol::all().map(Protocol::name).collect();
        assert_eq!(names[0], "levelcode");
        for (i, name) in names.iter().enumerate() {
            assert_eq!(names.iter().position(|n| n == name), Some(i), "{names:?}");
            assert_eq!(Protocol::parse(name).map(Protocol::name), Some(*name));
        }
        assert_eq!(Protocol::parse("claud"), None);
        assert_eq!(Protocol::default(), Protocol::LEVELCODE);
    }

    #[test]
    fn a_group_follows_the_protocol_it_names_or_all_its_handlers_speak() {
        let claude = Protocol::parse("claude").unwrap();
        let lc = Protocol::LEVELCODE;
        assert_eq!(Protocol::of_group(Some(claude), [lc].into_iter()), claude);
        assert_eq!(
            Protocol::of_group(Some(lc), [claude, claude].into_iter()),
            claude
        );
        assert_eq!(Protocol::of_group(None, [claude, lc].into_iter()), lc);
        assert_eq!(Protocol::of_group(None, std::iter::empty()), lc);
    }
}
