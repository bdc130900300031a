//! `"if"` on a handler or a group (contract §16): one permission rule in Claude Code's syntax,
//! tested against the tool call before anything is spawned, so that a handler meant for some
//! calls of a tool (`"Bash(git commit *)"`, `"Edit(src/**)"`) never starts for the others.
//!
//! A rule is `Tool` (every call of the tool) or `Tool(pattern)`. The tool is named by its
//! levelcode name or by a protocol's name for it (Claude Code's `Bash`, `Grep`, `Glob`, `LS`,
//! `Task`); an MCP server's name (`mcp__github`, `mcp__github__*`) stands for each of its
//! tools. Claude Code's file tools stand for a kind, as its permission rules read them:
//! `Edit`, `Write`, `MultiEdit` and `NotebookEdit` for every tool that edits files, `Read` for
//! every tool that reads or searches them. What the pattern is tested against depends on the
//! tool, and any path that matches is a match ([`targets`], [`path`]):
//!
//! | tool | tested against |
//! |---|---|
//! | `run_terminal_command` | each simple command of `command`, in each of its forms ([`command`]): any that matches is a match |
//! | `write_file`, `str_replace` | `path`, a file |
//! | `read_files` | each of `paths`, files (for Claude Code's one `Read` per path, that run's path) |
//! | `code_search` | `cwd`, the folder searched (the project root when there is none), and with `flags`, what ripgrep may take as paths |
//! | `glob` | `cwd`, narrowed to the folders `pattern` starts with |
//! | `list_directory` | `path`, a folder |
//! | `read_subtree` | each of `paths` as folders (the project root when there is none) |
//! | `find_files` | the project root |
//!
//! A folder matches when the pattern could match a file inside it.
//!
//! A command pattern is Claude Code's: `*` is any text, spaces included; a pattern without one
//! is the exact command; a single `*` after a space at the end may also match nothing
//! (`git commit *` is `git commit` too); `prefix:*` is `prefix *`; `\*` is a `*` itself.
//!
//! A rule that cannot be evaluated (it is not a rule, its pattern is invalid, the command
//! cannot be split or holds what the filter cannot see through, the input lacks what the
//! pattern is tested against, the tool has nothing a pattern could be tested against) lets the
//! handler run, as Claude Code does, and says why: a command rule filters a handler out only
//! when the whole command was read and no part of it can match.

pub mod command;
pub mod path;
pub mod shell;
pub mod targets;

use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;

use crate::settings::protocol::Protocol;
use command::{El, Form};
use path::PathPattern;
use targets::Shape;

/// One `"if"` as written, read and compiled the first time a call is tested against it.
#[derive(Debug)]
pub struct Filter {
    text: String,
    rule: OnceLock<Result<Rule, String>>,
}

#[derive(Debug)]
struct Rule {
    tool: String,
    /// `None`: every call of the tool.
    pattern: Option<String>,
    compiled: OnceLock<Result<Pattern, String>>,
}

#[derive(Debug)]
enum Pattern {
    Command(CommandPattern),
    Path(PathPattern),
}

/// The tool call a filter is tested against.
pub struct Call<'a> {
    /// levelcode's name of the tool.
    pub tool: &'a str,
    /// The tool input as the handler would read it; `None` when it is not known (`list`).
    pub input: Option<&'a Value>,
    pub root: &'a Path,
    /// The part a protocol runs on its own (Claude Code's `Read` of one path of `read_files`).
    pub part: Option<usize>,
}

/// What a filter makes of a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The rule matches: the handler runs.
    Runs,
    /// The rule does not match: the handler is not run. `by_input` when another input of the
    /// same tool could have matched.
    Filtered { why: String, by_input: bool },
    /// The rule cannot be evaluated, and why: the handler runs.
    Unevaluable(String),
    /// The rule's pattern is tested against the tool input, which is not known.
    NeedsInput,
}

/// What a pattern is tested against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Subject {
    /// `command`, split into subcommands.
    Command,
    /// The paths the input names, by the tool's shape.
    Paths(Shape),
}

