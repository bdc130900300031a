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
        runs: true,
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
    "sandbox",
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
    /// POST the event to a URL (contract §19).
    Http(HttpHook),
}

/// An http handler as settings write it (contract §19). Two are the same action, and the
/// second of a dispatch a `duplicate`, when their `url` and `headers` are the same.
#[derive(Clone, Debug)]
pub struct HttpHook {
    pub url: String,
    /// `(name, value)` in the order written, `$NAME` and `${NAME}` not filled in yet.
    pub headers: Vec<(String, String)>,
    /// The variables a header value may name.
    pub allowed_env_vars: Vec<String>,
    /// Its settings file says `"allowPlainHttp": true`: `http://` may go to another machine.
    pub plain_allowed: bool,
}

impl PartialEq for HttpHook {
    fn eq(&self, other: &HttpHook) -> bool {
        self.url == other.url && self.headers == other.headers
    }
}

impl Eq for HttpHook {}

impl std::hash::Hash for HttpHook {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.url.hash(state);
        self.headers.hash(state);
    }
}

impl HttpHook {
    /// The headers with each `$NAME` and `${NAME}` filled in by `lookup` when `allowedEnvVars`
    /// lists the name, and by the empty string otherwise (contract §19).
    pub fn header_values(&self, lookup: impl Fn(&str) -> Option<String>) -> Vec<(String, String)> {
        self.headers
            .iter()
            .map(|(name, value)| {
                let filled = fill(value, |var| {
                    if self.allowed_env_vars.iter().any(|a| a == var) {
                        lookup(var).unwrap_or_default()
                    } else {
                        String::new()
                    }
                });
                (name.clone(), filled)
            })
            .collect()
    }

    /// The variables the headers name that `allowedEnvVars` does not list, each once: they
    /// are sent as the empty string.
    pub fn unlisted_variables(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (_, value) in &self.headers {
            fill(value, |var| {
                if !self.allowed_env_vars.iter().any(|a| a == var) && !out.iter().any(|o| o == var)
                {
                    out.push(var.to_string());
                }
                String::new()
            });
        }
        out
    }
}

/// `text` with each `$NAME` and `${NAME}` (a name of letters, digits and `_`, not starting with
/// a digit) replaced by `value(NAME)`; any other `$` stays as written.
fn fill(text: &str, mut value: impl FnMut(&str) -> String) -> String {
    let is_start = |c: u8| c.is_ascii_alphabetic() || c == b'_';
    let is_part = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if bytes[i] != b'$' {
            i += 1;
            continue;
        }
        let braced = bytes.get(i + 1) == Some(&b'{');
        let start = i + 1 + usize::from(braced);
        let mut end = start;
        if bytes.get(start).copied().is_some_and(is_start) {
            end += 1;
            while bytes.get(end).copied().is_some_and(is_part) {
                end += 1;
            }
        }
        let closed = !braced || bytes.get(end) == Some(&b'}');
        if end == start || !closed {
            i += 1;
            continue;
        }
        out.push_str(&text[copied..i]);
        out.push_str(&value(&text[start..end]));
        i = end + usize::from(braced);
        copied = i;
    }
    out.push_str(&text[copied..]);
    out
}

impl Action {
    /// Its kind.
    pub fn kind(&self) -> Kind {
        match self {
            Action::Process(_) => Kind::Command,
            Action::Http(_) => Kind::Http,
        }
    }

    /// The action as people read it: the command, or the argv (or the exec form's program and
    /// arguments) joined as a shell would quote it, or the URL.
    pub fn text(&self) -> String {
        match self {
            Action::Process(Program::Shell(command) | Program::PowerShell(command)) => {
                command.clone()
            }
            Action::Process(Program::Argv(argv)) => shell_words::join(argv),
            Action::Process(Program::Exec { program, args }) => {
                shell_words::join(std::iter::once(program).chain(args))
            }
            Action::Http(hook) => hook.url.clone(),
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
        assert!(Kind::Command.runs() && Kind::Http.runs());
        assert_eq!(Kind::choices(), "\"command\", \"http\"");
    }

    fn hook(headers: &[(&str, &str)], allowed: &[&str]) -> HttpHook {
        HttpHook {
            url: "https://policy.example/check".into(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            allowed_env_vars: allowed.iter().map(|a| a.to_string()).collect(),
            plain_allowed: false,
        }
    }

    #[test]
    fn headers_fill_in_only_the_variables_allowed_and_the_rest_is_empty() {
        let h = hook(
            &[
                ("Authorization", "Bearer $TOKEN"),
                ("X-Both", "${TOKEN}-${SECRET}-$"),
                ("X-Plain", "$5 and ${unclosed and $ alone"),
            ],
            &["TOKEN"],
        );
        let lookup = |name: &str| Some(format!("<{name}>"));
        assert_eq!(
            h.header_values(lookup),
            [
                ("Authorization".to_string(), "Bearer <TOKEN>".to_string()),
                ("X-Both".to_string(), "<TOKEN>--$".to_string()),
                (
                    "X-Plain".to_string(),
                    "$5 and ${unclosed and $ alone".to_string()
                ),
            ]
        );
        assert_eq!(h.unlisted_variables(), ["SECRET"]);
        // A variable allowed but not set is empty too.
        assert_eq!(h.header_values(|_| None)[0].1, "Bearer ");
    }

    #[test]
    fn two_http_hooks_are_the_same_action_by_url_and_headers() {
        let a = hook(&[("X", "$A")], &["A"]);
        let mut b = hook(&[("X", "$A")], &[]);
        b.plain_allowed = true;
        assert_eq!(Action::Http(a.clone()), Action::Http(b));
        assert_ne!(
            Action::Http(a.clone()),
            Action::Http(hook(&[("X", "$B")], &["A"]))
        );
        assert_eq!(Action::Http(a).text(), "https://policy.example/check");
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
