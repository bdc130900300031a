//! The kinds of handler (contract §4, §19), each described once, as events and protocols are:
//! the value of `"type"` that names it, the fields it reads beside those every handler has,
//! whether this version runs it, and how a run of it ends. `Action` is what a handler of a kind
//! that runs does, as settings write it; how it is done is the pipeline's (`dispatch::action`).
//!
//! Everything that differs by kind asks [`Kind`] or matches on it (or on [`Action`]) without a
//! `_` arm, so a new kind is a line in [`KINDS`], a variant of each, and the places the compiler
//! then lists: the settings readers (`checked.rs`, `fast.rs`), the schema, `import`, the trust
//! digest's named files, the action's `perform` and its [`Ends`].

use crate::runner::Program;

/// A kind of handler, as `"type"` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A process: `command` by a shell, `argv`, or `command` with `args` (contract §4, §6, §16).
    Command,
    /// A POST of the event to a URL (Claude Code's `http`, contract §19).
    Http,
    /// Claude Code's `prompt`: a model asked about the event.
    Prompt,
    /// Claude Code's `agent`: a subagent with tools asked about the event.
    Agent,
}

/// How a run of a kind ends, as its result entry says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ends {
    /// A process's exit code, or the signal that ended it (`exit_code`, `signal`).
    Process,
    /// An HTTP status (`http_status`).
    Status,
    /// A model's answer.
    Answer,
}

/// What one kind of handler is.
pub struct Entry {
    pub kind: Kind,
    /// The value of `"type"` that names it.
    pub name: &'static str,
    /// The fields it reads beside [`COMMON_FIELDS`].
    pub fields: &'static [&'static str],
    /// Whether this version runs it. A kind it does not run is skipped with a warning where
    /// settings are read (so `validate` refuses it) and left out by `import`, each naming the
    /// kinds that run ([`Kind::choices`]).
    pub runs: bool,
    /// What it does, for the schema and messages.
    pub summary: &'static str,
    pub ends: Ends,
}

/// The table of kinds, one line each, every [`Kind`] once, in its order. The first is the
/// default of a handler without `"type"`.
pub static KINDS: [Entry; 4] = [
    Entry {
        kind: Kind::Command,
        name: "command",
        fields: &["command", "argv", "args", "shell"],
        runs: true,
        summary: "a program, by /bin/sh -c (command), directly (argv), or command with args",
        ends: Ends::Process,
    },
    Entry {
        kind: Kind::Http,
        name: "http",
        fields: &["url", "headers", "allowedEnvVars"],
        runs: false,
        summary: "a POST of the event to a URL",
        ends: Ends::Status,
    },
    Entry {
        kind: Kind::Prompt,
        name: "prompt",
        fields: &["prompt", "model"],
        runs: false,
        summary: "a model asked about the event",
        ends: Ends::Answer,
    },
    Entry {
        kind: Kind::Agent,
        name: "agent",
        fields: &["prompt", "model"],
        runs: false,
        summary: "a subagent with tools asked about the event",
        ends: Ends::Answer,
    },
];

// Every line of `KINDS` is its kind's, in the order of `Kind`, or the crate does not build.
const _: () = {
    let mut i = 0;
    while i < KINDS.len() {
        assert!(
            KINDS[i].kind as usize == i,
            "KINDS lists the kinds in the order of Kind"
        );
        i += 1;
    }
};

/// The fields every handler may have, whatever its kind. `async` runs it in the background
/// (contract §21); `statusMessage`, `asyncRewake` (which implies `async`) and `once` are Claude
/// Code's, read and not honoured, or not in full (`validate` says so).
pub const COMMON_FIELDS: &[&str] = &[
    "type",
    "timeout",
    "enabled",
    "name",
    "protocol",
    "if",
    "onFailure",
    "statusMessage",
    "async",
    "asyncRewake",
    "once",
];