/// The levelcode tools whose calls a pattern can be tested against, and what it is tested
/// against.
const SUBJECTS: &[(&str, Subject)] = &[
    ("run_terminal_command", Subject::Command),
    ("write_file", Subject::Paths(Shape::File)),
    ("str_replace", Subject::Paths(Shape::File)),
    ("read_files", Subject::Paths(Shape::Files)),
    ("code_search", Subject::Paths(Shape::Search)),
    ("glob", Subject::Paths(Shape::Glob)),
    ("list_directory", Subject::Paths(Shape::Folder)),
    ("read_subtree", Subject::Paths(Shape::Subtrees)),
    ("find_files", Subject::Paths(Shape::Project)),
];

/// levelcode's tools that edit files.
const EDITS: &[&str] = &["write_file", "str_replace"];

/// levelcode's tools that read files, or search or list them.
const READS: &[&str] = &[
    "read_files",
    "code_search",
    "glob",
    "list_directory",
    "read_subtree",
    "find_files",
];

/// Claude Code's tool names that a rule reads as a kind of tool, as Claude Code's permission
/// rules do, and whether only with a pattern: an `Edit` rule applies to every tool that edits
/// files, and Claude Code checks a file edit against `Edit` rules alone, so a `Write`,
/// `MultiEdit` or `NotebookEdit` rule with a path is read as one, not as a rule that never
/// applies (bare, each is its own tool, as in a matcher); a `Read` rule, as far as it can be,
/// applies to every tool that reads files, searches included. `LS` is `list_directory`.
const KINDS: &[(&str, &[&str], bool)] = &[
    ("Edit", EDITS, false),
    ("Write", EDITS, true),
    ("MultiEdit", EDITS, true),
    ("NotebookEdit", EDITS, true),
    ("Read", READS, false),
    ("LS", &["list_directory"], false),
];

/// The levelcode tools a rule about Claude Code's `rule_tool`, with a pattern or without, is
/// about when it stands for a kind of tool ([`KINDS`]).
fn kind(rule_tool: &str, with_pattern: bool) -> Option<&'static [&'static str]> {
    KINDS
        .iter()
        .find(|(name, _, only_with)| *name == rule_tool && (with_pattern || !only_with))
        .map(|(_, tools, _)| *tools)
}

