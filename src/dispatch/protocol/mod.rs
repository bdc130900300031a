//! The protocols a handler can speak (contract §12): what it reads on stdin and how its reply is
//! read. Each protocol is one module beside this one, answering the questions of [`Rules`]:
//! which names a group's matcher is tested against, which runs one handler becomes and what
//! each reads, what a run is given besides its stdin, and what its exit 0 or 2 means. The rest
//! of the dispatcher asks a [`Protocol`], never a protocol's module, so a new protocol is a new
//! module and its line in [`TABLE`].

pub mod claude;
mod levelcode;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::dispatch::events::{EventKind, Subject};
use crate::dispatch::handler_input::Inputs;
use crate::dispatch::outcome::{Judgement, Reply};

/// The table of protocols, one line each. The first is levelcode's own, every handler's
/// default.
static TABLE: [&dyn Rules; 2] = [&levelcode::Levelcode, &claude::Claude];

/// What one protocol answers. Every method but [`Rules::name`], [`Rules::runs`] and
/// [`Rules::judge`] has the answer of a protocol that translates nothing.
pub trait Rules: Sync {
    /// The value of `"protocol"` that names it.
    fn name(&self) -> &'static str;

    /// What it is, for the settings schema: its payload and replies.
    fn summary(&self) -> &'static str;

    /// The agent whose hooks speak it, as people name it.
    fn agent(&self) -> &'static str;

    /// The agent's own tool names, each with levelcode's name for the same tool if it has one,
    /// for `validate` to explain a matcher written with them.
    fn agent_tools(&self) -> &'static [(&'static str, Option<&'static str>)] {
        &[]
    }

    /// What it changes about a group's matcher, for the settings schema.
    fn matcher_note(&self) -> Option<&'static str> {
        None
    }

    /// The protocol's own names for levelcode's `tool`, which a group's matcher is tested
    /// against besides `tool` itself.
    fn tool_names(&self, _tool: &str) -> &'static [&'static str] {
        &[]
    }

    /// Every levelcode tool for which [`Rules::tool_names`] has names, with those names: what
    /// tells, without a tool at hand, which tools a matcher of plain names can apply to.
    fn named_tools(&self) -> &'static [(&'static str, &'static [&'static str])] {
        &[]
    }

    /// What a group's matcher is tested against on an event of `kind` that has no tool, when it
    /// is tested at all.
    fn event_subject(&self, _kind: EventKind) -> Option<&'static str> {
        None
    }

    /// The runs one handler becomes for the input as it stands, each with what it reads.
    fn runs(&self, inputs: &mut Inputs<'_>) -> Vec<Run>;

    /// A file one run on an event of `kind` is given, named by a variable; `None`, after a
    /// warning when one should have been made and could not be, otherwise.
    fn run_file(&self, _kind: EventKind, _warnings: &mut Vec<String>) -> Option<RunFile> {
        None
    }

    /// Variables this process gave an earlier run, which a run that is not given them must not
    /// inherit.
    fn given_before(&self) -> &'static [&'static str] {
        &[]
    }

    /// The variable naming the project root in this protocol's own terms, given to every
    /// handler, for scripts written for it.
    fn root_variable(&self) -> Option<&'static str> {
        None
    }

    /// The agent's own settings files, which a person may have read as layers of their own
    /// (contract §12).
    fn own_layers(&self) -> Option<&'static OwnLayers> {
        None
    }

    /// What a handler's exit 0 or 2 means. Every other ending means the same whatever the
    /// protocol (`outcome::judge`).
    fn judge(&self, reply: Reply<'_>, context: &Context<'_>) -> Judgement;
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
        (0..TABLE.len() as u8).map(Protocol)
    }

    /// The protocol a settings value names, if it names one.
    pub fn parse(name: &str) -> Option<Protocol> {
        Protocol::all().find(|p| p.name() == name)
    }

    /// The value of `"protocol"` that names it.
    pub fn name(self) -> &'static str {
        self.rules().name()
    }

    /// Returns true if and only if this is levelcode's own protocol.
    pub fn is_levelcode(self) -> bool {
        self == Protocol::LEVELCODE
    }

    /// The rules the protocol follows.
    pub fn rules(self) -> &'static dyn Rules {
        TABLE[usize::from(self.0)]
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
    /// member, `tool` is that member's value ([`crate::dispatch::payload::Payload::subject`]); on other events the
    /// protocol's subject.
    /// `None` when the matcher is not consulted.
    pub fn match_subject(
        self,
        kind: EventKind,
        tool: Option<&str>,
    ) -> Option<(&str, &'static [&'static str])> {
        match (kind.subject(), tool) {
            (Subject::Tool, Some(tool)) => Some((tool, self.rules().tool_names(tool))),
            (Subject::Member(_), subject) => Some((subject.unwrap_or(""), &[][..])),
            _ => self.rules().event_subject(kind).map(|s| (s, &[][..])),
        }
    }

    /// The protocol of the agent that has a tool `name` ([`Rules::agent_tools`]), with
    /// levelcode's name for the same tool if it has one.
    pub fn agent_tool(name: &str) -> Option<(Protocol, Option<&'static str>)> {
        Protocol::all().find_map(|p| {
            p.rules()
                .agent_tools()
                .iter()
                .find(|(theirs, _)| *theirs == name)
                .map(|(_, ours)| (p, *ours))
        })
    }

    /// The warning's hint for a `"protocol"` that names none: each protocol and whose it is.
    pub fn choices() -> String {
        let mut foreign: Vec<String> = Protocol::all()
            .filter(|p| !p.is_levelcode())
            .map(|p| format!("\"{}\" for {} hook scripts", p.name(), p.rules().agent()))
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

/// One tool call in a protocol's own terms, as its handler reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// The protocol's name of the tool, such as Claude Code's `Write`; empty when it has none.
    pub name: &'static str,
    /// `tool_input` in the protocol's form.
    pub input: Value,
    /// When one levelcode call is several of the protocol's, which part this one is.
    pub part: Option<usize>,
}

/// One run of a handler: what it reads and the call it is about.
pub struct Run {
    /// Its stdin; `None` for the payload in levelcode's own form ([`Inputs::native`]), which is
    /// made once for every handler that reads it.
    pub input: Option<Vec<u8>>,
    /// The tool call it is about, when the protocol translates the call.
    pub call: Option<ToolCall>,
    /// What the handler's entry says about the run, when a handler runs more than once.
    pub note: Option<String>,
}

/// A file one run of a handler is given, named by a variable, and how what the handler wrote to
/// it is read back.
pub struct RunFile {
    pub variable: &'static str,
    pub path: PathBuf,
    /// Reads what the handler wrote (the output's `session_env`) and removes the file; `Err` is
    /// the warning.
    pub collect: fn(&Path) -> Result<Option<String>, String>,
}

/// What a protocol's judge needs besides the reply.
pub struct Context<'a> {
    pub kind: EventKind,
    pub event: &'a str,
    /// Names the handler in default reasons and warnings.
    pub label: &'a str,
    /// How to carry an `updatedInput` back, for a run about a translated tool call.
    pub rewrite: Option<Rewrite<'a>>,
}

/// What carrying an `updatedInput` back needs: the levelcode tool, its input as the run's call
/// was made from, the call, and the project root.
#[derive(Clone, Copy, Debug)]
pub struct Rewrite<'a> {
    pub tool: &'a str,
    pub input: &'a Value,
    pub call: &'a ToolCall,
    pub root: &'a Path,
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