impl Kind {
    /// The kind of a handler without `"type"`.
    pub const DEFAULT: Kind = Kind::Command;

    /// The kind a `"type"` names, if it names one.
    pub fn parse(name: &str) -> Option<Kind> {
        KINDS.iter().find(|e| e.name == name).map(|e| e.kind)
    }

    /// Its line in [`KINDS`]. (A `match` without `_`, so that a new kind names its line.)
    pub fn entry(self) -> &'static Entry {
        let line = match self {
            Kind::Command => 0,
            Kind::Http => 1,
            Kind::Prompt => 2,
            Kind::Agent => 3,
        };
        &KINDS[line]
    }

    /// The value of `"type"` that names it.
    pub fn name(self) -> &'static str {
        self.entry().name
    }

    /// Returns true if and only if this version runs handlers of this kind.
    pub fn runs(self) -> bool {
        self.entry().runs
    }

    /// Every kind this version runs, in the table's order.
    pub fn running() -> impl Iterator<Item = Kind> {
        KINDS.iter().filter(|e| e.runs).map(|e| e.kind)
    }

    /// The kinds this version runs, quoted, for messages: `"command"`.
    pub fn choices() -> String {
        let names: Vec<String> = Kind::running().map(|k| format!("{:?}", k.name())).collect();
        names.join(", ")
    }

    /// Every field a handler of any kind may have: [`COMMON_FIELDS`], then each kind's own.
    pub fn every_field() -> impl Iterator<Item = &'static str> {
        let mut seen: Vec<&'static str> = Vec::new();
        COMMON_FIELDS
            .iter()
            .chain(KINDS.iter().flat_map(|e| e.fields))
            .copied()
            .filter(move |f| {
                let new = !seen.contains(f);
                seen.push(f);
                new
            })
    }
}

/// What a handler does, for a kind that runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Start a process: `command` by the shell, or `argv` (or `command` with `args`) directly
    /// (contract §4, §6, §16).
    Process(Program),
}

impl Action {
    /// Its kind.
    pub fn kind(&self) -> Kind {
        match self {
            Action::Process(_) => Kind::Command,
        }
    }

    /// The action as people read it: the command, or the argv (or the exec form's program and
    /// arguments) joined as a shell would quote it.
    pub fn text(&self) -> String {
        match self {
            Action::Process(Program::Shell(command) | Program::PowerShell(command)) => {
                command.clone()
            }
            Action::Process(Program::Argv(argv)) => shell_words::join(argv),
            Action::Process(Program::Exec { program, args }) => {
                shell_words::join(std::iter::once(program).chain(args))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_its_own_line_of_the_table_and_command_comes_first() {
        for (i, entry) in KINDS.iter().enumerate() {
            assert_eq!(entry.kind as usize, i, "{}", entry.name);
            assert_eq!(Kind::parse(entry.name), Some(entry.kind));
            assert_eq!(entry.kind.entry().name, entry.name);
        }
        assert_eq!(KINDS[0].kind, Kind::DEFAULT);
        assert_eq!(Kind::parse("Command"), None);
        // Claude Code's four types are named, whether or not they run.
        for name in ["command", "http", "prompt", "agent"] {
            assert!(Kind::parse(name).is_some(), "{name}");
        }
    }

    #[test]
    fn only_the_kinds_that_run_are_offered() {
        assert!(Kind::Command.runs());
        assert_eq!(Kind::choices(), "\"command\"");
    }

    #[test]
    fn every_field_is_listed_once() {
        let fields: Vec<&str> = Kind::every_field().collect();
        for (i, f) in fields.iter().enumerate() {
            assert_eq!(fields.iter().position(|g| g == f), Some(i), "{f}");
        }
        assert!(fields.contains(&"url") && fields.contains(&"command"));
        assert_eq!(
            fields.iter().filter(|f| **f == "prompt").count(),
            1,
            "prompt is shared by two kinds"
        );
    }
}