impl Filter {
    pub fn new(text: impl Into<String>) -> Filter {
        Filter {
            text: text.into(),
            rule: OnceLock::new(),
        }
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    fn rule(&self) -> &Result<Rule, String> {
        self.rule.get_or_init(|| parse_rule(&self.text))
    }

    /// The tool the rule names, as written, or why the text is not a rule.
    pub fn tool(&self) -> Result<&str, &str> {
        match self.rule() {
            Ok(rule) => Ok(&rule.tool),
            Err(why) => Err(why),
        }
    }

    /// Why the rule cannot be evaluated for the calls it names, when that can be told without a
    /// call: it is not a rule, or its pattern is not valid for the tool it names.
    pub fn problem(&self) -> Option<String> {
        let rule = match self.rule() {
            Ok(rule) => rule,
            Err(why) => return Some(why.clone()),
        };
        rule.pattern.as_ref()?;
        let subject = SUBJECTS
            .iter()
            .find(|(tool, _)| rule.names(tool))
            .map(|(_, subject)| *subject)?;
        rule.compiled(subject).as_ref().err().cloned()
    }

    /// Returns true if and only if the rule names a kind of levelcode tools by a name of Claude
    /// Code's (`Edit`, `Read`, `Write(src/**)`), which may be no tool of levelcode's itself.
    pub fn names_a_kind(&self) -> bool {
        matches!(self.rule(), Ok(rule) if kind(&rule.tool, rule.pattern.is_some()).is_some())
    }

    /// Returns true if and only if the rule has a pattern for a tool whose calls levelcode-hooks
    /// cannot test one against (`WebFetch(domain:…)`): such a rule lets every call run.
    pub fn unreadable_pattern(&self) -> bool {
        matches!(self.rule(), Ok(rule) if rule.pattern.is_some()
            && !SUBJECTS.iter().any(|(tool, _)| rule.names(tool)))
    }

    /// What the filter makes of `call`; `None` for an event without a tool call, which a rule
    /// about tool calls never matches.
    pub fn evaluate(&self, call: Option<&Call<'_>>) -> Verdict {
        let rule = match self.rule() {
            Ok(rule) => rule,
            Err(why) => return Verdict::Unevaluable(why.clone()),
        };
        let Some(call) = call else {
            return Verdict::Filtered {
                why: "it filters tool calls, and this event has none".into(),
                by_input: false,
            };
        };
        if !rule.names(call.tool) {
            return Verdict::Filtered {
                why: format!("it is about {}, not {}", rule.tool, call.tool),
                by_input: false,
            };
        }
        let Some(text) = &rule.pattern else {
            return Verdict::Runs;
        };
        let Some(subject) = subject_of(call.tool) else {
            return Verdict::Unevaluable(format!(
                "levelcode-hooks tests no pattern against {} calls; write {:?} alone to match every call",
                call.tool, rule.tool
            ));
        };
        let pattern = match rule.compiled(subject) {
            Ok(pattern) => pattern,
            Err(why) => return Verdict::Unevaluable(why.clone()),
        };
        let Some(input) = call.input else {
            return Verdict::NeedsInput;
        };
        match pattern {
            Pattern::Command(command) => command.test(text, input),
            Pattern::Path(path) => match subject {
                Subject::Paths(shape) => test_paths(path, text, shape, input, call),
                // A rule's tools are all of one subject, which its pattern was compiled for.
                Subject::Command => Verdict::Unevaluable(format!(
                    "{text:?} was read as a path pattern, and a command cannot be tested against one"
                )),
            },
        }
    }
}

impl Rule {
    /// Returns true if and only if the rule is about levelcode's `tool`.
    fn names(&self, tool: &str) -> bool {
        names(&self.tool, self.pattern.is_some(), tool)
    }

    fn compiled(&self, subject: Subject) -> &Result<Pattern, String> {
        self.compiled.get_or_init(|| {
            let text = self.pattern.as_deref().unwrap_or_default();
            match subject {
                Subject::Command => Ok(Pattern::Command(CommandPattern::parse(text))),
                Subject::Paths(_) => PathPattern::parse(text).map(Pattern::Path),
            }
        })
    }
}

/// What a pattern is tested against for calls of levelcode's `tool`.
fn subject_of(tool: &str) -> Option<Subject> {
    SUBJECTS
        .iter()
        .find(|(name, _)| *name == tool)
        .map(|(_, subject)| *subject)
}

/// Returns true if and only if a rule about `rule_tool`, with a pattern or without, is about
/// levelcode's `tool`: its own name, a kind it is of, a protocol's name for it, or the MCP
/// server it belongs to.
fn names(rule_tool: &str, with_pattern: bool, tool: &str) -> bool {
    let theirs = |p: Protocol| {
        p.facts()
            .agent_tools
            .iter()
            .any(|(name, ours)| *name == rule_tool && *ours == Some(tool))
    };
    if rule_tool == tool
        || kind(rule_tool, with_pattern).is_some_and(|tools| tools.contains(&tool))
        || Protocol::all().any(theirs)
    {
        return true;
    }
    let Some(server) = rule_tool.strip_prefix("mcp__") else {
        return false;
    };
    let server = server.strip_suffix("__*").unwrap_or(server);
    !server.is_empty()
        && !server.contains("__")
        && tool
            .strip_prefix("mcp__")
            .and_then(|t| t.strip_prefix(server))
            .is_some_and(|t| t.starts_with("__"))
}

/// `Tool` or `Tool(pattern)`, or why `text` is neither.
fn parse_rule(text: &str) -> Result<Rule, String> {
    const EXAMPLE: &str =
        "write Tool or Tool(pattern), such as \"Bash(git commit *)\" or \"Edit(src/**)\"";
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(format!("it is empty; {EXAMPLE}"));
    }
    let (tool, pattern) = match trimmed.find('(') {
        None if trimmed.contains(')') => {
            return Err(format!(
                "{trimmed:?} has a ) without a ( before it; {EXAMPLE}"
            ))
        }
        None => (trimmed, None),
        Some(open) => match trimmed[open + 1..].strip_suffix(')') {
            Some(inner) => (trimmed[..open].trim_end(), Some(inner.trim())),
            None => {
                return Err(format!(
                    "{trimmed:?} does not end with the ) that closes its pattern; {EXAMPLE}"
                ))
            }
        },
    };
    if tool.is_empty() {
        return Err(format!("{trimmed:?} names no tool; {EXAMPLE}"));
    }
    if let Some(bad) = tool
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '*')))
    {
        return Err(format!(
            "{tool:?} is not a tool name (it holds {bad:?}); {EXAMPLE}"
        ));
    }
    Ok(Rule {
        tool: tool.to_string(),
        // `Tool()` and `Tool(*)` are `Tool`.
        pattern: pattern
            .filter(|p| !p.is_empty() && *p != "*")
            .map(str::to_string),
        compiled: OnceLock::new(),
    })
}

/// The paths of `input` that a tool of `shape` names, tested against `pattern`: a match when
/// any matches.
fn test_paths(
    pattern: &PathPattern,
    text: &str,
    shape: Shape,
    input: &Value,
    call: &Call<'_>,
) -> Verdict {
    let home = crate::environment::home();
    let targets = match targets::of(shape, input, call.part) {
        Ok(targets) => targets,
        Err(why) => return Verdict::Unevaluable(why),
    };
    if targets
        .iter()
        .any(|t| pattern.matches(&t.path, call.root, home, t.reach))
    {
        return Verdict::Runs;
    }
    let what = match targets.as_slice() {
        [] => "no path".to_string(),
        [one] => format!("{:?}", one.path),
        many => format!("none of the {} paths", many.len()),
    };
    Verdict::Filtered {
        why: format!("{what} does not match {text:?}"),
        by_input: true,
    }
}

fn missing(key: &str, what: &str) -> Verdict {
    Verdict::Unevaluable(format!(
        "the tool input has no {key:?} holding {what} to test"
    ))
}

/// A command pattern of Claude Code's permission rules.
#[derive(Debug, PartialEq, Eq)]
pub struct CommandPattern {
    /// The literal text between the wildcards; one part when there is no wildcard.
    parts: Vec<String>,
    /// A single wildcard after a space at the end, which may also match nothing.
    optional_tail: bool,
}

impl CommandPattern {
    pub fn parse(pattern: &str) -> CommandPattern {
        let legacy = pattern.strip_suffix(":*").filter(|p| !p.ends_with('\\'));
        let owned;
        let pattern = match legacy {
            Some(prefix) => {
                owned = format!("{prefix} *");
                owned.as_str()
            }
            None => pattern,
        };
        let mut parts = vec![String::new()];
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if matches!(chars.peek(), Some('*' | '\\')) => {
                    parts
                        .last_mut()
                        .unwrap()
                        .push(chars.next().unwrap_or_default());
                }
                '*' => parts.push(String::new()),
                other => parts.last_mut().unwrap().push(other),
            }
        }
        let optional_tail = parts.len() == 2 && parts[1].is_empty() && parts[0].ends_with(' ');
        CommandPattern {
            parts,
            optional_tail,
        }
    }

    /// Returns true if and only if the pattern matches `command`, a whole subcommand.
    pub fn matches(&self, command: &str) -> bool {
        let [first, middle @ .., last] = self.parts.as_slice() else {
            return self.parts.first().is_some_and(|p| p == command);
        };
        if self.optional_tail && command == first.trim_end_matches(' ') {
            return true;
        }
        if command.len() < first.len() + last.len()
            || !command.starts_with(first.as_str())
            || !command.ends_with(last.as_str())
        {
            return false;
        }
        let mut rest = &command[first.len()..command.len() - last.len()];
        for part in middle {
            match rest.find(part.as_str()) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
        true
    }

    /// Returns true if and only if the pattern matches `form`, or some text its unknown parts
    /// may stand for.
    pub fn matches_form(&self, form: &[El]) -> bool {
        if !form.contains(&El::Any) {
            let text: String = form
                .iter()
                .map(|e| match e {
                    El::Char(c) => *c,
                    El::Any => '*',
                })
                .collect();
            return self.matches(&text);
        }
        let mut whole: Vec<El> = Vec::new();
        for (i, part) in self.parts.iter().enumerate() {
            if i > 0 {
                whole.push(El::Any);
            }
            whole.extend(part.chars().map(El::Char));
        }
        if intersects(&whole, form) {
            return true;
        }
        // `git commit *` is `git commit` too.
        let bare: Vec<El> = self.parts[0]
            .trim_end_matches(' ')
            .chars()
            .map(El::Char)
            .collect();
        self.optional_tail && intersects(&bare, form)
    }

    /// Whether any simple command of `input`'s `command`, in any of its forms, matches: the
    /// handler is filtered out only when the filter read the whole command and none can.
    fn test(&self, text: &str, input: &Value) -> Verdict {
        let Some(command) = input.get("command").and_then(Value::as_str) else {
            return missing("command", "a command");
        };
        let reading = match command::read(command) {
            Ok(reading) => reading,
            Err(e) => {
                return Verdict::Unevaluable(format!(
                    "the command cannot be split into its subcommands: {e}"
                ))
            }
        };
        // A match as written runs the handler plainly; one that holds only for some value of
        // what is known when the command runs, or what the filter cannot see, runs it and says
        // why.
        let known = |form: &&Form| !form.contains(&El::Any);
        if reading
            .forms
            .iter()
            .filter(known)
            .any(|f| self.matches_form(f))
        {
            return Verdict::Runs;
        }
        if let Some(why) = reading.unseen.first() {
            return Verdict::Unevaluable(format!(
                "the filter cannot see what the command runs: {why}"
            ));
        }
        if reading.forms.iter().any(|form| self.matches_form(form)) {
            return Verdict::Runs;
        }
        Verdict::Filtered {
            why: format!("no subcommand of the command matches {text:?}"),
            by_input: true,
        }
    }
}

/// Returns true if and only if some text matches both `pattern` and `form`, each a sequence of
/// characters and [`El::Any`]: the two automata run side by side, in time linear in the form.
fn intersects(pattern: &[El], form: &[El]) -> bool {
    let n = pattern.len();
    // `now[i]`: the pattern's first `i` elements can match what the form has given so far.
    let mut now = vec![false; n + 1];
    let close = |states: &mut Vec<bool>| {
        for i in 0..n {
            if states[i] && pattern[i] == El::Any {
                states[i + 1] = true;
            }
        }
    };
    now[0] = true;
    close(&mut now);
    let mut next = vec![false; n + 1];
    for element in form {
        next.iter_mut().for_each(|s| *s = false);
        match element {
            El::Char(c) => {
                for i in 0..n {
                    if now[i] {
                        match pattern[i] {
                            El::Any => next[i] = true,
                            El::Char(p) if p == *c => next[i + 1] = true,
                            El::Char(_) => {}
                        }
                    }
                }
            }
            // Any text: the pattern may be anywhere from the earliest state on.
            El::Any => {
                if let Some(first) = now.iter().position(|s| *s) {
                    next[first..].iter_mut().for_each(|s| *s = true);
                }
            }
        }
        close(&mut next);
        std::mem::swap(&mut now, &mut next);
        if !now.contains(&true) {
            return false;
        }
    }
    now[n]
}

#[cfg(test)]
mod tests;
